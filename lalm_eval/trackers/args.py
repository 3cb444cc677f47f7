"""``--wandb_args`` / ``--hf_hub_log_args`` strings, ``k=v,k=v`` as lm-eval parses them
(``simple_parse_args_string``: ``true``/``false`` → bool, ``none`` → None, digits → int, a number
→ float, ``"..."`` kept a string), with errors that name the flag and the item."""

from __future__ import annotations

import re

from lalm_eval.errors import ConfigError

_INT = re.compile(r"[+-]?\d+")


def cast_value(text: str):
    """One value typed the way lm-eval's ``handle_arg_string`` types it."""
    text = text.strip()
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low == "none":
        return None
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if _INT.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


def parse_tracker_args(text: str | None, flag: str, allowed: tuple[str, ...] | None = None) -> dict:
    """``"project=x,name=y"`` → ``{"project": "x", "name": "y"}``; an item without ``=``, an empty
    key, a key given twice, or (``allowed`` given) an unknown key is a :class:`ConfigError`."""
    out: dict = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                f"{flag}: {item.strip()!r} is not key=value; write it as {flag} KEY=VALUE,KEY=VALUE "
                "(values cannot hold a comma)"
            )
        if key in out:
            raise ConfigError(f"{flag}: {key!r} is given twice; give each key once")
        if allowed is not None and key not in allowed:
            raise ConfigError(f"{flag}: unknown key {key!r}; the keys are {', '.join(allowed)}")
        out[key] = cast_value(value)
    return out


def want_bool(options: dict, key: str, flag: str, default: bool = False) -> bool:
    value = options.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{flag}: {key}={value!r} is not a boolean; write {key}=True or {key}=False")
    return value
