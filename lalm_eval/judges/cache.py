"""Judge cache: a rescoring never asks the judge LLM twice for the same verdict.

A verdict's key is a SHA-256 over canonical JSON of everything that decides it: the judge's
name and prompt version, the rendered prompt text, and the judge LLM's settings that change its
output (:data:`OUTPUT_SETTINGS`: backend, model, weights fingerprint, temperature, max_tokens,
dtype, …; never the server URL, concurrency or timeouts, which do not change a reply).

:class:`JudgeCache` keeps successful verdicts (score + parsed detail) in one SQLite file in WAL
mode with a busy timeout, so several processes may read it while one writes. Every
:meth:`JudgeCache.put_many` commits at once, so a killed run loses at most the chunk in flight.
Failed verdicts are never stored: the next run asks again.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Iterable

from lalm_eval.errors import ConfigError
from lalm_eval.judges.verdicts import JudgeResult
from lalm_eval.sqlite_store import SqliteStore

KEY_VERSION = 1  # bump when the key's recipe changes, so old entries are never served
#: the judge-LLM settings that enter a verdict's key (those present in ``llm.settings``)
OUTPUT_SETTINGS = (
    "backend",
    "model",
    "weights",
    "temperature",
    "max_tokens",
    "dtype",
    "top_p",
    "seed",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
)


def _canonical(value) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"judge cache key: cannot serialise {value!r:.200} ({exc})") from None


def output_settings(llm_settings: dict) -> dict:
    """The part of a judge LLM's ``settings`` that changes its replies."""
    return {k: llm_settings[k] for k in OUTPUT_SETTINGS if k in llm_settings}


def judge_key(judge: str, prompt_version: str, messages, llm_settings: dict) -> str:
    """SHA-256 hex digest of judge name, prompt version, rendered messages and output settings."""
    payload = {
        "v": KEY_VERSION,
        "judge": judge,
        "prompt_version": prompt_version,
        "messages": messages,
        "llm": output_settings(llm_settings),
    }
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


class JudgeCache(SqliteStore):
    """Successful judge verdicts by key, in a SQLite file shared by processes and threads."""

    TABLE, KIND = "verdicts", "judge cache"
    COLUMNS = (("judge", "TEXT"), ("score", "REAL"), ("detail", "TEXT"), ("created", "REAL"))

    def get_many(self, keys: Iterable[str]) -> dict[str, JudgeResult]:
        """The stored verdicts among ``keys`` (``cached=True``); absent keys are missing."""
        return {
            key: JudgeResult(score=score, detail=json.loads(detail), cached=True)
            for key, score, detail in self._select(keys, ["score", "detail"])
        }

    def put_many(self, items: Iterable[tuple[str, JudgeResult, str]]) -> int:
        """Store the successful verdicts among ``(key, result, judge_name)`` and commit at once.

        Results with an ``error`` are skipped (so they are asked again next run). Returns how
        many were stored.
        """
        now = time.time()
        rows = []
        for key, result, judge in items:
            if not key:
                raise ValueError("judge cache: empty key")
            if result.error is not None:
                continue
            if result.score is not None and not math.isfinite(result.score):
                raise ValueError(f"judge cache: non-finite score {result.score!r}")
            rows.append((key, judge, result.score, _canonical(result.detail), now))
        return self._insert(rows)
