"""Several runs (one output folder per model) → one report: the papers' tables with a row per
model × strategy, and the plots with a line or bar per model.

    lalm-eval report results/cascade results/tiny-qwen2-audio --output_path results/report

Each folder must hold a ``results_<stamp>.json`` and its ``samples_<task>_<stamp>.jsonl``
(``--log_samples``); the newest results file of a folder is used. Runs of the forgetting checks
(tasks with ``metadata.table: forgetting``) add PALM Table 4's table (:mod:`.forgetting`).
"""

from __future__ import annotations

from pathlib import Path

from lalm_eval.errors import DataError
from lalm_eval.jsonl import iter_jsonl
from lalm_eval.report.assemble import PLOT_METRICS, metric_labels, missing_reasons, paper_tables, write_plots
from lalm_eval.report.forgetting import forgetting_table
from lalm_eval.report.results import _safe_name, load_results, timestamp


def latest_results(folder: str | Path) -> Path:
    files = sorted(Path(folder).glob("results_*.json"))
    if not files:
        raise DataError(folder, "no results_*.json here (run lalm-eval with --output_path to this folder)")
    return files[-1]


def load_run_rows(folder: str | Path, label: str | None = None) -> tuple[list[dict], dict]:
    """The scored sample rows of a folder's newest run, tagged with model, strategy and task name,
    and its ``metric_info`` ({task: {metric: info}})."""
    path = latest_results(folder)
    doc = load_results(path)
    stamp = path.stem[len("results_"):]
    model = label or str((doc.get("config") or {}).get("model"))
    rows = []
    for task in doc.get("results", {}):
        samples = Path(folder) / f"samples_{_safe_name(task)}_{stamp}.jsonl"
        if not samples.is_file():
            raise DataError(samples, "sample log missing: rerun lalm-eval with --log_samples")
        strategy = ((doc.get("configs", {}).get(task) or {}).get("metadata") or {}).get("strategy", "base")
        for _, row in iter_jsonl(samples):
            if "metrics" in row:
                rows.append({**row, "model": model, "strategy": strategy, "task_name": task,
                             "task_id": row.get("task_id", task)})
    return rows, doc.get("metric_info") or {}


def run_documents(folders: list[str | Path]) -> list[tuple[str, dict]]:
    """``(label, newest results document)`` per folder; the label is the run's model, or the folder's
    name when two runs share a model (a base model and its fine-tunes)."""
    docs = [load_results(latest_results(f)) for f in folders]
    labels = [str((d.get("config") or {}).get("model")) for d in docs]
    if len(set(labels)) < len(labels):
        labels = [Path(f).resolve().name for f in folders]
    return list(zip(labels, docs))


def combine(folders: list[str | Path], output_path: str | Path | None = None,
            metrics: list[str] | None = None) -> tuple[str, list[Path]]:
    """The combined Markdown (and, with ``output_path``, ``report_<stamp>.md`` plus plots)."""
    rows, info = [], {}
    for folder in folders:
        run_rows, run_info = load_run_rows(folder)
        rows += run_rows
        for task, metrics_info in run_info.items():
            info.setdefault(task, metrics_info)
    pseudo = {"results": {task: {"metrics": m} for task, m in info.items()}}
    names = metrics or sorted({m for r in rows for m in r["metrics"]})
    text = "# lalm-eval: combined report\n\n" + paper_tables(rows, names, missing_reasons(pseudo),
                                                              metric_labels(pseudo)) + "\n"
    forgetting = forgetting_table(run_documents(folders))
    if forgetting:
        text = text.rstrip("\n") + "\n\n" + forgetting + "\n"
    files: list[Path] = []
    if output_path is not None:
        out, stamp = Path(output_path), timestamp()
        out.mkdir(parents=True, exist_ok=True)
        report = out / f"report_{stamp}.md"
        report.write_text(text, encoding="utf-8")
        files.append(report)
        plotted = [m for m in PLOT_METRICS if any(r["metrics"].get(m) is not None for r in rows)]
        for m in plotted[:2]:
            files += write_plots(rows, m, out, stamp)
    return text, files
