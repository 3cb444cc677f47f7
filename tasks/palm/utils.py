"""Hooks of the PALM-Bench tasks (loaded by path by the task system, never imported as a package).

This file is the only place where the harness's side reaches the ``palm_bench`` builder: the
``lalm_eval`` package never imports it (docs/ARCHITECTURE.md, "The dependency rule"), and even
here the import happens only when a build is needed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)

DATASET_NAME = "palm-bench"  # the tasks' dataset_path, and palm_bench.export.DEFAULT_OUT
PRESET = "small"
BUILT_FOLDER = f"{DATASET_NAME}-{PRESET}"  # under <cache_dir>/datasets/
LOCK_POLL_S = 1.0


def prepare_dataset(dataset_path: str, dataset_name: str | None, cache_dir: str | Path | None) -> str:
    """What ``datasets.load_dataset`` should open for ``dataset_path``.

    - an existing local folder (e.g. ``palm-bench/`` written by ``palm-bench build``): unchanged;
    - a Hub id (contains ``/``) or any name other than ``palm-bench``: unchanged;
    - the bare name ``palm-bench`` with no such folder in the current directory: the embedded
      corpus's ``small`` preset, built once into ``<cache_dir>/datasets/palm-bench-small``
      (minutes on a CPU) and reused while its ``build_info.json`` records the same config.
      ``dataset_name`` (the task config) needs nothing: a build writes every config.
    """
    path = str(dataset_path)
    if path != DATASET_NAME or Path(path).is_dir():
        return path
    if cache_dir is None:
        from lalm_eval.errors import ConfigError

        raise ConfigError(f"dataset_path {path!r}: no folder {path!r} in {Path.cwd()} and no cache dir to build "
                          f"the {PRESET!r} preset into; run `palm-bench build` here or pass a cache dir")
    from palm_bench.config import load_preset

    cfg = load_preset(PRESET)
    out = Path(cache_dir) / "datasets" / BUILT_FOLDER
    return str(build_once(out, _jsonable(cfg.to_dict()),
                          lambda folder: _run_build(folder, cfg, work_dir=Path(cache_dir))))


def _run_build(out: Path, cfg, work_dir: Path) -> None:
    from palm_bench.export import build

    log.warning("building PALM-Bench (%s preset, embedded corpus) into %s; this happens once", PRESET, out)
    build(out, cfg, work_dir=work_dir)


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
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            run_build(tmp)
            if not _is_built(tmp, config):
                from lalm_eval.errors import DataError

                raise DataError(tmp / "build_info.json", "the build finished without recording the requested "
                                "config", field="config")
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


def _jsonable(value):
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
