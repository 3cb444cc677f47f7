"""The text-LLM interface, its registry, its error and a JSON-reply parser."""

from __future__ import annotations

import abc
import json
import re
from typing import Any

from lalm_eval.errors import ConfigError, LalmEvalError
from lalm_eval.registry import Registry

Messages = list[dict]  # one chat: [{"role": "system"|"user"|"assistant", "content": str}, ...]


class LLMError(LalmEvalError, RuntimeError):
    """A text-LLM call failed (transport, HTTP status, protocol) or its reply was unusable.

    Messages name the URL and status; they never contain an API key.
    """


class TextLLM(abc.ABC):
    """A chat-completion text LLM.

    :meth:`complete` answers a batch of chats, one reply string per chat, in order. Keyword
    ``settings`` override the backend's defaults for that call (e.g. ``temperature``).
    :attr:`settings` is what a caller records to make its output reproducible (backend, model,
    temperature, max_tokens, …) — never secrets.
    """

    @abc.abstractmethod
    def complete(self, batch: list[Messages], **settings: Any) -> list[str]: ...

    @property
    @abc.abstractmethod
    def settings(self) -> dict: ...

    def complete_each(self, batch: list[Messages], **settings: Any) -> list[str | LLMError]:
        """Like :meth:`complete`, but a chat whose call failed gives its :class:`LLMError` in its
        place instead of failing the whole batch (callers that count failures per item, e.g.
        judges). This default asks the whole batch at once and, if that fails, each chat alone;
        backends that can isolate failures cheaply override it."""
        try:
            replies = self.complete(batch, **settings)
        except LLMError as exc:
            if len(batch) <= 1:
                return [exc] * len(batch)
            out: list[str | LLMError] = []
            for chat in batch:
                out.extend(self.complete_each([chat], **settings))
            return out
        if len(replies) != len(batch):
            raise LLMError(f"{type(self).__name__} returned {len(replies)} replies for {len(batch)} chats")
        return list(replies)


def check_batch(batch: list[Messages]) -> None:
    """Reject a batch that is not a list of chats of ``{"role", "content"}`` messages."""
    if not isinstance(batch, list):
        raise ConfigError(f"batch must be a list of chats, got {type(batch).__name__}")
    for i, chat in enumerate(batch):
        if not isinstance(chat, list) or not chat:
            raise ConfigError(f"batch[{i}] must be a non-empty list of messages")
        for j, msg in enumerate(chat):
            if (
                not isinstance(msg, dict)
                or not isinstance(msg.get("role"), str)
                or not isinstance(msg.get("content"), str)
            ):
                raise ConfigError(f"batch[{i}][{j}] must be a dict with string 'role' and 'content'")


TEXT_LLMS = Registry("text LLM", entry_point_group="lalm_eval.text_llms")
TEXT_LLMS.register("openai", "lalm_eval.llm.openai_http:OpenAIChatLLM")
TEXT_LLMS.register("hf", "lalm_eval.llm.transformers_lm:TransformersChatLLM")


_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)```", re.DOTALL)

#: the tag pairs reasoning models wrap their traces in: ``<think>`` (Qwen3, Qwen3-Omni-Thinking,
#: DeepSeek-R1, QwQ), ``<thinking>`` / ``<thought>`` / ``<reasoning>`` (prompted traces, Gemma-style
#: servers), ``<seed:think>`` (Seed-OSS), ``[THINK]`` (Magistral), ``<|begin_of_thought|>``
#: (OpenThoughts-style)
_TRACE_TAGS = [
    (re.escape(f"<{t}>"), re.escape(f"</{t}>")) for t in ("think", "thinking", "thought", "reasoning", "seed:think")
]
_TRACE_TAGS += [
    (re.escape("[THINK]"), re.escape("[/THINK]")),
    (re.escape("<|begin_of_thought|>"), re.escape("<|end_of_thought|>")),
]
_TRACE_BLOCK = re.compile("|".join(f"{o}.*?{c}" for o, c in _TRACE_TAGS), re.DOTALL | re.IGNORECASE)
_TRACE_OPEN = re.compile("|".join(o for o, _ in _TRACE_TAGS), re.IGNORECASE)
_TRACE_CLOSE = re.compile("|".join(c for _, c in _TRACE_TAGS), re.IGNORECASE)
#: gpt-oss "harmony" output served raw: the answer follows the final channel's message marker
_HARMONY_FINAL = "<|channel|>final<|message|>"


def strip_thinking(text: str) -> str:
    """``text`` without a reasoning model's thinking trace: every closed block (``<think>…</think>``
    and the other tags of :data:`_TRACE_TAGS`, any case), everything up to the last closing tag
    that has no opening one (the chat templates of Qwen3 thinking models put ``<think>`` in the
    prompt, so the reply starts inside the trace), and an opening tag never closed, to the end (a
    trace cut off by ``max_tokens``: nothing of the answer is left). Surrounding space is stripped."""
    if not isinstance(text, str):
        return text
    if _HARMONY_FINAL in text:
        text = text.rsplit(_HARMONY_FINAL, 1)[1]
    text = _TRACE_BLOCK.sub("", text)
    closes = list(_TRACE_CLOSE.finditer(text))
    if closes:  # an orphan closing tag: the reply began inside the trace
        text = text[closes[-1].end() :]
    opened = _TRACE_OPEN.search(text)
    if opened:  # a trace that never closed
        text = text[: opened.start()]
    return text.strip()


def parse_json_reply(text: str) -> dict:
    """The one JSON object in an LLM reply, after its thinking trace is removed
    (:func:`strip_thinking`): the whole reply, a fenced ```json block, or the first ``{...}`` that
    parses. Raises :class:`LLMError` quoting the reply's first 200 chars (and saying so when
    nothing but a trace was there)."""
    if not isinstance(text, str):
        raise LLMError(f"LLM reply is not text but {type(text).__name__}")
    raw, text = text, strip_thinking(text)
    if not text and raw.strip():
        raise LLMError(
            f"LLM reply is only a thinking trace, no answer after it (was max_tokens too small?): {raw[:200]!r}"
        )
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
        for start in (m.start() for m in re.finditer(r"\{", candidate)):
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    raise LLMError(f"no JSON object in LLM reply: {text[:200]!r}")
