"""Response cache: resume an interrupted run without asking the model twice.

A request's key is a SHA-256 over canonical JSON of everything that decides the answer: the
model's identity, the task's hash, the document id, the content hash of **every audio** (unlike
lm-eval, whose key is the prompt text only, so one question over two clips would share an
answer), the chat messages and the generation kwargs.

:class:`ResponseCache` keeps successful responses in one SQLite file (WAL mode, busy timeout) that
several processes — accelerate's data-parallel ranks, or a rerun next to a running job — may read
and write at once. Every :meth:`ResponseCache.put_many` commits at once, so a killed run loses at
most the chunk in flight (the batch in flight, for adapters that report each batch). Failed responses are never stored: they are retried on the next run.
A damaged, locked or foreign file is a :class:`~lalm_eval.sqlite_store.StoreError` naming it (a
damaged one is set aside and its readable rows kept, see :mod:`lalm_eval.sqlite_store`); no API
key is ever stored (:mod:`lalm_eval.redaction`).

:class:`CachedAdapter` puts the cache in front of any :class:`~lalm_eval.api.Adapter`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Iterable, Sequence

import numpy as np

from lalm_eval.api import AUDIO_SR, Adapter, Request, Response
from lalm_eval.audio.io import audio_hash
from lalm_eval.errors import ConfigError, LalmEvalError
from lalm_eval.jsonl import json_default
from lalm_eval.sqlite_store import SqliteStore

KEY_VERSION = 1  # bump when the key's recipe changes, so old entries are never served


def canonical_json(value) -> str:
    """JSON with sorted keys and no whitespace: the same value gives the same bytes everywhere."""
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=json_default
        )
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"cache key: cannot serialise {value!r:.200} ({exc})") from None


def request_key(
    model_identity: dict,
    task_hash: str,
    doc_id,
    audios: Sequence[np.ndarray],
    messages,
    gen_kwargs: dict,
    audio_ids: Sequence[str] | None = None,
) -> str:
    """SHA-256 hex digest of the model identity, task hash, doc id, audio hashes, messages and
    generation kwargs. Audio enters through :func:`~lalm_eval.audio.io.audio_hash` of the decoded
    16 kHz samples, so different clips under the same prompt never share a key — or, when the
    caller gives ``audio_ids`` (content hashes of the encoded bytes, see :func:`encoded_audio_id`),
    through those, so a cached request is found without decoding its audio."""
    payload = {
        "v": KEY_VERSION,
        "model": model_identity,
        "task_hash": task_hash,
        "doc_id": doc_id,
        "audio": list(audio_ids) if audio_ids is not None else [audio_hash(a, AUDIO_SR) for a in audios],
        "messages": list(messages),
        "gen_kwargs": gen_kwargs,
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def encoded_audio_id(data: bytes) -> str:
    """Content hash of encoded audio bytes (a different namespace from decoded-sample hashes)."""
    return "bytes-sha256:" + hashlib.sha256(data).hexdigest()


def key_of(request: Request, model_identity: dict, task_hash: str | None = None) -> str:
    """:func:`request_key` of a :class:`Request` (``task_hash`` defaults to the task name)."""
    return request_key(
        model_identity,
        task_hash if task_hash is not None else request.task,
        request.doc_id,
        request.audios,
        request.messages,
        request.gen_kwargs,
    )


def commit_chunk(batch_size) -> int:
    """How many misses :class:`CachedAdapter` commits at a time for a run at ``batch_size``."""
    return max(64, 8 * int(batch_size) if str(batch_size).isdigit() else 64)


def aligned_chunk(chunk: int, commit: int) -> int:
    """``chunk``, above ``commit`` rounded up to a multiple of it: a stream of such chunks hands the
    inner adapter the same calls (and so the same batches) as one unchunked call."""
    return -(-chunk // commit) * commit if chunk > commit else chunk


class ResponseCache(SqliteStore):
    """Successful responses by request key, in a SQLite file shared by processes."""

    TABLE, KIND = "responses", "response cache"
    COLUMNS = (("text", "TEXT"), ("error", "TEXT"), ("created", "REAL"), ("meta", "TEXT"))

    def get_many(self, keys: Iterable[str]) -> dict[str, Response]:
        """The stored responses among ``keys`` (absent keys are simply missing from the dict),
        with the metadata stored beside them (usage, model id, audio seconds heard)."""
        return {
            key: Response(text=text, error=error, cached=True, meta=json.loads(meta) if meta else {})
            for key, text, error, meta in self._select(keys, ["text", "error", "meta"])
        }

    def put_many(self, items: Iterable[tuple[str, Response]]) -> int:
        """Store the successful responses among ``(key, response)`` pairs and commit at once.

        Responses without text or with an error are skipped (so they are retried next run).
        Returns how many were stored.
        """
        now = time.time()
        rows = []
        for key, resp in items:
            if not key:
                raise ValueError("response cache: empty request key")
            if resp.text is not None and resp.error is None:
                rows.append((key, resp.text, None, now, canonical_json(resp.meta) if resp.meta else None))
        return self._insert(rows)


class MetricValueCache(ResponseCache):
    """Metric values (e.g. BERTScore F1 as text) by key: the response cache's table in its own file
    (``metric_values.sqlite``), named as what it is in every message."""

    KIND = "metric-value cache"


class CachedAdapter(Adapter):
    """Any adapter with the response cache in front.

    Requests whose key is in the cache are answered from it (``cached=True``); only the misses
    reach the inner adapter, ``chunk_size`` at a time, and each chunk's successes are committed
    before the next starts — or each batch's, as it finishes, from an adapter that reports its
    batches (an ``on_answers`` attribute, :class:`~lalm_eval.models.hf_base.HFAudioAdapter`), so
    that a Ctrl-C or a kill loses the batch in flight only (a commit costs about 0.4 ms). A request without a ``key`` gets one from :func:`request_key`
    (``task_hashes`` maps task names to hashes; the task name stands in when absent). Requests
    sharing a key within one call are generated once.

    Counters: ``hits`` (served from the cache file), ``misses`` (not served from it),
    ``n_generated`` (requests handed to the inner adapter).

    The cache owns the alignment of the inner adapter's batches: :meth:`for_batch_size` commits
    :func:`commit_chunk` misses at a time, and :func:`aligned_chunk` rounds a caller's chunk of
    requests to a multiple of it, so that a caller streaming its requests in chunks hands the inner
    adapter the same calls as one that does not. ``known_missing``: keys the caller looked up already and
    did not find (the evaluator's scan), not read from the file again.
    """

    def __init__(
        self, adapter: Adapter, cache: ResponseCache, chunk_size: int = 32, task_hashes: dict[str, str] | None = None
    ):
        super().__init__()
        if chunk_size < 1:
            raise ConfigError(f"CachedAdapter: chunk_size must be >= 1, got {chunk_size}")
        self.inner, self.cache, self.chunk_size = adapter, cache, chunk_size
        self.task_hashes = dict(task_hashes or {})
        self.name, self.MULTI_AUDIO = adapter.name, adapter.MULTI_AUDIO
        self.hits = self.misses = 0
        self._identity: dict | None = None
        self.known_missing: set[str] = set()

    @classmethod
    def for_batch_size(cls, adapter: Adapter, cache: ResponseCache, batch_size) -> CachedAdapter:
        """The cache in front of ``adapter`` for a run at ``batch_size`` (``--batch_size``)."""
        return cls(adapter, cache, chunk_size=commit_chunk(batch_size))

    def identity(self) -> dict:
        if self._identity is None:
            self._identity = self.inner.identity()
        return self._identity

    def keyed(self, request: Request) -> Request:
        """``request`` with its cache key set (kept when the evaluator already set one)."""
        if request.key:
            return request
        return dataclasses.replace(request, key=key_of(request, self.identity(), self.task_hashes.get(request.task)))

    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        requests = [self.keyed(r) for r in requests]
        found = self.cache.get_many(r.key for r in requests if r.key not in self.known_missing)
        todo: dict[str, Request] = {}
        for r in requests:
            if r.key not in found:
                todo.setdefault(r.key, r)
        n_hits = sum(r.key in found for r in requests)
        self.hits += n_hits
        self.misses += len(requests) - n_hits
        fresh: dict[str, Response] = {}
        pending = list(todo.values())
        stored: set[str] = set()

        def keep(pairs) -> None:  # the inner adapter's finished batch, committed at once
            rows = [(r.key, resp) for r, resp in pairs if r.key and r.key not in stored]
            self.cache.put_many(rows)
            stored.update(key for key, _ in rows)

        hook = "on_answers" in vars(self.inner)  # adapters that report each finished batch (hf_base)
        previous = self.inner.on_answers if hook else None
        if hook:
            self.inner.on_answers = keep
        try:
            for i in range(0, len(pending), self.chunk_size):
                chunk = pending[i : i + self.chunk_size]
                out = self.inner.generate(chunk, batch_size)
                if len(out) != len(chunk):
                    raise LalmEvalError(
                        f"adapter {self.inner.name!r} returned {len(out)} responses for {len(chunk)} requests"
                    )
                self.n_generated += len(chunk)
                pairs = [(r.key, resp) for r, resp in zip(chunk, out)]
                self.cache.put_many([(key, resp) for key, resp in pairs if key not in stored])
                fresh.update(pairs)
        finally:
            if hook:
                self.inner.on_answers = previous
        return [found[r.key] if r.key in found else fresh[r.key] for r in requests]
