"""PNG plots of per-sample rows (matplotlib, Agg backend: no display needed).

- :func:`speaker_count_plot`: the metric against 1–4 speakers, one line per model/strategy
  (PALM's finding: recognition and captioning degrade as speakers are added).
- :func:`task_bar_plot`: the metric per task id, one bar group per task, one bar per model
  (MSU Figure 3's per-task comparison).

Missing values (None/NaN) are left out of the means, as in :mod:`lalm_eval.report.tables`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from lalm_eval.errors import DataError
from lalm_eval.report.tables import PALM_SPEAKERS, order_key, value

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


def speaker_count_plot(rows: Iterable[Mapping], metric: str, path: str | Path,
                       series: Sequence[str] = ("model", "strategy"),
                       speakers: Sequence[int] = PALM_SPEAKERS, title: str | None = None) -> Path:
    """Line plot of the mean ``metric`` against ``n_speakers`` (1–4), one line per ``series``
    group (model / strategy). Raises :class:`DataError` when no row has a value."""
    data = _means(rows, metric, "n_speakers", series)
    if not data:
        raise DataError(path, f"no rows with a value of {metric!r} to plot", field=metric)
    fig, ax = _subplots((6.4, 4.2))
    for label in sorted(data):
        xs = [n for n in speakers if n in data[label]]
        ax.plot(xs, [data[label][n] for n in xs], marker="o", label=label)
    ax.set_xticks(list(speakers))
    ax.set_xlabel("speakers in the audio")
    ax.set_ylabel(metric)
    ax.set_title(title or f"{metric} by number of speakers")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return _save(fig, path)


def task_bar_plot(rows: Iterable[Mapping], metric: str, path: str | Path, task_field: str = "task_id",
                  series: Sequence[str] = ("model",), title: str | None = None) -> Path:
    """Grouped bars of the mean ``metric`` per task id (``task_field``), one bar per ``series``
    group. Raises :class:`DataError` when no row has a value."""
    data = _means(rows, metric, task_field, series)
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
    ax.set_ylabel(metric)
    ax.set_title(title or f"{metric} by task")
    ax.grid(axis="y", alpha=0.3)
    if len(labels) > 1:
        ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    return _save(fig, path)
