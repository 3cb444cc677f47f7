"""Build a dataset folder once and reuse it while it matches (shared by every benchmark's task
hooks): the folder's ``build_info.json`` must record the requested config; otherwise it is built
into a temporary sibling under a file lock and renamed into place when complete, so concurrent
runs (data-parallel ranks, two evaluations) build once and never read a half-written folder.
The temporary sibling of a build that was killed (``kill -9``) is removed by the next one, under
the same lock (the build commands' own staging: :mod:`lalm_eval.hub.atomic`).

:func:`prepare_dataset_hook` makes a task folder's ``prepare_dataset`` hook on top of it (the PALM
and MSU task folders' hooks are two calls of it)."""

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
from typing import Any

from lalm_eval.errors import ConfigError, DataError

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


def prepare_dataset_hook(
    dataset_name: str,
    preset: str,
    *,
    load_config: Callable[[str], Any],
    build: Callable[[Path, Any, Path], None],
    build_command: str,
) -> Callable[[str, str | None, str | Path | None], str]:
    """A task folder's ``prepare_dataset(dataset_path, dataset_name, cache_dir)`` hook for a
    benchmark whose embedded corpus builds on demand (``hooks: {prepare_dataset: !function
    utils.prepare_dataset}`` with ``prepare_dataset = prepare_dataset_hook(...)`` in the folder's
    ``utils.py``). The hook returns what ``datasets.load_dataset`` should open:

    - an existing local folder (e.g. ``<dataset_name>/`` written by ``<build_command>``): unchanged;
      a ``./<dataset_name>`` that is not a build (no card with configs: empty, or a stray README) is
      a :class:`~lalm_eval.errors.DataError` saying so and how to fix it;
    - a Hub id (contains ``/``) or any name other than ``dataset_name``: unchanged;
    - the bare name ``dataset_name`` with no such folder in the current directory: the benchmark's
      ``preset`` (``load_config(preset)``, whose ``to_dict()`` is the recorded config) built once by
      ``build(folder, config, cache_dir)`` into ``<cache_dir>/datasets/<dataset_name>-<preset>`` and
      reused while its ``build_info.json`` records the same config (:func:`build_once`). The task
      config's ``dataset_name`` needs nothing: a build writes every config.

    ``load_config`` and ``build`` import the benchmark lazily, so loading the hook imports none.
    ``build`` is the hook's ``build`` attribute, read at each call (a test may stub it).
    """
    built_folder = f"{dataset_name}-{preset}"  # under <cache_dir>/datasets/

    def prepare_dataset(dataset_path: str, config_name: str | None, cache_dir: str | Path | None) -> str:
        path = str(dataset_path)
        if path == dataset_name and Path(path).is_dir():  # ./<name>: used only when it is a build
            from lalm_eval.hub.load import require_build

            fix = (
                f"remove or rename it (the embedded {preset!r} build is then used), or build into it: "
                f"{build_command} --out {path}"
            )
            return str(require_build(path, fix))
        if path != dataset_name:
            return path
        if cache_dir is None:
            raise ConfigError(
                f"dataset_path {path!r}: no folder {path!r} in {Path.cwd()} and no cache dir to build "
                f"the {preset!r} preset into; run `{build_command}` here or pass a cache dir"
            )
        cfg = load_config(preset)
        out = Path(cache_dir) / "datasets" / built_folder
        return str(
            build_once(out, jsonable(cfg.to_dict()), lambda folder: prepare_dataset.build(folder, cfg, Path(cache_dir)))
        )

    prepare_dataset.build = build
    return prepare_dataset


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
