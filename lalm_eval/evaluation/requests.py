"""The requests stage: every doc scanned once (prompt, subjects, cache key from the encoded audio),
then turned into a :class:`~lalm_eval.api.Request` — without audio when the response cache answers
it, decoded from its task's :class:`~lalm_eval.evaluation.docs.OpenedTask` otherwise — and handed
on a chunk at a time, so that at most one chunk of decoded audio is alive."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from tqdm.auto import tqdm

from lalm_eval.api import Request
from lalm_eval.cache import encoded_audio_id, request_key
from lalm_eval.errors import AudioError, LalmEvalError
from lalm_eval.evaluation import docs as docs_stage
from lalm_eval.evaluation.docs import OpenedTask, light_doc
from lalm_eval.tasks import Task

log = logging.getLogger(__name__)


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
    """One task in flight: the docs kept for scoring (without audio bytes when streamed), the
    requests built so far in doc order, the docs that never reached the model or failed there
    (``errors``: ``{doc_id, error, failure}``) and the docs not yet turned into requests."""

    source: OpenedTask
    docs: list[dict]
    gen_kwargs: dict
    pending: list[PendingDoc] = dataclasses.field(default_factory=list)
    requests: list[Request] = dataclasses.field(default_factory=list)
    doc_ids: list[int] = dataclasses.field(default_factory=list)
    errors: list[dict] = dataclasses.field(default_factory=list)

    @property
    def task(self) -> Task:
        return self.source.task


def _audio_id(value) -> str | None:
    """Content id of a doc's audio without decoding it, when the doc holds encoded bytes."""
    if isinstance(value, dict) and isinstance(value.get("bytes"), (bytes, bytearray)):
        return encoded_audio_id(bytes(value["bytes"]))
    return None


def scan_docs(source: OpenedTask, identity: dict, gen_kwargs: dict, light: bool = True) -> TaskRun:
    """One :class:`PendingDoc` per doc (prompt, subjects, and the cache key from the encoded audio's
    hash when every audio is encoded bytes), reading each doc once and decoding nothing. With
    ``light`` the run keeps :func:`light_doc` copies for scoring and parks the dataset until the
    audio of the requests it has to send is read from it again (by index)."""
    task = source.task
    kwargs = {**task.gen_kwargs, **gen_kwargs}
    pending, kept = [], []
    for doc_id, doc in enumerate(tqdm(source.docs, desc=f"{task.name}: requests", leave=False)):
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
    if light:  # the mapped rows leave the RSS now; the misses are read again from the parked dataset
        source.park()
    return TaskRun(source, kept, kwargs, pending)


def scan_all(tasks, identity: dict, gen_kwargs: dict) -> list[TaskRun]:
    """:func:`scan_docs` of every task of ``tasks`` (:class:`~lalm_eval.evaluation.docs.OpenedTasks`),
    an error told with the task's name."""
    runs = []
    for opened in tqdm(tasks.opened, desc="loading tasks"):
        with docs_stage.naming_task(opened.task):
            runs.append(scan_docs(opened, identity, gen_kwargs))
    return runs


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
    """The doc's request with its audio decoded (its row read again from ``run.source``); None,
    with the error recorded in ``run.errors``, when the audio cannot be decoded."""
    rows = run.source.docs
    if len(rows) != len(run.docs):
        raise LalmEvalError(
            f"{run.task.yaml_file}: task {run.task.name!r}: the dataset changed during the run "
            f"({len(run.docs)} docs when scanned, {len(rows)} now); run again (answers so far are cached)"
        )
    try:
        audios = tuple(docs_stage.decode_audio(a) for a in run.task.audio_of(dict(rows[p.doc_id])))
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
            run.source.park()
    flush()
    return out


def decoded_requests(task: Task, docs, identity: dict, gen_kwargs: dict | None = None) -> list[Request]:
    """The requests of ``docs`` (a task's docs, or a selection of them), every audio decoded: the
    scan and the stream above with no cache and one chunk, for tools that hand requests to an
    adapter themselves (``bench/``, tests). Undecodable docs are left out."""
    run = scan_docs(OpenedTask(task, len(docs), {}, docs), identity, gen_kwargs or {}, light=False)
    stream_requests([run], {}, identity, None, lambda requests: [None] * len(requests))
    return run.requests
