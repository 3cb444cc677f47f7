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
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from lalm_eval.errors import ConfigError, LalmEvalError

if TYPE_CHECKING:
    from lalm_eval.judges.base import JudgeResult

KEY_VERSION = 1  # bump when the key's recipe changes, so old entries are never served
BUSY_TIMEOUT_S = 120.0
_SQL_VARS = 500  # keys per SELECT ... IN (...)
#: the judge-LLM settings that enter a verdict's key (those present in ``llm.settings``)
OUTPUT_SETTINGS = ("backend", "model", "weights", "temperature", "max_tokens", "dtype", "top_p", "seed")


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
    payload = {"v": KEY_VERSION, "judge": judge, "prompt_version": prompt_version,
               "messages": messages, "llm": output_settings(llm_settings)}
    return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()


class JudgeCache:
    """Successful judge verdicts by key, in a SQLite file shared by processes and threads."""

    def __init__(self, path: str | Path, busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(str(self.path), timeout=busy_timeout_s, isolation_level=None,
                                       check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = NORMAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS verdicts ("
                             "key TEXT PRIMARY KEY, judge TEXT, score REAL, detail TEXT, created REAL)")
        except sqlite3.DatabaseError as exc:
            raise LalmEvalError(f"{self.path}: cannot open the judge cache ({exc})") from exc

    def get_many(self, keys: Iterable[str]) -> dict[str, "JudgeResult"]:
        """The stored verdicts among ``keys`` (``cached=True``); absent keys are missing."""
        from lalm_eval.judges.base import JudgeResult

        keys = list(dict.fromkeys(keys))
        found: dict[str, JudgeResult] = {}
        with self._lock:
            for i in range(0, len(keys), _SQL_VARS):
                chunk = keys[i:i + _SQL_VARS]
                rows = self._db.execute(
                    f"SELECT key, score, detail FROM verdicts WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk).fetchall()
                for key, score, detail in rows:
                    found[key] = JudgeResult(score=score, detail=json.loads(detail), cached=True)
        return found

    def put_many(self, items: Iterable[tuple[str, "JudgeResult", str]]) -> int:
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
        if not rows:
            return 0
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany("INSERT OR REPLACE INTO verdicts (key, judge, score, detail, created) "
                                     "VALUES (?, ?, ?, ?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return len(rows)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]

    def __contains__(self, key: str) -> bool:
        return bool(self.get_many([key]))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "JudgeCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
