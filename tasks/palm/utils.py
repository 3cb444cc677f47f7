"""Hooks of the PALM-Bench tasks (loaded by path by the task system, never imported as a package).

This file is the only place where the harness's side reaches the ``palm_bench`` builder: the
``lalm_eval`` package never imports it (docs/ARCHITECTURE.md, "The dependency rule"), and even
here the import happens only when a build is needed.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lalm_eval.hub.build_once import build_once, jsonable

log = logging.getLogger(__name__)

DATASET_NAME = "palm-bench"  # the tasks' dataset_path, and palm_bench.export.DEFAULT_OUT
PRESET = "small"
BUILT_FOLDER = f"{DATASET_NAME}-{PRESET}"  # under <cache_dir>/datasets/


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
    return str(build_once(out, jsonable(cfg.to_dict()),
                          lambda folder: _run_build(folder, cfg, work_dir=Path(cache_dir))))


def _run_build(out: Path, cfg, work_dir: Path) -> None:
    from palm_bench.export import build

    log.warning("building PALM-Bench (%s preset, embedded corpus) into %s; this happens once", PRESET, out)
    build(out, cfg, work_dir=work_dir)
