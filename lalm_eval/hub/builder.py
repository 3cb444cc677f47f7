"""The shape every benchmark's dataset builder shares (PALM-Bench, MSU-Bench, a third one).

- :class:`BenchBuilderConfig`: the ``datasets.BuilderConfig`` fields every benchmark has: the
  build knobs (``build``, the benchmark's own frozen dataclass) and which corpus to read
  (``corpus``, ``corpus_dir``, ``corpus_options``).
- :class:`BenchBuilder`: a ``GeneratorBasedBuilder`` whose rows come from a *plan*. The plan is
  passed in (``Builder(config_name=..., cache_dir=..., plan=plan)``: a build plans once and
  hands the same plan to every config's builder), or made from the config on first use of
  :attr:`BenchBuilder.plan` (``make_plan``, which each benchmark implements).
- :class:`Skip` / :class:`ReaderResult`: what every corpus reader returns besides its data: the
  items it skipped, each with the item (a file, ``file:line``, or an id) and the reason. Counts
  are derived from the list (:attr:`ReaderResult.n_skipped`, :func:`skip_records`).
- :func:`read_corpus`: dispatch a corpus kind through the benchmark's reader
  :class:`~lalm_eval.registry.Registry` (``reader(corpus_dir, **options) -> ReaderResult``).

Sharding for ``download_and_prepare(num_proc=N)``: a builder's ``_split_generators`` passes its
work items (planned clips, segments: positions in the plan) as the one *list* in ``gen_kwargs``
(other values tuples or scalars); ``datasets`` splits that list into N contiguous runs, writes
one run per process and renames the Arrow files in job order, so the rows come out in the same
order for any N. The Parquet export writes them in single-chunk batches of a fixed row count
(:mod:`lalm_eval.hub.parquet`), so the shards are byte-identical for any N.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, NamedTuple

import datasets

from lalm_eval.errors import ConfigError
from lalm_eval.registry import Registry

logger = logging.getLogger(__name__)


class Skip(NamedTuple):
    """One item a reader could not use: ``item`` (a file, ``file:line`` or an id) and why."""

    item: str
    reason: str


@dataclasses.dataclass
class ReaderResult:
    """Base of every corpus reader's result: the skipped items (the data is the subclass's)."""

    skips: list[Skip] = dataclasses.field(default_factory=list, kw_only=True)

    @property
    def n_skipped(self) -> int:
        return len(self.skips)


class SkipLog:
    """Collects skips while a reader runs; each is logged (WARNING) with its item and reason."""

    def __init__(self, log: logging.Logger = logger):
        self.items: list[Skip] = []
        self._log = log

    def add(self, item, reason: str) -> None:
        self.items.append(Skip(str(item), reason))
        self._log.warning("skipped %s: %s", item, reason)


def skip_records(skips: list[Skip], relative=str) -> list[dict]:
    """The skips as ``build_info.json`` / card records ``{"file": item, "reason": ...}``;
    ``relative(item)`` shortens the item (e.g. a path relative to the corpus folder)."""
    return [{"file": relative(s.item), "reason": s.reason} for s in skips]


def read_corpus(readers: Registry, kind: str, corpus_dir: str | None, options: dict | None = None):
    """``readers.get(kind)(corpus_dir, **options)``; an unknown kind is a :class:`ConfigError`
    listing the registered ones."""
    try:
        reader = readers.get(kind)
    except KeyError as exc:  # the registry's miss (it names the close and the valid names)
        raise ConfigError(str(exc.args[0]) if exc.args else f"unknown corpus {kind!r}") from None
    return reader(corpus_dir, **(options or {}))


def require_corpus_dir(kind: str, corpus_dir) -> str:
    """``corpus_dir``, or a :class:`ConfigError` saying that corpus ``kind`` needs one."""
    if not corpus_dir:
        raise ConfigError(f"corpus {kind!r} needs a corpus folder (--corpus-dir)")
    return str(corpus_dir)


@dataclasses.dataclass
class BenchBuilderConfig(datasets.BuilderConfig):
    """The config fields every benchmark builder has (a benchmark subclasses it, narrowing
    ``build`` to its own knobs dataclass and adding what selects its configs' rows)."""

    build: Any = None  # the benchmark's build knobs (None: its defaults)
    corpus: str = "embedded"  # a name in the benchmark's corpus-reader registry
    corpus_dir: str | None = None
    corpus_options: dict = dataclasses.field(default_factory=dict)


class BenchBuilder(datasets.GeneratorBasedBuilder):
    """A builder whose rows come from a plan, passed in or made from the config once."""

    BUILDER_CONFIG_CLASS = BenchBuilderConfig

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

