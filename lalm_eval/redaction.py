"""Secret values (API keys, tokens) kept out of everything the project writes.

One function, :func:`redact` (and :func:`redact_value` for JSON-like values), is applied at every
writing point: the API adapters' answers, errors and log lines (a hostile or buggy server may echo
the ``Authorization`` header back), the text-LLM client's replies and errors, every row a
:class:`~lalm_eval.sqlite_store.SqliteStore` writes (response, judge, reply, metric-value and
file-hash caches), the results JSON, the samples JSONL and the Markdown report, and the one-line
errors of the command lines.

A value is a secret when it was :func:`register`-ed (the key an adapter or judge client resolved,
from its default variable, from ``api_key_env=NAME``, or passed as ``api_key=...``), or when it is
the value of an environment variable whose name ends in ``API_KEY``, ``_KEY``, ``TOKEN``,
``SECRET``, ``PASSWORD`` or ``PASSWD`` (``OPENAI_API_KEY``, ``GEMINI_API_KEY``,
``GOOGLE_API_KEY``, ``HF_TOKEN`` …). Values shorter than :data:`MIN_LENGTH` characters are never
treated as secrets: no provider issues such keys, and masking them would garble ordinary text.
Every occurrence becomes :data:`MASK`.
"""

from __future__ import annotations

import os
import re
import threading

MASK = "***"
MIN_LENGTH = 8
#: environment variables whose values are secrets
SECRET_NAME = re.compile(r"(?:API_?KEY|_KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)

_registered: set[str] = set()
_lock = threading.Lock()
_compiled: tuple[frozenset, re.Pattern | None] = (frozenset(), None)


def register(value: str | None) -> None:
    """Treat ``value`` as a secret from now on in this process (ignored when shorter than
    :data:`MIN_LENGTH`)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_LENGTH:
        with _lock:
            _registered.add(value.strip())


def known_secrets() -> frozenset[str]:
    """The registered values and the secret-named environment variables' values."""
    env = {v.strip() for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v.strip()) >= MIN_LENGTH}
    with _lock:
        return frozenset(env | _registered)


def _pattern() -> re.Pattern | None:
    global _compiled
    secrets = known_secrets()
    with _lock:
        if _compiled[0] != secrets:
            alternatives = sorted(secrets, key=len, reverse=True)  # the longest first: no half-masked key
            _compiled = (secrets, re.compile("|".join(map(re.escape, alternatives))) if alternatives else None)
        return _compiled[1]


def redact(text):
    """``text`` with every known secret replaced by :data:`MASK` (not a string: returned as is)."""
    if not isinstance(text, str) or not text:
        return text
    pattern = _pattern()
    return pattern.sub(MASK, text) if pattern is not None else text


def redact_value(value):
    """:func:`redact` applied to every string in ``value`` (dicts — keys too —, lists, tuples)."""
    pattern = _pattern()
    if pattern is None:
        return value

    def walk(v):
        if isinstance(v, str):
            return pattern.sub(MASK, v)
        if isinstance(v, dict):
            return {walk(k): walk(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(walk(x) for x in v)
        return v

    return walk(value)
