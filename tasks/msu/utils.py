"""Hooks of the MSU-Bench tasks (loaded by path by the task system, never imported as a package).

- ``docs_<task id>(dataset)``: the rows of one MSU task (``task_id`` column). The task system
  calls ``process_docs(dataset)`` with the dataset only, so there is one such function per task
  id, made below by a loop (``TASK_IDS`` must match ``msu_bench/taxonomy.yaml``; a test checks).
- ``prepare_dataset``: builds the embedded conversations' ``small`` preset once when no
  ``msu-bench/`` folder is at hand.

This file is the only place where the harness's side reaches the ``msu_bench`` builder: the
``lalm_eval`` package never imports it (docs/ARCHITECTURE.md, "The dependency rule"), and even
here the import happens only when a build is needed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from lalm_eval.hub.build_once import build_once, jsonable

log = logging.getLogger(__name__)

DATASET_NAME = "msu-bench"  # the tasks' dataset_path, and msu_bench.export.DEFAULT_OUT
PRESET = "small"
BUILT_FOLDER = f"{DATASET_NAME}-{PRESET}"  # under <cache_dir>/datasets/

# MSU-Bench's 25 task ids (msu_bench/taxonomy.yaml), in taxonomy order; task msu_<id> keeps <id>'s rows.
TASK_IDS = (
    "t1_sr_speaker_recognition",
    "t1_sr_speaker_counting",
    "t1_sr_silence_overlap_detection",
    "t1_sac_accent_dialect_recognition",
    "t1_sac_language_recognition",
    "t1_sac_gender_recognition",
    "t1_sac_age_recognition",
    "t1_spa_voice_quality_analysis",
    "t1_spa_speech_flow_analysis",
    "t1_spa_emotion_recognition",
    "t2_sda_emotion_evolution",
    "t2_sda_voice_quality_evolution",
    "t2_sda_opinion_change_recognition",
    "t2_scii_language_accent_cultural_reasoning",
    "t2_scii_expression_preference_recognition",
    "t2_scii_geographical_location_estimation",
    "t3_mssi_dialogue_background_reasoning",
    "t3_mssi_dialogue_result_reasoning",
    "t3_msri_speaker_role_recognition",
    "t3_msri_social_role_recognition",
    "t4_mst_dialogue_transcription",
    "t4_msia_paralinguistic_interaction_analysis",
    "t4_msia_social_interaction_analysis",
    "t4_mscr_causal_attribution",
    "t4_mscr_motivation_reasoning",
)


def _rows_of(task_id: str) -> Callable:
    def process_docs(dataset):
        # a datasets.Dataset (what the evaluator passes) or a list of dicts
        if isinstance(dataset, list):
            return [doc for doc in dataset if doc["task_id"] == task_id]
        if "task_id" not in (dataset.column_names or []):
            from lalm_eval.errors import DataError

            raise DataError(
                DATASET_NAME,
                f"no 'task_id' column (columns: {dataset.column_names}); the MSU tasks "
                "read the tier configs or 'all', not 'mcq'",
                field="task_id",
            )
        # read the one column, not the rows: no audio is touched
        keep = [i for i, value in enumerate(dataset["task_id"]) if value == task_id]
        return dataset.select(keep)

    process_docs.__name__ = process_docs.__qualname__ = f"docs_{task_id}"
    process_docs.__doc__ = f"The rows of MSU task {task_id!r}."
    return process_docs


for _task_id in TASK_IDS:
    globals()[f"docs_{_task_id}"] = _rows_of(_task_id)
del _task_id


def prepare_dataset(dataset_path: str, dataset_name: str | None, cache_dir: str | Path | None) -> str:
    """What ``datasets.load_dataset`` should open for ``dataset_path``.

    - an existing local folder (e.g. ``msu-bench/`` written by ``msu-bench build``): unchanged; a
      ``./msu-bench`` that is not a build (no card with configs: empty, or a stray README) is a
      :class:`~lalm_eval.errors.DataError` saying so and how to fix it;
    - a Hub id (contains ``/``) or any name other than ``msu-bench``: unchanged;
    - the bare name ``msu-bench`` with no such folder in the current directory: the embedded
      conversations' ``small`` preset, built once into ``<cache_dir>/datasets/msu-bench-small``
      and reused while its ``build_info.json`` records the same config. ``dataset_name`` (the
      config, ``all``) needs nothing: a build writes every tier and the ``all`` union.
    """
    path = str(dataset_path)
    if path == DATASET_NAME and Path(path).is_dir():  # ./msu-bench: used only when it is a build
        from lalm_eval.hub.load import require_build

        fix = (
            f"remove or rename it (the embedded {PRESET!r} build is then used), or build into it: "
            f"msu-bench build --out {path}"
        )
        return str(require_build(path, fix))
    if path != DATASET_NAME:
        return path
    if cache_dir is None:
        from lalm_eval.errors import ConfigError

        raise ConfigError(
            f"dataset_path {path!r}: no folder {path!r} in {Path.cwd()} and no cache dir to build "
            f"the {PRESET!r} preset into; run `msu-bench build` here or pass a cache dir"
        )
    from msu_bench.plan import load_preset

    cfg = load_preset(PRESET)
    out = Path(cache_dir) / "datasets" / BUILT_FOLDER
    return str(build_once(out, jsonable(cfg.to_dict()), lambda folder: _run_build(folder, cfg)))


def _run_build(out: Path, cfg) -> None:
    from msu_bench.export import build

    log.warning("building MSU-Bench (%s preset, embedded conversations) into %s; this happens once", PRESET, out)
    build(out, cfg)
