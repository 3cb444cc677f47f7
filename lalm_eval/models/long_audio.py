"""Audio longer than a model hears: refused, truncated or chunked — always on the record.

Every adapter declares its limit (:attr:`lalm_eval.api.Adapter.AUDIO_LIMIT_S`, per audio part or
per request) and takes the model arg ``long_audio`` (one of
:data:`lalm_eval.api.LONG_AUDIO_POLICIES`):

``refuse``
    a request with audio over the limit is not sent; it fails as ``audio_over_limit`` (counted,
    never scored). The default of the API adapters, whose limit is a request size.
``truncate``
    each audio part keeps its first ``limit`` seconds (per request: parts are kept in order until
    the budget is spent, and the part that crosses it is cut). What Whisper-style encoders do on
    their own (Qwen2-Audio's feature extractor cuts at 30 s), made explicit: the default of the
    local models.
``chunk``
    each audio part over the limit becomes consecutive parts of at most ``limit`` seconds, each an
    audio part of its own in the same place of the message (the model hears everything, as several
    clips). Only for per-audio limits.

Whatever the policy, :func:`fit_request` returns the metadata every sample records:
``audio_s`` (seconds in the request), ``seen_s`` (seconds the model is given) and ``truncated``.
The policy changes outputs, so adapters put it in their ``identity()``.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from lalm_eval.api import AUDIO_SR, LONG_AUDIO_POLICIES, Request
from lalm_eval.errors import ConfigError, LalmEvalError


class LongAudioError(LalmEvalError):
    """A request's audio is over the model's limit and the policy is ``refuse``."""


def resolve_policy(value: str | None, default: str, scope: str, where: str) -> str:
    """The ``long_audio`` model arg checked against the policies (``chunk`` needs a per-audio limit)."""
    policy = str(value).strip().lower() if value not in (None, "") else default
    if policy not in LONG_AUDIO_POLICIES:
        raise ConfigError(f"{where}: model arg long_audio={value!r}; choose one of {', '.join(LONG_AUDIO_POLICIES)}")
    if policy == "chunk" and scope != "per_audio":
        raise ConfigError(
            f"{where}: long_audio=chunk needs a per-audio limit; this model's limit is per request "
            "(use refuse or truncate)"
        )
    return policy


def _audio_part_positions(messages) -> list[tuple[int, int]]:
    return [
        (m, p)
        for m, msg in enumerate(messages)
        if isinstance(msg.get("content"), (list, tuple))
        for p, part in enumerate(msg["content"])
        if isinstance(part, dict) and part.get("type") == "audio"
    ]


def _replace_parts(messages, pieces_per_audio: list[int]) -> tuple[dict, ...]:
    """Messages with the k-th audio part repeated ``pieces_per_audio[k]`` times in its place."""
    counts = iter(pieces_per_audio)
    out = []
    for msg in messages:
        content = msg.get("content")
        if not isinstance(content, (list, tuple)):
            out.append(msg)
            continue
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "audio":
                parts += [dict(part)] * next(counts, 1)
            else:
                parts.append(part)
        out.append({**msg, "content": parts})
    return tuple(out)


def fit_request(request: Request, limit_s: float | None, scope: str, policy: str) -> tuple[Request, dict]:
    """``(request as the model gets it, {"audio_s", "seen_s", "truncated"})`` under ``policy``.

    Raises :class:`LongAudioError` under ``refuse`` when the audio is over ``limit_s``. Without a
    limit, or within it, the request is returned unchanged.
    """
    lengths = [len(a) for a in request.audios]
    total = sum(lengths)
    meta = {"audio_s": round(total / AUDIO_SR, 3), "seen_s": round(total / AUDIO_SR, 3), "truncated": False}
    if limit_s is None or not request.audios:
        return request, meta
    cap = int(round(float(limit_s) * AUDIO_SR))
    over = any(n > cap for n in lengths) if scope == "per_audio" else total > cap
    if not over:
        return request, meta
    where = f"task {request.task!r} doc {request.doc_id}"
    longest = max(lengths) if scope == "per_audio" else total
    what = "an audio part" if scope == "per_audio" else "the request's audio"
    if policy == "refuse":
        raise LongAudioError(
            f"{where}: {what} is {longest / AUDIO_SR:.1f} s, over the model's limit of "
            f"{limit_s:g} s (long_audio=refuse; use truncate or chunk to send it anyway)"
        )
    if policy == "chunk":
        if scope != "per_audio":
            raise ConfigError(f"{where}: long_audio=chunk needs a per-audio limit")
        pieces, counts = [], []
        for audio in request.audios:
            n = max(1, math.ceil(len(audio) / cap))
            pieces += [np.asarray(audio[i * cap : (i + 1) * cap]) for i in range(n)]
            counts.append(n)
        if len(_audio_part_positions(request.messages)) != len(request.audios):
            raise ConfigError(
                f"{where}: {len(_audio_part_positions(request.messages))} audio parts in the "
                f"messages, {len(request.audios)} audios"
            )
        fitted = dataclasses.replace(request, audios=tuple(pieces), messages=_replace_parts(request.messages, counts))
        return fitted, {**meta, "chunks": counts}
    if scope == "per_audio":
        audios = tuple(np.asarray(a[:cap]) for a in request.audios)
    else:
        audios, left = [], cap
        for audio in request.audios:
            if left <= 0:
                raise LongAudioError(
                    f"{where}: the audio parts before the last fill the model's limit of "
                    f"{limit_s:g} s; nothing of the later parts would be heard"
                )
            audios.append(np.asarray(audio[:left]))
            left -= len(audios[-1])
        audios = tuple(audios)
    seen = sum(len(a) for a in audios)
    return dataclasses.replace(request, audios=audios), {**meta, "seen_s": round(seen / AUDIO_SR, 3), "truncated": True}
