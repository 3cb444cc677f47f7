"""The contracts between the harness's stages: what a task hands a model adapter, and back.

task (``lalm_eval.tasks``) → :class:`Request` → adapter (``lalm_eval.models``) → :class:`Response`
→ metrics. Audio travels as decoded 16 kHz mono float32 arrays; chat messages follow the
Hugging Face chat-template convention, with one ``{"type": "audio"}`` content part per audio,
in the order of ``Request.audios``.
"""

from __future__ import annotations

import abc
import dataclasses

import numpy as np

AUDIO_SR = 16_000


@dataclasses.dataclass(frozen=True)
class Request:
    task: str
    doc_id: int
    audios: tuple[np.ndarray, ...]  # 16 kHz mono float32, in the order of the audio parts
    messages: tuple[dict, ...]  # [{"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": ...}]}]
    gen_kwargs: dict  # exactly what the task and CLI ask for (max_new_tokens, do_sample, until, ...)
    key: str = ""  # cache key, set by the evaluator (model identity, task hash, doc, audio hash, prompt, kwargs)

    @property
    def audio_seconds(self) -> float:
        return sum(len(a) for a in self.audios) / AUDIO_SR


@dataclasses.dataclass(frozen=True)
class Response:
    text: str | None  # None when generation failed
    error: str | None = None  # the exception, when it failed even alone (never scored as "")
    cached: bool = False


class Adapter(abc.ABC):
    """A model behind the harness. Subclasses register with ``lalm_eval.models.MODELS``.

    ``generate`` does its own batching (by audio duration, capped by count and total seconds)
    and must return one :class:`Response` per request, in order. A batch that raises is retried
    sample by sample; a sample that still fails gets ``Response(None, error)``.
    """

    #: name in the registry and results
    name: str = "adapter"
    #: adapters that accept several audios per request (enrollment clips + test audio)
    MULTI_AUDIO: bool = True

    def __init__(self) -> None:
        self.n_generated = 0  # requests that reached the model (not served by the cache)

    @abc.abstractmethod
    def identity(self) -> dict:
        """What makes outputs reproducible: registry name, weights id/hash, dtype, … (cache key)."""

    @abc.abstractmethod
    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        """One response per request, in order."""
