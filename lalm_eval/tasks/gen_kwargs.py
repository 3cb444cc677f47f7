"""Generation kwargs checked before anything is generated: a task YAML's ``generation_kwargs``
(when the task loads) and ``--gen_kwargs`` (when the command line is read).

The keys and the values each takes are data (``gen_kwargs.yaml`` beside this file). A key not
listed there passes when it is a field of transformers' ``GenerationConfig`` (the HF adapters hand
it to ``model.generate``; the API and vLLM adapters refuse, by name, what they cannot send); any
other key is an error with the closest known names, since transformers would refuse it only once
the model runs, on every doc.
"""

from __future__ import annotations

import difflib
import functools
import math
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError

RULES_FILE = Path(__file__).with_name("gen_kwargs.yaml")


@functools.lru_cache(maxsize=1)
def rules() -> dict[str, dict]:
    return yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _generation_config_fields() -> frozenset[str]:
    try:
        from transformers import GenerationConfig
    except ImportError:  # pragma: no cover - transformers is a core dependency
        return frozenset()
    return frozenset(k for k in vars(GenerationConfig()) if not k.startswith("_"))


def _bounds(rule: dict) -> str:
    low, high, strict = rule.get("min"), rule.get("max"), rule.get("min_exclusive", False)
    if low is not None and high is not None:
        if low == high:
            return f"= {low}"
        return f"above {low} and at most {high}" if strict else f"from {low} to {high}"
    if low is not None:
        return f"{'>' if strict else '>='} {low}"
    return f"<= {high}" if high is not None else ""


def _check_value(key: str, value, rule: dict, where: str, example: str) -> None:
    kind = rule["kind"]
    fix = f"e.g. {example.format(key=key, value=yaml.safe_dump(rule['example'], default_flow_style=True).strip().removesuffix('...').strip())}"

    def bad(what: str):
        why = f" ({rule['why']})" if rule.get("why") else ""
        raise ConfigError(f"{where}: {key}: must be {what}{why}, got {value!r}; {fix}")

    if kind == "bool":
        if not isinstance(value, bool):
            bad("true or false")
        return
    if kind == "text_or_texts":
        if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
            bad("a string or a list of strings")
        return
    if kind == "ints":
        if not (isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
            bad("a list of whole numbers")
        return
    whole = kind == "int"
    noun = "a whole number" if whole else "a number"
    ok = isinstance(value, int) if whole else isinstance(value, (int, float)) and math.isfinite(value)
    if isinstance(value, bool) or not ok:
        bad(f"{noun} {_bounds(rule)}".strip())
    low, high = rule.get("min"), rule.get("max")
    too_low = low is not None and (value < low or (rule.get("min_exclusive") and value == low))
    if too_low or (high is not None and value > high):
        bad(f"{noun} {_bounds(rule)}")


def check_gen_kwargs(kwargs: dict, where: str, example: str = "{key}: {value}") -> dict:
    """``kwargs`` when every key is known and every value fits its rule; else a
    :class:`ConfigError` starting with ``where`` (a task file's ``generation_kwargs`` or the flag
    ``--gen_kwargs``). ``example`` spells one setting in the user's syntax (``{key}={value}`` for
    the command line)."""
    table = rules()
    for key, value in kwargs.items():
        rule = table.get(key)
        if rule is not None:
            _check_value(key, value, rule, where, example)
            continue
        if key in _generation_config_fields():
            continue
        close = difflib.get_close_matches(str(key), list(table), n=2)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ConfigError(
            f"{where}: unknown generation kwarg {key!r}{hint}; use one of {', '.join(table)} "
            "or another field of transformers' GenerationConfig"
        )
    return kwargs
