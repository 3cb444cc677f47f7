"""Hooks of the MSU-Bench tasks (loaded by path by the task system, never imported as a package).

- ``docs_<task id>(dataset)``: the rows of one MSU task (``task_id`` column). The task system
  calls ``process_docs(dataset)`` with the dataset only, so there is one such function per task
  id, made below by a loop (``TASK_IDS`` must match ``msu_bench/taxonomy.yaml``; a test checks).
- ``prepare_dataset``: builds the embedded conversations' ``small`` preset once when no
  ``msu-bench/`` folder is at hand (:func:`lalm_eval.hub.build_once.prepare_dataset_hook`).

This file is the only place where the harness's side reaches the ``msu_bench`` builder: the
``lalm_eval`` package never imports it (docs/ARCHITECTURE.md, "The dependency rule"), and even
here the import happens only when a build is needed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from lalm_eval.hub.build_once import prepare_dataset_hook

log = logging.getLogger(__name__)

DATASET_NAME = "msu-bench"  # the tasks' dataset_path, and msu_bench.export.DEFAULT_OUT
PRESET = "small"

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


def _load_config(preset: str):
    from msu_bench.plan import load_preset

    return load_preset(preset)


def _run_build(out: Path, cfg, cache_dir: Path) -> None:
    from msu_bench.export import build

    log.warning("building MSU-Bench (%s preset, embedded conversations) into %s; this happens once", PRESET, out)
    build(out, cfg)


#: ``./msu-bench`` when it is a build, a Hub id as it is, else the embedded conversations' ``small``
#: preset built once into ``<cache_dir>/datasets/msu-bench-small`` (every tier and the ``all`` union)
prepare_dataset = prepare_dataset_hook(
    DATASET_NAME, PRESET, load_config=_load_config, build=_run_build, build_command="msu-bench build"
)
