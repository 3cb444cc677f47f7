"""Text-LLM options checked when the backend is built, naming the flag they came from.

Every option of a built-in backend has a rule in ``options.yaml`` beside this file (its kind, its
bounds, a valid example), so ``--judge 'openai:...,temperature=hot'``, ``--llm-option
base_url=notaurl`` or ``--judge hf:pretrained=/no/such/folder`` is one error in the project's
shape (``<flag>: <option>: <what is wrong>; <how to fix>``) before any answer is generated,
instead of a ``ValueError`` from deep inside a request after the model has run. An option a
backend does not take is named with the closest ones it does. Backends added by plug-ins have
their constructor's keywords checked by name.

:func:`check_value` / :func:`check_options` are the generic part (kinds ``text``, ``url``,
``env_name``, ``model_folder``, ``choice``, ``pattern``, ``int``, ``number``, ``bool``, ``ints``,
``mapping``), shared with the training recipes' check (:mod:`lalm_eval.training.recipes`).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import math
import re
import urllib.parse
from pathlib import Path
from typing import Any

import yaml

from lalm_eval.errors import ConfigError, LalmEvalError, UnknownNameError

RULES_FILE = Path(__file__).with_name("options.yaml")
#: the kinds whose values keep their literal text on a command line (never read as YAML)
TEXT_KINDS = frozenset({"text", "url", "env_name", "model_folder", "choice", "pattern"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@functools.lru_cache(maxsize=1)
def rules() -> dict[str, dict[str, dict]]:
    """``{backend: {option: rule}}`` from ``options.yaml``."""
    return yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))


def text_option_names() -> frozenset[str]:
    """The options (of any backend) whose values are text: kept literal when read from a flag."""
    return frozenset(k for table in rules().values() for k, rule in table.items() if rule["kind"] in TEXT_KINDS)


# -- the generic checker ----------------------------------------------------------------------------


def _shown(value: Any) -> str:
    """``repr(value)``, short (a path of up to 240 characters is shown whole: it must stay findable),
    and without ';' (it separates the error's parts)."""
    text = repr(value)
    return (text if len(text) <= 240 else text[:237] + "...").replace(";", ",")


def _bounds(rule: dict) -> str:
    low, high, strict = rule.get("min"), rule.get("max"), rule.get("min_exclusive", False)
    if low is not None and high is not None:
        return f"above {low} and at most {high}" if strict else f"from {low} to {high}"
    if low is not None:
        return f"{'>' if strict else '>='} {low}"
    return f"<= {high}" if high is not None else ""


def _example(rule: dict, key: str, example: str) -> str:
    value = rule.get("example")
    if value is None:
        return f"see {RULES_FILE.name} for what {key} takes"
    text = value if isinstance(value, str) else yaml.safe_dump(value, default_flow_style=True).strip()
    return "e.g. " + example.format(key=key, value=text.removesuffix("...").strip())


def _number(value: Any, whole: bool):
    """``value`` as an int (``whole``) or a finite float, else None; text that spells one counts
    (PyYAML reads ``1e-5`` as text)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = int(value.strip()) if whole else float(value.strip())
        except ValueError:
            return None
    if whole:
        return value if isinstance(value, int) else None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return value
    return None


def is_hub_id(value: str) -> bool:
    """Whether ``value`` (not an existing path) reads as a Hub repo id (``name`` or ``org/name``),
    not as a local path (``/x``, ``./x``, ``~/x``, ``a/b/c``)."""
    if value.startswith(("/", "./", "../", "~", ".\\")) or value in (".", "..") or value.count("/") > 1:
        return False
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def model_folder_problem(value: str, chat_template: bool = True) -> str | None:
    """What is wrong with ``value`` as a model to load (a local folder or a Hub id), cheaply: the
    folder exists and holds ``config.json``, weights and (``chat_template``) a chat template; a
    Hub id is well formed (and in the Hub cache when ``HF_HUB_OFFLINE`` is set). None when
    nothing is wrong."""
    path = Path(value).expanduser()
    if path.exists():
        if not path.is_dir():
            return "is a file, not a model folder"
        missing = []
        if not (path / "config.json").is_file():
            missing.append("config.json")
        from lalm_eval.fingerprint import WEIGHT_SUFFIXES

        if not any(p.name.endswith(WEIGHT_SUFFIXES) for p in path.iterdir()):
            missing.append("weights (*.safetensors, *.bin ...)")
        if chat_template and not _has_chat_template(path):
            missing.append("chat template")
        return f"the folder has no {', no '.join(missing)}" if missing else None
    if not is_hub_id(value):
        return "no such folder (and not a Hub model id)"
    from huggingface_hub import constants, try_to_load_from_cache

    if constants.HF_HUB_OFFLINE and not isinstance(try_to_load_from_cache(value, "config.json"), str):
        return "no such folder, and HF_HUB_OFFLINE is set while the Hub cache does not hold this model"
    return None  # a Hub id: resolved (downloaded once) when first used


def _has_chat_template(folder: Path) -> bool:
    if (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file():
        return True
    if (folder / "additional_chat_templates").is_dir():
        return True
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and bool(config.get("chat_template"))


def check_value(key: str, value: Any, rule: dict, where: str, example: str = "{key}={value}") -> Any:
    """``value`` (converted: numbers spelt as text become numbers, scalars of the text kinds text)
    when it fits ``rule``; else a :class:`ConfigError` ``<where>: <key>: must be …, got …; e.g. …``
    (``example`` spells one setting in the user's syntax)."""
    kind = rule["kind"]
    fix = _example(rule, key, example)
    why = f" ({rule['why']})" if rule.get("why") else ""

    def bad(what: str, got: str | None = None):
        shown = "a value (not shown: a secret)" if rule.get("secret") else got or _shown(value)
        raise ConfigError(f"{where}: {key}: {what}{why}, got {shown}; {fix}")

    if kind in TEXT_KINDS:
        if isinstance(value, (bool, list, dict)) or value is None:
            bad("must be text")
        value = str(value).strip()
        if rule.get("required") and not value:
            bad("must not be empty")
        if kind == "url":
            parts = urllib.parse.urlsplit(value)
            try:
                parts.port  # noqa: B018 - raises on a port that is not a number
            except ValueError:
                bad("must be an http(s) URL with a valid port")
            if parts.scheme not in ("http", "https") or not parts.hostname:
                bad("must be an http:// or https:// URL with a host")
        elif kind == "env_name" and not _ENV_NAME.fullmatch(value):
            bad("must be the name of an environment variable (letters, digits, _)")
        elif kind == "choice" and value not in [str(c) for c in rule["choices"]]:
            close = difflib.get_close_matches(value, [str(c) for c in rule["choices"]], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            bad(f"must be one of {', '.join(map(str, rule['choices']))}{hint}")
        elif kind == "pattern" and not re.fullmatch(rule["pattern"], value):
            bad(f"must match {rule['pattern']}")
        elif kind == "model_folder":
            problem = model_folder_problem(value)
            if problem:
                raise ConfigError(
                    f"{where}: {key} {_shown(value)}: {problem}; give a local model folder (config.json, weights "
                    "and a chat template) or a Hub id such as Qwen/Qwen3-8B"
                )
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            bad("must be true or false")
        return value
    if kind == "mapping":
        if not isinstance(value, dict):
            bad("must be a mapping of keys to values", type(value).__name__)
        return value
    if kind == "ints":
        if not (isinstance(value, list) and value and all(_number(v, True) is not None for v in value)):
            bad("must be a list of whole numbers")
        return [int(v) for v in value]
    whole = kind == "int"
    noun = "a whole number" if whole else "a finite number"
    number = _number(value, whole)
    if number is None:
        bad(f"must be {noun} {_bounds(rule)}".strip())
    low, high = rule.get("min"), rule.get("max")
    too_low = low is not None and (number < low or (rule.get("min_exclusive") and number == low))
    if too_low or (high is not None and number > high):
        bad(f"must be {noun} {_bounds(rule)}")
    return number


def check_options(
    options: dict, table: dict[str, dict], where: str, example: str = "{key}={value}", noun: str = "option"
) -> dict:
    """``options`` checked against ``table`` (``{key: rule}``): an unknown key (with the closest
    known ones), a missing required key or a value its rule refuses is a :class:`ConfigError`
    starting with ``where``. Returns the converted values; a None value stands for "not given"."""
    for key in options:
        if key not in table:
            close = difflib.get_close_matches(str(key), list(table), n=2)
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
            raise ConfigError(f"{where}: unknown {noun} {str(key)!r}{hint}; known: {', '.join(table)}")
    for key, rule in table.items():
        if rule.get("required") and options.get(key) is None:
            raise ConfigError(f"{where}: {key}: missing, and it is required; {_example(rule, key, example)}")
    return {k: check_value(k, v, table[k], where, example) for k, v in options.items() if v is not None}


# -- text-LLM backends --------------------------------------------------------------------------------


def read_items(items: list[str], flag: str) -> dict:
    """``["model=m", "temperature=0.6"]`` (a flag's ``KEY=VALUE`` items) → ``{key: value}``: values
    read as YAML except those of the text options (:func:`text_option_names`), kept as written. An
    item that is not ``KEY=VALUE``, a key given twice or an empty value is an error naming ``flag``."""
    text = text_option_names()
    out: dict = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ConfigError(f"{flag} {_shown(item)}: not key=value; write it as {flag} KEY=VALUE, e.g. model=m")
        if key in out:
            raise ConfigError(f"{flag} {key}: given twice; give each option once")
        if not value:
            raise ConfigError(f"{flag} {key}: no value after '='; give one, e.g. {key}=VALUE, or leave the option out")
        if key in text:
            out[key] = value
            continue
        try:
            out[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(f"{flag} {key}: value {_shown(value)} cannot be read; quote it or fix it") from None
    return out


def _signature_keys(cls) -> list[str] | None:
    """The keyword arguments of ``cls``'s constructor, or None when it takes any (``**kwargs``)."""
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind == p.VAR_KEYWORD for p in params.values()):
        return None
    return [n for n, p in params.items() if n != "self" and p.kind != p.VAR_POSITIONAL]


def build_text_llm(backend: str, options: dict, flag: str | None = None, example: str = "{key}={value}"):
    """The text LLM registered as ``backend`` built from ``options``, each checked first
    (``options.yaml``; a plug-in backend's by its constructor's keywords). Errors start with
    ``flag`` (``--judge``, ``--llm-option``), else with ``text LLM '<backend>'``."""
    from lalm_eval.llm.base import TEXT_LLMS

    where = flag or f"text LLM {backend!r}"
    try:
        cls = TEXT_LLMS.get(backend)
    except UnknownNameError as exc:
        raise UnknownNameError(f"{where}: {exc}; give one of them (plug-ins add more)") from None
    table = rules().get(backend)
    if table is None:  # a plug-in: its constructor's keywords
        known = _signature_keys(cls)
        if known is not None:
            for key in options:
                if key not in known:
                    close = difflib.get_close_matches(str(key), known, n=2)
                    hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
                    raise ConfigError(
                        f"{where}: the {backend} text LLM takes no option {str(key)!r}{hint}; it takes: "
                        f"{', '.join(known) or 'none'}"
                    )
        checked = {k: v for k, v in options.items() if v is not None}
    else:
        checked = check_options(options, table, where, example)
    try:
        return cls(**checked)
    except LalmEvalError as exc:
        message = str(exc)
        if not message.startswith(where):
            message = f"{where}: {message}"
        if "; " not in message:
            message += "; check the options"
        exc.args = (message, *exc.args[1:])
        raise exc from None
    except (TypeError, ValueError) as exc:
        if table is not None:
            raise  # the rules let through what the constructor refuses: a bug here, not bad input
        said = str(exc).replace(";", ",")
        raise ConfigError(
            f"{where}: the {backend} text LLM cannot be built from these options ({type(exc).__name__}: {said}); "
            "check them against its documentation"
        ) from None


def get_text_llm(name: str, **kwargs: Any):
    """Build the backend registered as ``name`` with ``kwargs``, each option checked first by
    kind and range (:func:`build_text_llm`); a None value stands for the default."""
    return build_text_llm(name, kwargs)


def check_backend_name(backend: str, backend_flag: str = "--llm") -> None:
    """An :class:`UnknownNameError` starting with ``backend_flag`` (the registered names and the close
    ones) unless ``backend`` is a registered text LLM; nothing is built or imported."""
    from lalm_eval.llm.base import TEXT_LLMS

    if backend not in TEXT_LLMS:
        try:
            TEXT_LLMS.get(backend)  # its message: the names, and the close ones
        except UnknownNameError as exc:
            raise UnknownNameError(f"{backend_flag}: {exc}; give one of these backends (plug-ins add more)") from None


def text_llm_from_flags(backend: str, items: list[str], flag: str = "--llm-option", backend_flag: str = "--llm"):
    """The text LLM of a build's ``--llm NAME --llm-option KEY=VALUE ...``, every option checked."""
    check_backend_name(backend, backend_flag)
    return build_text_llm(backend, read_items(items, flag), flag, example=f"{flag} {{key}}={{value}}")


__all__ = [
    "RULES_FILE",
    "TEXT_KINDS",
    "build_text_llm",
    "check_backend_name",
    "check_options",
    "check_value",
    "get_text_llm",
    "is_hub_id",
    "model_folder_problem",
    "read_items",
    "rules",
    "text_llm_from_flags",
    "text_option_names",
]
