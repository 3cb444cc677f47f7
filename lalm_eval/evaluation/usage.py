"""The usage stage: what adapters report beside the text (``Response.meta``: audio heard, provider
usage and model id, cost), copied into each sample row (:data:`SAMPLE_META`) and summed per task
(:func:`sample_info`) and per run (:func:`merge_sample_info`)."""

from __future__ import annotations

#: ``Response.meta`` keys copied into each sample row (see ``lalm_eval.api``)
SAMPLE_META = ("audio_s", "seen_s", "truncated", "chunks", "usage", "model", "cost_usd", "attempts", "finish_reason")


def sample_info(rows: list[dict], errors: list[dict]) -> dict:
    """Per-task sums of what the adapter reported: ``truncated`` samples, ``audio_s`` sent and
    ``seen_s`` heard (over the samples that report them), ``failures`` by kind (generation and
    audio decoding), token ``usage`` summed per field and ``cost_usd`` (when priced) of the
    answers generated in this run, ``usage_cached`` of those served by the response cache (paid
    for by an earlier run), every distinct provider ``model_ids``."""
    info: dict = {"truncated": sum(bool(r.get("truncated")) for r in rows)}
    timed = [r for r in rows if "audio_s" in r]
    if timed:
        info["audio_s"] = round(sum(r["audio_s"] for r in timed), 3)
        info["seen_s"] = round(sum(r.get("seen_s", r["audio_s"]) for r in timed), 3)
        info["samples_with_audio_info"] = len(timed)
    failures: dict = {}
    for e in errors:
        kind = e.get("failure") or "error"
        failures[kind] = failures.get(kind, 0) + 1
    if failures:
        info["failures"] = dict(sorted(failures.items()))
    for key, subset in (
        ("usage", [r for r in rows if not r.get("cached")]),
        ("usage_cached", [r for r in rows if r.get("cached")]),
    ):
        usage: dict = {}
        for r in subset:
            for k, v in (r.get("usage") or {}).items():
                if isinstance(v, (int, float)):
                    usage[k] = usage.get(k, 0) + v
        if usage:
            info[key] = usage
    ids = sorted({r["model"] for r in rows if r.get("model")})
    if ids:
        info["model_ids"] = ids
    costs = [r["cost_usd"] for r in rows if isinstance(r.get("cost_usd"), (int, float)) and not r.get("cached")]
    if costs:
        info["cost_usd"] = round(sum(costs), 6)
    return info


def merge_sample_info(infos: list[dict]) -> dict:
    """The run's totals over tasks' :func:`sample_info` (usage, model ids, cost, failures, truncated)."""
    out: dict = {"truncated": 0, "failures": {}, "usage": {}, "usage_cached": {}, "model_ids": set(), "cost_usd": 0.0}
    for info in infos:
        out["truncated"] += info.get("truncated", 0)
        for key in ("failures", "usage", "usage_cached"):
            for k, v in info.get(key, {}).items():
                out[key][k] = out[key].get(k, 0) + v
        out["model_ids"].update(info.get("model_ids", []))
        out["cost_usd"] += info.get("cost_usd", 0.0)
    out["model_ids"] = sorted(out["model_ids"])
    out["cost_usd"] = round(out["cost_usd"], 6)
    return out
