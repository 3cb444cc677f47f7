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
import sys
import time
from pathlib import Path

from lalm_eval import __version__
from lalm_eval.errors import ConfigError
from lalm_eval.flags import (
    CACHE_ENV,
    batch_size_flag,
    bertscore_model_flag,
    default_cache,
    device_flag,
    gen_kwargs_flag,
    include_paths_flag,
    judge_from_flag,
    key_values,
    real_number,
    task_names,
    whole_number,
    writable_folder,
)

SUBCOMMANDS = (
    "tasks",
    "make-tiny-model",
    "paths",
    "report",
    "check",
    "train",
    "doctor",
    "view",
    "export-tasks",
    "score-samples",
)


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
    key_values(args.model_args)
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
    from lalm_eval.trackers import add_tracker_flags

    add_tracker_flags(ap)  # --wandb_args, --wandb_log_audio, --hf_hub_log_args
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
        n = r.n
        effective, scored = n.get("effective", 0), n.get("scored", 0)
        if not effective:
            continue
        share = (effective - scored) / effective
        if (share > max_share) if max_share is not None else scored == 0:
            kinds = ", ".join(f"{k} {v}" for k, v in sorted(r.sample_info.get("failures", {}).items()))
            out.append(f"{name}: {effective - scored}/{effective} docs failed" + (f" ({kinds})" if kinds else ""))
    return out


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


def run_eval(args, timings=None) -> int:
    from lalm_eval.timings import Timings

    timings = timings if timings is not None else Timings()
    t_imports = time.perf_counter()
    import random

    import numpy as np

    from lalm_eval.cli_support import interrupt_note
    from lalm_eval.evaluation.docs import open_tasks
    from lalm_eval.evaluation.run import evaluate
    from lalm_eval.models.build import adapter_spec, build_from_spec, identify, redact_model_args
    from lalm_eval.report.assemble import write_outputs

    timings.add("imports", time.perf_counter() - t_imports)
    check_eval_args(args)  # every flag, and --output_path / --cache_dir made and probed
    from lalm_eval.trackers import prepare_trackers

    trackers = prepare_trackers(args)  # checked now: a bad tracker flag costs no evaluation
    random.seed(args.seed)
    np.random.seed(args.seed)
    from lalm_eval.parallel import is_main_process

    judge_llm = judge_from_flag(args.judge)  # built before any task or model; nothing sent
    from lalm_eval.judges.decoding import check_samples

    args.judge_samples = check_samples(args.judge_samples, judge_llm)  # errors name --judge_samples
    tasks = args.task_list
    spec = adapter_spec(args.model, args.model_args, args.device, args.cache_dir, use_response_cache=not args.no_cache)
    # an adapter whose building loads nothing is built now: its args checked before the tasks
    early = build_from_spec(spec, identify=False) if getattr(spec.cls, "BUILT_BEFORE_TASKS", False) else None
    # every task loaded (YAML, metrics, filters), its dataset, config and split opened and its first
    # doc rendered: before a model is built (or, built above, hashed)
    opened = open_tasks(
        tasks, include_path=args.include_path, cache_dir=Path(args.cache_dir), limit=args.limit, timings=timings
    )
    for task, docs in zip(opened.tasks, opened.opened):
        if not len(docs):
            print(
                f"lalm-eval: task {task.name!r} has no docs ({task.yaml_file}); it is reported empty", file=sys.stderr
            )
    with timings.stage("model_load"):  # the adapter built and identified (weights hashed); HF weights load lazily
        if early is not None:
            adapter = early
            identify(spec, adapter)
        else:
            adapter = build_from_spec(spec)
    attach_budget(adapter, args)
    if args.dry_run:
        from lalm_eval.evaluation.plan import plan_run

        plan = plan_run(
            adapter,
            opened,
            gen_kwargs=args.gen_kwargs_dict,
            cache_dir=Path(args.cache_dir),
            use_cache=not args.no_cache,
            stream_chunk=args.stream_chunk,
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
        opened,
        batch_size=args.batch_size,
        gen_kwargs=args.gen_kwargs_dict,
        cache_dir=Path(args.cache_dir),
        use_cache=not args.no_cache,
        judge_llm=judge_llm,
        seed=args.seed,
        stream_chunk=args.stream_chunk,
        judge_samples=args.judge_samples,
        bertscore_models=args.bertscore_models,
        timings=timings,
    )
    budget = getattr(adapter, "budget", None)
    not_run = sum(r.sample_info.get("failures", {}).get("budget", 0) for r in run.results.values())
    if budget is not None:
        run.budget = {"max_cost_usd": args.max_cost, "spent_usd": budget.spent, "not_run": not_run}
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
    run.timings = timings.block()
    if args.output_path:  # written before anything is printed: a closed pipe or a console that cannot
        # show a character loses nothing
        kept = "every answer is in the response cache" if not args.no_cache else "--no_cache: the answers are not kept"
        with interrupt_note(
            lambda: f"the results in {args.output_path} may be incomplete; {kept}, rerun the same command"
        ):
            files = write_outputs(run, config, args.output_path, args.log_samples)
    print(markdown_report(run, args.model))
    print(
        f"cache: {run.cache['hits']} hits, {run.cache['misses']} misses; "
        f"model calls: {run.n_generated}; {run.seconds:.1f} s"
    )
    if files:
        print("wrote " + ", ".join(str(p) for p in files.values()))
    if trackers is not None and files:  # after the files: a tracker failure loses nothing (warned, exit unchanged)
        trackers.run(files, opened)
    if not_run:
        print(
            f"lalm-eval: stopped at --max_cost {args.max_cost} USD (spent {budget.spent:.4f}): {not_run} requests "
            "not run; rerun the same command with a higher --max_cost to finish (answers so far are cached)",
            file=sys.stderr,
        )
        return 3
    failed = failed_tasks(run.results, args.max_failure_share)
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
    from lalm_eval.timings import Timings

    timings = Timings()  # startup: the process's start to here

    argv, verbose = pop_verbose(argv)

    def dispatch() -> int:
        if argv and argv[0] == "train":
            from lalm_eval.training.cli import main as train_main

            return train_main(argv[1:])
        if argv and argv[0] == "check":
            from lalm_eval.check import main as check_main

            return check_main(argv[1:])
        if argv and argv[0] == "view":
            from lalm_eval.view.cli import main as view_main

            return view_main(argv[1:])
        if argv and argv[0] == "export-tasks":
            from lalm_eval.export_lmms.cli import export_main

            return export_main(argv[1:])
        if argv and argv[0] == "score-samples":
            from lalm_eval.export_lmms.cli import score_main

            return score_main(argv[1:])
        if argv and argv[0] == "doctor":
            from lalm_eval.doctor import main as doctor_main

            return doctor_main(argv[1:])
        if argv and argv[0] in SUBCOMMANDS:
            return run_subcommand(argv)
        return run_eval(eval_parser().parse_args(argv), timings)

    return guard("lalm-eval", dispatch, verbose)


if __name__ == "__main__":
    raise SystemExit(main())
