"""Flag values of the ``lalm-eval`` commands (evaluate, ``check``, ``train``, ``make-tiny-model``,
``doctor``), checked before anything is loaded: each error names the flag (or the variable that
set it) and the fix. Here, not in :mod:`lalm_eval.cli`, so that the subcommands and the model
builder read them without importing the command line.
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path

from lalm_eval.errors import ConfigError, LalmEvalError

CACHE_ENV = "LALM_EVAL_CACHE"


def default_cache() -> Path:
    """The default ``--cache_dir``: ``$LALM_EVAL_CACHE`` (``~`` expanded; empty counts as unset),
    else ``~/.cache/lalm_eval``. Read when a command starts, so the environment it runs in counts."""
    value = os.environ.get(CACHE_ENV, "").strip()
    return Path(value).expanduser() if value else Path.home() / ".cache" / "lalm_eval"


DEFAULT_CACHE = default_cache()


def key_values(text: str, flag: str = "--model_args", example: str = "pretrained=DIR,dtype=bfloat16") -> dict:
    """``"k=v,k=v"`` → ``{k: v}``, values read as YAML (``3`` an int, ``true`` a bool); a part
    without ``=``, an empty key, a key given twice or a value that is not YAML is an error naming
    ``flag``."""
    import yaml

    out: dict = {}
    for part in (text or "").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{flag}: {part.strip()!r} is not key=value; write {flag} {example}")
        if key in out:
            raise ConfigError(f"{flag}: {key!r} is given twice; give each key once")
        try:
            out[key] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ConfigError(
                f"{flag}: the value of {key!r} ({value!r}) cannot be read; quote it, e.g. {key}='{value}'"
            ) from None
    return out


def whole_number(value, flag: str, minimum: int, fix: str, maximum: int | None = None) -> int:
    """``value`` (a flag's text or an int) as an int in ``[minimum, maximum]``, else an error naming ``flag``."""
    text = str(value).strip()
    try:
        number = int(text)
    except ValueError:
        raise ConfigError(f"{flag}: {text!r} is not a whole number; {fix}") from None
    if number < minimum or (maximum is not None and number > maximum):
        bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise ConfigError(f"{flag}: must be a whole number {bound}, got {number}; {fix}")
    return number


def real_number(
    value, flag: str, fix: str, minimum: float | None = None, maximum: float | None = None, above: bool = False
) -> float:
    """``value`` as a finite float within the bounds (``above``: strictly above ``minimum``)."""
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        raise ConfigError(f"{flag}: {text!r} is not a number; {fix}") from None
    low = minimum is not None and (number <= minimum if above else number < minimum)
    if not math.isfinite(number) or low or (maximum is not None and number > maximum):
        if minimum is not None and maximum is not None:
            bound = f" from {minimum} to {maximum}"
        elif minimum is not None:
            bound = f" {'>' if above else '>='} {minimum}"
        else:
            bound = ""
        raise ConfigError(f"{flag}: must be a finite number{bound}, got {text}; {fix}")
    return number


def task_names(text: str, flag: str = "--tasks") -> list[str]:
    """The comma-separated names of ``flag``; none at all is an error (a run of no tasks measures nothing)."""
    names = [t.strip() for t in (text or "").split(",") if t.strip()]
    if not names:
        raise ConfigError(
            f"{flag}: no task names in {text!r}; give comma-separated task, group or tag names "
            "(`lalm-eval tasks` lists them)"
        )
    return names


def batch_size_flag(value, flag: str = "--batch_size") -> str:
    """``auto`` or a whole number >= 1, as the string the adapters take. lm-eval's ``auto:N`` (re-measure
    N times) is refused by name: the HF adapters' ``auto`` halves the batch on out-of-memory instead."""
    text = str(value).strip().lower()
    if text == "auto":
        return "auto"
    if text.startswith("auto:"):
        raise ConfigError(
            f"{flag}: {value!r}: lm-eval's auto:N is not supported; give auto (on CUDA the batch is halved on "
            "each out-of-memory error) or a whole number >= 1"
        )
    return str(whole_number(text, flag, 1, "give a whole number >= 1 or auto"))


def gen_kwargs_flag(text: str, flag: str = "--gen_kwargs") -> dict:
    """``--gen_kwargs k=v,k=v`` read and checked (keys and values: :mod:`lalm_eval.tasks.gen_kwargs`)."""
    from lalm_eval.tasks.gen_kwargs import check_gen_kwargs

    return check_gen_kwargs(key_values(text, flag, "max_new_tokens=64,do_sample=false"), flag, "{key}={value}")


DEVICE = re.compile(r"auto|cpu|mps|cuda(:\d+)?")


def device_flag(value: str | None, flag: str = "--device") -> str | None:
    if value is not None and not DEVICE.fullmatch(value.strip().lower()):
        raise ConfigError(f"{flag}: {value!r} is not a device; give auto, cpu, cuda, cuda:N or mps")
    return value


def flag_source(path, flag: str) -> str:
    """Where a folder's value came from, as the error names it: ``flag`` and the value, or for a
    ``--cache_dir`` left at its default the ``LALM_EVAL_CACHE`` variable that set it."""
    env = os.environ.get(CACHE_ENV, "").strip()
    if flag == "--cache_dir" and env and Path(env).expanduser() == Path(str(path)).expanduser():
        return f"{CACHE_ENV}={env} (the default --cache_dir)"
    return f"{flag} {path}"


def writable_folder(path, flag: str) -> Path:
    """The folder ``path`` (``~`` expanded, made when missing), checked writable now, before any
    model call: empty, a file there, a file above it, or a folder that cannot be written is an
    error naming ``flag`` (or ``LALM_EVAL_CACHE`` when that set it). Use the returned path: it is the
    one checked."""
    if path is None or not str(path).strip():
        raise ConfigError(f"{flag}: empty; give a folder (it is made when missing), or leave the flag out")
    folder = Path(str(path).strip()).expanduser()
    where = flag_source(path, flag)
    fix = (
        "unset it or point it at a folder" if where.startswith(CACHE_ENV) else "give a folder (it is made when missing)"
    )
    for above in (folder, *folder.parents):
        if above.exists() or above.is_symlink():
            if not above.is_dir():
                what = "is a file, not a folder" if above == folder else f"is under {above}, which is a file"
                raise ConfigError(f"{where}: {what}; {fix}")
            break
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ConfigError(
            f"{where}: cannot write there ({exc.strerror or exc}); "
            + (
                "unset it or point it at a folder you can write to"
                if where.startswith(CACHE_ENV)
                else "give a folder you can write to"
            )
        ) from None
    return folder


def include_paths_flag(values, flag: str = "--include_path") -> list[str] | None:
    """``--include_path`` values with ``~`` expanded; an empty one (an unset shell variable) is an
    error, not the current folder (whose every YAML file would be read as a task)."""
    if not values:
        return None
    out = []
    for value in values:
        if not str(value).strip():
            raise ConfigError(
                f"{flag}: empty; give a folder of task YAML files (or one YAML file), or leave the flag out"
            )
        out.append(os.path.expanduser(str(value).strip()))
    return out


def flag_error(flag: str, exc: LalmEvalError, fix: str) -> LalmEvalError:
    """``exc`` (raised by what ``flag`` named: a model, a judge spec) told in the one error shape:
    the flag in front unless its message starts with one, ``fix`` after it unless it has one."""
    message = str(exc)
    if not message.startswith("--"):
        message = f"{flag}: {message}"
    if "; " not in message:
        message += f"; {fix}"
    exc.args = (message, *exc.args[1:])
    return exc


JUDGE_FIX = "give e.g. --judge openai:model=M,base_url=URL, hf:pretrained=DIR or a preset of tasks/*/judge_presets.yaml"


def judge_from_flag(spec: str | None, flag: str = "--judge"):
    """The judge LLM of ``--judge SPEC`` (options, URL, local model folder checked; nothing sent),
    or ``None`` without one; a bad spec is an error naming the flag."""
    if not spec:
        return None
    from lalm_eval.judges import judge_llm_from_spec

    try:
        return judge_llm_from_spec(spec)
    except LalmEvalError as exc:
        raise flag_error(flag, exc, JUDGE_FIX) from None


def bertscore_model_flag(text: str | None) -> dict | None:
    """``--bertscore_model en=A,zh=B``: {language: backbone}, each found locally (a folder, or a Hub
    id in the Hugging Face cache) before any task or model loads."""
    if text is None:
        return None
    from lalm_eval.metrics.bertscore import check_backbones, parse_backbone_flag

    spec = parse_backbone_flag(text, "--bertscore_model")
    check_backbones(spec, "--bertscore_model")
    return spec
