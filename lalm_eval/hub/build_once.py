"""Build a dataset folder once and reuse it while it matches (shared by every benchmark's task
hooks): the folder's ``build_info.json`` must record the requested config; otherwise it is built
into a temporary sibling under a file lock and renamed into place when complete, so concurrent
runs (data-parallel ranks, two evaluations) build once and never read a half-written folder.
The temporary sibling of a build that was killed (``kill -9``) is removed by the next one, under
the same lock (the build commands' own staging: :mod:`lalm_eval.hub.atomic`)."""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from lalm_eval.errors import DataError

log = logging.getLogger(__name__)
LOCK_POLL_S = 1.0


def build_once(out: Path, config: dict, run_build: Callable[[Path], None]) -> Path:
    """``out`` when its ``build_info.json`` records ``config``; otherwise build it (into a
    temporary sibling, renamed into place when complete) under a lock, so that concurrent runs
    (data-parallel ranks, two evaluations) build once and never read a half-written folder."""
    if _is_built(out, config):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with _file_lock(out.with_name(out.name + ".lock")):
        if _is_built(out, config):  # another process built it while we waited
            return out
        tmp = out.with_name(f"{out.name}.tmp-{os.getpid()}")
        for stale in out.parent.glob(glob.escape(out.name) + ".tmp-*"):  # under the lock: no build uses them
            log.warning("removing %s, the half-written folder of an interrupted build", stale)
            shutil.rmtree(stale, ignore_errors=True)
        try:
            run_build(tmp)
            if not _is_built(tmp, config):
                raise DataError(
                    tmp / "build_info.json", "the build finished without recording the requested config", field="config"
                )
            if out.exists():  # a stale build (other config, or interrupted before build_info.json)
                log.warning("replacing %s: it was built with another config", out)
                shutil.rmtree(out)
            os.replace(tmp, out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _is_built(folder: Path, config: dict) -> bool:
    info = folder / "build_info.json"
    if not info.is_file():
        return False
    try:
        recorded = json.loads(info.read_text(encoding="utf-8")).get("config")
    except (OSError, ValueError, AttributeError):
        return False
    return recorded == config


def jsonable(value):
    """``value`` as it reads back from JSON (tuples → lists, int keys → str keys)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


@contextlib.contextmanager
def _file_lock(path: Path):
    """An exclusive lock on ``path``: ``flock`` where there is one, else an O_EXCL lock file."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        fcntl = None
    if fcntl is not None:
        with open(path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            time.sleep(LOCK_POLL_S)
    try:
        yield
    finally:
        os.close(fd)
        os.unlink(path)
