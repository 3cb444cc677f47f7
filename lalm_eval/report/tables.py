"""Breakdown tables from per-sample rows, and Markdown in the shapes of the papers' tables.

Rows are the per-sample records of ``samples_*.jsonl`` (or the same dicts in memory): doc fields
such as ``language``, ``n_speakers``, ``negative_stratum``, ``tier``, ``capability``, and metric
values either at the top level (lm-eval's way) or under ``"metrics"``. A metric that is ``None``
or NaN for a row (not computed, judge unavailable) is left out of that row's means, never
counted as zero; a cell without any value renders as "—", with a footnote giving the reason the
caller passes in ``missing={metric: reason}``.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

import numpy as np

from lalm_eval.seeding import stable_int

DASH = "—"
PALM_SPEAKERS = (1, 2, 3, 4)
PALM_TASKS = ("recognition", "captioning")
PALM_STRATA = ("hard", "semi-hard", "medium", "easy")  # hardest first, as the builder grades them


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


def bootstrap_ci(values: Sequence[float], seed_parts: tuple, n_boot: int = 1000,
                 level: float = 0.95) -> list[float] | None:
    """Percentile bootstrap CI of the mean (:func:`lalm_eval.metrics.bootstrap.bootstrap_ci`); the
    generator is seeded by ``seed_parts`` alone, so one group's interval does not change when other
    groups are added. None for fewer than two values."""
    from lalm_eval.metrics.bootstrap import bootstrap_ci as _ci

    ci = _ci(values, n_resamples=n_boot, confidence=level, seed=stable_int(*map(str, seed_parts)))
    return list(ci) if ci else None


def breakdown(rows: Iterable[Mapping], by: list[str], metrics: list[str], ci: bool = False,
              n_boot: int = 1000, seed: int = 0, level: float = 0.95) -> list[dict]:
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


class _Cells:
    """Formats cells and remembers which metrics rendered as "—", for the footnotes."""

    def __init__(self, digits: int, scale: float, missing: Mapping[str, str] | None):
        self.digits, self.scale, self.missing = digits, scale, dict(missing or {})
        self.dashed: list[str] = []

    def mean(self, rows: Iterable[Mapping], metric: str) -> str:
        vals = [v for v in (value(r, metric) for r in rows) if v is not None]
        if not vals:
            if metric not in self.dashed:
                self.dashed.append(metric)
            return DASH
        return f"{np.mean(vals) * self.scale:.{self.digits}f}"

    def footnotes(self) -> list[str]:
        notes = [f"{DASH} {m}: {self.missing[m]}" for m in self.dashed if m in self.missing]
        if any(m not in self.missing for m in self.dashed):
            notes.append(f"{DASH} {'other cells: ' if notes else ''}no sample has a value for that cell.")
        return notes


def _markdown(header: list[str], body: list[list[str]], notes: list[str] = ()) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] * len(header)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    if notes:
        lines += [""] + [f"{n}  " if i < len(notes) - 1 else n for i, n in enumerate(notes)]
    return "\n".join(lines) + "\n"


def _metrics_of(rows: Iterable[Mapping]) -> list[str]:
    names: dict[str, None] = {}
    for r in rows:
        names.update(dict.fromkeys(r.get("metrics") or {}))
    return list(names)


def _model_strategy(key) -> tuple[str, str]:
    return (str(key[0]), str(key[1])) if isinstance(key, tuple) else (str(key), "")


def _speakers_label(n) -> str:
    return f"{n} speaker" + ("" if n == 1 else "s")


def palm_table(rows_by_model_strategy: Mapping, metrics: list[str] | None = None,
               missing: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None,
               digits: int = 2, scale: float = 1.0, speakers: Sequence[int] = PALM_SPEAKERS,
               tasks: Sequence[str] = PALM_TASKS, task_field: str = "task") -> str:
    """PALM Appendix A.4 (Tables 5–6) as Markdown: one row per (model, strategy) key of
    ``rows_by_model_strategy``; columns ``<n> speaker(s) · <task> · <metric>`` for 1–4 speakers ×
    recognition/captioning × the metrics present for that task (plus any named in ``missing``).
    ``metrics`` defaults to the names under the rows' ``"metrics"``; ``labels`` renames them."""
    all_rows = [r for rows in rows_by_model_strategy.values() for r in rows]
    metrics = list(metrics) if metrics is not None else _metrics_of(all_rows)
    missing, labels = dict(missing or {}), dict(labels or {})
    cols = []
    for task in tasks:
        task_rows = [r for r in all_rows if r.get(task_field) == task]
        present = [m for m in metrics if m in missing or any(value(r, m) is not None for r in task_rows)]
        cols += [(n, task, m) for n in speakers for m in present]
    cols.sort(key=lambda c: (list(speakers).index(c[0]), list(tasks).index(c[1])))
    cells = _Cells(digits, scale, missing)
    body = []
    for key, rows in rows_by_model_strategy.items():
        body.append(list(_model_strategy(key)) + [
            cells.mean([r for r in rows if r.get("n_speakers") == n and r.get(task_field) == t], m)
            for n, t, m in cols])
    header = ["Model", "Strategy"] + [f"{_speakers_label(n)} · {t} · {labels.get(m, m)}" for n, t, m in cols]
    return _markdown(header, body, cells.footnotes())


