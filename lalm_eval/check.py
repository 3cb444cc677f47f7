"""``lalm-eval check``: does batching, or the backend, change the answers?

    lalm-eval check --model qwen2_audio --model_args pretrained=DIR --tasks palm_recognition \\
        --limit 16 --batch_sizes 1,8 [--model_b vllm --model_args_b pretrained=DIR] [--min_identical 1.0]

Runs the first ``--limit`` docs of each task with model A at every batch size of ``--batch_sizes``
and, when ``--model_b`` is given, with model B at the first batch size, all with the response cache
off (every answer is generated now). Then, per task, for each comparison against the reference
(A at the first batch size): the share of docs whose responses are identical (over the docs both
answered; failures are counted apart) and each metric's difference (other − reference). Exit
status 1 when any share is below ``--min_identical`` (default 1.0: every answer identical), 0
otherwise; ``--output_path`` also writes the table as ``check.json``.

Greedy decoding is the point of comparison: with sampling, different answers are expected, and
the check says so instead of passing or failing on noise.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from lalm_eval.errors import ConfigError


def parser() -> argparse.ArgumentParser:
    from lalm_eval.flags import DEFAULT_CACHE

    ap = argparse.ArgumentParser(prog="lalm-eval check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--model_args", default="")
    ap.add_argument("--model_b", default=None, help="a second backend to compare (e.g. vllm)")
    ap.add_argument("--model_args_b", default=None, help="its model args (default: --model_args)")
    ap.add_argument("--tasks", required=True)
    ap.add_argument("--include_path", action="append", default=None)
    ap.add_argument("--limit", default=16, help="first N docs of each task (default 16)")
    ap.add_argument("--batch_sizes", default="1,8", help="comma-separated; the first is the reference")
    ap.add_argument("--device", default=None)
    ap.add_argument("--gen_kwargs", default="")
    ap.add_argument("--cache_dir", default=str(DEFAULT_CACHE), help="datasets (responses are never cached here)")
    ap.add_argument("--min_identical", default=1.0, help="exit 1 below this share of identical outputs (0-1)")
    ap.add_argument("--output_path", default=None)
    return ap


def _batch_sizes(text: str) -> list[str]:
    sizes = [b.strip() for b in text.split(",") if b.strip()]
    if not sizes or not all(b.isdigit() and int(b) >= 1 for b in sizes):
        raise ConfigError(
            f"--batch_sizes: must be whole numbers >= 1 separated by commas, got {text!r}; e.g. --batch_sizes 1,8"
        )
    sizes = [str(int(b)) for b in sizes]
    twice = sorted({b for b in sizes if sizes.count(b) > 1}, key=int)
    if twice:
        raise ConfigError(f"--batch_sizes: {', '.join(twice)} given twice; give each batch size once")
    return sizes


def check_args(args) -> list[str]:
    """Every flag checked before a dataset or model is loaded; a check that would compare nothing
    (one batch size and no ``--model_b``) is an error. Returns the task names."""
    from lalm_eval.flags import gen_kwargs_flag, real_number, task_names, whole_number, writable_folder

    tasks = task_names(args.tasks)
    args.sizes = _batch_sizes(args.batch_sizes)
    if len(args.sizes) == 1 and not args.model_b:
        raise ConfigError(
            f"--batch_sizes {args.batch_sizes}: one batch size and no --model_b, so there is nothing to compare; "
            f"give two batch sizes (e.g. --batch_sizes 1,{max(8, int(args.sizes[0]) * 2)}) or a second backend with --model_b"
        )
    args.limit = whole_number(args.limit, "--limit", 1, "e.g. --limit 16")
    args.min_identical = real_number(
        args.min_identical, "--min_identical", "give a share such as 1.0 (every answer identical)", 0, 1
    )
    args.gen_kwargs_dict = gen_kwargs_flag(args.gen_kwargs)
    _check_models(args)
    args.cache_dir = str(writable_folder(args.cache_dir, "--cache_dir"))  # ~ expanded: what every writer uses
    if args.output_path:
        args.output_path = str(writable_folder(args.output_path, "--output_path"))
    return tasks


def _check_models(args) -> None:
    """Both models' names and args (and the folders they name) checked as the run would, before
    model A runs: a mistake in ``--model_b`` / ``--model_args_b`` is named by its own flag now,
    not after A's answers (:func:`lalm_eval.doctor.model_problems`; nothing is built or loaded)."""
    from lalm_eval.doctor import model_problems

    models = [(args.model, args.model_args, "--model", "--model_args")]
    if args.model_b:
        inherited = args.model_args_b is None
        models.append(
            (
                args.model_b,
                args.model_args if inherited else args.model_args_b,
                "--model_b",
                "--model_args (--model_b takes them too, as no --model_args_b is given)"
                if inherited
                else "--model_args_b",
            )
        )
    elif args.model_args_b is not None:
        raise ConfigError("--model_args_b: given without --model_b; add --model_b NAME or leave out --model_args_b")
    for model, text, model_flag, args_flag in models:
        problems = model_problems(model, text, model_flag, args_flag, required=True)
        if problems:
            raise ConfigError(problems[0])


