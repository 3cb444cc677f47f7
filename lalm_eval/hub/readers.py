"""What every benchmark's corpus readers share (PALM-Bench, MSU-Bench, a third one).

- :class:`Skip` / :class:`ReaderResult`: what every corpus reader returns besides its data: the
  items it skipped, each with the item (a file, ``file:line``, or an id) and the reason. Counts
  are derived from the list (:attr:`ReaderResult.n_skipped`, :func:`skip_records`).
- :class:`SkipLog`: collects (and logs) skips while a reader runs.
- :func:`read_corpus`: dispatch a corpus kind through the benchmark's reader
  :class:`~lalm_eval.registry.Registry` (``reader(corpus_dir, **options) -> ReaderResult``).

No ``datasets`` import here: reading a corpus (``corpus-info``) does not need it.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import NamedTuple

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
