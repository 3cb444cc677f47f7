"""One fingerprint for models: what the response cache (adapters' identity), the judge cache (text
LLMs' settings) and the metric-value cache (BERTScore backbones) key on.

Recipe (:data:`RECIPE`)
    A local folder: SHA-256 over every model file's relative path, size and the SHA-256 of its
    **whole content** (read in 1 MiB blocks, never held in memory) — weights, configs, tokenizer
    and processor files, remote code; not READMEs, images, lock files, hidden entries, caches or
    ``checkpoint-*`` folders (:func:`model_files`). A retrained model of the same size and file
    names, or an edit of one tensor, changes it.
    A Hugging Face Hub id, or a folder that is a Hub cache snapshot (``…/snapshots/<commit>``): the
    repository and the resolved commit, which pins every file of it; nothing is downloaded beyond
    the small files needed to resolve it.

File digests are cached (:class:`FileHashCache`, SQLite) by resolved path, size, mtime (ns),
ctime (ns), inode and device, so a 15 GB folder is read once, not on every run; a file rewritten
in place changes its ctime even when its mtime is set back. The cache lives in
``$LALM_EVAL_CACHE/file_hashes.sqlite`` (default ``~/.cache/lalm_eval``); where it cannot be
opened or fails while in use (its warning names the file; a damaged one is set aside and its
readable rows kept, :mod:`lalm_eval.sqlite_store`) the files are hashed without it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Iterable
from pathlib import Path

from lalm_eval.errors import ConfigError, LalmEvalError
from lalm_eval.sqlite_store import SqliteStore

log = logging.getLogger(__name__)

RECIPE = "lalm_eval.fingerprint/v1"
BLOCK = 1 << 20
#: suffixes of the files that hold weights (a folder must have one to be a model's)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt", ".msgpack", ".h5", ".onnx")
#: files that never decide outputs
IGNORED_SUFFIXES = (".md", ".lock", ".incomplete", ".pyc", ".png", ".jpg", ".jpeg", ".gif", ".svg", ".log")
IGNORED_DIRS = ("__pycache__", "runs")


class FileHashCache(SqliteStore):
    """SHA-256 of file contents by (resolved path, size, mtime_ns, ctime_ns, inode, device)."""

    TABLE, KIND = "file_hashes", "file-hash cache"
    COLUMNS = (("sha256", "TEXT"),)

    def get(self, key: str) -> str | None:
        rows = self._select([key], ["sha256"])
        return rows[0][1] if rows else None

    def put(self, key: str, digest: str) -> None:
        self._insert([(key, digest)])


_STORES: dict[Path, FileHashCache | None] = {}
_LOCK = threading.Lock()


def default_cache_path() -> Path:
    root = os.environ.get("LALM_EVAL_CACHE") or Path.home() / ".cache" / "lalm_eval"
    return Path(root) / "file_hashes.sqlite"


def _store(path: str | Path | None) -> FileHashCache | None:
    """The digest cache at ``path`` (None: :func:`default_cache_path`), opened once per process;
    None when ``path`` is ``"none"`` or the file cannot be opened."""
    if path is not None and str(path).lower() == "none":
        return None
    path = Path(path) if path is not None else default_cache_path()
    with _LOCK:
        if path not in _STORES:
            try:
                _STORES[path] = FileHashCache(path)
            except (LalmEvalError, OSError) as exc:  # the message names the file (and a salvage, if any)
                log.warning("%s; model files are hashed without the file-hash cache in this process", exc)
                _STORES[path] = None
        return _STORES[path]


def _stat_key(path: Path) -> tuple[str, int]:
    st = path.stat()
    key = json.dumps([str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev])
    return key, st.st_size


def file_sha256(path: str | Path, cache: str | Path | None = None) -> str:
    """SHA-256 hex digest of the file's whole content, streamed; served from the digest cache while
    the file's size, mtime, ctime and inode are unchanged (``cache``: its path, ``"none"`` for none)."""
    path = Path(path)
    key, _ = _stat_key(path)
    store = _store(cache)
    try:
        if store is not None and (hit := store.get(key)) is not None:
            return hit
    except LalmEvalError as exc:  # damaged or locked while in use: hash without it from now on
        store = _drop_store(store, exc)
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(BLOCK):
            h.update(block)
    digest = h.hexdigest()
    if store is not None and _stat_key(path)[0] == key:  # not rewritten while it was read
        try:
            store.put(key, digest)
        except LalmEvalError as exc:
            _drop_store(store, exc)
    return digest


