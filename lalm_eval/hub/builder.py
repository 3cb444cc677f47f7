"""The shape every benchmark's dataset builder shares (PALM-Bench, MSU-Bench, a third one).

- :class:`BenchBuilderConfig`: the ``datasets.BuilderConfig`` fields every benchmark has: the
  build knobs (``build``, the benchmark's own frozen dataclass) and which corpus to read
  (``corpus``, ``corpus_dir``, ``corpus_options``).
- :class:`BenchBuilder`: a ``GeneratorBasedBuilder`` whose rows come from a *plan*. The plan is
  passed in (``Builder(config_name=..., cache_dir=..., plan=plan)``: a build plans once and
  hands the same plan to every config's builder), or made from the config on first use of
  :attr:`BenchBuilder.plan` (``make_plan``, which each benchmark implements).
- the corpus readers' side (what every reader returns, and its registry) is
  :mod:`lalm_eval.hub.readers`, which imports no ``datasets``.

Sharding for ``download_and_prepare(num_proc=N)``: a builder's ``_split_generators`` passes its
work items (planned clips, segments: positions in the plan) as the one *list* in ``gen_kwargs``
(other values tuples or scalars); ``datasets`` splits that list into N contiguous runs, writes
one run per process and renames the Arrow files in job order, so the rows come out in the same
order for any N. The Parquet export writes them in single-chunk batches of a fixed row count
(:mod:`lalm_eval.hub.parquet`), so the shards are byte-identical for any N.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import datasets


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
