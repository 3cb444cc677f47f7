"""Read ``lalm-eval --output_path DIR --log_samples`` folders: the newest results JSON, its
samples JSONL per task, the Markdown report and the plots of the same stamp."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.report.combine import read_sample_log

FIX = "give the --output_path folder of a `lalm-eval ... --log_samples` run"


@dataclass
class RunFolder:
    folder: Path
    label: str
    stamp: str
    results: dict
    samples: dict[str, list[dict]] = field(default_factory=dict)  # task → rows
    report: Path | None = None
    plots: list[Path] = field(default_factory=list)


def read_samples(path: Path, results: Path, task: str) -> list[dict]:
    """A sample log read as the report reads it, each row also needing its ``doc_id``."""
    rows = read_sample_log(path, results, task)
    for line_no, row in enumerate(rows, 1):
        if "doc_id" not in row:
            raise DataError(path, "a sample row without doc_id; rerun with --log_samples", "doc_id", line_no)
    return rows


def read_run(folder: Path) -> RunFolder:
    """The newest run in ``folder`` (the stamp of its latest ``results_<stamp>.json``)."""
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "no such folder"
        raise ConfigError(f"{folder}: {what}, not a run's output folder; {FIX}")
    results = sorted(folder.glob("results_*.json"))
    if not results:
        raise ConfigError(f"{folder}: no results_*.json, not a run's output folder; {FIX}")
    path = results[-1]
    stamp = path.stem[len("results_") :]
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(path, f"not a results JSON ({exc}); rerun the evaluation") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise DataError(path, "no results object; rerun the evaluation", "results")
    run = RunFolder(folder, label_of(folder, doc), stamp, doc)
    suffix = f"_{stamp}.jsonl"
    for sample_file in sorted(folder.glob(f"samples_*{suffix}")):
        task = sample_file.name[len("samples_") : -len(suffix)]
        run.samples[task] = read_samples(sample_file, path, task)
    if not run.samples:
        raise ConfigError(f"{folder}: no samples_*{suffix} beside {path.name}; rerun the evaluation with --log_samples")
    report = folder / f"report_{stamp}.md"
    run.report = report if report.is_file() else None
    run.plots = sorted(folder.glob(f"plot_*_{stamp}.png"))
    return run


def label_of(folder: Path, results: dict) -> str:
    identity = results.get("model_identity") or {}
    name = identity.get("name") or (results.get("config") or {}).get("model") or "model"
    return f"{folder.name} ({name})"


def read_runs(folders: list[Path]) -> list[RunFolder]:
    runs = [read_run(Path(f)) for f in folders]
    labels = [r.label for r in runs]
    for i, run in enumerate(runs):  # same folder name twice: number them
        if labels.count(run.label) > 1:
            run.label = f"{run.label} #{i + 1}"
    return runs
