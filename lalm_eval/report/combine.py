"""Several runs (one output folder per model) → one report: the report layouts of the runs' tasks
(``metadata.report``; layouts in the task folders' ``report_layouts*.yaml``) with a row per run
(model × the task-metadata fields the report declares), and the plots with a line or bar per run.

    lalm-eval report results/cascade results/tiny-qwen2-audio --output_path results/report
    lalm-eval report results/* --layout palm_table1
    lalm-eval report results/* --layout msu_table4,msu_table6 --error_sample 200 --seed 0

Each folder must hold a ``results_<stamp>.json`` and its ``samples_<task>_<stamp>.jsonl``
(``--log_samples``); the newest results file of a folder is used. Runs of the forgetting checks
(tasks with ``metadata.table: forgetting``) add PALM Table 4's table (:mod:`.forgetting`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from lalm_eval.errors import DataError
from lalm_eval.jsonl import iter_jsonl
from lalm_eval.report.assemble import metric_details, missing_reasons
from lalm_eval.report.forgetting import forgetting_table
from lalm_eval.report.layouts import LayoutIndex, render_reports, report_plots, tag_rows
from lalm_eval.report.results import _safe_name, load_results, timestamp


def latest_results(folder: str | Path) -> Path:
    files = sorted(Path(folder).glob("results_*.json"))
    if not files:
        raise DataError(folder, "no results_*.json here; run lalm-eval with --output_path to this folder first")
    return files[-1]


def load_run_rows(
    folder: str | Path, index: LayoutIndex, label: str | None = None
) -> tuple[dict[str, list[dict]], dict]:
    """``({report: tagged scored sample rows}, metric_info)`` of a folder's newest run: the rows of
    each task that declares ``metadata.report``, tagged as that report declares."""
    path = latest_results(folder)
    doc = load_results(path)
    stamp = path.stem[len("results_") :]
    model = label or str((doc.get("config") or {}).get("model"))
    by_report: dict[str, list[dict]] = {}
    for task in doc.get("results", {}):
        meta = (doc.get("configs", {}).get(task) or {}).get("metadata") or {}
        if not meta.get("report"):
            continue
        samples = Path(folder) / f"samples_{_safe_name(task)}_{stamp}.jsonl"
        if not samples.is_file():
            raise DataError(samples, "sample log missing: rerun lalm-eval with --log_samples")
        by_report.setdefault(meta["report"], []).extend(
            tag_rows(
                (row for _, row in iter_jsonl(samples)),
                model=model,
                task=task,
                metadata=meta,
                report=index.report(meta["report"]),
            )
        )
    return by_report, doc.get("metric_info") or {}


def run_documents(folders: list[str | Path]) -> list[tuple[str, dict]]:
    """``(label, newest results document)`` per folder; the label is the run's model, or the folder's
    name when two runs share a model (a base model and its fine-tunes)."""
    docs = [load_results(latest_results(f)) for f in folders]
    labels = [str((d.get("config") or {}).get("model")) for d in docs]
    if len(set(labels)) < len(labels):
        labels = [Path(f).resolve().name for f in folders]
    return list(zip(labels, docs))


def combine(
    folders: list[str | Path],
    output_path: str | Path | None = None,
    metrics: list[str] | None = None,
    layouts: Sequence[str] | None = None,
    error_sample: int | None = None,
    seed: int = 0,
    include_paths: Sequence[str | Path] | None = None,
) -> tuple[str, list[Path]]:
    """The combined Markdown (and, with ``output_path``, ``report_<stamp>.md`` plus plots).
    ``layouts``: layout names (default: each present report's defaults); ``error_sample``/``seed``:
    the distribution layouts' sample of failed answers per group (default: all)."""
    index = LayoutIndex.load(include_paths)
    labels = [label for label, _ in run_documents(folders)]
    by_report: dict[str, list[dict]] = {}
    info: dict = {}
    for folder, label in zip(folders, labels):
        run_rows, run_info = load_run_rows(folder, index, label)
        for name, rows in run_rows.items():
            by_report.setdefault(name, []).extend(rows)
        for task, metrics_info in run_info.items():
            info.setdefault(task, metrics_info)
    pseudo = {"results": {task: {"metrics": m} for task, m in info.items()}}
    text = "# lalm-eval: combined report\n\n" + render_reports(
        by_report,
        index,
        layouts,
        metrics=metrics,
        missing=missing_reasons(pseudo),
        details=metric_details(pseudo),
        error_sample=error_sample,
        seed=seed,
    )
    forgetting = forgetting_table(run_documents(folders)) if not layouts else ""
    if forgetting:
        text = text.rstrip("\n") + "\n\n" + forgetting + "\n"
    files: list[Path] = []
    if output_path is not None:
        out, stamp = Path(output_path), timestamp()
        out.mkdir(parents=True, exist_ok=True)
        report = out / f"report_{stamp}.md"
        report.write_text(text, encoding="utf-8")
        files.append(report)
        files += report_plots(by_report, index, out, stamp)
    return text, files
