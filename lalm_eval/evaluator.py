"""Run tasks against a model: docs → requests → (cache) → adapter → filters → metrics → results.

Failed generations and undecodable audio are excluded from every denominator and reported
with their doc ids, errors and failure kinds; nothing is scored as an empty answer.

What adapters report beside the text (``Response.meta``: audio heard, provider usage and model
id, cost) lands in each sample row and is summed per task by :func:`sample_info` — truncated
samples, seconds of audio sent and heard, failures by kind, token usage, every distinct model id.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from lalm_eval.api import Request, Response
from lalm_eval.audio.io import read_audio
from lalm_eval.cache import CachedAdapter, ResponseCache, encoded_audio_id, request_key
from lalm_eval.errors import AudioError, ConfigError
from lalm_eval.hub.load import load_dataset_fresh
from lalm_eval.metrics.scoring import ScoreItem, ScoringContext, make_metric, metric_name, summarize
from lalm_eval.parallel import generate_sharded
from lalm_eval.tasks import Task, TaskManager

log = logging.getLogger(__name__)


@dataclasses.dataclass
class TaskRun:
    task: Task
    docs: list[dict]
    requests: list[Request]
    doc_ids: list[int]
    errors: list[dict]  # {doc_id, error} for docs that never reached the model or failed there
    n_original: int


def decode_audio(value) -> np.ndarray:
    """A doc's audio value (``{"bytes", "path"}``, an array, or a decoder) as 16 kHz float32."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float32)
    if isinstance(value, dict) and value.get("bytes") is not None:
        return read_audio(value["bytes"])[0]
    if isinstance(value, dict) and value.get("array") is not None:
        from lalm_eval.audio.io import resample

        return resample(np.asarray(value["array"], np.float32), int(value["sampling_rate"]), 16_000)
    if isinstance(value, dict) and value.get("path"):
        return read_audio(value["path"])[0]
    raise AudioError(f"cannot decode audio value of type {type(value).__name__}")


def load_docs(task: Task, cache_dir: Path, limit: int | None, split: str | None = None) -> tuple[list[dict], int]:
    """The task's docs of ``split`` (default: its ``test_split``), after ``process_docs``; and their count."""
    import datasets

    cfg = task.config
    path = cfg.dataset_path
    prepare = task.hook("prepare_dataset")
    if prepare is not None:
        path = prepare(cfg.dataset_path, cfg.dataset_name, cache_dir)
    ds = load_dataset_fresh(path, cfg.dataset_name, split=split or cfg.test_split or "test", cache_root=cache_dir,
                            **(cfg.dataset_kwargs or {}))  # local folders: a cache keyed by their content
    for name, feature in ds.features.items():  # decode audio ourselves (soundfile, deterministic)
        if isinstance(feature, datasets.Audio):
            ds = ds.cast_column(name, datasets.Audio(decode=False))
    ds = task.process_docs(ds, dataset_path=str(path))  # hooks may open other configs of the same path
    n = len(ds)
    if limit is not None:
        ds = ds.select(range(min(limit, n)))
    return [dict(row) for row in ds], n


def _audio_id(value) -> str | None:
    """Content id of a doc's audio without decoding it, when the doc holds encoded bytes."""
    if isinstance(value, dict) and isinstance(value.get("bytes"), (bytes, bytearray)):
        return encoded_audio_id(bytes(value["bytes"]))
    return None


def build_requests(task: Task, docs: list[dict], identity: dict, gen_kwargs: dict,
                   cache: ResponseCache | None = None) -> TaskRun:
    """One request per doc. Audio is decoded only for docs the cache cannot answer: a cached
    doc's key comes from the hash of its encoded audio bytes, and its request carries no audio."""
    kwargs = {**task.gen_kwargs, **gen_kwargs}
    meta = dict(task.config.metadata or {})  # Request.task_metadata (answer_kind, ...): not in the key
    pending = []
    for doc_id, doc in enumerate(tqdm(docs, desc=f"{task.name}: requests", leave=False)):
        raw = task.audio_of(doc)
        ids = [_audio_id(a) for a in raw]
        messages = tuple(task.messages(doc))
        subjects = tuple(task.subjects_of(doc))
        key = (request_key(identity, task.task_hash, doc_id, (), list(messages), kwargs, audio_ids=ids)
               if all(ids) else None)
        pending.append((doc_id, raw, messages, key, subjects))
    cached = cache.get_many(p[3] for p in pending if p[3]) if cache is not None else {}
    requests, doc_ids, errors = [], [], []
    for doc_id, raw, messages, key, subjects in pending:
        if key in cached:
            requests.append(Request(task.name, doc_id, (), messages, kwargs, key, meta, subjects))
            doc_ids.append(doc_id)
            continue
        try:
            audios = tuple(decode_audio(a) for a in raw)
        except AudioError as exc:
            log.warning("%s doc %d: audio cannot be decoded (%s); excluded", task.name, doc_id, exc)
            errors.append({"doc_id": doc_id, "error": f"audio: {exc}", "failure": "audio_decode"})
            continue
        key = key or request_key(identity, task.task_hash, doc_id, audios, list(messages), kwargs)
        requests.append(Request(task.name, doc_id, audios, messages, kwargs, key, meta, subjects))
        doc_ids.append(doc_id)
    return TaskRun(task, docs, requests, doc_ids, errors, len(docs))


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
    for key, subset in (("usage", [r for r in rows if not r.get("cached")]),
                        ("usage_cached", [r for r in rows if r.get("cached")])):
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
    out: dict = {"truncated": 0, "failures": {}, "usage": {}, "usage_cached": {}, "model_ids": set(),
                 "cost_usd": 0.0}
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


