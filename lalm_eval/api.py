"""The contracts between the harness's stages: what a task hands a model adapter, and back.

task (``lalm_eval.tasks``) → :class:`Request` → adapter (``lalm_eval.models``) → :class:`Response`
→ metrics. Audio travels as decoded 16 kHz mono float32 arrays; chat messages follow the
Hugging Face chat-template convention, with one ``{"type": "audio"}`` content part per audio,
in the order of ``Request.audios``.

What an adapter reports beside the text goes in :attr:`Response.meta` (JSON-able, stored in the
response cache with the text, written to the samples log and summed in the results):

``audio_s`` / ``seen_s`` / ``truncated``
    seconds of audio in the request, seconds the model was given, and whether part was cut
    (:mod:`lalm_eval.models.long_audio`; every adapter with an audio limit fills them).
``usage``
    token counts as the provider reports them: ``prompt_tokens``, ``completion_tokens``,
    ``audio_tokens`` (prompt-side audio), ``total_tokens`` — only the ones it reported.
``model``
    the model id the provider answered with (may differ from the one asked for).
``failure``
    set on a failed response (``text is None``): one of :data:`FAILURE_KINDS`, counted per kind
    in the results and the report.
``cost_usd``
    the price of the call, from the provider's usage and the price table, when one is known.
"""

from __future__ import annotations

import abc
import dataclasses

import numpy as np

AUDIO_SR = 16_000
#: kinds of failed response: a provider's refusal or content filter, audio past the model's limit
#: under ``long_audio=refuse``, audio shorter than the model can hear, a provider's 4xx that
#: retrying cannot fix, retries exhausted (429/5xx/timeouts), not run because ``--max_cost`` was
#: reached, anything else
FAILURE_KINDS = (
    "refusal",
    "content_filter",
    "audio_over_limit",
    "audio_too_short",
    "bad_request",
    "retries_exhausted",
    "budget",
    "error",
)
LONG_AUDIO_POLICIES = ("refuse", "truncate", "chunk")


@dataclasses.dataclass(frozen=True)
class Request:
    task: str
    doc_id: int
    audios: tuple[np.ndarray, ...]  # 16 kHz mono float32, in the order of the audio parts
    messages: tuple[dict, ...]  # [{"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": ...}]}]
    gen_kwargs: dict  # exactly what the task and CLI ask for (max_new_tokens, do_sample, until, ...)
    key: str = ""  # cache key, set by the evaluator (model identity, task hash, doc, audio hash, prompt, kwargs)
    #: the task's ``metadata:`` mapping (e.g. ``answer_kind``), for adapters that choose their behaviour by
    #: what a task declares, not by its name; not part of the cache key (the task hash already covers it)
    task_metadata: dict = dataclasses.field(default_factory=dict)
    #: the names of the people the prompt is about (the task's ``doc_to_subjects``), for adapters with
    #: per-speaker soft prompts; the prompt text (in the cache key) already names them
    subjects: tuple[str, ...] = ()

    @property
    def audio_seconds(self) -> float:
        return sum(len(a) for a in self.audios) / AUDIO_SR


@dataclasses.dataclass(frozen=True)
class Response:
    text: str | None  # None when generation failed
    error: str | None = None  # the exception, when it failed even alone (never scored as "")
    cached: bool = False
    meta: dict = dataclasses.field(default_factory=dict)  # see the module docstring

    @classmethod
    def failed(cls, kind: str, error: str, **meta) -> Response:
        """A failed response of one of :data:`FAILURE_KINDS` (never scored, never cached)."""
        if kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {kind!r}; one of {FAILURE_KINDS}")
        return cls(None, error=error, meta={**meta, "failure": kind})

    @property
    def failure(self) -> str | None:
        """The failure kind of a failed response (``"error"`` when the adapter named none)."""
        return None if self.text is not None else self.meta.get("failure", "error")


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
    #: the longest audio the model hears, in seconds (None: no limit known); ``AUDIO_LIMIT_SCOPE``
    #: says whether it bounds each audio part (Whisper-style encoders: 30 s) or the whole request
    #: (APIs: by request size). Instances may set their own (e.g. from a processor's config).
    AUDIO_LIMIT_S: float | None = None
    AUDIO_LIMIT_SCOPE: str = "per_audio"  # or "per_request"
    #: what happens to longer audio unless the model arg ``long_audio`` says otherwise
    LONG_AUDIO_DEFAULT: str = "truncate"

    def __init__(self) -> None:
        self.n_generated = 0  # requests that reached the model (not served by the cache)

    @abc.abstractmethod
    def identity(self) -> dict:
        """What makes outputs reproducible: registry name, weights id/hash, dtype, … (cache key)."""

    @abc.abstractmethod
    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        """One response per request, in order."""
