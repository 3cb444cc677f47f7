"""``msu-bench``: build MSU-Bench (embedded conversations or a real corpus) and publish it.

Subcommands: ``build`` (Parquet + card), ``push`` (Hub upload; token from ``HF_TOKEN`` or the
cached login, never printed), ``tasks`` (the taxonomy).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from msu_bench import __version__


def _kv(items: list[str]) -> dict:
    import yaml

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"msu-bench: error: {item!r} must look like key=value")
        out[key.strip()] = yaml.safe_load(value)
    return out


def _build(args) -> int:
    import logging

    from msu_bench.export import build
    from msu_bench.plan import load_preset

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    cfg = load_preset(args.preset, _kv(args.set))
    llm = None
    if args.llm:
        from lalm_eval.llm import get_text_llm

        llm = get_text_llm(args.llm, **_kv(args.llm_option))
    info = build(args.out, cfg, corpus=args.corpus, corpus_dir=args.corpus_dir,
                 corpus_options=_kv(args.corpus_option), repo_id=args.repo_id, llm=llm)
    st = info["stats"]
    print(f"wrote {args.out}: {st['total_questions']} questions about {st['segments']} segments "
          f"({', '.join(f'{k}: {v}' for k, v in st['languages'].items())}) in {info['seconds']:.0f} s; "
          f"load with datasets.load_dataset({str(args.out)!r}, 'all')")
    return 0


def _push(args) -> int:
    from lalm_eval.hub.push import push_folder

    print(push_folder(args.dir, args.repo_id, private=args.private, dry_run=args.dry_run,
                      revision=args.revision).summary())
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
    b.add_argument("--out", default="msu-bench", help="output folder (default ./msu-bench)")
    b.add_argument("--preset", default="small")
    b.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    b.add_argument("--corpus", default="embedded", help="embedded | alimeeting | chime6 | magicdata | rttm")
    b.add_argument("--corpus-dir")
    b.add_argument("--corpus-option", action="append", default=[], metavar="KEY=VALUE")
    b.add_argument("--repo-id")
    b.add_argument("--llm", help="text-LLM backend for tasks the annotation cannot answer (e.g. openai)")
    b.add_argument("--llm-option", action="append", default=[], metavar="KEY=VALUE",
                   help="e.g. --llm-option model=deepseek-v3 --llm-option base_url=http://host:8000/v1")
    b.set_defaults(func=_build)
    p = sub.add_parser("push", help="upload a built folder to the Hugging Face Hub")
    p.add_argument("dir", type=Path)
    p.add_argument("--repo-id", required=True)
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision")
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=_push)
    sub.add_parser("tasks", help="list the 25 tasks").set_defaults(func=_tasks)
    args = ap.parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:  # noqa: BLE001 - project errors become one clear line
        from lalm_eval.errors import LalmEvalError

        if isinstance(exc, (LalmEvalError, KeyError, FileNotFoundError)):
            print(f"msu-bench: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    raise SystemExit(main())
