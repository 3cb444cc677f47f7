"""One row per (task, doc id) over all runs: the doc's question, reference and metadata once, each
run's answer beside the others (``None`` where a run lacks the doc)."""

from __future__ import annotations

from lalm_eval.view.runs import RunFolder

# what a sample row holds about the run's answer; every other key is a field of the doc
ANSWER_KEYS = ("response", "filtered", "metrics", "metric_details", "error", "failure", "cached")
PER_RUN_META = ("audio_s", "seen_s", "truncated")
NOT_META = {"doc_id", "messages", "target", *ANSWER_KEYS, *PER_RUN_META}


def question_of(row: dict) -> str:
    """The text the model saw: the text parts of the prompt's messages, in order."""
    parts = []
    for message in row.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def answer_of(row: dict) -> dict:
    answer = {k: row[k] for k in ANSWER_KEYS if k in row and row[k] is not None}
    answer.update({k: row[k] for k in PER_RUN_META if k in row})
    return answer


def disagree(answers: list[dict | None]) -> bool:
    """Runs disagree: the filtered answers of the runs that hold the doc differ (case and outer
    space aside), or one run failed where another answered."""
    seen = {
        None
        if a.get("filtered", a.get("response")) is None
        else str(a.get("filtered", a.get("response"))).strip().lower()
        for a in answers
        if a is not None
    }
    return len(seen) > 1


def join_runs(runs: list[RunFolder]) -> tuple[list[dict], dict]:
    """The rows (sorted by task, then doc id) and per-task counts ``{task: {run label: n}}``."""
    tasks = sorted({t for run in runs for t in run.samples})
    rows, counts = [], {}
    for task in tasks:
        by_run = [{r["doc_id"]: r for r in run.samples.get(task, [])} for run in runs]
        counts[task] = {run.label: len(b) for run, b in zip(runs, by_run)}
        for doc_id in sorted({d for b in by_run for d in b}, key=lambda d: (str(type(d)), d)):
            present = [b.get(doc_id) for b in by_run]
            first = next(r for r in present if r is not None)
            answers = [None if r is None else answer_of(r) for r in present]
            rows.append(
                {
                    "task": task,
                    "doc_id": doc_id,
                    "question": question_of(first),
                    "target": first.get("target"),
                    "meta": {k: v for k, v in first.items() if k not in NOT_META},
                    "answers": answers,
                    "missing": sum(a is None for a in answers),
                    "disagree": disagree(answers),
                }
            )
    return rows, counts
