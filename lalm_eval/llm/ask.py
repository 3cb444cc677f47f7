"""Ask a text LLM for one strict JSON object per prompt, retrying an invalid reply once.

Shared by every LLM-driven step (profile and description generation, QA generation, QA
filtering). A prompt is anything whose ``str()`` is the prompt text and whose ``retry(error)``
gives the follow-up message after an invalid reply (a rendered Jinja2 template module with a
``retry`` macro is exactly that). A reply still invalid after the retry raises
:class:`~lalm_eval.errors.DataError` naming the item — never a silent default.
"""

from __future__ import annotations

from collections.abc import Callable

from lalm_eval.errors import DataError
from lalm_eval.llm.base import LLMError, TextLLM, parse_json_reply, strip_thinking


class ReplyInvalid(ValueError):
    """A parsed reply that breaks the expected shape; ``field`` names the offending key."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def ask_json(llm: TextLLM, prompts: dict, validate: Callable, what: str) -> dict:
    """Send every prompt as one batch, validate, retry the invalid ones once (one batch)."""
    return _ask(llm, prompts, lambda key, reply: validate(parse_json_reply(reply)), what)


def ask_text(llm: TextLLM, prompts: dict, validate: Callable, what: str) -> dict:
    """:func:`ask_json` for prompts whose answer is plain text in a format of their own (a
    paper's prompt transcribed as printed): ``validate(key, text)`` gets the prompt's key and the
    reply without its thinking trace (:func:`~lalm_eval.llm.base.strip_thinking`) and returns the
    value or raises :class:`ReplyInvalid`."""

    def parse(key, reply: str):
        text = strip_thinking(reply)
        if not text:
            raise ReplyInvalid("the reply is empty (or only a thinking trace)")
        return validate(key, text)

    return _ask(llm, prompts, parse, what)


def _ask(llm: TextLLM, prompts: dict, validate: Callable, what: str) -> dict:
    ids = list(prompts)
    chats = {key: [{"role": "user", "content": str(prompts[key]).strip()}] for key in ids}
    results, failed = {}, []
    replies = llm.complete([chats[key] for key in ids]) if ids else []
    if len(replies) != len(ids):
        raise LLMError(f"{type(llm).__name__} returned {len(replies)} replies for {len(ids)} chats")
    for key, reply in zip(ids, replies):
        try:
            results[key] = validate(key, reply)
        except (LLMError, ReplyInvalid) as exc:
            failed.append(key)
            chats[key] = chats[key] + [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": str(prompts[key].retry(str(exc))).strip()},
            ]
    for key, reply in zip(failed, llm.complete([chats[key] for key in failed]) if failed else []):
        try:
            results[key] = validate(key, reply)
        except (LLMError, ReplyInvalid) as exc:
            raise DataError(
                f"{what} {key}",
                f"invalid LLM reply after one retry: {exc}; reply began {reply[:200]!r}",
                field=getattr(exc, "field", None),
            ) from None
    return {key: results[key] for key in ids}
