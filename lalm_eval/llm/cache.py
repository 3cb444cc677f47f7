"""A reply cache in front of any text LLM: a rebuild never asks the LLM twice for the same chat.

:class:`CachedTextLLM` wraps a :class:`~lalm_eval.llm.base.TextLLM`; a chat's key is a SHA-256
over canonical JSON of the chat, the per-call settings and the inner LLM's settings that change
its replies (:data:`lalm_eval.judges.cache.OUTPUT_SETTINGS`'s recipe: never the URL,
concurrency or timeouts). Replies are kept in one SQLite file (:class:`ReplyCache`, WAL mode,
one transaction per batch), so a killed build resumes with what was already answered. Used by
the builders' LLM steps (PALM caption references, Table 24); ``settings`` are the inner LLM's,
so what a builder records is unchanged by the cache.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from lalm_eval.llm.base import LLMError, Messages, TextLLM, check_batch
from lalm_eval.sqlite_store import SqliteStore

KEY_VERSION = 1
#: the settings of the inner LLM that enter a reply's key (those present)
OUTPUT_SETTINGS = (
    "backend",
    "model",
    "weights",
    "pretrained",
    "temperature",
    "max_tokens",
    "max_new_tokens",
    "dtype",
    "top_p",
    "top_k",
    "min_p",
    "presence_penalty",
    "frequency_penalty",
    "repetition_penalty",
    "seed",
)


class ReplyCache(SqliteStore):
    TABLE, KIND = "replies", "text-LLM reply cache"
    COLUMNS = (("reply", "TEXT"), ("created", "REAL"))

    def get_many(self, keys) -> dict[str, str]:
        return {key: reply for key, reply in self._select(keys, ["reply"])}

    def put_many(self, items) -> int:
        now = time.time()
        return self._insert([(key, reply, now) for key, reply in items])


def reply_key(chat: Messages, llm_settings: dict, call_settings: dict) -> str:
    payload = {
        "v": KEY_VERSION,
        "chat": chat,
        "call": call_settings,
        "llm": {k: llm_settings[k] for k in OUTPUT_SETTINGS if k in llm_settings},
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedTextLLM(TextLLM):
    """``llm`` with the replies of ``path`` (a :class:`ReplyCache` file) served first.

    Counters: ``hits`` (chats answered from the file), ``asked`` (chats sent to ``llm``).
    """

    def __init__(self, llm: TextLLM, path: str | Path):
        if isinstance(llm, CachedTextLLM):
            llm = llm.inner
        self.inner, self.cache = llm, ReplyCache(path)
        self.hits = self.asked = 0

    def __repr__(self) -> str:
        return f"CachedTextLLM({self.inner!r}, {str(self.cache.path)!r})"

    @property
    def settings(self) -> dict:
        return self.inner.settings

    def complete(self, batch: list[Messages], **settings: Any) -> list[str]:
        check_batch(batch)
        llm_settings = self.inner.settings
        keys = [reply_key(chat, llm_settings, settings) for chat in batch]
        found = self.cache.get_many(keys)
        todo = list(dict.fromkeys(k for k in keys if k not in found))
        if todo:
            first = {k: batch[keys.index(k)] for k in todo}
            replies = self.inner.complete([first[k] for k in todo], **settings)
            if len(replies) != len(todo):
                raise LLMError(f"{type(self.inner).__name__} returned {len(replies)} replies for {len(todo)} chats")
            self.cache.put_many(zip(todo, replies))
            found.update(zip(todo, replies))
        self.asked += len(todo)
        self.hits += len(batch) - len(todo)
        return [found[k] for k in keys]
