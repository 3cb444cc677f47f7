"""``msu-bench``: build MSU-Bench (embedded conversations or a real corpus) and publish it.

Subcommands: ``build`` (Parquet + card), ``push`` (Hub upload; token from ``HF_TOKEN`` or the
cached login, never printed), ``tasks`` (the taxonomy).
"""

from __future__ import annotations

import argparse

from lalm_eval.cli_support import add_llm_options, add_push_command, llm_from_args, parse_key_values, run
from lalm_eval.hub.atomic import print_folder_report, staged_build
from msu_bench import __version__


def _build(args) -> int:
    import logging

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    _check_flags(args)
    if args.mcq_dir and args.corpus is None:  # the authors' public release alone
        return _build_mcq(args)
    args.corpus = args.corpus or "embedded"
    args.out = args.out or "msu-bench"
    mcq_report = None
    if args.mcq_dir:  # the release beside a corpus, read once: an import that keeps nothing stops before the planning
        from msu_bench.mcq import check_kept, import_summary, read_mcq_release

        mcq_report = read_mcq_release(args.mcq_dir)
        check_kept(import_summary(mcq_report), args.mcq_dir)
    with staged_build(args.out, "--out"):  # --out checked, its stage opened before anything is imported or read
        from msu_bench.export import build
        from msu_bench.plan import load_preset

        cfg = load_preset(args.preset, parse_key_values(args.set, "--set"))
        info = build(
            args.out,
            cfg,
            corpus=args.corpus,
            corpus_dir=args.corpus_dir,
            corpus_options=parse_key_values(args.corpus_option, "--corpus-option"),
            repo_id=args.repo_id,
            llm=llm_from_args(args),
            mcq_dir=args.mcq_dir,
            mcq_report=mcq_report,
            num_proc=args.num_proc,
        )
    st = info["stats"]
    print(
        f"wrote {args.out}: {st['total_questions']} questions about {st['segments']} segments "
        f"({', '.join(f'{k}: {v}' for k, v in st['languages'].items())}) in {info['seconds']:.0f} s; "
        f"load with datasets.load_dataset({str(args.out)!r}, 'all')"
    )
    print_folder_report("msu-bench", args.out, info)
    return 0


def _check_flags(args) -> None:
    """``--num_proc`` and the ``--llm`` backend name, before any folder is opened or anything read."""
    from lalm_eval.hub.export import check_num_proc

    check_num_proc(args.num_proc)
    if args.llm:
        from lalm_eval.llm.options import check_backend_name

        check_backend_name(args.llm, f"--llm {args.llm}")


def _build_mcq(args) -> int:
    out = args.out or "msu-bench-mcq"  # msu_bench.mcq_export.DEFAULT_OUT, the msu_mcq tasks' dataset_path
    with staged_build(out, "--out"):  # --out checked, its stage opened before anything is imported or read
        from msu_bench.mcq_export import build_mcq

        info = build_mcq(out, args.mcq_dir, repo_id=args.repo_id)
    from msu_bench.mcq import describe_import

    print(
        f"wrote {out}: {describe_import(info['stats']['mcq_import'])}; "
        f"see {out}/build_info.json; evaluate with lalm-eval --tasks msu_mcq"
    )
    print_folder_report("msu-bench", out, info)
    return 0


def _corpus_info(args) -> int:
    import json

    from msu_bench.corpus_info import corpus_info, format_table
    from msu_bench.plan import load_preset

    stats = corpus_info(
        args.corpus,
        args.corpus_dir,
        parse_key_values(args.corpus_option, "--corpus-option"),
        load_preset(args.preset, parse_key_values(args.set, "--set")),
    )
    print(json.dumps(stats, ensure_ascii=False, indent=2) if args.json else format_table(stats))
    return 0


def _tasks(args) -> int:
    from msu_bench.taxonomy import load_taxonomy

    for task in load_taxonomy().tasks:
        print(f"{task.id:48s} {task.tier}  {task.capability:5s} {task.name}")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="msu-bench", description="MSU-Bench: multi-speaker conversation understanding")
    ap.add_argument("--version", action="version", version=f"msu-bench {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build MSU-Bench and export Parquet + dataset card")
    b.add_argument("--out", help="output folder (default ./msu-bench; ./msu-bench-mcq for --mcq-dir alone)")
    b.add_argument("--preset", default="small")
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    b.add_argument("--corpus", help="embedded (default) | alimeeting | chime6 | magicdata | rttm")
    b.add_argument("--corpus-dir")
    b.add_argument("--corpus-option", action="append", default=[], metavar="KEY=VALUE")
    b.add_argument("--repo-id")
    b.add_argument(
        "--num_proc",
        type=int,
        default=None,
        metavar="N",
        help="write each tier in N processes (datasets' num_proc; same shards for any N)",
    )
    b.add_argument(
        "--mcq-dir",
        help="local copy of the authors' public MSU-Benchmark release: alone, builds just "
        "it (config 'mcq', into ./msu-bench-mcq); with --corpus, adds config 'mcq' to that build",
    )
    add_llm_options(b, "asks the tasks the annotation cannot answer")
    b.set_defaults(func=_build)
    add_push_command(sub)
    sub.add_parser("tasks", help="list the 25 tasks").set_defaults(func=_tasks)
    info = sub.add_parser(
        "corpus-info", allow_abbrev=False, help="what a reader finds in a corpus: conversations, turns, segments, skips"
    )
    info.add_argument("--corpus", default="embedded", help="embedded | alimeeting | chime6 | magicdata | rttm")
    info.add_argument("--corpus-dir")
    info.add_argument("--corpus-option", action="append", default=[], metavar="KEY=VALUE")
    info.add_argument("--preset", default="small", help="whose segment rule is applied")
    info.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="e.g. min_segment_s=30")
    info.add_argument("--json", action="store_true")
    info.set_defaults(func=_corpus_info)
    return run(ap, argv)


if __name__ == "__main__":
    raise SystemExit(main())
