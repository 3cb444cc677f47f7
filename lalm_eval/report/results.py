"""Results JSON and per-sample JSONL, in lm-evaluation-harness's layout.

``results_<timestamp>.json`` has lm-eval's top-level keys (``results``, ``groups``,
``group_subtasks``, ``configs``, ``versions``, ``n-samples``, ``higher_is_better``, ``config``,
``task_hashes``, ``total_evaluation_time_seconds``, ``date``) plus ours: ``cache`` (response-cache
hits and misses), ``errors`` (failed documents per task, each with its failure kind),
``sample_info`` (per task: truncated samples, audio seconds sent and heard, failures by kind,
provider token usage, model ids, cost), ``usage`` (those summed over the run), ``budget``
(``--max_cost``: limit, spent, requests not run), ``model_identity`` (the adapter's identity:
weights hash, dtype, long-audio policy, calibrated thresholds…), ``adapter_counters``, ``timings``
(``lalm-eval``'s stage seconds, :mod:`lalm_eval.timings`; None elsewhere) and ``lalm_eval_version``. Metric values
are keyed ``"<metric>,<filter>"`` (``"token_f1,none"``) with ``"<metric>_stderr,<filter>"``
beside them, as lm-eval writes them, so tools that read lm-eval results read ours.

``samples_<task>_<timestamp>.jsonl`` holds one JSON object per document. Timestamps are
``YYYY-MM-DDTHH-MM-SS.ffffff`` (lm-eval's, colons replaced for file systems that refuse them).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from lalm_eval import __version__
from lalm_eval.errors import DataError
from lalm_eval.jsonl import json_default

NO_FILTER = "none"
CONFIG_KEYS = ("model", "model_args", "batch_size", "device", "seed", "limit", "gen_kwargs")
# Top-level keys in the order they are written; the value is the default when not given.
TOP_LEVEL = {
    "results": dict,
    "groups": dict,
    "group_subtasks": dict,
    "configs": dict,
    "versions": dict,
    "n-samples": dict,
    "higher_is_better": dict,
    "config": dict,
    "task_hashes": dict,
    "metric_info": dict,
    "cache": lambda: {"hits": 0, "misses": 0},
    "errors": dict,
    "sample_info": dict,
    "usage": dict,
    "budget": lambda: None,
    "model_identity": dict,
    "adapter_counters": dict,
    "total_evaluation_time_seconds": lambda: None,
    "timings": lambda: None,
    "date": lambda: None,
    "lalm_eval_version": lambda: __version__,
}
# Standard fields of a samples line, written first and in this order; doc fields follow.
SAMPLE_FIELDS = ("doc_id", "prompt", "messages", "response", "target", "metrics", "error")


def timestamp(when: _dt.datetime | None = None) -> str:
    """``YYYY-MM-DDTHH-MM-SS.ffffff`` of ``when`` (default: now, local time, as lm-eval)."""
    return (when or _dt.datetime.now()).strftime("%Y-%m-%dT%H-%M-%S.%f")


def metric_key(metric: str, filter_name: str = NO_FILTER, stderr: bool = False) -> str:
    """``"token_f1,none"`` / ``"token_f1_stderr,none"``: lm-eval's metric key."""
    return f"{metric}{'_stderr' if stderr else ''},{filter_name}"


def task_entry(
    alias: str,
    metrics: Mapping[str, float | None],
    stderrs: Mapping[str, float | None] | None = None,
    filter_name: str = NO_FILTER,
) -> dict:
    """One ``results[task]`` entry: alias, then each metric and its stderr (``"N/A"`` when
    unknown, as lm-eval writes it)."""
    entry: dict = {"alias": alias}
    for name, value in metrics.items():
        entry[metric_key(name, filter_name)] = value
        err = (stderrs or {}).get(name)
        entry[metric_key(name, filter_name, stderr=True)] = "N/A" if err is None else err
    return entry


def _clean(value):
    """NaN/inf → None (strict JSON), recursively; numpy values → Python."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, np.generic):
        return _clean(value.item())
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _dumps(value, **kw) -> str:
    return json.dumps(_clean(value), ensure_ascii=False, allow_nan=False, default=json_default, **kw)


def _check_results(results: Mapping) -> None:
    unknown = set(results) - set(TOP_LEVEL)
    if unknown:
        raise DataError("<results>", f"unknown top-level keys {sorted(unknown)}; allowed: {list(TOP_LEVEL)}")
    for task, entry in (results.get("results") or {}).items():
        for key in entry:
            if key != "alias" and "," not in key:
                raise DataError(
                    "<results>",
                    f"metric key {key!r} lacks a filter; write it as {metric_key(key)!r}",
                    field=f"results.{task}",
                )


def write_results(output_dir: str | Path, results: Mapping, stamp: str | None = None) -> Path:
    """Write ``results_<stamp>.json`` in ``output_dir``; missing top-level keys get defaults
    (``config`` gets every key of :data:`CONFIG_KEYS`). Returns the file's path."""
    _check_results(results)
    out = {key: (results[key] if key in results else default()) for key, default in TOP_LEVEL.items()}
    out["config"] = {**{k: None for k in CONFIG_KEYS}, **(out["config"] or {})}
    path = Path(output_dir) / f"results_{stamp or timestamp()}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_dumps(out, indent=2) + "\n", encoding="utf-8")
    return path


def load_results(path: str | Path) -> dict:
    """Read a results file back; errors name the file."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(path, f"cannot read results ({exc})") from None


def _safe_name(task: str) -> str:
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", task)


def write_samples(output_dir: str | Path, task: str, rows: Iterable[Mapping], stamp: str | None = None) -> Path:
    """Write ``samples_<task>_<stamp>.jsonl``: one line per document, standard fields first
    (:data:`SAMPLE_FIELDS`, those present), then the doc fields passed for reporting."""
    path = Path(output_dir) / f"samples_{_safe_name(task)}_{stamp or timestamp()}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, row in enumerate(rows):
        if "doc_id" not in row:
            raise DataError(path, f"sample row {i} has no doc_id", field="doc_id")
        ordered = {k: row[k] for k in SAMPLE_FIELDS if k in row}
        ordered.update((k, v) for k, v in row.items() if k not in ordered)
        lines.append(_dumps(ordered) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path
