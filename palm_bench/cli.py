"""``palm-bench``: the PALM-Bench command line.

Subcommands: ``corpus-info`` (statistics of the embedded or a rendered corpus). The dataset
build, export and push commands arrive with the builder.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

DEFAULT_CACHE = Path(os.environ.get("LALM_EVAL_CACHE", Path.home() / ".cache" / "lalm_eval"))


def _corpus_info(args) -> int:
    from palm_bench.corpus.embedded import load_corpus, load_embedded_corpus
    from palm_bench.corpus_info import corpus_statistics, format_table

    corpus = load_corpus(args.corpus_dir) if args.corpus_dir else load_embedded_corpus()
    cache = None if args.no_cache else DEFAULT_CACHE / "embeddings"
    stats = corpus_statistics(corpus, encoder=args.encoder, cache_dir=cache, with_eer=not args.no_eer)
    print(json.dumps(stats, ensure_ascii=False, indent=2) if args.json else format_table(stats))
    return 0


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="palm-bench", description="PALM-Bench: personalized audio-LLM benchmark")
    sub = ap.add_subparsers(dest="command", required=True)
    info = sub.add_parser("corpus-info", help="statistics of the embedded speech corpus")
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.add_argument("--encoder", default="resemblyzer", help="speaker encoder for the EER (default: resemblyzer)")
    info.add_argument("--corpus-dir", type=Path, help="a rendered corpus folder (default: the embedded one)")
    info.add_argument("--no-eer", action="store_true", help="skip the speaker-embedding EER")
    info.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    info.set_defaults(func=_corpus_info)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:  # noqa: BLE001 - turn project errors into one clear line
        from lalm_eval.errors import LalmEvalError

        if isinstance(exc, (LalmEvalError, KeyError, FileNotFoundError)):
            print(f"palm-bench: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    raise SystemExit(main())
