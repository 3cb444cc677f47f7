"""Speaker embeddings behind one interface, batched and cached by audio content.

``get_speaker_encoder("resemblyzer")`` (default; the ``resemblyzer`` wheel ships real GE2E
weights, so it works offline) or ``get_speaker_encoder("ecapa", source=<dir or hub id>)``
(SpeechBrain ECAPA-TDNN, optional extra ``lalm-eval[ecapa]``). Every encoder returns
L2-normalised float32 embeddings ``[n, dim]``, so cosine similarity is a dot product.

The cache keys an embedding by encoder identity and the content hash of the 16 kHz audio; with
``cache_dir`` it persists across processes (one ``.npy`` per clip). Under a cache root (lalm-eval's
``--cache_dir``, ``$LALM_EVAL_CACHE``) the folder is :data:`EMBEDDINGS_FOLDER`, one for every
command: a PALM build, ``palm-bench corpus-info`` and the ``cascade``'s enrollment embed the same
train-split clips, and each reads what another already computed.

What an encoder cannot embed is said once, by its class: ``check_clip(audio)`` returns the reason
(no samples, NaN, all zeros; for resemblyzer also "no speech left after its voice-activity
trimming") or ``None``, without loading the model, so a corpus reader's screening
(``palm_bench.corpus.screen``) and the encoder agree on every clip. ``embed(..., names=)`` names
the file of a clip the model still refuses (:class:`~lalm_eval.errors.AudioError`).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lalm_eval.audio.io import TARGET_SR, audio_hash, resample
from lalm_eval.errors import AudioError
from lalm_eval.registry import Registry

SPEAKER_ENCODERS = Registry("speaker encoder", entry_point_group="lalm_eval.speaker_encoders")
DEFAULT_SPEAKER_ENCODER = "resemblyzer"
#: speaker embeddings' folder under a cache root (``<root>/embeddings/<encoder name>/``), shared
#: by every command that embeds
EMBEDDINGS_FOLDER = "embeddings"


class UnusableClip(ValueError):
    """Raised by an encoder's ``_embed_batch``: clip ``index`` of the batch cannot be embedded."""

    def __init__(self, index: int, reason: str):
        super().__init__(reason)
        self.index, self.reason = index, reason


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
        """Embed 16 kHz clips; returns ``[len(audios), dim]`` (need not be normalised). A clip it
        cannot embed raises :class:`UnusableClip` with its index in ``audios``."""

    @classmethod
    def check_clip(cls, audio: np.ndarray) -> str | None:
        """Why this encoder cannot embed ``audio`` (16 kHz mono float), or ``None`` when it can.
        Needs no model (a class method), so readers can screen a corpus before any embedding."""
        audio = np.asarray(audio)
        if audio.size == 0:
            return "audio holds no samples"
        if not np.all(np.isfinite(audio)):
            return "audio contains NaN or infinite samples"
        if not np.any(audio):
            return "audio is silent (every sample is zero)"
        return None

    def embed(
        self, audios: Sequence[np.ndarray], sr: int = TARGET_SR, names: Sequence[str] | None = None
    ) -> np.ndarray:
        """Embeddings ``[n, dim]`` of ``audios`` (any rate ``sr``), unit-norm, cached. A clip the
        model refuses is an :class:`AudioError` naming it (``names[i]``, e.g. its file)."""
        clips = [resample(np.asarray(a, dtype=np.float32), sr, TARGET_SR) for a in audios]
        keys = [audio_hash(c, TARGET_SR) for c in clips]
        out: list[np.ndarray | None] = [self._lookup(k) for k in keys]
        missing = [i for i, e in enumerate(out) if e is None]
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start : start + self.batch_size]
            try:
                embs = np.asarray(self._embed_batch([clips[i] for i in chunk]), dtype=np.float32)
            except UnusableClip as exc:
                i = chunk[exc.index]
                name = names[i] if names is not None else f"clip {i} of {len(clips)}"
                raise AudioError(
                    f"{name}: the {self.name} speaker encoder cannot embed it ({exc.reason}); "
                    "remove the clip or replace it with one that holds speech"
                ) from None
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
