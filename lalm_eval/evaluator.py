"""Run tasks against a model: docs → requests → (cache) → adapter → filters → metrics → results.

Failed generations and undecodable audio are excluded from every denominator and reported
with their doc ids, errors and failure kinds; nothing is scored as an empty answer.

What adapters report beside the text (``Response.meta``: audio heard, provider usage and model
id, cost) lands in each sample row and is summed per task by :func:`sample_info` — truncated
samples, seconds of audio sent and heard, failures by kind, token usage, every distinct model id.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from lalm_eval.api import Request, Response
from lalm_eval.audio.io import read_audio
from lalm_eval.cache import CachedAdapter, ResponseCache, encoded_audio_id, request_key
from lalm_eval.cli_support import interrupt_note
from lalm_eval.errors import AudioError, ConfigError, LalmEvalError
from lalm_eval.hub.load import load_dataset_fresh
from lalm_eval.metrics.scoring import ScoreItem, ScoringContext, make_metric, metric_name, summarize
from lalm_eval.models.batching import resolve_batch_size
from lalm_eval.parallel import common_keys, generate_sharded
from lalm_eval.tasks import Task, TaskManager
from lalm_eval.tasks.gen_kwargs import check_gen_kwargs

log = logging.getLogger(__name__)


#: requests whose audio is decoded at once (``--stream_chunk``): cache misses only, built,
#: decoded and generated a chunk at a time so that memory does not grow with the number of docs
DEFAULT_STREAM_CHUNK = 64


@dataclasses.dataclass(frozen=True)
class PendingDoc:
    """A doc after the scan, before its audio is decoded: what its request needs besides the audio.
    ``key`` comes from the hashes of the encoded audio bytes (None when the doc's audio is an array
    or a path: its key needs the decoded samples)."""

    doc_id: int
    messages: tuple
    subjects: tuple
    key: str | None


@dataclasses.dataclass
class TaskRun:
    task: Task
    docs: list[dict]
    requests: list[Request]
    doc_ids: list[int]
    errors: list[dict]  # {doc_id, error} for docs that never reached the model or failed there
    n_original: int
    #: streaming (:func:`evaluate`): where each doc is read again to decode its audio (the dataset,
    #: memory-mapped), and the docs not yet turned into requests; ``docs`` then hold no audio bytes
    source: Sequence[dict] | None = None
    pending: list[PendingDoc] = dataclasses.field(default_factory=list)
    gen_kwargs: dict = dataclasses.field(default_factory=dict)
    #: opens ``source`` again when it was let go after the scan (its memory-mapped pages leave the RSS)
    reopen: Callable[[], Sequence[dict]] | None = None
    #: docs the task's ``process_docs`` left out on purpose, by reason (:func:`open_docs`)
    excluded: dict = dataclasses.field(default_factory=dict)


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
    raise AudioError(
        f"audio value: cannot decode a {type(value).__name__}; doc_to_audio must give an Audio column's "
        "value ({bytes, path}) or an array of samples"
    )


def open_docs(
    task: Task, cache_dir: Path, limit: int | None, split: str | None = None, excluded: dict | None = None
) -> tuple[Sequence[dict], int]:
    """The task's docs of ``split`` (default: its ``test_split``), after ``process_docs``, read lazily:
    a ``datasets.Dataset`` (memory-mapped Arrow, audio columns left encoded) or whatever sequence
    ``process_docs`` returned; and the count before ``limit``.

    A ``process_docs`` hook that takes an ``excluded`` argument gets a dict to count the docs it
    leaves out on purpose, ``{reason: count}`` (e.g. the MSU release's ``reverse_*`` questions);
    given ``excluded``, those counts land there (:func:`evaluate` writes them to the task's
    ``sample_info``, so the results JSON says what was left out and why)."""
    import datasets

    cfg = task.config
    path = cfg.dataset_path
    prepare = task.hook("prepare_dataset")
    if prepare is not None:
        path = prepare(cfg.dataset_path, cfg.dataset_name, cache_dir)
    ds = load_dataset_fresh(
        path,
        cfg.dataset_name,
        split=split or cfg.test_split or "test",
        cache_root=cache_dir,
        **(cfg.dataset_kwargs or {}),
    )  # local folders: a cache keyed by their content
    for name, feature in ds.features.items():  # decode audio ourselves (soundfile, deterministic)
        if isinstance(feature, datasets.Audio):
            ds = ds.cast_column(name, datasets.Audio(decode=False))
    counts: dict = {}
    ds = task.process_docs(ds, dataset_path=str(path), excluded=counts)  # hooks may open other configs of the path
    if excluded is not None:
        excluded.update({k: v for k, v in counts.items() if v})
    n = len(ds)
    if limit is not None:
        ds = ds.select(range(min(limit, n))) if hasattr(ds, "select") else list(ds)[:limit]
    return ds, n


@dataclasses.dataclass
class OpenedTasks:
    """What :func:`open_tasks` checked before any model is built: the tasks resolved and loaded,
    and per task its opened docs (no audio decoded), their count before ``limit`` and what
    ``process_docs`` left out. :func:`evaluate` and :func:`plan_run` take it as ``opened=``; the
    first run that scans the docs lets them go (so that their memory-mapped pages can leave the
    RSS), a later one opens them again."""

    names: list[str]
    include_path: list | None
    manager: TaskManager
    tasks: list[Task]
    docs: list[tuple[Sequence[dict], int, dict]]
    cache_dir: Path
    limit: int | None
    consumed: bool = False

    def take(self) -> list[tuple[Sequence[dict], int, dict]]:
        """The opened docs, once; after that the tasks' datasets are opened again."""
        if self.consumed:
            self.docs = open_tasks(
                self.names, include_path=self.include_path, cache_dir=self.cache_dir, limit=self.limit
            ).docs
        docs, self.docs, self.consumed = self.docs, [], True
        return docs


@contextlib.contextmanager
def naming_task(task: Task):
    """A project error raised while ``task``'s data is opened or read, told with the task's YAML
    and name in front (unless it names the YAML already), so that the user knows which task of a
    group the dataset, split or config belongs to."""
    try:
        yield
    except LalmEvalError as exc:
        if str(task.yaml_file) not in str(exc):
            exc.args = (f"{task.yaml_file}: task {task.name!r}: {exc}", *exc.args[1:])
        raise


def probe_doc(task: Task, docs: Sequence[dict]) -> None:
    """Render the first doc's prompt, audio references, target and subjects, so that a template
    or hook that does not fit the dataset fails now, not after the model has loaded."""
    if len(docs):
        doc = dict(docs[0])
        task.messages(doc)
        task.render_target(doc)
        task.subjects_of(doc)
        for audio in task.audio_of(doc):  # an Audio column's value ({bytes, path}) or samples; not text
            if not isinstance(audio, (dict, np.ndarray)):
                shown = " ".join(repr(audio).replace(";", ",").split())[:60]
                raise ConfigError(
                    f"{task.yaml_file}: task {task.name!r}: doc_to_audio gives a {type(audio).__name__} "
                    f"({shown}), not audio; point it at the dataset's Audio column, e.g. '{{{{ audio }}}}'"
                )


def open_tasks(task_names: list[str], *, include_path=None, cache_dir: Path, limit: int | None = None) -> OpenedTasks:
    """Every task of ``task_names`` loaded (its YAML, metrics and filters checked), its dataset
    opened (a missing dataset, config or split is an error naming the task) and its first doc
    rendered: what can be wrong with the tasks and their data shows before a model is built."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(f"limit: must be a whole number >= 1, got {limit!r}; omit it to run every doc")
    manager = TaskManager(include_paths=include_path)
    tasks = [manager.load_task(n) for n in manager.resolve(task_names)]
    opened = []
    for task in tasks:
        excluded: dict = {}
        with naming_task(task):
            docs, n_original = open_docs(task, Path(cache_dir), limit, excluded=excluded)
            probe_doc(task, docs)
        opened.append((docs, n_original, excluded))
    if tasks and not any(len(docs) for docs, _, _ in opened):
        left_out = {k: v for _, _, excluded in opened for k, v in excluded.items()}
        why = (
            f" ({', '.join(f'{k}: {v}' for k, v in sorted(left_out.items()))} left out by process_docs)"
            if left_out
            else ""
        )
        raise ConfigError(
            f"{tasks[0].yaml_file}: no docs to evaluate in {', '.join(t.name for t in tasks)}{why}; "
            "check the tasks' dataset_path, dataset_name and test_split"
        )
    return OpenedTasks(list(task_names), include_path, manager, tasks, opened, Path(cache_dir), limit)


def load_docs(task: Task, cache_dir: Path, limit: int | None, split: str | None = None) -> tuple[list[dict], int]:
    """The task's docs of ``split`` (default: its ``test_split``), after ``process_docs``; and their count."""
    ds, n = open_docs(task, cache_dir, limit, split)
    return [dict(row) for row in ds], n


def _audio_id(value) -> str | None:
    """Content id of a doc's audio without decoding it, when the doc holds encoded bytes."""
    if isinstance(value, dict) and isinstance(value.get("bytes"), (bytes, bytearray)):
        return encoded_audio_id(bytes(value["bytes"]))
    return None


def light_doc(value):
    """``value`` (a doc) without audio content: every ``bytes`` value and the ``array`` of a decoded
    ``{"array", "sampling_rate"}`` become None, at any depth; the rest is kept (text fields, paths,
    labels). What the scoring keeps of each doc while the run streams."""
    if isinstance(value, (bytes, bytearray)):
        return None
    if isinstance(value, dict):
        audio = "array" in value and "sampling_rate" in value
        return {k: None if audio and k == "array" else light_doc(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(light_doc(v) for v in value)
    return value


def scan_docs(task: Task, docs: Sequence[dict], identity: dict, gen_kwargs: dict, light: bool = True) -> TaskRun:
    """One :class:`PendingDoc` per doc (prompt, subjects, and the cache key from the encoded audio's
    hash when every audio is encoded bytes), reading each doc once and decoding nothing. With
    ``light`` the run keeps :func:`light_doc` copies for scoring and reads ``docs`` again (by
    index) for the audio of the requests it has to send."""
    kwargs = {**task.gen_kwargs, **gen_kwargs}
    pending, kept = [], []
    for doc_id, doc in enumerate(tqdm(docs, desc=f"{task.name}: requests", leave=False)):
        doc = dict(doc)
        ids = [_audio_id(a) for a in task.audio_of(doc)]
        messages = tuple(task.messages(doc))
        key = (
            request_key(identity, task.task_hash, doc_id, (), list(messages), kwargs, audio_ids=ids)
            if all(ids)
            else None
        )
        pending.append(PendingDoc(doc_id, messages, tuple(task.subjects_of(doc)), key))
        kept.append(light_doc(doc) if light else doc)
    return TaskRun(task, kept, [], [], [], len(kept), source=docs, pending=pending, gen_kwargs=kwargs)


def _request(run: TaskRun, p: PendingDoc, audios: tuple, key: str) -> Request:
    return Request(
        run.task.name,
        p.doc_id,
        audios,
        p.messages,
        run.gen_kwargs,
        key,
        dict(run.task.config.metadata or {}),
        p.subjects,
    )


def _decoded_request(run: TaskRun, p: PendingDoc, identity: dict) -> Request | None:
    """The doc's request with its audio decoded (read again from ``run.source``); None, with the
    error recorded in ``run.errors``, when the audio cannot be decoded."""
    if run.source is None and run.reopen is not None:
        run.source = run.reopen()
        if len(run.source) != len(run.docs):
            raise LalmEvalError(
                f"{run.task.yaml_file}: task {run.task.name!r}: the dataset changed during the run "
                f"({len(run.docs)} docs when scanned, {len(run.source)} now); run again (answers so far are cached)"
            )
    try:
        audios = tuple(decode_audio(a) for a in run.task.audio_of(dict(run.source[p.doc_id])))
    except AudioError as exc:
        log.warning("%s doc %d: audio cannot be decoded (%s); excluded", run.task.name, p.doc_id, exc)
        run.errors.append({"doc_id": p.doc_id, "error": f"audio: {exc}", "failure": "audio_decode"})
        return None
    key = p.key or request_key(identity, run.task.task_hash, p.doc_id, audios, list(p.messages), run.gen_kwargs)
    return _request(run, p, audios, key)


def stream_requests(
    runs: list[TaskRun],
    found: dict,
    identity: dict,
    chunk: int | None,
    handle: Callable[[list[Request]], list],
    keep: Callable[[Request], Request] | None = None,
) -> list[list]:
    """Turn every run's pending docs into ``run.requests`` / ``run.doc_ids``, in doc order, task
    after task. A doc whose key is in ``found`` (the response cache) gets a request without audio
    and ``found[key]`` as its result; the others are decoded and handed to ``handle`` (e.g.
    generation) ``chunk`` at a time (None or 0: all at once), their requests then replaced by
    ``keep(request)`` (default: the request as it is) so that the decoded audio can go. Returns,
    per run, one result per request."""
    out: list[list] = [[] for _ in runs]
    buffer: list[tuple[int, int, Request]] = []

    def flush() -> None:
        if not buffer:
            return
        results = handle([r for _, _, r in buffer])
        if len(results) != len(buffer):
            raise LalmEvalError(f"{len(results)} results for {len(buffer)} requests")
        for (ri, si, r), res in zip(buffer, results):
            out[ri][si] = res
            if keep is not None:
                runs[ri].requests[si] = keep(r)
        buffer.clear()

    for ri, run in enumerate(runs):
        for p in run.pending:
            if p.key is not None and p.key in found:
                run.requests.append(_request(run, p, (), p.key))
                run.doc_ids.append(p.doc_id)
                out[ri].append(found[p.key])
                continue
            request = _decoded_request(run, p, identity)
            if request is None:
                continue
            run.requests.append(request)
            run.doc_ids.append(p.doc_id)
            out[ri].append(None)
            buffer.append((ri, len(run.requests) - 1, request))
            request = None  # the buffer holds the decoded audio now, and lets it go on flush
            if chunk and len(buffer) >= chunk:
                flush()
        run.pending = []
        if keep is not None:  # streaming: the task's docs are read; let the dataset's mapping go
            run.source = None
    flush()
    return out


def build_requests(
    task: Task, docs: list[dict], identity: dict, gen_kwargs: dict, cache: ResponseCache | None = None
) -> TaskRun:
    """One request per doc, all decoded at once (see :func:`evaluate` for the streamed run). Audio
    is decoded only for docs the cache cannot answer: a cached doc's key comes from the hash of its
    encoded audio bytes, and its request carries no audio."""
    run = scan_docs(task, docs, identity, gen_kwargs, light=False)
    found = cache.get_many(p.key for p in run.pending if p.key) if cache is not None else {}
    stream_requests([run], found, identity, None, lambda requests: [None] * len(requests))
    run.source = None
    return run


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
                raise ConfigError(
                    f"{task.yaml_file}: unsupported filter function {step.get('function')!r}; "
                    "use regex, take_first or strip"
                )
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


def score(
    run: TaskRun, responses: list[Response], context: ScoringContext | None = None
) -> tuple[dict, list[dict], dict, dict]:
    """Task summary (per metric: value, stderr, 95 % bootstrap CI, n, failures), per-sample rows,
    counters and per-metric extras/missing reasons. Every metric sees all scored items at once."""
    context = context or ScoringContext()
    rows, counters, items, item_rows = [], {}, [], []
    for doc_id, request, response in zip(run.doc_ids, run.requests, responses):
        doc = run.docs[doc_id]
        target = run.task.render_target(doc)
        row = {
            "doc_id": doc_id,
            "messages": request.messages,
            "response": response.text,
            "target": target,
            "error": response.error,
            "cached": response.cached,
        }
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
        info[name] = {**result.extra, "n": stats["n"], "failures": stats["failures"], "aggregation": str(aggregation)}
        if result.missing:
            info[name]["missing"] = result.missing
        if stats["failures"] and not result.missing:
            counters[f"{name}_failures"] = stats["failures"]
            log.warning(
                "%s: %s could not score %d samples (left out of its mean; see metric_errors)",
                run.task.name,
                name,
                stats["failures"],
            )
    return summary, rows, counters, info


def prepare_runs(
    adapter,
    task_names: list[str],
    *,
    include_path=None,
    limit=None,
    gen_kwargs: dict | None = None,
    cache_dir: Path,
    cache: ResponseCache | None = None,
) -> tuple[TaskManager, list[Task], list[TaskRun]]:
    """Tasks resolved and loaded, their docs read and turned into requests (cache-aware), every
    request's audio decoded at once (:func:`evaluate` streams instead)."""
    manager, tasks, runs, found = scan_runs(
        adapter,
        task_names,
        include_path=include_path,
        limit=limit,
        gen_kwargs=gen_kwargs,
        cache_dir=cache_dir,
        cache=cache,
        light=False,
    )
    stream_requests(runs, found, adapter.identity(), None, lambda requests: [None] * len(requests))
    for run in runs:
        run.source = None
    return manager, tasks, runs


def scan_runs(
    adapter,
    task_names: list[str],
    *,
    include_path=None,
    limit=None,
    gen_kwargs: dict | None = None,
    cache_dir: Path,
    cache: ResponseCache | None = None,
    light: bool = True,
    opened: OpenedTasks | None = None,
) -> tuple[TaskManager, list[Task], list[TaskRun], dict]:
    """Tasks resolved and loaded, their docs scanned (:func:`scan_docs`: prompts and keys, no audio
    decoded; with ``light`` docs kept without audio bytes and each dataset let go until its misses
    are decoded, so its memory-mapped pages leave the RSS), and the cached responses of the keyed
    docs — those that every data-parallel process finds, so that all processes stream the same
    misses. ``opened`` (:func:`open_tasks`, made before the adapter was built) holds the tasks and
    their opened docs; without it they are opened here."""
    if opened is None:
        opened = open_tasks(task_names, include_path=include_path, cache_dir=cache_dir, limit=limit)
    manager, tasks, cache_dir, limit = opened.manager, opened.tasks, opened.cache_dir, opened.limit
    identity = adapter.identity()
    runs = []
    pending = opened.take()
    for task in tqdm(tasks, desc="loading tasks"):
        docs, n_original, excluded = pending.pop(0)
        with naming_task(task):
            run = scan_docs(task, docs, identity, gen_kwargs or {}, light=light)
        run.n_original, run.excluded = n_original, dict(excluded)
        if light:  # the mapped rows leave the RSS now; the dataset is opened again for the misses
            run.source, run.reopen = None, functools.partial(_reopened, task, cache_dir, limit)
        runs.append(run)
        del docs
    found = cache.get_many(p.key for run in runs for p in run.pending if p.key) if cache is not None else {}
    agreed = common_keys(found)
    return manager, tasks, runs, {k: v for k, v in found.items() if k in agreed}


def _reopened(task: Task, cache_dir: Path, limit: int | None) -> Sequence[dict]:
    return open_docs(task, cache_dir, limit)[0]


def stream_chunk_size(stream_chunk: int | None, batch_size, cache_chunk: int) -> int | None:
    """Requests decoded at once: ``stream_chunk`` (None → :data:`DEFAULT_STREAM_CHUNK`; 0 → no
    chunking, None returned), at least the batch size; above ``cache_chunk`` (the response cache's
    commit chunk) rounded up to a multiple of it, so the adapter sees the same batches as in an
    unchunked run."""
    chunk = DEFAULT_STREAM_CHUNK if stream_chunk is None else stream_chunk
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 0:
        raise ConfigError(
            f"stream_chunk: must be a whole number >= 0, got {stream_chunk!r}; give e.g. 64 (0: no chunking)"
        )
    if chunk == 0:
        return None
    if str(batch_size).isdigit():
        chunk = max(chunk, int(batch_size))
    if chunk > cache_chunk:
        chunk = -(-chunk // cache_chunk) * cache_chunk
    return chunk


def _cache_chunk(batch_size) -> int:
    """How many misses the response cache commits at a time (:class:`CachedAdapter` ``chunk_size``)."""
    return max(64, 8 * int(batch_size) if str(batch_size).isdigit() else 64)


def _shape_only(request: Request) -> Request:
    """``request`` with each audio replaced by a zero-stride stand-in of its length (no memory): what
    a cost estimate reads (lengths) without the samples."""
    return dataclasses.replace(
        request, audios=tuple(np.broadcast_to(np.zeros((), np.float32), a.shape) for a in request.audios)
    )


def plan_run(
    adapter,
    task_names: list[str],
    *,
    include_path=None,
    limit=None,
    gen_kwargs: dict | None = None,
    cache_dir: Path,
    use_cache: bool = True,
    stream_chunk: int | None = None,
    opened: OpenedTasks | None = None,
) -> dict:
    """What a run would send, without calling the model (``--dry_run``): per task and in total the
    requests, how many the response cache already answers (they cost nothing), the audio seconds
    of the rest, and — from an adapter with ``estimate(requests)`` (the API adapters) — its token
    and price estimate for them. Audio is decoded ``stream_chunk`` requests at a time (cache misses
    only) and only its length kept."""
    chunk = stream_chunk_size(stream_chunk, 1, _cache_chunk(1))
    check_gen_kwargs(dict(gen_kwargs or {}), "gen_kwargs")
    cache = ResponseCache(Path(cache_dir) / "responses.sqlite") if use_cache else None
    _, _, runs, found = scan_runs(
        adapter,
        task_names,
        include_path=include_path,
        limit=limit,
        gen_kwargs=gen_kwargs,
        cache_dir=cache_dir,
        cache=cache,
        opened=opened,
    )
    stream_requests(runs, found, adapter.identity(), chunk, lambda requests: [None] * len(requests), _shape_only)
    decoded_keys = [r.key for run in runs for r in run.requests if r.key not in found]
    if cache is not None:  # docs keyed by their decoded samples: now that their keys are known
        found = {**found, **cache.get_many(decoded_keys)}
    estimate = getattr(adapter, "estimate", None)
    tasks, todo_all = {}, []
    for run in runs:
        todo = [r for r in run.requests if r.key not in found]
        todo_all += todo
        entry = {
            "requests": len(run.requests),
            "cached": len(run.requests) - len(todo),
            "unreadable_docs": len(run.errors),
            "audio_s": round(sum(r.audio_seconds for r in todo), 3),
            **({"excluded": dict(sorted(run.excluded.items()))} if run.excluded else {}),
        }
        if estimate is not None:
            entry["estimate"] = estimate(todo)
        tasks[run.task.name] = entry
    total = {
        "requests": sum(e["requests"] for e in tasks.values()),
        "cached": sum(e["cached"] for e in tasks.values()),
        "audio_s": round(sum(r.audio_seconds for r in todo_all), 3),
    }
    if estimate is not None:
        total["estimate"] = estimate(todo_all)
    else:
        total["estimate_missing"] = f"adapter {adapter.name!r} has no cost estimate (not an API adapter)"
    return {"tasks": tasks, "total": total}


def _without_audio(request: Request) -> Request:
    return dataclasses.replace(request, audios=())


def evaluate(
    adapter,
    task_names: list[str],
    *,
    include_path=None,
    batch_size="1",
    limit=None,
    gen_kwargs: dict | None = None,
    cache_dir: Path,
    use_cache: bool = True,
    judge_llm=None,
    seed: int = 0,
    stream_chunk: int | None = None,
    opened: OpenedTasks | None = None,
    judge_samples: int = 1,
    bertscore_models: dict | None = None,
) -> dict:
    """Everything the results file needs, plus per-task sample rows under ``"_samples"``.

    Streamed: every task's docs are scanned first (prompts and cache keys from the encoded audio,
    nothing decoded; cached answers looked up), then the cache misses are decoded and generated
    ``stream_chunk`` at a time (:func:`stream_chunk_size`; default :data:`DEFAULT_STREAM_CHUNK`, 0:
    all at once), across tasks in task and doc order, their audio dropped once answered. So at
    most one chunk of decoded audio is alive, whatever the number of docs; cached answers never
    decode audio. Requests, their order, the batches the adapter sees and the scores do not depend
    on the chunk size.

    ``batch_size``, ``stream_chunk`` and ``gen_kwargs`` are checked first, whatever the cache holds
    (a run answered from the cache alone would otherwise accept any value)."""
    t0 = time.perf_counter()
    try:
        resolve_batch_size(batch_size, on_cuda=False)
    except ConfigError:
        raise ConfigError(f"batch_size: must be a whole number >= 1 or auto, got {batch_size!r}; give e.g. 8") from None
    chunk = stream_chunk_size(stream_chunk, batch_size, _cache_chunk(batch_size))
    check_gen_kwargs(dict(gen_kwargs or {}), "gen_kwargs")
    cache = ResponseCache(Path(cache_dir) / "responses.sqlite") if use_cache else None
    manager, tasks, runs, found = scan_runs(
        adapter,
        task_names,
        include_path=include_path,
        limit=limit,
        gen_kwargs=gen_kwargs,
        cache_dir=cache_dir,
        cache=cache,
        opened=opened,
    )
    model = adapter
    if cache is not None:
        model = CachedAdapter(adapter, cache, chunk_size=_cache_chunk(batch_size))
    with interrupt_note(functools.partial(what_is_kept, runs, cache, adapter)):
        per_run = stream_requests(
            runs,
            found,
            adapter.identity(),
            chunk,
            lambda requests: generate_sharded(model, requests, batch_size),
            _without_audio,
        )
        return _finish(
            runs,
            per_run,
            tasks,
            manager,
            task_names,
            adapter,
            judge_llm,
            Path(cache_dir),
            seed,
            t0,
            judge_samples,
            bertscore_models=bertscore_models,
        )


def what_is_kept(runs: list[TaskRun], cache: ResponseCache | None, adapter) -> str:
    """What an interrupted run leaves for the next one (:func:`lalm_eval.cli_support.interrupt_note`):
    how many of its docs' answers the response cache holds (counted in the file, whoever wrote
    them: this run's batches, an API adapter's single answers, earlier runs), or that
    ``--no_cache`` keeps nothing."""
    n_docs = sum(len(run.docs) for run in runs)
    if cache is None:
        return (
            f"--no_cache: the {adapter.n_generated} answers generated so far are not kept; a rerun starts over "
            "(leave out --no_cache to make a run resumable)"
        )
    keys = {r.key for run in runs for r in run.requests if r.key}
    keys |= {p.key for run in runs for p in run.pending if p.key}
    kept = len(cache.get_many(keys)) if keys else 0
    return (
        f"{kept} of the {n_docs} docs' answers are in the response cache {cache.path}; rerun the same command "
        f"to resume from there (it generates the {n_docs - kept} not cached)"
    )


def _finish(
    runs,
    per_run,
    tasks,
    manager,
    task_names,
    adapter,
    judge_llm,
    cache_dir: Path,
    seed,
    t0,
    judge_samples: int = 1,
    bertscore_models: dict | None = None,
) -> dict:
    """Score every run's responses and assemble what :func:`evaluate` returns (``judge_samples``:
    ``--judge_samples K``, the verdicts per judged item, seeded from ``seed``)."""
    responses = [r for part in per_run for r in part]
    results, samples = {}, {}
    context = ScoringContext(
        judge_llm=judge_llm,
        cache_dir=Path(cache_dir),
        seed=seed,
        judge_samples=judge_samples,
        bertscore_models=bertscore_models,  # --bertscore_model, over the tasks' backbones
    )
    for run, part in zip(tqdm(runs, desc="scoring"), per_run):
        summary, rows, counters, info = score(run, part, context)
        results[run.task.name] = {
            "summary": summary,
            "counters": counters,
            "errors": run.errors,
            "metrics": info,
            "samples": {
                **sample_info(rows, run.errors),
                **({"excluded": dict(sorted(run.excluded.items()))} if run.excluded else {}),
            },
            "n": {"original": run.n_original, "effective": len(run.docs), "scored": len(run.docs) - len(run.errors)},
        }
        samples[run.task.name] = rows
    groups = aggregate_groups(manager, task_names, results, tasks)
    return {
        "tasks": tasks,
        "results": results,
        "groups": groups,
        "_samples": samples,
        # counted from the responses, so that data-parallel runs report every rank's hits
        "cache": {"hits": sum(r.cached for r in responses), "misses": sum(not r.cached for r in responses)},
        "usage": merge_sample_info([r["samples"] for r in results.values()]),
        # what the adapter is (weights hash, calibrated thresholds, long-audio policy…) and counted
        "model_identity": adapter.identity(),
        "adapter_counters": dict(getattr(adapter, "counters", None) or {}),
        "n_generated": adapter.n_generated,
        "seconds": time.perf_counter() - t0,
    }


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
            pairs = [
                (results[t]["summary"].get(metric), results[t].get("metrics", {}).get(metric, {}).get("n", 0))
                for t in members
            ]
            pairs = [(v, n) for v, n in pairs if v is not None and n > 0]
            if not pairs:
                entry[metric] = None
                continue
            weights = [n if agg.get("weight_by_size", True) else 1 for _, n in pairs]
            entry[metric] = float(np.average([v for v, _ in pairs], weights=weights))
        out[name] = entry
    return out
