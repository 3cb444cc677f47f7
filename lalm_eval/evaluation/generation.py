"""The generation stage: the response cache looked up once per doc, the misses generated through
:class:`~lalm_eval.cache.CachedAdapter` (which commits them and owns the alignment of the
adapter's batches) and, under a data-parallel launcher, shared between the processes."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lalm_eval.api import Request, Response
from lalm_eval.cache import CachedAdapter, ResponseCache, aligned_chunk, commit_chunk
from lalm_eval.errors import ConfigError
from lalm_eval.parallel import common_keys, generate_sharded

#: requests whose audio is decoded at once (``--stream_chunk``): cache misses only, built,
#: decoded and generated a chunk at a time so that memory does not grow with the number of docs
DEFAULT_STREAM_CHUNK = 64


def stream_chunk_size(stream_chunk: int | None, batch_size) -> int | None:
    """Requests decoded at once: ``stream_chunk`` (None → :data:`DEFAULT_STREAM_CHUNK`; 0 → no
    chunking, None returned), at least the batch size, aligned to the response cache's commit
    chunk (:func:`~lalm_eval.cache.aligned_chunk`), so the adapter sees the same batches as in an
    unchunked run."""
    chunk = DEFAULT_STREAM_CHUNK if stream_chunk is None else stream_chunk
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 0:
        raise ConfigError(
            f"stream_chunk: must be a whole number >= 0, got {stream_chunk!r}; give e.g. 64 (0: no chunking)"
        )
    if chunk == 0:
        return None
    if str(batch_size).isdigit():
        chunk = max(chunk, int(batch_size))
    return aligned_chunk(chunk, commit_chunk(batch_size))


class Generation:
    """``adapter`` behind the response cache in ``cache_dir`` (none with ``use_cache=False``), at
    ``batch_size``. :meth:`lookup` reads the keys known at the scan; calling the object generates a
    chunk of requests (the misses), looking up only the keys :meth:`lookup` did not read."""

    def __init__(self, adapter, cache_dir: Path, use_cache: bool, batch_size):
        self.adapter, self.batch_size = adapter, batch_size
        self.cache = ResponseCache(Path(cache_dir) / "responses.sqlite") if use_cache else None
        self.model = adapter if self.cache is None else CachedAdapter.for_batch_size(adapter, self.cache, batch_size)

    def lookup(self, keys: Iterable[str]) -> dict[str, Response]:
        """The cached responses of ``keys`` that every data-parallel process finds (so that all
        processes stream the same misses); the keys not found are not read again."""
        keys = list(keys)
        found = self.cache.get_many(keys) if self.cache is not None else {}
        if isinstance(self.model, CachedAdapter):
            self.model.known_missing.update(k for k in keys if k not in found)
        agreed = common_keys(found)
        return {k: v for k, v in found.items() if k in agreed}

    def __call__(self, requests: list[Request]) -> list[Response]:
        return generate_sharded(self.model, requests, self.batch_size)
