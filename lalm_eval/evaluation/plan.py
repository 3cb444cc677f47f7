"""The dry run (``--dry_run``): what a run would send, without calling the model."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from lalm_eval.api import Request
from lalm_eval.evaluation.docs import OpenedTasks
from lalm_eval.evaluation.generation import Generation, stream_chunk_size
from lalm_eval.evaluation.requests import scan_all, stream_requests
from lalm_eval.tasks.gen_kwargs import check_gen_kwargs


def _shape_only(request: Request) -> Request:
    """``request`` with each audio replaced by a zero-stride stand-in of its length (no memory): what
    a cost estimate reads (lengths) without the samples."""
    return dataclasses.replace(
        request, audios=tuple(np.broadcast_to(np.zeros((), np.float32), a.shape) for a in request.audios)
    )


def plan_run(
    adapter,
    tasks: OpenedTasks,
    *,
    gen_kwargs: dict | None = None,
    cache_dir: Path,
    use_cache: bool = True,
    stream_chunk: int | None = None,
) -> dict:
    """What a run would send, without calling the model (``--dry_run``): per task and in total the
    requests, how many the response cache already answers (they cost nothing), the audio seconds
    of the rest, and — from an adapter with ``estimate(requests)`` (the API adapters) — its token
    and price estimate for them. Audio is decoded ``stream_chunk`` requests at a time (cache misses
    only) and only its length kept."""
    chunk = stream_chunk_size(stream_chunk, 1)
    check_gen_kwargs(dict(gen_kwargs or {}), "gen_kwargs")
    generation = Generation(adapter, cache_dir, use_cache, 1)
    identity = adapter.identity()
    runs = scan_all(tasks, identity, gen_kwargs or {})
    found = generation.lookup(p.key for run in runs for p in run.pending if p.key)
    stream_requests(runs, found, identity, chunk, lambda requests: [None] * len(requests), _shape_only)
    if generation.cache is not None:  # docs keyed by their decoded samples: now that their keys are known
        read = generation.model.known_missing  # looked up at the scan, not found
        decoded_keys = [r.key for run in runs for r in run.requests if r.key not in found and r.key not in read]
        found = {**found, **generation.cache.get_many(decoded_keys)}
    estimate = getattr(adapter, "estimate", None)
    per_task, todo_all = {}, []
    for run in runs:
        todo = [r for r in run.requests if r.key not in found]
        todo_all += todo
        entry = {
            "requests": len(run.requests),
            "cached": len(run.requests) - len(todo),
            "unreadable_docs": len(run.errors),
            "audio_s": round(sum(r.audio_seconds for r in todo), 3),
            **({"excluded": dict(sorted(run.source.excluded.items()))} if run.source.excluded else {}),
        }
        if estimate is not None:
            entry["estimate"] = estimate(todo)
        per_task[run.task.name] = entry
    total = {
        "requests": sum(e["requests"] for e in per_task.values()),
        "cached": sum(e["cached"] for e in per_task.values()),
        "audio_s": round(sum(r.audio_seconds for r in todo_all), 3),
    }
    if estimate is not None:
        total["estimate"] = estimate(todo_all)
    else:
        total["estimate_missing"] = f"adapter {adapter.name!r} has no cost estimate (not an API adapter)"
    return {"tasks": per_task, "total": total}
