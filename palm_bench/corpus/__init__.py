"""PALM-Bench's corpus readers, one registry: ``READERS.get(kind)(corpus_dir, **options)``
returns a :class:`~palm_bench.corpus.types.Corpus` (with its ``skips``).

=============  ===============================================================================
``embedded``   the packaged corpus, or one rendered in its layout (``corpus_dir``: data/ + source/)
``ncssd``      NCSSD (:mod:`palm_bench.corpus.ncssd`)
``folder``     one sub-folder per speaker (:mod:`palm_bench.corpus.folder`)
=============  ===============================================================================

Entries are lazy (``"module:function"``); other packages add readers through the entry-point
group ``palm_bench.corpus_readers``.
"""

from __future__ import annotations

from lalm_eval.hub.readers import read_corpus as _read_with
from lalm_eval.registry import Registry

READERS = Registry("PALM-Bench corpus reader", entry_point_group="palm_bench.corpus_readers")
READERS.register("embedded", "palm_bench.corpus.embedded:read_embedded")
READERS.register("ncssd", "palm_bench.corpus.ncssd:prepare_ncssd")
READERS.register("folder", "palm_bench.corpus.folder:prepare_folder")


def read_corpus(kind: str, corpus_dir: str | None = None, options: dict | None = None):
    """The corpus of reader ``kind`` (a :class:`~lalm_eval.errors.ConfigError` names the known
    kinds when it is not one)."""
    return _read_with(READERS, kind, corpus_dir, options)
