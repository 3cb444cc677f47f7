"""Speaker embeddings behind one interface, batched and cached by audio content.

``get_speaker_encoder("resemblyzer")`` (default; the ``resemblyzer`` wheel ships real GE2E
weights, so it works offline) or ``get_speaker_encoder("ecapa", source=<dir or hub id>)``
(SpeechBrain ECAPA-TDNN, optional extra ``lalm-eval[ecapa]``). Every encoder returns
L2-normalised float32 embeddings ``[n, dim]``, so cosine similarity is a dot product.

The cache keys an embedding by encoder identity and the content hash of the 16 kHz audio; with
``cache_dir`` it persists across processes (one ``.npy`` per clip).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lalm_eval.audio.io import TARGET_SR, audio_hash, resample
from lalm_eval.registry import Registry

SPEAKER_ENCODERS = Registry("speaker encoder", entry_point_group="lalm_eval.speaker_encoders")
DEFAULT_SPEAKER_ENCODER = "resemblyzer"


class SpeakerEncoder(abc.ABC):
    """Maps 16 kHz mono clips to unit-norm speaker embeddings."""

    #: identity recorded in reports and cache keys, e.g. ``resemblyzer-ge2e``
    name: str = "speaker-encoder"
    dim: int = 0

    def __init__(self, cache_dir: str | Path | None = None, batch_size: int = 64):
        self.batch_size = batch_size
        self.cache_dir = Path(cache_dir) / self.name if cache_dir else None
        self._memory: dict[str, np.ndarray] = {}
        self.n_computed = 0  # clips embedded by the model (not served from the cache)

    @abc.abstractmethod
    def _embed_batch(self, audios: list[np.ndarray]) -> np.ndarray:
        """Embed 16 kHz clips; returns ``[len(audios), dim]`` (need not be normalised)."""

    def embed(self, audios: Sequence[np.ndarray], sr: int = TARGET_SR) -> np.ndarray:
        """Embeddings ``[n, dim]`` of ``audios`` (any rate ``sr``), unit-norm, cached."""
        clips = [resample(np.asarray(a, dtype=np.float32), sr, TARGET_SR) for a in audios]
        keys = [audio_hash(c, TARGET_SR) for c in clips]
        out: list[np.ndarray | None] = [self._lookup(k) for k in keys]
        missing = [i for i, e in enumerate(out) if e is None]
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            embs = np.asarray(self._embed_batch([clips[i] for i in chunk]), dtype=np.float32)
            embs /= np.maximum(np.linalg.norm(embs, axis=1, keepdims=True), 1e-12)
            self.n_computed += len(chunk)
            for i, emb in zip(chunk, embs):
                out[i] = emb
                self._store(keys[i], emb)
        if not out:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack(out).astype(np.float32)

    def embed_one(self, audio: np.ndarray, sr: int = TARGET_SR) -> np.ndarray:
        return self.embed([audio], sr)[0]

    def _cache_path(self, key: str) -> Path | None:
        return self.cache_dir / key[:2] / f"{key}.npy" if self.cache_dir else None

    def _lookup(self, key: str) -> np.ndarray | None:
        if key in self._memory:
            return self._memory[key]
        path = self._cache_path(key)
        if path is not None and path.is_file():
            emb = np.load(path)
            self._memory[key] = emb
            return emb
        return None

    def _store(self, key: str, emb: np.ndarray) -> None:
        self._memory[key] = emb
        path = self._cache_path(key)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp.npy")
            np.save(tmp, emb)
            tmp.replace(path)  # atomic: a killed process never leaves a torn cache entry


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """Cosine similarities between rows of ``a`` and rows of ``b`` (default ``a``)."""
    a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    b = a if b is None else b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return a @ b.T


def get_speaker_encoder(name: str = DEFAULT_SPEAKER_ENCODER, **kwargs) -> SpeakerEncoder:
    """Instantiate a registered encoder (``resemblyzer``, ``ecapa`` or a plug-in's)."""
    return SPEAKER_ENCODERS.get(name)(**kwargs)


SPEAKER_ENCODERS.register("resemblyzer", "lalm_eval.audio.speaker_backends:ResemblyzerEncoder")
SPEAKER_ENCODERS.register("ecapa", "lalm_eval.audio.speaker_backends:EcapaEncoder")
