"""PNG plots of per-sample rows (matplotlib, Agg backend: no display needed), as a report layout
file's ``plots`` declare them (:mod:`lalm_eval.report.layouts`):

- :func:`line_plot`: the mean metric against a numeric field (e.g. a speaker count), one line per
  series group (model / a task-metadata field).
- :func:`bar_plot`: the mean metric per value of a field (e.g. the task id), one bar per series
  group.

Missing values (None/NaN) are left out of the means, as in :mod:`lalm_eval.report.tables`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from lalm_eval.errors import DataError
from lalm_eval.report.tables import order_key, value

DPI = 120


def _series_label(row: Mapping, fields: Sequence[str]) -> str:
    return " / ".join(str(row[f]) for f in fields if row.get(f) not in (None, "")) or "all"


def _means(rows: Iterable[Mapping], metric: str, x_field: str, series: Sequence[str]) -> dict:
    """{series label: {x: mean}} over rows that have a value."""
    acc: dict[str, dict] = {}
    for r in rows:
        v = value(r, metric)
        if v is None or r.get(x_field) is None:
            continue
        acc.setdefault(_series_label(r, series), {}).setdefault(r[x_field], []).append(v)
    return {s: {x: float(np.mean(vs)) for x, vs in xs.items()} for s, xs in acc.items()}


def _subplots(figsize):
    """A figure on the Agg canvas without pyplot (no global state, a faster import)."""
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # Fixed metadata so the same rows give the same bytes.
    fig.savefig(path, dpi=DPI, format="png", metadata={"Software": None})
    return path


def line_plot(
    rows: Iterable[Mapping],
    metric: str,
    path: str | Path,
    x_field: str,
    x_values: Sequence | None = None,
    series: Sequence[str] = ("model",),
    x_label: str | None = None,
    y_label: str | None = None,
    title: str | None = None,
) -> Path:
    """Line plot of the mean ``metric`` against ``x_field`` (ticks ``x_values``, default: the values
    present), one line per ``series`` group. Raises :class:`DataError` when no row has a value."""
    data = _means(rows, metric, x_field, series)
    if not data:
        raise DataError(path, f"no rows with a value of {metric!r} to plot", field=metric)
    ticks = list(x_values) if x_values else sorted({x for xs in data.values() for x in xs}, key=order_key)
    fig, ax = _subplots((6.4, 4.2))
    for label in sorted(data):
        xs = [n for n in ticks if n in data[label]]
        ax.plot(xs, [data[label][n] for n in xs], marker="o", label=label)
    ax.set_xticks(ticks)
    ax.set_xlabel(x_label or x_field)
    ax.set_ylabel(y_label or metric)
    ax.set_title(title or f"{y_label or metric} by {x_label or x_field}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return _save(fig, path)


def bar_plot(
    rows: Iterable[Mapping],
    metric: str,
    path: str | Path,
    x_field: str = "task_id",
    series: Sequence[str] = ("model",),
    y_label: str | None = None,
    title: str | None = None,
) -> Path:
    """Grouped bars of the mean ``metric`` per value of ``x_field``, one bar per ``series`` group.
    Raises :class:`DataError` when no row has a value."""
    data = _means(rows, metric, x_field, series)
    if not data:
        raise DataError(path, f"no rows with a value of {metric!r} to plot", field=metric)
    tasks = sorted({t for xs in data.values() for t in xs}, key=order_key)
    labels = sorted(data)
    width = 0.8 / len(labels)
    fig, ax = _subplots((max(6.4, 0.45 * len(tasks) * max(1, len(labels) / 2)), 4.4))
    x = np.arange(len(tasks))
    for i, label in enumerate(labels):
        heights = [data[label].get(t, np.nan) for t in tasks]
        ax.bar(x + (i - (len(labels) - 1) / 2) * width, heights, width, label=label)
    ax.set_xticks(x)
    ax.set_xticklabels([str(t) for t in tasks], rotation=60, ha="right", fontsize="small")
    ax.set_ylabel(y_label or metric)
    ax.set_title(title or f"{y_label or metric} by {x_field}")
    ax.grid(axis="y", alpha=0.3)
    if len(labels) > 1:
        ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return _save(fig, path)
