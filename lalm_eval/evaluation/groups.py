"""The groups stage: each requested group's value per ``aggregate_metric_list`` entry, from its
subtasks' results."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from lalm_eval.tasks import TaskManager


def aggregate_groups(manager: TaskManager, requested: list[str], results: Mapping) -> dict:
    """Size-weighted (or plain) means of each requested group's subtasks, as aggregate_metric_list
    says (``results``: task name → :class:`~lalm_eval.evaluation.run.TaskResult`)."""
    out = {}
    for name in requested:
        if name not in manager.all_groups():
            continue
        group = manager.load_group(name)
        members = [t for t in manager.resolve([name]) if t in results]
        entry = {"subtasks": members}
        for agg in group.aggregate_metric_list or []:
            metric = agg["metric"]
            pairs = [(results[t].summary.get(metric), results[t].metrics.get(metric, {}).get("n", 0)) for t in members]
            pairs = [(v, n) for v, n in pairs if v is not None and n > 0]
            if not pairs:
                entry[metric] = None
                continue
            weights = [n if agg.get("weight_by_size", True) else 1 for _, n in pairs]
            entry[metric] = float(np.average([v for v, _ in pairs], weights=weights))
        out[name] = entry
    return out
