"""A report cell's value: the metric over the cell's samples under the aggregation its task
declares, as the results summary computes the task value (:func:`lalm_eval.metrics.scoring.summarize`).

``mean`` (the default) is the mean of the samples' values and ``median`` their median. A corpus
aggregation (``corpus``, or a metric's alias such as ``bleu``) is the metric's corpus-level value
over the cell's samples, which its class computes from the samples' logged details
(:meth:`lalm_eval.metrics.scoring.Metric.corpus_from_details`: corpus WER/CER from the edit and
reference-unit counts); a metric whose samples carry no such statistics (corpus BLEU) has no
per-cell value, and neither has a ``!function`` aggregation, nor a cell whose tasks aggregate
the metric differently: each such cell is "—" with the reason in a footnote, never the mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from lalm_eval.report.tables import value

MEAN = "mean"


def task_aggregations(metric_info: Mapping[str, Mapping]) -> dict[str, dict[str, str]]:
    """``{task: {metric: aggregation}}`` from a run's ``metric_info`` (``{task: {metric: info}}``,
    each info recording the ``aggregation`` of its ``metric_list`` entry); ``mean`` left out."""
    out: dict[str, dict[str, str]] = {}
    for task, metrics in (metric_info or {}).items():
        for name, info in (metrics or {}).items() if isinstance(metrics, Mapping) else ():
            aggregation = info.get("aggregation", MEAN) if isinstance(info, Mapping) else MEAN
            if aggregation != MEAN:
                out.setdefault(task, {})[name] = str(aggregation)
    return out


def _corpus_value(metric: str, rows: Sequence[Mapping], aggregation: str) -> tuple[float | None, str | None]:
    from lalm_eval.errors import UnknownNameError
    from lalm_eval.metrics.scoring import METRICS

    try:
        registered = METRICS.get(metric)
    except (UnknownNameError, ImportError, AttributeError):
        registered = None
    compute = getattr(registered, "corpus_from_details", None)
    details = [(r.get("metric_details") or {}).get(metric) for r in rows]
    result = compute(details) if compute is not None else None
    if result is None:
        return None, (
            f"its task value is corpus-level (aggregation: {aggregation}) and the samples carry no "
            "statistics to compute it per cell; the task-level table has the value"
        )
    return float(result), None


def aggregate(
    rows: Sequence[Mapping], metric: str, aggregations: Mapping[str, Mapping[str, str]] | None = None
) -> tuple[float | None, str | None]:
    """``(value, reason)`` of ``metric`` over ``rows`` (each tagged with its ``task_name``) under
    their tasks' aggregation; ``value`` None: no sample has a value (``reason`` None) or the
    aggregation cannot be computed per cell (``reason`` says why)."""
    scored = [(r, v) for r, v in ((r, value(r, metric)) for r in rows) if v is not None]
    if not scored:
        return None, None
    declared = list(
        dict.fromkeys((aggregations or {}).get(str(r.get("task_name")), {}).get(metric, MEAN) for r, _ in scored)
    )
    if len(declared) > 1:
        return None, f"the tasks of a cell aggregate it differently ({', '.join(declared)})"
    aggregation, vals = declared[0], [v for _, v in scored]
    if aggregation == MEAN:
        return sum(vals) / len(vals), None
    if aggregation == "median":
        return float(np.median(np.asarray(vals, dtype=float))), None
    if aggregation.startswith("!function"):
        return None, f"its tasks aggregate it by a function ({aggregation}), which the report does not call per cell"
    return _corpus_value(metric, [r for r, _ in scored], aggregation)
