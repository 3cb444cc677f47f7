"""The bold line a report carries for every task whose audio the model did not hear whole.

Computed from the per-sample rows alone (each records ``audio_s`` sent, ``seen_s`` heard and
``truncated``, :func:`lalm_eval.models.long_audio.fit_request`), so that the run's own report
(:func:`lalm_eval.report.assemble.markdown_report`) and every layout table built from sample logs
(:func:`lalm_eval.report.layouts.render_layout`, the papers' tables) say the same:

    **long_task: 12 of 40 samples heard 31.4 % of their audio on average (long_audio=truncate)**

``N`` samples were cut, of the ``M`` that report their audio; ``X`` is the mean of ``seen_s /
audio_s`` over the ``N`` cut ones. Only ``long_audio=truncate`` cuts (``refuse`` fails such
samples, ``chunk`` sends the rest), so a cut row names that policy unless the caller knows the
run's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def cut_lines(rows: Iterable[Mapping], by: Sequence[str] = ("task_name",), policy: str | None = None) -> list[str]:
    """One bold line per group of ``rows`` (by the fields ``by``, in order of first appearance)
    with at least one cut sample; none when every sample was heard whole."""
    groups: dict[tuple, list[Mapping]] = {}
    for row in rows:
        if isinstance(row.get("audio_s"), (int, float)):
            groups.setdefault(tuple(str(row.get(f, "?")) for f in by), []).append(row)
    lines = []
    for key, group in groups.items():
        cut = [r for r in group if r.get("truncated")]
        if not cut:
            continue
        shares = [min(1.0, float(r.get("seen_s", 0.0)) / float(r["audio_s"])) for r in cut if r["audio_s"]]
        share = 100 * sum(shares) / len(shares) if shares else 0.0
        lines.append(
            f"**{' · '.join(key)}: {len(cut)} of {len(group)} samples heard {share:.1f} % of their audio "
            f"on average (long_audio={policy or 'truncate'})**"
        )
    return lines


def limit_line(counters: Mapping | None) -> str | None:
    """What the model hears of each audio and where that comes from, as the adapter recorded it
    (``adapter_counters``: ``audio_limit_s``, ``audio_limit_source``); None when not recorded."""
    counters = counters or {}
    if "audio_limit_s" not in counters:
        return None
    seconds = counters["audio_limit_s"]
    heard = "all" if seconds is None else f"{seconds:g} s"
    return f"The model hears {heard} of each audio: {counters.get('audio_limit_source') or 'source not recorded'}."


def run_cut_lines(run) -> list[str]:
    """:func:`cut_lines` for each task of an :class:`~lalm_eval.evaluation.run.EvalRun`, with the
    adapter's own ``long_audio`` policy (its identity), then the limit's source when any was cut."""
    policy = (run.model_identity or {}).get("long_audio")
    lines = []
    for task in run.tasks:
        rows = [{**r, "task_name": task.name} for r in run.results[task.name].rows]
        lines += cut_lines(rows, policy=policy)
    source = limit_line(run.adapter_counters)
    return lines + ([source] if lines and source else [])
