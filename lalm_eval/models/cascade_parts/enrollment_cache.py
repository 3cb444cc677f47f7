"""The cascade's fixed cost, cached: enrollment embeddings and calibrated thresholds across runs.

Enrolling (decoding every clip, embedding it) and calibrating (an augmented copy of every clip,
VAD, windows, their embeddings, EER points, the gap test's check) give the same result for the
same enrollment data, encoder and settings, so one record per such key is kept in
``<cache_dir>/cascade_enrollment/<key>.npz`` (the harness's ``--cache_dir``):

- the enrollment's **content**: the SHA-256 of every file it is read from (the ``enrollment``
  config's data files of a dataset folder, or every entry of the speaker folders), through
  :func:`lalm_eval.fingerprint.file_sha256`, whose digest cache serves an unchanged file without
  reading it again; no audio is decoded to build the key;
- the **encoder**: its name, a SHA-256 of its weights (every tensor of its state dict), the
  sample rate and resemblyzer's window parameters;
- the **code**: the source of the modules that compute the record and the versions of the
  libraries whose numbers enter it (numpy, scipy, scikit-learn, torch, webrtcvad, resemblyzer);
- the **settings**: segmentation, calibration conditions and seed, the split test's.

A Hub id (no local files to hash) is not cached. Records are written atomically (a temporary
file, then a rename); an unreadable or inconsistent one is a warning and is recomputed.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import importlib
import importlib.metadata
import inspect
import io
import json
import logging
import os
from pathlib import Path

import numpy as np

from lalm_eval.jsonl import json_default

log = logging.getLogger(__name__)

RECORD_VERSION = 1
FOLDER = "cascade_enrollment"
#: libraries whose numbers enter the record
LIBRARIES = ("numpy", "scipy", "scikit-learn", "torch", "webrtcvad", "webrtcvad-wheels", "resemblyzer", "speechbrain")
#: modules whose code computes the record (their source is part of the key)
CODE_MODULES = (
    "lalm_eval.models.cascade_parts.enrollment",
    "lalm_eval.models.cascade_parts.enrollment_cache",
    "lalm_eval.models.cascade_parts.segmentation",
    "lalm_eval.models.cascade_parts.speaker_test",
    "lalm_eval.metrics.verification",
    "lalm_eval.audio.augment",
    "lalm_eval.audio.io",
    "lalm_eval.audio.speaker",
    "lalm_eval.audio.speaker_backends",
)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _data_files(folder: Path) -> list[Path] | None:
    """The files a dataset folder's ``enrollment`` config reads (its card's data files), or None."""
    from huggingface_hub import DatasetCard

    try:
        configs = DatasetCard.load(folder / "README.md").data.get("configs") or []
    except Exception:  # noqa: BLE001 - no card, or not one datasets reads: not cached
        return None
    config = next((c for c in configs if isinstance(c, dict) and c.get("config_name") == "enrollment"), None)
    if config is None:
        return None
    patterns, stack = [], [config.get("data_files")]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            patterns.append(item)
        elif isinstance(item, dict):
            stack.append(item.get("path"))
        elif isinstance(item, list):
            stack.extend(item)
    files = sorted({Path(p) for pattern in patterns for p in glob.glob(str(folder / pattern), recursive=True)})
    return [f for f in files if f.is_file()] or None


def _folder_entries(folder: Path) -> list[Path]:
    """Every visible entry of a speaker-folder enrollment, two levels deep (what it reads and skips)."""
    out = []
    for entry in sorted(p for p in folder.iterdir() if not p.name.startswith(".")):
        out.append(entry)
        if entry.is_dir():
            out.extend(sorted(p for p in entry.iterdir() if not p.name.startswith(".")))
    return out


def content_key(path: str) -> str | None:
    """SHA-256 over the enrollment's files (relative path, size, content digest), or None when it
    has no local files to hash (a Hub id) or its card names no enrollment files."""
    from lalm_eval.fingerprint import file_sha256

    folder = Path(path).expanduser()
    if not folder.is_dir():
        return None
    files = _data_files(folder) if (folder / "README.md").is_file() else None
    entries = files if files is not None else _folder_entries(folder)
    if not entries:
        return None
    h = hashlib.sha256(f"cascade-enrollment/{'dataset' if files is not None else 'folders'}\n".encode())
    for entry in entries:
        rel = entry.relative_to(folder).as_posix()
        if entry.is_dir():
            h.update(f"{rel}/\0dir\n".encode())
        else:
            h.update(f"{rel}\0{entry.stat().st_size}\0{file_sha256(entry)}\n".encode())
    return h.hexdigest()


def _weights_sha256(encoder) -> str:
    model = getattr(encoder, "model", None)
    module = getattr(model, "mods", model)  # speechbrain keeps its modules in .mods
    state = module.state_dict() if hasattr(module, "state_dict") else {}
    h = hashlib.sha256()
    for name in sorted(state):
        tensor = state[name].detach().cpu().contiguous()
        h.update(f"{name}\0{tensor.dtype}\0{tuple(tensor.shape)}\n".encode())
        h.update(tensor.numpy().tobytes())
    return h.hexdigest()


def encoder_fingerprint(encoder) -> dict:
    """What decides an encoder's embeddings: name, weights, sample rate, window parameters."""
    from lalm_eval.audio.io import TARGET_SR

    out = {"name": encoder.name, "class": type(encoder).__qualname__, "sr": TARGET_SR}
    out["weights_sha256"] = _weights_sha256(encoder)
    if encoder.name.startswith("resemblyzer"):
        from resemblyzer import hparams

        out["hparams"] = {
            k: v for k, v in vars(hparams).items() if not k.startswith("_") and isinstance(v, (int, float))
        }
        out["max_partials"] = getattr(encoder, "max_partials", None)
    return out