def palm_stratum_table(rows_by_model_strategy: Mapping, metrics: list[str] | None = None,
                       missing: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None,
                       digits: int = 2, scale: float = 1.0, strata: Sequence[str] = PALM_STRATA) -> str:
    """Negative samples by the stratum of their hardest distractor (``negative_stratum``):
    rows (model, strategy); columns ``<stratum> · <metric>`` and ``<stratum> · n``."""
    all_rows = [r for rows in rows_by_model_strategy.values() for r in rows if r.get("negative_stratum")]
    metrics = list(metrics) if metrics is not None else _metrics_of(all_rows)
    missing, labels = dict(missing or {}), dict(labels or {})
    seen = {r["negative_stratum"] for r in all_rows}
    order = [s for s in strata if s in seen] + sorted(seen - set(strata))
    present = [m for m in metrics if m in missing or any(value(r, m) is not None for r in all_rows)]
    cells = _Cells(digits, scale, missing)
    body = []
    for key, rows in rows_by_model_strategy.items():
        line = list(_model_strategy(key))
        for s in order:
            members = [r for r in rows if r.get("negative_stratum") == s]
            line += [cells.mean(members, m) for m in present] + [str(len(members))]
        body.append(line)
    header = ["Model", "Strategy"] + [h for s in order for h in
                                      [f"{s} · {labels.get(m, m)}" for m in present] + [f"{s} · n"]]
    return _markdown(header, body, cells.footnotes())


def _group_rows(rows: Sequence[Mapping], by: Sequence[str]) -> dict[tuple, list[Mapping]]:
    groups: dict[tuple, list[Mapping]] = {}
    for r in rows:
        groups.setdefault(tuple(str(r.get(f, "")) for f in by), []).append(r)
    return groups


def msu_table(rows: Sequence[Mapping], metric: str = "score", by: Sequence[str] = ("model",),
              capabilities: Mapping[str, Sequence[str]] | None = None,
              missing: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None,
              digits: int = 2, scale: float = 1.0) -> str:
    """MSU Table 3 as Markdown: one row per ``by`` group (models); per tier its capabilities and
    ``Avg``, then the overall ``Avg``. Tier and overall averages are the mean over **all** samples
    involved, as the paper computes them, not the mean of the capability means.
    ``capabilities`` ({tier: [capability, ...]}) fixes the order; default: sorted tiers,
    capabilities in order of first appearance."""
    rows, labels = list(rows), dict(labels or {})
    order = {t: list(c) for t, c in (capabilities or {}).items()}
    for r in rows:
        caps = order.setdefault(r.get("tier"), [])
        if capabilities is None and r.get("capability") not in caps:
            caps.append(r.get("capability"))
    tiers = sorted(order, key=order_key) if capabilities is None else list(order)
    cells = _Cells(digits, scale, missing)
    body = []
    for key, members in _group_rows(rows, by).items():
        line = list(key)
        for t in tiers:
            in_tier = [r for r in members if r.get("tier") == t]
            line += [cells.mean([r for r in in_tier if r.get("capability") == c], metric) for c in order[t]]
            line.append(cells.mean(in_tier, metric))
        body.append(line + [cells.mean(members, metric)])
    header = [f.capitalize() for f in by]
    for t in tiers:
        header += [f"{labels.get(t, t)} · {labels.get(c, c)}" for c in order[t]] + [f"{labels.get(t, t)} · Avg"]
    return _markdown(header + ["Avg"], body, cells.footnotes())


def msu_language_table(rows: Sequence[Mapping], metric: str = "score", by: Sequence[str] = ("model",),
                       missing: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None,
                       digits: int = 2, scale: float = 1.0) -> str:
    """MSU Figure 4 as a table: per ``by`` group, the all-samples mean of each tier and overall,
    for each language (``language`` field)."""
    rows, labels = list(rows), dict(labels or {})
    languages = sorted({r.get("language") for r in rows}, key=order_key)
    tiers = sorted({r.get("tier") for r in rows}, key=order_key)
    cells = _Cells(digits, scale, missing)
    body = []
    for key, members in _group_rows(rows, by).items():
        line = list(key)
        for lang in languages:
            in_lang = [r for r in members if r.get("language") == lang]
            line += [cells.mean([r for r in in_lang if r.get("tier") == t], metric) for t in tiers]
            line.append(cells.mean(in_lang, metric))
        body.append(line)
    header = [f.capitalize() for f in by] + [f"{lang} · {labels.get(t, t)}" for lang in languages
                                             for t in tiers + ["Avg"]]
    return _markdown(header, body, cells.footnotes())