def _drop_store(store: FileHashCache, exc: Exception) -> None:
    """Stop using a digest cache that failed (its message names the file and what happened)."""
    log.warning("%s; model files are hashed without it in this process", exc)
    with _LOCK:
        for path, known in list(_STORES.items()):
            if known is store:
                _STORES[path] = None
    return None


def model_files(folder: str | Path) -> list[Path]:
    """The files of ``folder`` (recursively, links followed) that can decide a model's outputs, sorted
    by relative path: all but hidden entries, :data:`IGNORED_DIRS`, ``checkpoint-*`` folders and
    :data:`IGNORED_SUFFIXES`."""
    folder = Path(folder)
    out = []
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and d not in IGNORED_DIRS and not d.startswith("checkpoint-")
        )
        for name in files:
            if name.startswith(".") or name.lower().endswith(IGNORED_SUFFIXES):
                continue
            path = Path(root) / name
            if path.is_file():
                out.append(path)
    return sorted(out, key=lambda p: p.relative_to(folder).as_posix())


def folder_fingerprint(folder: str | Path, files: Iterable[Path] | None = None, cache: str | Path | None = None) -> str:
    """SHA-256 over ``files`` (default :func:`model_files`) of ``folder``: relative path, size and
    content digest of each."""
    folder = Path(folder)
    h = hashlib.sha256(f"{RECIPE}\0folder\n".encode())
    for path in sorted(
        files if files is not None else model_files(folder), key=lambda p: Path(p).relative_to(folder).as_posix()
    ):
        path = Path(path)
        rel = path.relative_to(folder).as_posix()
        h.update(f"{rel}\0{path.stat().st_size}\0{file_sha256(path, cache)}\n".encode())
    return h.hexdigest()


def hub_snapshot(folder: Path) -> tuple[str, str] | None:
    """``(repo id, commit)`` when ``folder`` is a snapshot of the Hugging Face cache
    (``models--org--name/snapshots/<commit>``), else None."""
    folder = Path(folder)
    repo_dir = folder.parent.parent.name if folder.parent.name == "snapshots" else ""
    if not repo_dir.startswith(("models--", "datasets--", "spaces--")):
        return None
    return repo_dir.split("--", 1)[1].replace("--", "/"), folder.name


def hub_fingerprint(repo_id: str, commit: str) -> str:
    return hashlib.sha256(f"{RECIPE}\0hub\0{repo_id}\0{commit}\n".encode()).hexdigest()


def resolve_hub(repo_id: str, allow_patterns: Iterable[str] = ("*.json",)) -> Path:
    """The local snapshot folder of a Hub model (its small files fetched once, or found offline in the
    cache); its name is the resolved commit."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(repo_id, allow_patterns=list(allow_patterns)))
    except Exception as exc:  # noqa: BLE001 - offline miss, unknown repo, network: one config error
        raise ConfigError(
            f"model {repo_id!r}: not a folder, and not resolvable on the Hub ({type(exc).__name__}: {exc})"
        ) from None


def model_fingerprint(
    pretrained: str | Path,
    *,
    require_weights: bool = False,
    cache: str | Path | None = None,
    hub_patterns: Iterable[str] = ("*.json",),
) -> str:
    """The fingerprint of a model folder or Hub id (see the module docstring). ``require_weights``:
    a folder without a weight file (:data:`WEIGHT_SUFFIXES`) is a :class:`ConfigError`."""
    folder = Path(str(pretrained)).expanduser()
    if not folder.is_dir():
        folder = resolve_hub(str(pretrained), hub_patterns)
    snapshot = hub_snapshot(folder)
    if snapshot is not None:
        return hub_fingerprint(*snapshot)
    files = model_files(folder)
    if require_weights and not any(p.name.endswith(WEIGHT_SUFFIXES) for p in files):
        raise ConfigError(f"{folder}: no weight files ({', '.join(WEIGHT_SUFFIXES)}) to fingerprint")
    return folder_fingerprint(folder, files, cache)
