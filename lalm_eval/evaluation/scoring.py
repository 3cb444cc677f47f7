"""The scoring stage: one task's responses → per-sample rows, then every metric the task resolved
when it loaded (:attr:`lalm_eval.tasks.Task.metrics`) over all scored items at once → the task's
summary (value, stderr, 95 % bootstrap CI, n, failures), counters and per-metric extras.

Failed generations are excluded from every denominator and recorded in ``run.errors`` with their
failure kind; nothing is scored as an empty answer."""

from __future__ import annotations

import copy
import dataclasses
import logging

from lalm_eval.api import Response
from lalm_eval.evaluation.filters import apply_filters
from lalm_eval.evaluation.requests import TaskRun
from lalm_eval.evaluation.usage import SAMPLE_META
from lalm_eval.metrics.scoring import Metric, ScoreItem, ScoringContext, metric_name, summarize
from lalm_eval.tasks import Task

log = logging.getLogger(__name__)


@dataclasses.dataclass
class TaskScores:
    """What :func:`score` gives for one task."""

    summary: dict  # metric → value, <metric>_stderr, <metric>_ci95
    rows: list[dict]  # one per request, in doc order
    counters: dict  # filter_misses, <metric>_failures
    metrics: dict  # metric → extras, n, failures, aggregation, missing


def breakdown_fields(task: Task) -> list[str]:
    """The fields of ``metadata.breakdown``, whose entries are a field or a list of fields (a
    breakdown of the first within the others)."""
    fields: list[str] = []
    for entry in (task.config.metadata or {}).get("breakdown", []):
        for field in [entry] if isinstance(entry, str) else entry:
            if field not in fields:
                fields.append(field)
    return fields


def score_item(task: Task, text: str, doc: dict, counters: dict, target=None) -> ScoreItem:
    """What a metric scores of one answer: the response through the task's filters, the rendered
    target (``target`` when the caller rendered it already), the doc and the prompt text."""
    target = task.render_target(doc) if target is None else target
    return ScoreItem(apply_filters(task.filters, text, counters), str(target), doc, task.render_text(doc))


def sample_rows(run: TaskRun, responses: list[Response], counters: dict) -> tuple[list[dict], list, list[dict]]:
    """Every request's row (messages, response, target, what the adapter reported, breakdown
    fields); the scored items (filtered response, target, doc, prompt text) and their rows. A
    failed response's doc goes to ``run.errors``."""
    task = run.task
    rows, items, item_rows = [], [], []
    fields = breakdown_fields(task)
    for doc_id, request, response in zip(run.doc_ids, run.requests, responses):
        doc = run.docs[doc_id]
        target = task.render_target(doc)
        row = {
            "doc_id": doc_id,
            "messages": request.messages,
            "response": response.text,
            "target": target,
            "error": response.error,
            "cached": response.cached,
        }
        row.update({k: response.meta[k] for k in SAMPLE_META if k in response.meta})
        if response.text is None:
            row["failure"] = response.failure
        row.update({k: doc[k] for k in fields if k in doc})
        if response.text is None:
            run.errors.append({"doc_id": doc_id, "error": response.error, "failure": response.failure})
        else:
            item = score_item(task, response.text, doc, counters, target)
            row["filtered"], row["metrics"] = item.prediction, {}
            items.append(item)
            item_rows.append(row)
        rows.append(row)
    return rows, items, item_rows


def bound(metric: Metric, context: ScoringContext) -> Metric:
    """The task's metric (built once, when the task loaded) with this run's context (judge, caches,
    seed): a shallow copy, so the task's own stays as it loaded."""
    out = copy.copy(metric)
    out.context = context
    return out


def score(run: TaskRun, responses: list[Response], context: ScoringContext | None = None) -> TaskScores:
    """Task summary (per metric: value, stderr, 95 % bootstrap CI, n, failures), per-sample rows,
    counters and per-metric extras/missing reasons. Every metric sees all scored items at once."""
    context = context or ScoringContext()
    counters: dict = {}
    rows, items, item_rows = sample_rows(run, responses, counters)
    summary, info = {}, {}
    for entry, metric in zip(run.task.config.metric_list or [], run.task.metrics):
        name, aggregation = metric_name(entry), entry.get("aggregation", "mean")
        result = bound(metric, context).compute(items)
        for k, row in enumerate(item_rows):
            row["metrics"][name] = result.values[k]
            if result.errors[k]:
                row.setdefault("metric_errors", {})[name] = result.errors[k]
            if result.details and result.details[k]:
                row.setdefault("metric_details", {})[name] = result.details[k]
        stats = summarize(result, (context.seed, run.task.name, name), aggregation)
        summary[name], summary[f"{name}_stderr"] = stats["value"], stats["stderr"]
        summary[f"{name}_ci95"] = stats["ci95"]
        info[name] = {**result.extra, "n": stats["n"], "failures": stats["failures"], "aggregation": str(aggregation)}
        if result.missing:
            info[name]["missing"] = result.missing
        if stats["failures"] and not result.missing:
            counters[f"{name}_failures"] = stats["failures"]
            log.warning(
                "%s: %s could not score %d samples (left out of its mean; see metric_errors)",
                run.task.name,
                name,
                stats["failures"],
            )
    return TaskScores(summary, rows, counters, info)
