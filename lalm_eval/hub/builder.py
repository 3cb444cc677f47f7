"""The shape every benchmark's dataset builder shares (PALM-Bench, MSU-Bench, a third one).

- :class:`BenchBuilderConfig`: the ``datasets.BuilderConfig`` fields every benchmark has: the
  build knobs (``build``, the benchmark's own frozen dataclass) and which corpus to read
  (``corpus``, ``corpus_dir``, ``corpus_options``).
- :class:`BenchBuilder`: a ``GeneratorBasedBuilder`` whose rows come from a *plan*, as a template
  method. The plan is passed in (``Builder(config_name=..., cache_dir=..., plan=plan)``: a build
  plans once and hands the same plan to every config's builder), or made from the config on
  first use of :attr:`BenchBuilder.plan` (``make_plan``, which each benchmark implements). A
  benchmark says three things:

  - ``units(split)``: the work items of a split, in order (small picklable values: positions in
    the plan), e.g. PALM's planned clips or MSU's segments; each names what ``render`` needs;
  - ``render(unit)``: the unit's audio as a :class:`Rendered` (samples, file stem, and what the
    rows need from the rendering, e.g. who speaks when in a mix);
  - ``rows(unit, audio)``: the unit's examples, given its :class:`UnitAudio` (encoded once, shared
    by every row of the unit).

  The base does the rest once for every benchmark: the splits (``SPLITS``, those in
  ``OPTIONAL_SPLITS`` left out when they have no unit), rendering and encoding a few units ahead
  of the writer in threads (``PREFETCH``; results in order, so the bytes do not depend on the
  threads), the example keys, and the sharding below.
- the corpus readers' side (what every reader returns, its skips, and its registry) is
  :mod:`lalm_eval.hub.readers`, which imports no ``datasets``.

Sharding for ``download_and_prepare(num_proc=N)``: ``_split_generators`` passes a split's units
as the one *list* in ``gen_kwargs`` (so a unit names its split when ``render`` needs it); ``datasets`` splits
that list into N contiguous runs, writes one run per process and renames the Arrow files in job
order, so the rows come out in the same order for any N. The Parquet export writes them in
single-chunk batches of a fixed row count (:mod:`lalm_eval.hub.parquet`), so the shards are
byte-identical for any N.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import datasets
import numpy as np

from lalm_eval.audio.io import TARGET_SR, encode_audio
from lalm_eval.hub.prefetch import prefetched


@dataclasses.dataclass
class BenchBuilderConfig(datasets.BuilderConfig):
    """The config fields every benchmark builder has (a benchmark subclasses it, narrowing
    ``build`` to its own knobs dataclass and adding what selects its configs' rows)."""

    build: Any = None  # the benchmark's build knobs (None: its defaults)
    corpus: str = "embedded"  # a name in the benchmark's corpus-reader registry
    corpus_dir: str | None = None
    corpus_options: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Rendered:
    """What ``render(unit)`` returns: mono samples at :data:`~lalm_eval.audio.io.TARGET_SR`, the
    stem of the file name the encoded audio gets, and ``extra``: whatever else the unit's rows
    need from the rendering (PALM: who speaks when in the mix; MCQ: the question clips)."""

    samples: np.ndarray
    stem: str
    extra: Any = None


@dataclasses.dataclass(frozen=True)
class UnitAudio:
    """A unit's audio as its rows carry it: ``audio`` the ``datasets.Audio`` value
    (``{"bytes", "path"}``), its ``duration`` in seconds, and the rendering's ``extra``."""

    audio: dict
    duration: float
    extra: Any = None


class BenchBuilder(datasets.GeneratorBasedBuilder):
    """A builder whose rows come from a plan (passed in, or made from the config once), unit by
    unit: ``units(split)`` → ``render(unit)`` → encoded once → ``rows(unit, audio)``."""

    BUILDER_CONFIG_CLASS = BenchBuilderConfig
    SPLITS: tuple[str, ...] = ("test",)  # the splits a build writes, in order
    OPTIONAL_SPLITS: tuple[str, ...] = ()  # of those, the ones left out when they have no unit
    PREFETCH = 8  # units rendered and encoded ahead of the writer

    def __init__(self, *args, plan=None, **kwargs):
        self._plan = plan
        super().__init__(*args, **kwargs)

    def make_plan(self):
        """The plan ``self.config`` describes (used when none was passed in)."""
        raise NotImplementedError

    @property
    def plan(self):
        if self._plan is None:
            self._plan = self.make_plan()
        return self._plan

    # ---- what a benchmark says ----------------------------------------------------------------

    def units(self, split: str) -> list:
        """The work items of ``split``, in the order their rows are written."""
        raise NotImplementedError

    def render(self, unit) -> Rendered:
        """The unit's audio (a pure function of the plan: it runs in a few threads at once)."""
        raise NotImplementedError

    def rows(self, unit, audio: UnitAudio) -> Iterable[dict]:
        """The examples of ``unit``, each carrying ``audio.audio``."""
        raise NotImplementedError

    def audio_format(self) -> str:
        """The format every unit's audio is encoded in (a benchmark reads it from its build knobs)."""
        return "flac"

    # ---- done once, here ------------------------------------------------------------------------

    def encode(self, samples: np.ndarray, stem: str) -> dict:
        """``samples`` as a ``datasets.Audio`` value: ``{"bytes": <encoded>, "path": "<stem>.<format>"}``."""
        fmt = self.audio_format()
        return {"bytes": encode_audio(samples, TARGET_SR, fmt), "path": f"{stem}.{fmt}"}

    def _unit_audio(self, unit) -> UnitAudio:
        rendered = self.render(unit)
        return UnitAudio(
            audio=self.encode(rendered.samples, rendered.stem),
            duration=len(rendered.samples) / TARGET_SR,
            extra=rendered.extra,
        )

    def _split_generators(self, dl_manager):
        out = []
        for split in self.SPLITS:
            units = list(self.units(split))
            if units or split not in self.OPTIONAL_SPLITS:
                out.append(datasets.SplitGenerator(name=datasets.Split(split), gen_kwargs={"units": units}))
        return out

    def _generate_examples(self, units):
        index = 0
        for unit, audio in prefetched(self._unit_audio, units, window=self.PREFETCH):
            for row in self.rows(unit, audio):
                yield datasets.builder.Key(0, index), row
                index += 1
