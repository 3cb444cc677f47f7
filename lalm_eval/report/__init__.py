"""Reporting: results JSON and per-sample JSONL in lm-eval's layout, Markdown breakdown tables
(PALM Appendix A.4 / MSU Table 3 shapes) and PNG plots.

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
from lalm_eval.report.tables import (
    breakdown,
    msu_language_table,
    msu_table,
    palm_stratum_table,
    palm_table,
)

__all__ = [
    "breakdown", "load_results", "metric_key", "msu_language_table", "msu_table",
    "palm_stratum_table", "palm_table", "task_entry", "timestamp", "write_results", "write_samples",
]
