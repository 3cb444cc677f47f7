"""Reporting: results JSON and per-sample JSONL in lm-eval's layout, breakdown tables, the report
layouts each task folder declares as data (``layouts``: e.g. the papers' tables) and PNG plots.

``plots`` needs matplotlib and is imported on use (``from lalm_eval.report import plots``).
"""

from lalm_eval.report.results import (
    load_results,
    metric_key,
    task_entry,
    timestamp,
    write_results,
    write_samples,
)
from lalm_eval.report.tables import breakdown

__all__ = ["breakdown", "load_results", "metric_key", "task_entry", "timestamp", "write_results", "write_samples"]
