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
import json
import os
import re
import sys
from pathlib import Path

from lalm_eval import __version__
from lalm_eval.cli_support import parse_key_values
from lalm_eval.errors import LalmEvalError

DEFAULT_CACHE = Path(os.environ.get("LALM_EVAL_CACHE", Path.home() / ".cache" / "lalm_eval"))
SUBCOMMANDS = ("tasks", "make-tiny-model", "paths", "report", "check", "train", "doctor")


def _model_args(text: str) -> dict:
    return parse_key_values([p for p in text.split(",") if p.strip()]) if text else {}


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
    ap.add_argument("--limit", type=int, default=None, help="first N docs of each task")
    ap.add_argument("--output_path", default=None, help="folder for results_*.json, samples and report")
    ap.add_argument("--log_samples", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default=None, help="cpu, cuda, cuda:N or auto (default: the adapter's)")
    ap.add_argument("--gen_kwargs", default="", help="k=v,k=v overriding every task's generation kwargs")
    ap.add_argument("--cache_dir", default=str(DEFAULT_CACHE), help="datasets, embeddings and response cache")
    ap.add_argument("--no_cache", action="store_true", help="do not read or write the response cache")
    ap.add_argument(
        "--stream_chunk",
        type=int,
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
        "--dry_run",
        action="store_true",
        help="print the requests, audio seconds and (API adapters) token and price estimate the run "
        "would send, cache hits discounted, without calling the model",
    )
    ap.add_argument(
        "--max_cost",
        type=float,
        default=None,
        help="API adapters: stop sending requests once this many USD are spent (by the provider's "
        "usage and the price table); answers so far stay cached, a rerun resumes",
    )
    ap.add_argument("--prices", default=None, help="price table YAML (default: lalm_eval/models/prices.yaml)")
    ap.add_argument(
        "--max_failure_share",
        type=_share,
        default=None,
        help="exit with status 4 when a task's share of failed docs (generation errors, undecodable "
        "audio) exceeds this, 0-1 (default: only when every doc of a task failed); results are "
        "written either way",
    )
    return ap


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a share between 0 and 1, got {text}")
    return value


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
        raise LalmEvalError(f"--max_cost/--prices: adapter {adapter.name!r} is not an API adapter; it has no price")
    from lalm_eval.cost import Budget, load_prices

    prices = load_prices(args.prices)
    if hasattr(adapter, "prices"):
        adapter.prices = prices
    if args.max_cost is not None:
        adapter.budget = Budget(args.max_cost, prices)


def build_adapter(
    model: str, model_args_text: str, device: str | None, cache_dir: str, use_response_cache: bool = True
):
    """The registered adapter ``model`` built from ``k=v,k=v`` args (``--device`` and, for adapters
    with caches of their own, ``--cache_dir`` passed on; adapters that write answers to the response
    cache themselves, ``WRITES_RESPONSE_CACHE``, get none under ``--no_cache``). Unknown args are
    named with the ones the adapter takes."""
    import inspect

    from lalm_eval.models import MODELS
    from lalm_eval.parallel import local_device

    model_args = _model_args(model_args_text)
    device = local_device(device or model_args.get("device"))
    if device:
        model_args["device"] = device
    adapter_cls = MODELS.get(model)
    if "cache_dir" in inspect.signature(adapter_cls.__init__).parameters:  # adapters with caches of their own
        off = not use_response_cache and getattr(adapter_cls, "WRITES_RESPONSE_CACHE", False)
        model_args.setdefault("cache_dir", "none" if off else cache_dir)
    signature = inspect.signature(adapter_cls.__init__)
    try:  # an argument the adapter does not take (or a missing one): name it, list the valid ones
        signature.bind(None, **model_args)
    except TypeError as exc:
        params = [n for n, p in signature.parameters.items() if n != "self" and p.kind != p.VAR_KEYWORD]
        raise LalmEvalError(f"--model {model}: bad model_args ({exc}); it takes: {', '.join(params)}") from None
    return adapter_cls(**model_args)


def run_eval(args) -> int:
    import random

    import numpy as np

    from lalm_eval.evaluator import evaluate
    from lalm_eval.report.assemble import write_outputs

    random.seed(args.seed)
    np.random.seed(args.seed)
    from lalm_eval.parallel import is_main_process

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    from lalm_eval.tasks import TaskManager

    manager = TaskManager(include_paths=args.include_path)  # every task and its metric_list checked
    for name in manager.resolve(tasks):  # before a model is built
        manager.load_task(name)
    adapter = build_adapter(
        args.model, args.model_args, args.device, args.cache_dir, use_response_cache=not args.no_cache
    )
    attach_budget(adapter, args)
    if args.dry_run:
        from lalm_eval.evaluator import plan_run

        plan = plan_run(
            adapter,
            tasks,
            include_path=args.include_path,
            limit=args.limit,
            gen_kwargs=_model_args(args.gen_kwargs),
            cache_dir=Path(args.cache_dir),
            use_cache=not args.no_cache,
            stream_chunk=args.stream_chunk,
        )
        print(format_plan(plan))
        if args.output_path:
            out = Path(args.output_path) / "dry_run.json"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(plan, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {out}")
        return 0
    judge_llm = None
    if args.judge:
        from lalm_eval.judges import judge_llm_from_spec

        judge_llm = judge_llm_from_spec(args.judge)
    run = evaluate(
        adapter,
        tasks,
        include_path=args.include_path,
        batch_size=args.batch_size,
        limit=args.limit,
        gen_kwargs=_model_args(args.gen_kwargs),
        cache_dir=Path(args.cache_dir),
        use_cache=not args.no_cache,
        judge_llm=judge_llm,
        seed=args.seed,
        stream_chunk=args.stream_chunk,
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
        "device": args.device,
        "seed": args.seed,
        "limit": args.limit,
        "gen_kwargs": args.gen_kwargs,
    }
    from lalm_eval.report.assemble import markdown_report

    if not is_main_process():  # every process holds all responses; one writes and prints
        return 0
    print(markdown_report(run, args.model))
    print(
        f"cache: {run['cache']['hits']} hits, {run['cache']['misses']} misses; "
        f"model calls: {run['n_generated']}; {run['seconds']:.1f} s"
    )
    if args.output_path:
        files = write_outputs(run, config, args.output_path, args.log_samples)
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
    m.add_argument("out_dir", type=Path)
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
    m.add_argument("--cache_dir", default=str(DEFAULT_CACHE))
    sub.add_parser("paths", help="where the task and hub-card folders of this install are")
    r = sub.add_parser("report", help="one report (paper tables, plots) from several runs' output folders")
    r.add_argument("folders", nargs="+", type=Path)
    r.add_argument("--output_path", type=Path, default=None, help="write report_<stamp>.md and plots here")
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
    if args.command == "paths":
        from lalm_eval.resources import RESOURCE_NAMES, resource_dir

        print(json.dumps({name: str(resource_dir(name)) for name in RESOURCE_NAMES}, indent=2))
    elif args.command == "report":
        from lalm_eval.report.combine import combine

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

        texts = None
        if args.vocab == "word":
            from lalm_eval.training.data import example_texts, training_examples

            if not args.vocab_tasks:
                from lalm_eval.errors import ConfigError

                raise ConfigError("make-tiny-model --vocab word needs --vocab-tasks (the tasks whose words it learns)")
            names = [t.strip() for t in args.vocab_tasks.split(",") if t.strip()]
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
