"""The forgetting table of PALM Table 4: one row per run (base model, each recipe), one column per
task × metric of the tasks that declare ``metadata.table: forgetting`` (AISHELL-1 CER,
LibriSpeech WER, MMAU accuracy, the embedded corpus's held-out clips), each value with its 95 %
interval and, after the first row, its difference from the first row (pass the base model's
folder first). Values are the task-level ones of each run's results file (corpus WER / CER),
not means of sample rows.
"""

from __future__ import annotations

from lalm_eval.report.results import metric_key
from lalm_eval.report.tables import _markdown

TABLE = "forgetting"  # the metadata.table value that puts a task here


def forgetting_columns(doc: dict) -> list[tuple[str, str]]:
    """``(task, metric)`` of a results document's forgetting tasks, in its task order."""
    out = []
    for task, config in (doc.get("configs") or {}).items():
        if ((config or {}).get("metadata") or {}).get("table") != TABLE or task not in doc.get("results", {}):
            continue
        out += [(task, m["metric"]) for m in config.get("metric_list") or []]
    return out


def _value(doc: dict, task: str, metric: str):
    entry = (doc.get("results") or {}).get(task) or {}
    return entry.get(metric_key(metric)), entry.get(metric_key(f"{metric}_ci95"))


def forgetting_table(runs: list[tuple[str, dict]]) -> str:
    """Markdown for ``[(row label, results document)]``; ``""`` when no run has a forgetting task."""
    columns: dict[tuple[str, str], str] = {}
    for _, doc in runs:
        for task, metric in forgetting_columns(doc):
            better = (doc.get("higher_is_better") or {}).get(task, {}).get(metric)
            alias = ((doc.get("results") or {}).get(task) or {}).get("alias") or task
            columns.setdefault(
                (task, metric), f"{alias} · {metric}{' ↑' if better else ' ↓' if better is False else ''}"
            )
    if not columns:
        return ""
    base = runs[0][1]
    body = []
    for k, (label, doc) in enumerate(runs):
        cells = [label]
        for task, metric in columns:
            value, ci = _value(doc, task, metric)
            ref, _ = _value(base, task, metric)
            if value is None:
                cells.append("—")
                continue
            cell = f"{value:.4f}" + (f" [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "")
            if k and ref is not None:
                cell += f" ({value - ref:+.4f})"
            cells.append(cell)
        body.append(cells)
    note = (
        f"Rows: runs in the order given; (±x) is the difference from the first row ({runs[0][0]}). "
        "WER / CER are corpus-level (edits over reference words / characters), lower is better."
    )
    return "\n".join(
        ["## Forgetting (PALM Table 4)", "", _markdown(["Model"] + list(columns.values()), body), "", note]
    )