def apply_filters(task: Task, text: str, counters: dict) -> str:
    """lm-eval-style filters: ``regex`` (pattern, group_select) then ``take_first``; a regex that
    does not match keeps the whole text and is counted (``filter_misses``)."""
    for entry in task.config.filter_list or []:
        for step in entry.get("filter", []):
            if step.get("function") == "regex":
                found = re.findall(step["regex_pattern"], text, flags=re.S)
                if found:
                    pick = found[int(step.get("group_select", 0))]
                    text = pick if isinstance(pick, str) else next((g for g in pick if g), "")
                else:
                    counters["filter_misses"] = counters.get("filter_misses", 0) + 1
            elif step.get("function") in ("take_first", "strip"):
                text = text.strip()
            else:
                raise ConfigError(f"{task.yaml_file}: unsupported filter function {step.get('function')!r}")
    return text


def breakdown_fields(task: Task) -> list[str]:
    """The fields of ``metadata.breakdown``, whose entries are a field or a list of fields (a
    breakdown of the first within the others)."""
    fields: list[str] = []
    for entry in (task.config.metadata or {}).get("breakdown", []):
        for field in [entry] if isinstance(entry, str) else entry:
            if field not in fields:
                fields.append(field)
    return fields


def score(run: TaskRun, responses: list[Response], context: ScoringContext | None = None
          ) -> tuple[dict, list[dict], dict, dict]:
    """Task summary (per metric: value, stderr, 95 % bootstrap CI, n, failures), per-sample rows,
    counters and per-metric extras/missing reasons. Every metric sees all scored items at once."""
    context = context or ScoringContext()
    rows, counters, items, item_rows = [], {}, [], []
    for doc_id, request, response in zip(run.doc_ids, run.requests, responses):
        doc = run.docs[doc_id]
        target = run.task.render_target(doc)
        row = {"doc_id": doc_id, "messages": request.messages, "response": response.text, "target": target,
               "error": response.error, "cached": response.cached}
        row.update({k: response.meta[k] for k in SAMPLE_META if k in response.meta})
        if response.text is None:
            row["failure"] = response.failure
        row.update({k: doc[k] for k in breakdown_fields(run.task) if k in doc})
        if response.text is None:
            run.errors.append({"doc_id": doc_id, "error": response.error, "failure": response.failure})
        else:
            row["filtered"] = apply_filters(run.task, response.text, counters)
            row["metrics"] = {}
            items.append(ScoreItem(row["filtered"], str(target), doc, run.task.render_text(doc)))
            item_rows.append(row)
        rows.append(row)
    summary, info = {}, {}
    for i, entry in enumerate(run.task.config.metric_list or []):
        name, aggregation = metric_name(entry), entry.get("aggregation", "mean")
        result = make_metric(entry, context, where=f"{run.task.yaml_file}: metric_list[{i}]").compute(items)
        for k, row in enumerate(item_rows):
            row["metrics"][name] = result.values[k]
            if result.errors[k]:
                row.setdefault("metric_errors", {})[name] = result.errors[k]
            if result.details and result.details[k]:
                row.setdefault("metric_details", {})[name] = result.details[k]
        stats = summarize(result, (context.seed, run.task.name, name), aggregation)
        summary[name], summary[f"{name}_stderr"] = stats["value"], stats["stderr"]
        summary[f"{name}_ci95"] = stats["ci95"]
        info[name] = {**result.extra, "n": stats["n"], "failures": stats["failures"],
                      "aggregation": str(aggregation)}
        if result.missing:
            info[name]["missing"] = result.missing
        if stats["failures"] and not result.missing:
            counters[f"{name}_failures"] = stats["failures"]
            log.warning("%s: %s could not score %d samples (left out of its mean; see metric_errors)",
                        run.task.name, name, stats["failures"])
    return summary, rows, counters, info


def prepare_runs(adapter, task_names: list[str], *, include_path=None, limit=None, gen_kwargs: dict | None = None,
                 cache_dir: Path, cache: ResponseCache | None = None) -> tuple[TaskManager, list[Task], list[TaskRun]]:
    """Tasks resolved and loaded, their docs read and turned into requests (cache-aware)."""
    manager = TaskManager(include_paths=include_path)
    tasks = [manager.load_task(n) for n in manager.resolve(task_names)]
    identity = adapter.identity()
    runs = []
    for task in tqdm(tasks, desc="loading tasks"):
        docs, n_original = load_docs(task, cache_dir, limit)
        run = build_requests(task, docs, identity, gen_kwargs or {}, cache)
        run.n_original = n_original
        runs.append(run)
    return manager, tasks, runs


