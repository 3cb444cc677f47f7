"""``lalm-eval``: evaluate an audio-language model on tasks, with lm-eval's flags.

    lalm-eval --model qwen2_audio --model_args pretrained=DIR --tasks palm_recognition,msu_tier4 \\
        --batch_size 4 --limit 8 --output_path out/ --log_samples
    lalm-eval tasks                         # list tasks and groups
    lalm-eval make-tiny-model qwen2_audio DIR   # tiny random-weight model of a real architecture
    lalm-eval paths                         # where this install's task and card folders are
    lalm-eval check --model M --model_args ... --tasks T --batch_sizes 1,8 [--model_b B --model_args_b ...]
                                            # same answers at batch 1 and k, and on another backend?
    lalm-eval train --model M --model_args pretrained=DIR --tasks T --recipe lora_attn --output_dir OUT
                                            # fine-tune under a PALM §5.2 recipe (lalm_eval/training/)

Imports stay lazy so start-up is fast: torch/transformers load only when a model is built.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path

from lalm_eval import __version__
from lalm_eval.errors import ConfigError, LalmEvalError

CACHE_ENV = "LALM_EVAL_CACHE"


def default_cache() -> Path:
    """The default ``--cache_dir``: ``$LALM_EVAL_CACHE`` (``~`` expanded; empty counts as unset),
    else ``~/.cache/lalm_eval``. Read when a command starts, so the environment it runs in counts."""
    value = os.environ.get(CACHE_ENV, "").strip()
    return Path(value).expanduser() if value else Path.home() / ".cache" / "lalm_eval"


DEFAULT_CACHE = default_cache()
SUBCOMMANDS = ("tasks", "make-tiny-model", "paths", "report", "check", "train", "doctor")

# -- flag values, checked before anything is loaded: each error names the flag and the fix -------


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


def _model_args(text: str, flag: str = "--model_args") -> dict:
    return key_values(text, flag)


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


def bertscore_model_flag(text: str | None) -> dict | None:
    """``--bertscore_model en=A,zh=B``: {language: backbone}, each found locally (a folder, or a Hub
    id in the Hugging Face cache) before any task or model loads."""
    if text is None:
        return None
    from lalm_eval.metrics.bertscore import check_backbones, parse_backbone_flag

    spec = parse_backbone_flag(text, "--bertscore_model")
    check_backbones(spec, "--bertscore_model")
    return spec


def check_eval_args(args) -> None:
    """Every flag of a run checked (and converted) before a task, a dataset or a model is loaded;
    ``--output_path`` and ``--cache_dir`` are made and probed now (``~`` expanded once, the checked
    path used by every writer), so that a finished evaluation is never lost to them."""
    args.task_list = task_names(args.tasks)
    if args.limit is not None:
        args.limit = whole_number(args.limit, "--limit", 1, "omit --limit to run every doc")
    args.seed = whole_number(args.seed, "--seed", 0, "e.g. --seed 1234", 2**32 - 1)
    args.batch_size = batch_size_flag(args.batch_size)
    if args.stream_chunk is not None:
        args.stream_chunk = whole_number(
            args.stream_chunk, "--stream_chunk", 0, "give a whole number (0: decode every request first)"
        )
    if args.max_cost is not None:
        args.max_cost = real_number(args.max_cost, "--max_cost", "give a number of USD, e.g. 5", minimum=0)
    if args.max_failure_share is not None:
        args.max_failure_share = real_number(
            args.max_failure_share, "--max_failure_share", "give a share such as 0.05", minimum=0, maximum=1
        )
    if args.prices is not None:
        args.prices = os.path.expanduser(args.prices)
        if not Path(args.prices).is_file():
            raise ConfigError(
                f"--prices {args.prices}: no such file; give a price table YAML (see lalm_eval/models/prices.yaml)"
            )
    args.gen_kwargs_dict = gen_kwargs_flag(args.gen_kwargs)
    args.bertscore_models = bertscore_model_flag(getattr(args, "bertscore_model", None))
    args.include_path = include_paths_flag(args.include_path)
    _model_args(args.model_args)
    device_flag(args.device)
    args.cache_dir = str(writable_folder(default_cache() if args.cache_dir is None else args.cache_dir, "--cache_dir"))
    if args.output_path is not None:
        args.output_path = str(writable_folder(args.output_path, "--output_path"))


def eval_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="lalm-eval", description=f"Evaluate audio-language models (subcommands: {', '.join(SUBCOMMANDS)})"
    )
    ap.add_argument("--version", action="version", version=f"lalm-eval {__version__}")
    ap.add_argument("--model", required=True, help="registered adapter, e.g. qwen2_audio, qwen2_5_omni, hf-audio")
    ap.add_argument("--model_args", default="", help="k=v,k=v passed to the adapter (pretrained=..., dtype=...)")
    ap.add_argument("--tasks", required=True, help="comma-separated task, group or tag names")
    ap.add_argument("--include_path", action="append", default=None, help="extra task folder (repeatable)")
    ap.add_argument("--batch_size", default="1", help="N or auto")
    ap.add_argument("--limit", default=None, help="first N docs of each task (N >= 1)")
    ap.add_argument("--output_path", default=None, help="folder for results_*.json, samples and report")
    ap.add_argument("--log_samples", action="store_true")
    ap.add_argument("--seed", default=0, help="0 to 4294967295 (numpy's range)")
    ap.add_argument("--device", default=None, help="cpu, cuda, cuda:N or auto (default: the adapter's)")
    ap.add_argument("--gen_kwargs", default="", help="k=v,k=v overriding every task's generation kwargs")
    ap.add_argument(
        "--cache_dir",
        default=None,
        help=f"datasets, embeddings and response cache (default: ${CACHE_ENV}, else ~/.cache/lalm_eval)",
    )
    ap.add_argument("--no_cache", action="store_true", help="do not read or write the response cache")
    ap.add_argument(
        "--stream_chunk",
        default=None,
        help="cache misses decoded and generated at a time (default 64; at least the batch size; "
        "0: decode every request first): peak memory grows with this, not with the docs",
    )
    ap.add_argument(
        "--judge",
        default=None,
        help="text LLM for the llm_judge metrics: openai:model=M,base_url=URL[,concurrency=N], "
        "hf:pretrained=DIR, or a preset: palm_paper[:base_url=URL] (PALM's judge, "
        "Qwen3-Omni-30B-A3B-Thinking, its decoding recorded; thinking traces are removed before "
        "parsing); judgements cached in the cache dir; without it LLM scores are reported missing",
    )
    ap.add_argument(
        "--judge_samples",
        default="1",
        help="K: ask the judge K times per item, each verdict cached and seeded on its own (seeds from "
        "--seed, or from the --judge spec's seed=), and report the mean with the judge's own spread "
        "beside the bootstrap CI (default 1: one verdict, no seed sent; K > 1 needs an OpenAI-compatible judge)",
    )
    ap.add_argument(
        "--bertscore_model",
        default=None,
        help="BERTScore backbones per row language, e.g. en=roberta-large,zh=bert-base-chinese (a folder, "
        "or a Hub id already in the Hugging Face cache; default=X for other languages; one X for all); "
        "default: bert-score's own per-language models where cached, else all-MiniLM-L6-v2, and the "
        "report says when they are not the paper's",
    )
    ap.add_argument(
        "--dry_run",
        action="store_true",
        help="print the requests, audio seconds and (API adapters) token and price estimate the run "
        "would send, cache hits discounted, without calling the model",
    )
    ap.add_argument(
        "--max_cost",
        default=None,
        help="API adapters: stop sending requests once this many USD are spent (by the provider's "
        "usage and the price table); answers so far stay cached, a rerun resumes",
    )
    ap.add_argument("--prices", default=None, help="price table YAML (default: lalm_eval/models/prices.yaml)")
    ap.add_argument(
        "--max_failure_share",
        default=None,
        help="exit with status 4 when a task's share of failed docs (generation errors, undecodable "
        "audio) exceeds this, 0-1 (default: only when every doc of a task failed); results are "
        "written either way",
    )
    return ap


def failed_tasks(results: dict, max_share: float | None = None) -> list[str]:
    """The tasks whose failed-doc share exceeds ``max_share`` (None: the tasks where every doc
    failed), each as ``"task: k/n failed (kinds)"``. Tasks without docs are not counted."""
    out = []
    for name, r in results.items():
        n = r.get("n", {})
        effective, scored = n.get("effective", 0), n.get("scored", 0)
        if not effective:
            continue
        share = (effective - scored) / effective
        if (share > max_share) if max_share is not None else scored == 0:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(r.get("samples", {}).get("failures", {}).items()))
            out.append(f"{name}: {effective - scored}/{effective} docs failed" + (f" ({kinds})" if kinds else ""))
    return out


SECRET_ARG = re.compile(r"(key|token|secret|password)", re.I)


def redact_model_args(text: str) -> str:
    """``model_args`` as written to results: values of secret-looking keys (api_key, token…) masked."""
    parts = []
    for part in (text or "").split(","):
        key, sep, value = part.partition("=")
        parts.append(f"{key}=***" if sep and SECRET_ARG.search(key) and not key.strip().endswith("_env") else part)
    return ",".join(parts)


def format_plan(plan: dict) -> str:
    """The ``--dry_run`` table: per task and in total."""
    lines = [
        "| task | requests | cached | audio s to send | est. tokens (audio + text) | max output tokens | est. USD |",
        "|---|---|---|---|---|---|---|",
    ]

    def row(name, e):
        est = e.get("estimate") or {}
        tokens = f"{est.get('est_audio_tokens', 0) + est.get('est_text_tokens', 0):,}" if est else "—"
        cost = est.get("est_cost_usd")
        usd = f"{cost:.4f}" if isinstance(cost, (int, float)) else "—"
        return (
            f"| {name} | {e['requests']} | {e['cached']} | {e['audio_s']:.1f} | {tokens} | "
            f"{est.get('max_completion_tokens', '—') if est else '—'} | {usd} |"
        )

    lines += [row(name, e) for name, e in plan["tasks"].items()] + [row("**total**", plan["total"])]
    est = plan["total"].get("estimate") or {}
    if plan["total"].get("estimate_missing"):
        lines += ["", plan["total"]["estimate_missing"]]
    elif est.get("est_cost_usd") is None and est.get("cost_missing_reason"):
        lines += ["", f"price: {est['cost_missing_reason']}"]
    lines += ["", "dry run: nothing was sent to the model"]
    return "\n".join(lines)


def attach_budget(adapter, args) -> None:
    """``--prices`` / ``--max_cost`` handed to an API adapter (other adapters have no price)."""
    if args.prices is None and args.max_cost is None:
        return
    if not hasattr(adapter, "budget"):
        raise ConfigError(
            f"--max_cost/--prices: adapter {adapter.name!r} is not an API adapter, so it has no price; "
            "leave out --max_cost and --prices for it"
        )
    from lalm_eval.cost import Budget, load_prices

    prices = load_prices(args.prices)
    if hasattr(adapter, "prices"):
        adapter.prices = prices
    if args.max_cost is not None:
        adapter.budget = Budget(args.max_cost, prices)


@dataclasses.dataclass
class AdapterSpec:
    """A ``--model`` and its ``--model_args`` checked, not yet built (:func:`adapter_spec`)."""

    model: str
    cls: type
    model_args: dict
    from_flag: bool  # the device came from --device (not from --model_args device=)


def adapter_spec(
    model: str, model_args_text: str, device: str | None, cache_dir: str, use_response_cache: bool = True
) -> AdapterSpec:
    """The registered adapter ``model`` and its ``k=v,k=v`` args, checked without building it:
    unknown or missing args named with the ones the adapter takes, ``~`` expanded in each value
    that starts with it (paths: ``pretrained=~/m``; transformers would take ``~/m`` for a Hub
    id, and the shell leaves a ``~`` after ``=`` alone). ``--device`` and,
    for adapters with caches of their own, ``--cache_dir`` are passed on; adapters that write
    answers to the response cache themselves (``WRITES_RESPONSE_CACHE``) get none under
    ``--no_cache``."""
    import difflib
    import inspect

    from lalm_eval.errors import UnknownNameError
    from lalm_eval.models import MODELS
    from lalm_eval.parallel import local_device

    model_args = {
        k: os.path.expanduser(v) if isinstance(v, str) and v.startswith("~") else v
        for k, v in _model_args(model_args_text).items()
    }
    from_flag = device is not None
    device = local_device(device or model_args.get("device"))
    if device:
        model_args["device"] = device
    try:
        adapter_cls = MODELS.get(model)
    except UnknownNameError as exc:
        raise UnknownNameError(f"--model: {exc}; give one of these names (plug-ins add more)") from None
    if "cache_dir" in inspect.signature(adapter_cls.__init__).parameters:  # adapters with caches of their own
        off = not use_response_cache and getattr(adapter_cls, "WRITES_RESPONSE_CACHE", False)
        model_args.setdefault("cache_dir", "none" if off else cache_dir)
    signature = inspect.signature(adapter_cls.__init__)
    params = [
        n for n, p in signature.parameters.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    takes_any = any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())
    unknown = [] if takes_any else [k for k in model_args if k not in params]
    if unknown:
        key = unknown[0]
        if key == "device" and from_flag:
            raise ConfigError(f"--device: adapter {model!r} takes no device; leave out --device for it")
        close = difflib.get_close_matches(key, params, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"--model_args: {model} takes no argument {key!r}{hint}; it takes: {', '.join(params) or 'none'}"
        )
    try:  # a missing argument: name it, list the valid ones
        signature.bind(None, **model_args)
    except TypeError as exc:
        raise ConfigError(
            f"--model_args: {model} cannot be built from them ({exc}); it takes: {', '.join(params) or 'none'}"
        ) from None
    return AdapterSpec(model, adapter_cls, model_args, from_flag)


def _told(spec: AdapterSpec, exc: LalmEvalError) -> LalmEvalError:
    """``exc`` from building ``spec`` in the one shape: a device problem names ``--device`` when the
    device came from that flag; other messages get ``--model M`` in front unless they name a flag."""
    device = spec.model_args.get("device")
    prefix = f"--model_args device={device}"
    if spec.from_flag and str(exc).startswith(prefix + ":"):
        exc.args = (f"--device {device}" + str(exc)[len(prefix) :], *exc.args[1:])
        return exc
    return flag_error(f"--model {spec.model}", exc, "check --model_args (pretrained=...) and --device")


def build_from_spec(spec: AdapterSpec, identify: bool = True):
    """The adapter of ``spec`` built and (``identify``) its identity computed (model files hashed,
    nothing loaded), so that a missing model shows now; errors told by :func:`_told`."""
    try:
        adapter = spec.cls(**spec.model_args)
        if identify:
            adapter.identity()
    except LalmEvalError as exc:
        raise _told(spec, exc) from None
    return adapter


def identify(spec: AdapterSpec, adapter) -> None:
    """``adapter.identity()`` (model files hashed), errors told by :func:`_told`."""
    try:
        adapter.identity()
    except LalmEvalError as exc:
        raise _told(spec, exc) from None


def build_adapter(
    model: str, model_args_text: str, device: str | None, cache_dir: str, use_response_cache: bool = True
):
    """The registered adapter ``model`` built from ``k=v,k=v`` args (:func:`adapter_spec`), its
    identity known (:func:`build_from_spec`)."""
    return build_from_spec(adapter_spec(model, model_args_text, device, cache_dir, use_response_cache))


def run_eval(args) -> int:
    import random

    import numpy as np

    from lalm_eval.cli_support import interrupt_note
    from lalm_eval.evaluator import evaluate, open_tasks
    from lalm_eval.report.assemble import write_outputs

    check_eval_args(args)  # every flag, and --output_path / --cache_dir made and probed
    random.seed(args.seed)
    np.random.seed(args.seed)
    from lalm_eval.parallel import is_main_process

    judge_llm = None
    if args.judge:  # built (options, URL, local model folder checked; nothing sent) before any task or model
        from lalm_eval.judges import judge_llm_from_spec

        try:
            judge_llm = judge_llm_from_spec(args.judge)
        except LalmEvalError as exc:
            raise flag_error(
                "--judge",
                exc,
                "give e.g. --judge openai:model=M,base_url=URL, hf:pretrained=DIR or a preset of lalm_eval/judges/presets.yaml",
            ) from None
    from lalm_eval.judges.decoding import check_samples

    args.judge_samples = check_samples(args.judge_samples, judge_llm)  # errors name --judge_samples
    tasks = args.task_list
    spec = adapter_spec(args.model, args.model_args, args.device, args.cache_dir, use_response_cache=not args.no_cache)
    # an adapter whose building loads nothing is built now: its args checked before the tasks
    early = build_from_spec(spec, identify=False) if getattr(spec.cls, "BUILT_BEFORE_TASKS", False) else None
    # every task loaded (YAML, metrics, filters), its dataset, config and split opened and its first
    # doc rendered: before a model is built (or, built above, hashed)
    opened = open_tasks(tasks, include_path=args.include_path, cache_dir=Path(args.cache_dir), limit=args.limit)
    for task, (docs, _, _) in zip(opened.tasks, opened.docs):
        if not len(docs):
            print(
                f"lalm-eval: task {task.name!r} has no docs ({task.yaml_file}); it is reported empty", file=sys.stderr
            )
    if early is not None:
        adapter = early
        identify(spec, adapter)
    else:
        adapter = build_from_spec(spec)
    attach_budget(adapter, args)
    if args.dry_run:
        from lalm_eval.evaluator import plan_run

        plan = plan_run(
            adapter,
            tasks,
            include_path=args.include_path,
            limit=args.limit,
            gen_kwargs=args.gen_kwargs_dict,
            cache_dir=Path(args.cache_dir),
            use_cache=not args.no_cache,
            stream_chunk=args.stream_chunk,
            opened=opened,
        )
        out = None
        if args.output_path:
            out = Path(args.output_path) / "dry_run.json"
            out.write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
        print(format_plan(plan))
        if out is not None:
            print(f"wrote {out}")
        return 0
    run = evaluate(
        adapter,
        tasks,
        include_path=args.include_path,
        batch_size=args.batch_size,
        limit=args.limit,
        gen_kwargs=args.gen_kwargs_dict,
        cache_dir=Path(args.cache_dir),
        use_cache=not args.no_cache,
        judge_llm=judge_llm,
        seed=args.seed,
        stream_chunk=args.stream_chunk,
        opened=opened,
        judge_samples=args.judge_samples,
        bertscore_models=args.bertscore_models,
    )
    budget = getattr(adapter, "budget", None)
    not_run = sum(r.get("samples", {}).get("failures", {}).get("budget", 0) for r in run["results"].values())
    if budget is not None:
        run["budget"] = {"max_cost_usd": args.max_cost, "spent_usd": budget.spent, "not_run": not_run}
    config = {
        "model": args.model,
        "model_args": redact_model_args(args.model_args),
        "batch_size": args.batch_size,
        "judge": args.judge,
        "judge_samples": args.judge_samples,
        "bertscore_model": args.bertscore_model,
        "device": args.device,
        "seed": args.seed,
        "limit": args.limit,
        "gen_kwargs": args.gen_kwargs,
    }
    from lalm_eval.report.assemble import markdown_report

    if not is_main_process():  # every process holds all responses; one writes and prints
        return 0
    files = {}
    if args.output_path:  # written before anything is printed: a closed pipe or a console that cannot
        # show a character loses nothing
        kept = "every answer is in the response cache" if not args.no_cache else "--no_cache: the answers are not kept"
        with interrupt_note(
            lambda: f"the results in {args.output_path} may be incomplete; {kept}, rerun the same command"
        ):
            files = write_outputs(run, config, args.output_path, args.log_samples)
    print(markdown_report(run, args.model))
    print(
        f"cache: {run['cache']['hits']} hits, {run['cache']['misses']} misses; "
        f"model calls: {run['n_generated']}; {run['seconds']:.1f} s"
    )
    if files:
        print("wrote " + ", ".join(str(p) for p in files.values()))
    if not_run:
        print(
            f"lalm-eval: stopped at --max_cost {args.max_cost} USD (spent {budget.spent:.4f}): {not_run} requests "
            "not run; rerun the same command with a higher --max_cost to finish (answers so far are cached)",
            file=sys.stderr,
        )
        return 3
    failed = failed_tasks(run["results"], args.max_failure_share)
    if failed:
        limit = (
            "every doc failed" if args.max_failure_share is None else f"--max_failure_share {args.max_failure_share}"
        )
        print(f"lalm-eval: {len(failed)} task(s) failed ({limit}): " + "; ".join(failed), file=sys.stderr)
        return 4
    return 0


def run_subcommand(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="lalm-eval")
    sub = ap.add_subparsers(dest="command", required=True)
    t = sub.add_parser("tasks", help="list tasks and groups")
    t.add_argument("--include_path", action="append", default=None)
    m = sub.add_parser("make-tiny-model", help="build a tiny random-weight model of a real architecture offline")
    m.add_argument("arch")
    m.add_argument("out_dir")
    m.add_argument(
        "--head-dim", type=int, default=None, help="text attention head dim (qwen2_audio; 64 for vLLM's CPU kernels)"
    )
    m.add_argument(
        "--vocab", choices=["bytes", "word"], default="bytes", help="word: a word-level tokenizer (qwen2_audio)"
    )
    m.add_argument(
        "--vocab-tasks", default=None, help="--vocab word: the words of these tasks' training prompts/targets"
    )
    m.add_argument("--hidden-size", type=int, default=None, help="text model width (qwen2_audio; default 64)")
    m.add_argument("--include_path", action="append", default=None)
    m.add_argument("--cache_dir", default=None)
    sub.add_parser("paths", help="where the task and hub-card folders of this install are")
    r = sub.add_parser("report", help="one report (paper tables, plots) from several runs' output folders")
    r.add_argument("folders", nargs="+")
    r.add_argument("--output_path", default=None, help="write report_<stamp>.md and plots here")
    r.add_argument("--metrics", default=None, help="comma-separated metrics for the tables (default: all)")
    r.add_argument(
        "--layout",
        default=None,
        help="comma-separated report layouts (task folders' report_layouts*.yaml), e.g. palm_table1, "
        "palm_tables5_6, msu_table3, msu_table4, msu_table6 (default: each report's defaults)",
    )
    r.add_argument(
        "--error_sample",
        type=int,
        default=None,
        help="error-type layouts: count N classified failed answers per model, drawn at random (the "
        "MSU paper: 200); default: all",
    )
    r.add_argument("--seed", type=int, default=0, help="seed of --error_sample's draw")
    r.add_argument(
        "--include_path",
        action="append",
        default=None,
        help="extra task folder whose report_layouts*.yaml to read (repeatable)",
    )
    args = ap.parse_args(argv)
    if getattr(args, "include_path", None):
        args.include_path = include_paths_flag(args.include_path)
    if args.command == "paths":
        from lalm_eval.resources import RESOURCE_NAMES, resource_dir

        print(json.dumps({name: str(resource_dir(name)) for name in RESOURCE_NAMES}, indent=2))
    elif args.command == "report":
        from lalm_eval.report.combine import combine

        args.folders = [Path(os.path.expanduser(f)) if f.strip() else None for f in args.folders]
        for folder in args.folders:
            if folder is None:
                raise ConfigError(
                    "report: a folder argument is empty; give the --output_path folders of lalm-eval runs"
                )
            if not folder.is_dir():
                raise ConfigError(
                    f"{folder}: {'is a file' if folder.exists() else 'no such folder'}, not a run's output folder; "
                    "give the --output_path folders of lalm-eval runs"
                )
        if args.error_sample is not None:
            whole_number(args.error_sample, "--error_sample", 1, "give how many failed answers to sample, e.g. 200")
        if args.output_path is not None:
            args.output_path = writable_folder(args.output_path, "--output_path")
        metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
        layouts = [x.strip() for x in args.layout.split(",") if x.strip()] if args.layout else None
        text, files = combine(
            args.folders,
            args.output_path,
            metrics,
            layouts=layouts,
            error_sample=args.error_sample,
            seed=args.seed,
            include_paths=args.include_path,
        )
        print(text)
        if files:
            print("wrote " + ", ".join(map(str, files)))
    elif args.command == "tasks":
        from lalm_eval.tasks import TaskManager

        manager = TaskManager(include_paths=args.include_path)
        for group in manager.all_groups():
            print(f"group  {group:32s} {len(manager.resolve([group]))} tasks")
        for task in manager.all_tasks():
            print(f"task   {task}")
    else:
        from lalm_eval.models.tiny import make_tiny_model

        args.out_dir = writable_folder(args.out_dir, "make-tiny-model OUT_DIR")
        args.cache_dir = str(
            writable_folder(default_cache() if args.cache_dir is None else args.cache_dir, "--cache_dir")
        )
        texts = None
        if args.vocab == "word":
            from lalm_eval.training.data import example_texts, training_examples

            if not args.vocab_tasks:
                raise ConfigError(
                    "--vocab word: needs --vocab-tasks (the tasks whose words it learns); add --vocab-tasks T1,T2"
                )
            names = task_names(args.vocab_tasks, "--vocab-tasks")
            texts = example_texts(training_examples(names, Path(args.cache_dir), args.include_path))
        print(make_tiny_model(args.arch, args.out_dir, args.head_dim, args.vocab, texts, args.hidden_size))
    return 0


def main(argv=None) -> int:
    from lalm_eval.cli_support import guard, pop_verbose

    argv, verbose = pop_verbose(argv)

    def dispatch() -> int:
        if argv and argv[0] == "train":
            from lalm_eval.training.cli import main as train_main

            return train_main(argv[1:])
        if argv and argv[0] == "check":
            from lalm_eval.check import main as check_main

            return check_main(argv[1:])
        if argv and argv[0] == "doctor":
            from lalm_eval.doctor import main as doctor_main

            return doctor_main(argv[1:])
        if argv and argv[0] in SUBCOMMANDS:
            return run_subcommand(argv)
        return run_eval(eval_parser().parse_args(argv))

    return guard("lalm-eval", dispatch, verbose)


if __name__ == "__main__":
    raise SystemExit(main())