def _build_b(args):
    """Model B built after A has run (so the two are never loaded at once); its errors name ``--model_b``."""
    from lalm_eval.errors import LalmEvalError
    from lalm_eval.models.build import build_adapter

    try:
        return build_adapter(
            args.model_b,
            args.model_args if args.model_args_b is None else args.model_args_b,
            args.device,
            args.cache_dir,
            use_response_cache=False,
        )
    except LalmEvalError as exc:
        message = str(exc)
        for flag, flag_b in (
            ("--model_args:", "--model_args_b:"),
            ("--model ", "--model_b "),
            ("--model:", "--model_b:"),
        ):
            if message.startswith(flag) and (flag_b != "--model_args_b:" or args.model_args_b is not None):
                exc.args = (flag_b + message[len(flag) :], *exc.args[1:])
                break
        raise exc from None


def compare(reference, other) -> dict:
    """Per task: docs compared, identical share, failures on either side, metric differences."""
    out = {}
    for task, rows in reference.samples.items():
        theirs = {r["doc_id"]: r for r in other.samples.get(task, [])}
        pairs = [(r, theirs[r["doc_id"]]) for r in rows if r["doc_id"] in theirs]
        both = [(a, b) for a, b in pairs if a["response"] is not None and b["response"] is not None]
        same = sum(a["response"] == b["response"] for a, b in both)
        ref_summary, other_summary = reference.results[task].summary, other.results[task].summary
        diffs = {
            m: (None if ref_summary[m] is None or other_summary.get(m) is None else other_summary[m] - ref_summary[m])
            for m in ref_summary
            if not m.endswith(("_stderr", "_ci95"))
        }
        out[task] = {
            "compared": len(both),
            "identical": same,
            "identical_share": same / len(both) if both else None,
            "failed": len(pairs) - len(both),
            "metric_diff": diffs,
            "first_difference": next(
                (
                    {"doc_id": a["doc_id"], "reference": a["response"], "other": b["response"]}
                    for a, b in both
                    if a["response"] != b["response"]
                ),
                None,
            ),
        }
    return out


def _sampling(gen_kwargs: dict, tasks) -> bool:
    return any({**t.gen_kwargs, **gen_kwargs}.get("do_sample") for t in tasks)


def run_check(args) -> tuple[dict, int]:
    from lalm_eval.evaluation.docs import open_tasks
    from lalm_eval.evaluation.run import evaluate
    from lalm_eval.models.build import build_adapter

    tasks = check_args(args)
    sizes, gen_kwargs = args.sizes, args.gen_kwargs_dict
    # tasks, datasets and their first docs checked before a model is built
    opened = open_tasks(tasks, include_path=args.include_path, cache_dir=Path(args.cache_dir), limit=args.limit)
    common = dict(gen_kwargs=gen_kwargs, cache_dir=Path(args.cache_dir), use_cache=False)
    adapter = build_adapter(args.model, args.model_args, args.device, args.cache_dir, use_response_cache=False)
    runs = {f"{args.model} @ batch {b}": evaluate(adapter, opened, batch_size=b, **common) for b in sizes}
    if args.model_b:
        other = _build_b(args)
        runs[f"{args.model_b} @ batch {sizes[0]}"] = evaluate(other, opened, batch_size=sizes[0], **common)
    names = list(runs)
    reference = runs[names[0]]
    report = {
        "reference": names[0],
        "limit": args.limit,
        "min_identical": args.min_identical,
        "sampling": _sampling(gen_kwargs, reference.tasks),
        "comparisons": {name: compare(reference, runs[name]) for name in names[1:]},
    }
    shares = [t["identical_share"] for c in report["comparisons"].values() for t in c.values()]
    below = any(s is None or s < args.min_identical for s in shares)
    return report, 1 if below else 0


def format_report(report: dict) -> str:
    lines = [
        f"reference: {report['reference']} (first {report['limit']} docs per task)",
        "",
        "| compared with | task | identical | failed | metric differences (other − reference) |",
        "|---|---|---|---|---|",
    ]
    for name, tasks in report["comparisons"].items():
        for task, t in tasks.items():
            share = (
                "—"
                if t["identical_share"] is None
                else f"{t['identical']}/{t['compared']} ({100 * t['identical_share']:.1f} %)"
            )
            diffs = ", ".join(f"{m} {d:+.4f}" for m, d in t["metric_diff"].items() if d is not None) or "—"
            lines.append(f"| {name} | {task} | {share} | {t['failed']} | {diffs} |")
    for name, tasks in report["comparisons"].items():
        for task, t in tasks.items():
            if t["first_difference"]:
                d = t["first_difference"]
                lines += [
                    "",
                    f"first difference, {name}, {task} doc {d['doc_id']}:",
                    f"  reference: {d['reference']!r:.300}",
                    f"  other:     {d['other']!r:.300}",
                ]
    if report["sampling"]:
        lines += ["", "note: a task samples (do_sample); differences are expected — compare greedy runs"]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    report, status = run_check(args)
    print(format_report(report))
    if args.output_path:
        out = Path(args.output_path) / "check.json"
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    verdict = "below" if status else "at or above"
    print(f"identical share {verdict} --min_identical {report['min_identical']:g}")
    return status
