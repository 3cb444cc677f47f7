"""Breakdown tables from per-sample rows and the Markdown they print as (the papers' table shapes
are data: :mod:`lalm_eval.report.layouts` renders each task folder's ``report_layouts*.yaml``).

Rows are the per-sample records of ``samples_*.jsonl`` (or the same dicts in memory): doc fields
(e.g. ``language``) and metric values either at the top level (lm-eval's way) or under
``"metrics"``. A metric that is ``None``
or NaN for a row (not computed, judge unavailable) is left out of that row's means, never
counted as zero; a cell without any value renders as "—", with a footnote giving the reason the
caller passes in ``missing={metric: reason}``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from lalm_eval.seeding import stable_int

DASH = "—"


def value(row: Mapping, metric: str) -> float | None:
    """The row's value of ``metric`` (top level, else under ``"metrics"``); None when absent/NaN."""
    v = row.get(metric)
    if v is None and isinstance(row.get("metrics"), Mapping):
        v = row["metrics"].get(metric)
    if v is None or isinstance(v, str):
        return None
    v = float(v)
    return None if math.isnan(v) else v


def order_key(v):
    """Sort key for mixed field values: numbers, then strings, then None/bools."""
    if isinstance(v, bool) or v is None:
        return (2, str(v))
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if values else None


def bootstrap_ci(
    values: Sequence[float], seed_parts: tuple, n_boot: int = 1000, level: float = 0.95
) -> list[float] | None:
    """Percentile bootstrap CI of the mean (:func:`lalm_eval.metrics.bootstrap.bootstrap_ci`); the
    generator is seeded by ``seed_parts`` alone, so one group's interval does not change when other
    groups are added. None for fewer than two values."""
    from lalm_eval.metrics.bootstrap import bootstrap_ci as _ci

    ci = _ci(values, n_resamples=n_boot, confidence=level, seed=stable_int(*map(str, seed_parts)))
    return list(ci) if ci else None


def breakdown(
    rows: Iterable[Mapping],
    by: list[str],
    metrics: list[str],
    ci: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> list[dict]:
    """One dict per combination of the ``by`` fields (sorted): the field values, ``count`` (rows),
    and per metric its mean, ``<metric>_count`` (rows with a value) and, with ``ci=True``,
    ``<metric>_ci`` = [low, high] of a seeded percentile bootstrap."""
    groups: dict[tuple, list[Mapping]] = {}
    for row in rows:
        groups.setdefault(tuple(row.get(f) for f in by), []).append(row)
    out = []
    for key in sorted(groups, key=lambda k: tuple(order_key(v) for v in k)):
        members = groups[key]
        entry: dict = {**dict(zip(by, key)), "count": len(members)}
        for m in metrics:
            vals = [v for v in (value(r, m) for r in members) if v is not None]
            entry[m], entry[f"{m}_count"] = _mean(vals), len(vals)
            if ci:
                entry[f"{m}_ci"] = bootstrap_ci(vals, (seed, *map(str, key), m), n_boot, level)
        out.append(entry)
    return out


def _markdown(header: list[str], body: list[list[str]], notes: list[str] = ()) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    if notes:
        lines += [""] + [f"{n}  " if i < len(notes) - 1 else n for i, n in enumerate(notes)]
    return "\n".join(lines) + "\n"
