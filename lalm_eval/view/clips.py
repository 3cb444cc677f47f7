"""Each doc's audio, read once from the dataset its task reads (the task's own loading), encoded
as Opus in Ogg (deterministic bytes) and named by its content hash, so that runs share a clip.

A clip that cannot be found or encoded is counted with its reason, never raised."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from lalm_eval.errors import LalmEvalError

SUFFIX = ".opus"


@dataclass
class ClipReport:
    written: int = 0  # distinct files
    shared: int = 0  # docs whose clip another doc already had
    missing: Counter = field(default_factory=Counter)  # reason → docs


def encoded_clip(item) -> bytes:
    """One ``doc_to_audio`` item (a datasets audio dict, bytes or a path) as Opus bytes."""
    from lalm_eval.audio.io import encode_audio, read_audio

    if isinstance(item, dict):
        source = item.get("bytes") or item.get("path")
        if source is None and item.get("array") is not None:
            import numpy as np

            from lalm_eval.audio.io import TARGET_SR, resample

            audio = np.asarray(item["array"], dtype="float32")
            sr = int(item.get("sampling_rate") or TARGET_SR)
            return encode_audio(resample(audio, sr, TARGET_SR) if sr != TARGET_SR else audio, TARGET_SR, "opus")
    else:
        source = item
    if source is None:
        raise LalmEvalError("the doc's audio item holds neither bytes nor a path")
    audio, sr = read_audio(source)
    return encode_audio(audio, sr, "opus")


def write_clip(data: bytes, audio_dir: Path) -> tuple[str, bool]:
    """``audio/<sha256[:16]>.opus`` for ``data``; True when the file is new."""
    name = hashlib.sha256(data).hexdigest()[:16] + SUFFIX
    path = audio_dir / name
    if path.exists():
        return f"audio/{name}", False
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
    return f"audio/{name}", True


def task_docs(task_name: str, doc_ids: list, cache_dir: Path, include_paths):
    """The task and its docs up to the largest doc id (``--limit`` runs hold the first N)."""
    from lalm_eval.evaluation.docs import open_docs
    from lalm_eval.tasks import TaskManager

    task = TaskManager(include_paths=include_paths).load_task(task_name)
    ints = [d for d in doc_ids if isinstance(d, int)]
    limit = max(ints) + 1 if ints else None
    return task, open_docs(task, cache_dir, limit).docs


def extract_clips(rows: list[dict], out: Path, cache_dir: Path, include_paths=None, progress=None) -> ClipReport:
    """Set ``row["audio"]`` (a list of site paths) or ``row["audio_missing"]`` (why) on every row."""
    report = ClipReport()
    audio_dir = out / "audio"
    audio_dir.mkdir(parents=True, exist_ok=True)
    by_task: dict[str, list[dict]] = {}
    for row in rows:
        by_task.setdefault(row["task"], []).append(row)
    for task_name, task_rows in by_task.items():
        try:
            task, docs = task_docs(task_name, [r["doc_id"] for r in task_rows], cache_dir, include_paths)
        except (LalmEvalError, OSError, ValueError) as exc:
            reason = f"task {task_name} could not be opened: {exc}"
            for row in task_rows:
                row["audio_missing"] = reason
            report.missing[reason] += len(task_rows)
            continue
        for row in task_rows:
            reason = None
            doc_id = row["doc_id"]
            if not isinstance(doc_id, int) or not 0 <= doc_id < len(docs):
                reason = "doc id not in the task's dataset"
            else:
                try:
                    row["audio"] = []
                    for item in task.audio_of(dict(docs[doc_id])):
                        site_path, new = write_clip(encoded_clip(item), audio_dir)
                        row["audio"].append(site_path)
                        report.written += new
                        report.shared += not new
                    if not row["audio"]:
                        reason = "the task gives this doc no audio"
                except (LalmEvalError, OSError, ValueError, RuntimeError) as exc:
                    reason = f"audio could not be read or encoded ({type(exc).__name__})"
            if reason is not None:
                row.pop("audio", None)
                row["audio_missing"] = reason
                report.missing[reason] += 1
        if progress:
            progress(task_name, len(task_rows))
    return report
