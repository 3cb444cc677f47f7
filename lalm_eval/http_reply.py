"""What an HTTP client says about a reply that is not the protocol's JSON: an HTML page, an empty
body, invalid JSON, JSON that is not an object, an error object under status 200, an object
without the expected key. Shared by the API adapters (:mod:`lalm_eval.models.api_base`) and the
text-LLM client (:mod:`lalm_eval.llm.openai_http`); quotes are short, on one line, without ``;``
and with every secret redacted (:func:`lalm_eval.redaction.redact`)."""

from __future__ import annotations

import dataclasses
import json

from lalm_eval import redaction

SNIPPET = 160  # characters of a bad reply quoted in its failure message


@dataclasses.dataclass
class HTTPReply:
    """An HTTP reply as received: status, content type, body, ``Location`` header."""

    status: int
    content_type: str
    body: bytes
    location: str = ""

    @property
    def size(self) -> int:
        return len(self.body)


def find_cause(exc: BaseException, kind: type | str) -> BaseException | None:
    """``exc`` or the first exception of type ``kind`` (a class, or a class name) it was raised
    from (SDKs wrap what a response hook raises in their own connection errors)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(kind, str) and type(exc).__name__ == kind or isinstance(kind, type) and isinstance(exc, kind):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _quote(data: bytes) -> str:
    text = " ".join(data[: 4 * SNIPPET].decode("utf-8", "replace").split())
    text = redaction.redact(text).replace(";", ",")
    return repr(text[:SNIPPET] + ("…" if len(text) > SNIPPET else ""))


def describe_reply(reply: HTTPReply | None, expected: str) -> str | None:
    """The one-line description of a reply that is not the protocol's JSON (see the module
    docstring), or None when ``reply`` is None or a JSON object with ``expected``."""
    if reply is None:
        return None
    status = f"HTTP {reply.status}" + (f", {reply.content_type.split(';')[0]}" if reply.content_type else "")
    if not reply.body.strip():
        return f"the server answered an empty body ({status}), not JSON"
    start = reply.body[:64].lstrip().lower()
    if "html" in reply.content_type.lower() or start.startswith(b"<"):
        return f"the server answered HTML, not JSON ({status}, {reply.size} bytes): {_quote(reply.body)}"
    try:
        value = json.loads(reply.body)
    except ValueError as exc:
        return f"the server's reply is not valid JSON ({exc}, {status}): {_quote(reply.body)}"
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__
        return f"the server answered JSON that is not an object ({kind}, {status}): {_quote(reply.body)}"
    if isinstance(value.get("error"), (dict, str)) and expected not in value:
        error = value["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        return f"the server answered an error with {status}: {_quote(str(message).encode())}"
    if expected not in value:
        keys = ", ".join(sorted(map(str, value))[:8]) or "none"
        return f"the server's JSON has no {expected!r} (its keys: {keys}): {_quote(reply.body)}"
    return None
