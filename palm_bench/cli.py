"""``palm-bench``: the PALM-Bench command line.

Subcommands: ``corpus-info`` (statistics of the embedded or a rendered corpus), ``build``
(dataset → Parquet + card), ``push`` (upload to the Hub; token from ``HF_TOKEN`` or the
cached login, never printed) and ``export-sft`` (ms-swift / LLaMA-Factory training data,
:mod:`palm_bench.sft_export`).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from lalm_eval.cli_support import add_llm_options, add_push_command, llm_from_args, parse_key_values, run

DEFAULT_CACHE = Path(os.environ.get("LALM_EVAL_CACHE", Path.home() / ".cache" / "lalm_eval"))


def _corpus_info(args) -> int:
    from palm_bench.config import load_preset
    from palm_bench.corpus.embedded import load_corpus, load_embedded_corpus
    from palm_bench.corpus_info import corpus_statistics, format_table
    from palm_bench.plan import load_corpus_by_kind

    if args.corpus == "embedded":
        corpus = load_corpus(args.corpus_dir) if args.corpus_dir else load_embedded_corpus()
    else:
        if not args.corpus_dir:
            from lalm_eval.errors import ConfigError

            raise ConfigError(f"corpus-info --corpus {args.corpus} needs --corpus-dir")
        corpus, _ = load_corpus_by_kind(
            args.corpus, str(args.corpus_dir), parse_key_values(args.corpus_option, "--corpus-option")
        )
    from lalm_eval.audio.speaker import EMBEDDINGS_FOLDER

    cache = None if args.no_cache else DEFAULT_CACHE / EMBEDDINGS_FOLDER
    stats = corpus_statistics(
        corpus, encoder=args.encoder, cache_dir=cache, with_eer=not args.no_eer, scene_config=load_preset(args.preset)
    )
    print(json.dumps(stats, ensure_ascii=False, indent=2) if args.json else format_table(stats))
    return 0


def _build(args) -> int:
    from lalm_eval.hub.atomic import print_folder_report, staged_build

    _check_flags(args)
    # --out checked and its stage opened before anything is imported, read or planned
    with staged_build(args.out, "--out"):
        info = _build_into(args)
    st = info["stats"]
    print(
        f"wrote {args.out}: {st['total_samples']} samples ({st['total_sample_hours']:.2f} h) from "
        f"{st['unique_audios']} clips in {info['seconds']['total']:.0f} s; "
        f"{info['bytes_per_sample'] / 1000:.1f} kB/sample; load with "
        f"datasets.load_dataset({str(args.out)!r}, 'recognition')"
    )
    if info.get("deviations"):
        keys = ", ".join(d["key"] for d in info["deviations"])
        print(f"deviations from the PALM paper's steps: {keys} (each listed in the card and build_info.json)")
    print_folder_report("palm-bench", args.out, info)
    return 0


def _check_flags(args) -> None:
    """``--num_proc`` and the ``--llm`` backend name, before any folder is opened or anything read."""
    from lalm_eval.hub.export import check_num_proc

    check_num_proc(args.num_proc)
    from palm_bench.deviations import check_keys

    check_keys(args.allow_deviation, "--allow-deviation")
    if args.llm:
        from lalm_eval.llm.options import check_backend_name

        check_backend_name(args.llm, f"--llm {args.llm}")


def _build_into(args) -> dict:
    import logging

    from palm_bench.config import load_preset
    from palm_bench.export import build

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    overrides = parse_key_values(args.set, "--set")
    if args.caption_reference:
        overrides["caption_reference"] = args.caption_reference
    if args.description_model:
        overrides["description_model"] = args.description_model
    if args.encoder:  # the preset's encoder options belong to the preset's encoder
        overrides["encoder"] = args.encoder
        overrides["encoder_options"] = {}
    if args.encoder_option:
        overrides["encoder_options"] = parse_key_values(args.encoder_option, "--encoder-option")
    if args.allow_deviation:
        overrides["allowed_deviations"] = list(dict.fromkeys(args.allow_deviation))
    cfg = load_preset(args.preset, overrides)
    options = parse_key_values(args.corpus_option, "--corpus-option")
    tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    llm = llm_from_args(args)
    from palm_bench.deviations import resolve

    # the caption LLM, the description model and the encoder the paper's steps need: checked
    # before any planning work (build() resolves the same config again and records the deviations)
    resolve(cfg, llm, where=f"--preset {args.preset}")
    info = build(
        args.out,
        cfg,
        corpus=args.corpus,
        corpus_dir=args.corpus_dir,
        corpus_options=options,
        work_dir=None if args.no_cache else DEFAULT_CACHE,
        tasks=tasks,
        repo_id=args.repo_id,
        llm=llm,
        num_proc=args.num_proc,
        preset=args.preset,
    )
    return info


def _export_sft(args) -> int:
    from lalm_eval.hub.atomic import check_out_path, print_folder_report
    from palm_bench.sft_export import check_request, export_sft

    check_out_path(args.out, "--out")  # before the tasks load and the dataset is opened (or built)
    tasks = tuple(t.strip() for t in args.tasks.split(",") if t.strip())
    check_request(tasks, args.limit, args.prompt)  # --tasks / --limit, before anything is read

    info = export_sft(
        args.out,
        args.format,
        split=args.split,
        dataset=args.dataset,
        tasks=tasks,
        strategy=args.prompt,
        cache_dir=DEFAULT_CACHE,
        limit=args.limit,
    )
    per_task = ", ".join(f"{t} {v['rows']}" for t, v in info["tasks"].items())
    print(
        f"wrote {args.out}: {info['rows']} {args.format} examples ({info['jsonl']}), {info['audio_files']} audio "
        f"files; rows per task: {per_task}"
    )
    print_folder_report("palm-bench", args.out, info)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from palm_bench.deviations import deviation_keys

    ap = argparse.ArgumentParser(prog="palm-bench", description="PALM-Bench: personalized audio-LLM benchmark")
    sub = ap.add_subparsers(dest="command", required=True)
    info = sub.add_parser(
        "corpus-info", help="statistics of a speech corpus (default: the embedded one)", allow_abbrev=False
    )
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.add_argument("--encoder", default="resemblyzer", help="speaker encoder for the EER (default: resemblyzer)")
    info.add_argument(
        "--corpus", default="embedded", choices=["embedded", "ncssd", "folder"], help="which reader (default: embedded)"
    )
    info.add_argument(
        "--corpus-dir",
        type=Path,
        help="the corpus folder (embedded: a rendered corpus's data folder; default: the embedded one)",
    )
    info.add_argument(
        "--corpus-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="reader option, as for build (e.g. language=en)",
    )
    info.add_argument("--preset", default="small", help="whose scene mix the speaker counts are checked against")
    info.add_argument("--no-eer", action="store_true", help="skip the speaker-embedding EER")
    info.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    info.set_defaults(func=_corpus_info)

    b = sub.add_parser("build", help="build PALM-Bench and export Parquet + dataset card")
    b.add_argument(
        "--out",
        default="palm-bench",
        help="output folder (default: ./palm-bench, so that load_dataset('palm-bench', 'recognition') finds it)",
    )
    b.add_argument("--preset", default="small", help="small | paper | a YAML file (default: small)")
    b.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a build knob, e.g. --set seed=3 --set templates_per_audio=4",
    )
    b.add_argument("--corpus", default="embedded", choices=["embedded", "ncssd", "folder"])
    b.add_argument("--corpus-dir", help="corpus folder (ncssd / folder; or a rendered embedded layout)")
    b.add_argument(
        "--corpus-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="reader option, e.g. --corpus-option speaker_map=map.tsv --corpus-option language=en",
    )
    b.add_argument("--tasks", default="recognition,captioning,reasoning")
    b.add_argument("--repo-id", help="Hub id named in the card's loading snippet")
    b.add_argument("--no-cache", action="store_true", help="do not use the embedding/description cache")
    b.add_argument(
        "--num_proc",
        type=int,
        default=None,
        metavar="N",
        help="render each split in N processes (datasets' num_proc; same shards for any N)",
    )
    b.add_argument(
        "--caption-reference",
        choices=["transcript", "summary", "qa", "summary+qa"],
        default=None,
        help="captioning references (PALM Table 24): transcript (small's default, offline; a deviation), "
        "summary (LLM summaries), qa (adds three LLM question/answer rows per utterance) or "
        "summary+qa (both, as the paper; the paper preset's default); all but transcript need --llm",
    )
    b.add_argument(
        "--description-model",
        metavar="MODEL[:ARGS]",
        default=None,
        help="a harness adapter that writes each subject's AD (Table 23 prompt) and HD from its "
        "train-split reference audio, e.g. vllm:pretrained=Qwen/Qwen3-Omni-30B-A3B-Thinking or "
        "openai_audio:model=M,base_url=URL (default: AD measured, HD from data)",
    )
    b.add_argument(
        "--encoder",
        default=None,
        help="speaker encoder grading the negatives: resemblyzer (small's default) or ecapa "
        "(SpeechBrain ECAPA-TDNN, the paper's spkrec-ecapa-voxceleb; the ecapa extra)",
    )
    b.add_argument(
        "--encoder-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="encoder option, e.g. --encoder-option source=DIR (a local spkrec-ecapa-voxceleb folder)",
    )
    b.add_argument(
        "--allow-deviation",
        action="append",
        default=[],
        metavar="KEY",
        help="build with this project's replacement for one of the paper's steps (repeatable; keys: "
        f"{', '.join(deviation_keys())}, from palm_bench/deviations.yaml); "
        "--preset paper stops without it when a step cannot be done the paper's way",
    )
    add_llm_options(
        b, "writes missing subject profiles and, with --caption-reference summary|qa, the captioning references"
    )
    b.set_defaults(func=_build)
    add_push_command(sub)

    x = sub.add_parser(
        "export-sft", help="rows as ms-swift / LLaMA-Factory audio SFT data, with the harness tasks' own prompts"
    )
    x.add_argument("--format", required=True, choices=["ms-swift", "llamafactory"])
    x.add_argument("--out", required=True, help="output folder (audio/, <split>.jsonl, dataset_info.json)")
    x.add_argument("--split", default="train")
    x.add_argument(
        "--dataset",
        default="palm-bench",
        help="a built PALM-Bench folder or Hub id (default: "
        "./palm-bench, else the embedded small preset, built once into the cache)",
    )
    x.add_argument(
        "--tasks",
        default="recognition,captioning",
        help="PALM task configs (recognition, captioning, reasoning) or harness task names (palm_recognition_enroll)",
    )
    x.add_argument(
        "--prompt",
        default="base",
        choices=["base", "hd", "hd_cot", "ad", "ad_cot"],
        help="which prompting strategy's task renders the prompts (default: base)",
    )
    x.add_argument("--limit", type=int, default=None, help="at most this many rows per task")
    x.set_defaults(func=_export_sft)
    return ap


def main(argv=None) -> int:
    return run(build_parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