def code_fingerprint() -> dict:
    """The record's version, a hash of its modules' source, and the library versions."""
    h = hashlib.sha256()
    for name in CODE_MODULES:
        h.update(Path(inspect.getsourcefile(importlib.import_module(name))).read_bytes())
    versions = {}
    for lib in LIBRARIES:
        try:
            versions[lib] = importlib.metadata.version(lib)
        except importlib.metadata.PackageNotFoundError:
            continue
    return {"record": RECORD_VERSION, "source_sha256": h.hexdigest(), "versions": versions}


def record_key(content: str, encoder_print: dict, settings: dict) -> str:
    payload = {"content": content, "encoder": encoder_print, "code": code_fingerprint(), "settings": settings}
    return _sha(json.dumps(payload, sort_keys=True, default=json_default))


@dataclasses.dataclass
class Record:
    enrollment: object  # an enrollment.Enrollment
    calibration: dict
    skips: list


def load(folder: Path | None, key: str) -> Record | None:
    """The record stored under ``key``, or None (absent; unreadable ones are a warning)."""
    from lalm_eval.models.cascade_parts.enrollment import Enrollment

    if folder is None:
        return None
    path = folder / f"{key}.npz"
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("key") != key:
                raise ValueError(f"holds key {meta.get('key')!r}")
            enrollment = Enrollment(
                list(meta["names"]),
                np.array(data["centroids"]),
                np.array(data["clip_labels"]),
                np.array(data["clip_embeddings"]),
                str(meta["fingerprint"]),
                dict(meta["languages"]),
            )
            if enrollment.centroids.shape[0] != len(enrollment.names):
                raise ValueError("centroids do not match the subjects")
        return Record(enrollment, dict(meta["calibration"]), list(meta["skips"]))
    except Exception as exc:  # noqa: BLE001 - a damaged record is recomputed, never trusted
        log.warning(
            "cascade: enrollment cache %s is unreadable (%s: %s); recomputing it", path, type(exc).__name__, exc
        )
        return None


def store(folder: Path | None, key: str, record: Record) -> None:
    """Write ``record`` under ``key`` atomically (a failure to write is a warning, never fatal)."""
    if folder is None:
        return
    e = record.enrollment
    meta = {
        "key": key,
        "names": e.names,
        "fingerprint": e.fingerprint,
        "languages": e.languages,
        "calibration": record.calibration,
        "skips": record.skips,
    }
    buf = io.BytesIO()
    np.savez(
        buf,
        meta=np.array(json.dumps(meta, default=json_default)),
        centroids=e.centroids,
        clip_labels=e.clip_labels,
        clip_embeddings=e.clip_embeddings,
    )
    tmp = folder / f".{key}.{os.getpid()}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        try:
            tmp.write_bytes(buf.getvalue())
            os.replace(tmp, folder / f"{key}.npz")  # atomic: a reader sees the old record or the new one
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("cascade: cannot write the enrollment cache in %s (%s); it is recomputed next run", folder, exc)