def plan_run(adapter, task_names: list[str], *, include_path=None, limit=None, gen_kwargs: dict | None = None,
             cache_dir: Path, use_cache: bool = True) -> dict:
    """What a run would send, without calling the model (``--dry_run``): per task and in total the
    requests, how many the response cache already answers (they cost nothing), the audio seconds
    of the rest, and — from an adapter with ``estimate(requests)`` (the API adapters) — its token
    and price estimate for them."""
    cache = ResponseCache(Path(cache_dir) / "responses.sqlite") if use_cache else None
    _, _, runs = prepare_runs(adapter, task_names, include_path=include_path, limit=limit, gen_kwargs=gen_kwargs,
                              cache_dir=cache_dir, cache=cache)
    found = cache.get_many(r.key for run in runs for r in run.requests) if cache is not None else {}
    estimate = getattr(adapter, "estimate", None)
    tasks, todo_all = {}, []
    for run in runs:
        todo = [r for r in run.requests if r.key not in found]
        todo_all += todo
        entry = {"requests": len(run.requests), "cached": len(run.requests) - len(todo),
                 "unreadable_docs": len(run.errors), "audio_s": round(sum(r.audio_seconds for r in todo), 3)}
        if estimate is not None:
            entry["estimate"] = estimate(todo)
        tasks[run.task.name] = entry
    total = {"requests": sum(e["requests"] for e in tasks.values()),
             "cached": sum(e["cached"] for e in tasks.values()),
             "audio_s": round(sum(r.audio_seconds for r in todo_all), 3)}
    if estimate is not None:
        total["estimate"] = estimate(todo_all)
    else:
        total["estimate_missing"] = f"adapter {adapter.name!r} has no cost estimate (not an API adapter)"
    return {"tasks": tasks, "total": total}


def evaluate(adapter, task_names: list[str], *, include_path=None, batch_size="1", limit=None,
             gen_kwargs: dict | None = None, cache_dir: Path, use_cache: bool = True, judge_llm=None,
             seed: int = 0) -> dict:
    """Everything the results file needs, plus per-task sample rows under ``"_samples"``."""
    t0 = time.perf_counter()
    cache = ResponseCache(Path(cache_dir) / "responses.sqlite") if use_cache else None
    manager, tasks, runs = prepare_runs(adapter, task_names, include_path=include_path, limit=limit,
                                        gen_kwargs=gen_kwargs, cache_dir=cache_dir, cache=cache)
    model = adapter
    if cache is not None:
        model = CachedAdapter(adapter, cache,
                              chunk_size=max(64, 8 * int(batch_size) if str(batch_size).isdigit() else 64))
    all_requests = [r for run in runs for r in run.requests]
    responses = generate_sharded(model, all_requests, batch_size)
    results, samples, offset = {}, {}, 0
    context = ScoringContext(judge_llm=judge_llm, cache_dir=Path(cache_dir), seed=seed)
    for run in tqdm(runs, desc="scoring"):
        part = responses[offset:offset + len(run.requests)]
        offset += len(run.requests)
        summary, rows, counters, info = score(run, part, context)
        results[run.task.name] = {"summary": summary, "counters": counters, "errors": run.errors, "metrics": info,
                                  "samples": sample_info(rows, run.errors),
                                  "n": {"original": run.n_original, "effective": len(run.docs),
                                        "scored": len(run.docs) - len(run.errors)}}
        samples[run.task.name] = rows
    groups = aggregate_groups(manager, task_names, results, tasks)
    return {"tasks": tasks, "results": results, "groups": groups, "_samples": samples,
            # counted from the responses, so that data-parallel runs report every rank's hits
            "cache": {"hits": sum(r.cached for r in responses), "misses": sum(not r.cached for r in responses)},
            "usage": merge_sample_info([r["samples"] for r in results.values()]),
            # what the adapter is (weights hash, calibrated thresholds, long-audio policy…) and counted
            "model_identity": adapter.identity(), "adapter_counters": dict(getattr(adapter, "counters", None) or {}),
            "n_generated": adapter.n_generated, "seconds": time.perf_counter() - t0}


def aggregate_groups(manager: TaskManager, requested: list[str], results: dict, tasks: list[Task]) -> dict:
    """Size-weighted (or plain) means of each requested group's subtasks, as aggregate_metric_list says."""
    out = {}
    for name in requested:
        if name not in manager.all_groups():
            continue
        group = manager.load_group(name)
        members = [t for t in manager.resolve([name]) if t in results]
        entry = {"subtasks": members}
        for agg in group.aggregate_metric_list or []:
            metric = agg["metric"]
            pairs = [(results[t]["summary"].get(metric), results[t].get("metrics", {}).get(metric, {}).get("n", 0))
                     for t in members]
            pairs = [(v, n) for v, n in pairs if v is not None and n > 0]
            if not pairs:
                entry[metric] = None
                continue
            weights = [n if agg.get("weight_by_size", True) else 1 for _, n in pairs]
            entry[metric] = float(np.average([v for v, _ in pairs], weights=weights))
        out[name] = entry
    return out
