"""``lalm-eval export-tasks --to lmms-eval OUT_DIR --tasks ...`` and ``lalm-eval score-samples
LMMS_OUTPUT_DIR [--tasks ...]``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from lalm_eval.errors import ConfigError
from lalm_eval.flags import judge_from_flag


def export_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="lalm-eval export-tasks",
        description="write lmms-eval task folders of lalm-eval tasks: the same prompts, audio, docs and "
        "metric code (run them with lmms-eval --include_path OUT_DIR)",
    )
    ap.add_argument("out_dir", metavar="OUT_DIR", help="the folder to write (replaced whole when it is an export)")
    ap.add_argument("--to", default="lmms-eval", choices=["lmms-eval"], help="the harness (lmms-eval 0.7.3 tested)")
    ap.add_argument("--tasks", required=True, help="comma-separated tasks, groups or tags, e.g. palm,msu,msu_mcq")
    ap.add_argument("--include_path", action="append", default=None, help="extra task folder (repeatable)")
    ap.add_argument(
        "--cache_dir", default=None, help="where embedded datasets are built (as for lalm-eval; default: its cache)"
    )
    return ap


def export_main(argv=None) -> int:
    from lalm_eval.export_lmms.exporter import export_tasks
    from lalm_eval.flags import default_cache, include_paths_flag, task_names, writable_folder

    args = export_parser().parse_args(argv)
    if not args.out_dir.strip():
        raise ConfigError("OUT_DIR: empty; give the folder to write the lmms-eval tasks into")
    names = task_names(args.tasks)
    include = include_paths_flag(args.include_path) if args.include_path else None
    cache_dir = writable_folder(default_cache() if args.cache_dir is None else args.cache_dir, "--cache_dir")
    out = Path(os.path.expanduser(args.out_dir))
    info = export_tasks(names, out, include_path=include, cache_dir=cache_dir)
    folders = sorted({t["folder"] for t in info["tasks"].values()})
    print(
        f"lalm-eval export-tasks: {len(info['tasks'])} task(s) and {len(info['groups'])} group(s) in "
        f"{', '.join(folders)} under {out}"
    )
    for task, why in info["not_exported"]["tasks"].items():
        print(f"lalm-eval export-tasks: not exported: {task}: {why}")
    judged = sorted({m for per in info["not_exported"]["metrics"].values() for m in per})
    if judged:
        print(
            f"lalm-eval export-tasks: metrics left to lalm-eval score-samples: {', '.join(judged)} "
            f"({len(info['not_exported']['metrics'])} task(s); reasons in export_info.json)"
        )
    print(
        f"lalm-eval export-tasks: run: lmms-eval --model qwen2_audio --tasks {args.tasks} --include_path {out} "
        "--log_samples --output_path OUT"
    )
    return 0


def score_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="lalm-eval score-samples",
        description="score lmms-eval's --log_samples answers with lalm-eval's tasks, metrics and judges: "
        "results JSON, samples and the report with the papers' layouts",
    )
    ap.add_argument("lmms_dir", metavar="LMMS_OUTPUT_DIR", help="lmms-eval's --output_path (or its model folder)")
    ap.add_argument("--tasks", default=None, help="comma-separated tasks (default: every task with samples there)")
    ap.add_argument("--output_path", default=None, help="where to write (default: <the samples' folder>/lalm-eval)")
    ap.add_argument("--judge", default=None, help="as for lalm-eval: the judge of the judged metrics")
    ap.add_argument("--judge_samples", default=1, help="as for lalm-eval: verdicts per item")
    ap.add_argument("--bertscore_model", default=None, help="as for lalm-eval: en=...,zh=... BERTScore backbones")
    ap.add_argument(
        "--layout",
        default=None,
        help="comma-separated report layouts, as for lalm-eval report, e.g. palm_table1, msu_table3 "
        "(default: each report's defaults)",
    )
    ap.add_argument("--seed", default=0, help="seed of the bootstrap intervals and judge sampling")
    ap.add_argument("--include_path", action="append", default=None, help="extra task folder (repeatable)")
    ap.add_argument("--cache_dir", default=None, help="datasets and judge cache (as for lalm-eval)")
    return ap


def score_main(argv=None) -> int:
    from lalm_eval.evaluation.docs import OpenedTasks, naming_task, open_docs
    from lalm_eval.evaluation.run import evaluate
    from lalm_eval.export_lmms.samples import LoggedAnswers, check_prompts, find_samples, lmms_config, read_samples
    from lalm_eval.flags import (
        bertscore_model_flag,
        default_cache,
        include_paths_flag,
        task_names,
        whole_number,
        writable_folder,
    )
    from lalm_eval.report.assemble import write_outputs
    from lalm_eval.tasks import TaskManager

    args = score_parser().parse_args(argv)
    folder = Path(os.path.expanduser(args.lmms_dir))
    seed = whole_number(args.seed, "--seed", 0, "e.g. --seed 1234", 2**32 - 1)
    include = include_paths_flag(args.include_path) if args.include_path else None
    cache_dir = writable_folder(default_cache() if args.cache_dir is None else args.cache_dir, "--cache_dir")
    layouts = [x.strip() for x in args.layout.split(",") if x.strip()] if args.layout is not None else None
    if layouts is not None:  # checked before anything is scored
        from lalm_eval.report.layouts import LayoutIndex

        if not layouts:
            raise ConfigError("--layout: names no layout; give comma-separated layout names (lalm-eval report --help)")
        index = LayoutIndex.load(include)
        for name in layouts:
            index.layout(name, flag="--layout")
    judge_llm = judge_from_flag(args.judge)  # checked before any docs are opened; nothing sent
    from lalm_eval.judges.decoding import check_samples

    judge_samples = check_samples(args.judge_samples, judge_llm)
    manager = TaskManager(include_paths=include)
    wanted = manager.resolve(task_names(args.tasks)) if args.tasks else None
    files = find_samples(folder, wanted)
    unknown = [t for t in files if t not in manager.all_tasks()]
    if unknown and wanted is None:
        files = {t: p for t, p in files.items() if t not in unknown}
        print(f"lalm-eval score-samples: skipped samples of tasks lalm-eval does not know: {', '.join(unknown)}")
    if not files:
        raise ConfigError(f"LMMS_OUTPUT_DIR {folder}: no samples of a lalm-eval task; give --tasks or --include_path")
    answers = {t: read_samples(p) for t, p in files.items()}
    samples_dir = next(iter(files.values())).parent
    out = writable_folder(args.output_path or samples_dir / "lalm-eval", "--output_path")
    opened = []
    for name in files:
        task = manager.load_task(name)
        with naming_task(task):
            opened.append(open_docs(task, cache_dir, max(answers[name]) + 1))
    check_prompts(opened, answers, files)
    tasks = OpenedTasks(list(files), manager, opened, cache_dir)
    lmms = lmms_config(samples_dir)
    model = f"lmms-eval {lmms.get('model', '?')}"
    identity = {"model": "lmms-eval", "lmms_model": lmms.get("model"), "model_args": lmms.get("model_args")}
    bertscore = bertscore_model_flag(args.bertscore_model)
    run = evaluate(
        LoggedAnswers(answers, identity),
        tasks,
        cache_dir=cache_dir,
        use_cache=False,
        judge_llm=judge_llm,
        seed=seed,
        judge_samples=judge_samples,
        bertscore_models=bertscore,
    )
    config = {
        "model": model,
        "model_args": lmms.get("model_args"),
        "scored_from": str(samples_dir),
        "judge": args.judge,
        "seed": seed,
        "limit": None,
    }
    written = write_outputs(run, config, out, log_samples=True)
    if layouts is None:
        print(written["report"].read_text(encoding="utf-8"))
    else:
        from lalm_eval.report.assemble import markdown_report
        from lalm_eval.report.combine import combine

        print(markdown_report(run, model))
        print(combine([out], None, layouts=layouts, include_paths=include)[0])
    print(
        f"lalm-eval score-samples: {sum(len(a) for a in answers.values())} answers of {len(files)} task(s) from {samples_dir}"
    )
    print("lalm-eval score-samples: wrote " + ", ".join(str(p) for p in written.values()))
    return 0
