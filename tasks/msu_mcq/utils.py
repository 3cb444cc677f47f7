"""Hooks of the MSU-Benchmark multiple-choice tasks (loaded by path by the task system).

- ``prepare_dataset``: the folder ``msu-bench build --mcq-dir`` wrote (``./msu-bench-mcq``, or
  ``./msu-bench`` when it holds config ``mcq``); never builds anything.
- ``select_docs``: the rows of ``metadata.select`` ({field: value or [values]}), ``reverse_*``
  questions left out unless ``metadata.include_reverse`` (as the authors score) and counted as
  ``excluded["reverse_question"]`` (the evaluator writes it to the results JSON's ``sample_info``);
  the clips' audio kept encoded (the evaluator decodes it).
- ``audio_messages`` / ``audio_parts``: the audio parts of a row, each after its text label, as
  one multi-audio request (the prompt, ``doc_to_text``, follows them).

Nothing here imports ``msu_bench``: the rows carry what the request needs.
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

DATASET_NAME = "msu-bench-mcq"  # msu_bench.mcq_export.DEFAULT_OUT
COMBINED = "msu-bench"  # a corpus build with --mcq-dir: config `mcq` beside the tiers
CONFIG = "mcq"


def prepare_dataset(dataset_path: str, dataset_name: str | None, cache_dir=None) -> str:
    path = str(dataset_path)
    if path != DATASET_NAME or Path(path).is_dir():
        return path
    if (Path(COMBINED) / CONFIG).is_dir():
        return COMBINED
    from lalm_eval.errors import ConfigError

    raise ConfigError(
        f"dataset_path {path!r}: no folder {path!r} (nor {COMBINED}/{CONFIG}) in {Path.cwd()}; import the "
        f"authors' release first: `msu-bench build --mcq-dir /path/to/MSU-Bench` (writes ./{path}), "
        "or point a task YAML that includes this one at another folder (dataset_path)"
    )


def _wanted(value) -> set:
    return {str(v) for v in value} if isinstance(value, (list, tuple)) else {str(value)}


#: the reason under which left-out reverse_* questions are counted (results JSON: sample_info.<task>.excluded)
REVERSE_EXCLUDED = "reverse_question"


def select_docs(dataset, metadata: dict | None = None, excluded: dict | None = None):
    """The rows of ``metadata.select``, without ``reverse_*`` questions unless ``include_reverse``;
    how many of the selected rows were left out so goes to ``excluded`` (the evaluator's dict)."""
    from lalm_eval.errors import ConfigError, DataError

    metadata = metadata or {}
    select = metadata.get("select") or {}
    keep_reverse = metadata.get("include_reverse", False)
    if not isinstance(select, dict) or not isinstance(keep_reverse, bool):
        raise ConfigError(
            f"metadata.select must be a mapping and include_reverse true/false, got {select!r}, {keep_reverse!r}"
        )
    is_list = isinstance(dataset, list)
    columns = (list(dataset[0]) if dataset else []) if is_list else dataset.column_names
    missing = [f for f in [*select, "reverse", "clips"] if columns and f not in columns]
    if missing:
        raise DataError(
            DATASET_NAME,
            f"no {missing[0]!r} column (columns: {columns}); the msu_mcq tasks read config "
            f"{CONFIG!r} as `msu-bench build --mcq-dir` writes it",
            field=missing[0],
        )
    values = {f: (d[f] for d in dataset) if is_list else dataset[f] for f in [*select, "reverse"]}
    rows = zip(*values.values()) if values else iter(())
    names = list(values)
    keep, reverse = [], 0
    for i, row in enumerate(rows):
        row = dict(zip(names, row))
        if not all(str(row[f]) in _wanted(v) for f, v in select.items()):
            continue
        if row["reverse"] and not keep_reverse:
            reverse += 1
            continue
        keep.append(i)
    if excluded is not None and reverse:
        excluded[REVERSE_EXCLUDED] = excluded.get(REVERSE_EXCLUDED, 0) + reverse
    if reverse:
        log.warning(
            "msu_mcq %s: %d reverse_* question(s) left out of the score, as the authors score "
            "(metadata.include_reverse: true keeps them)",
            select or "all",
            reverse,
        )
    if is_list:
        return [dataset[i] for i in keep]
    import datasets

    clips = dataset.features["clips"]
    inner = {
        k: (datasets.Audio(decode=False) if isinstance(v, datasets.Audio) else v) for k, v in clips.feature.items()
    }
    return dataset.select(keep).cast_column("clips", datasets.List(inner))


def audio_parts(doc: dict) -> list:
    """The clips' audio, then the whole conversation when the question sends it."""
    return [clip["audio"] for clip in doc["clips"]] + ([doc["audio"]] if doc["full_audio"] else [])


def audio_messages(doc: dict) -> list[dict]:
    """Each audio part after its label (the row's, from msu_bench/mcq_release.yaml)."""
    parts = []
    for clip in doc["clips"]:
        parts += [{"type": "text", "text": clip["label"]}, {"type": "audio"}]
    if doc["full_audio"]:
        parts += [{"type": "text", "text": doc["full_audio_label"]}, {"type": "audio"}]
    return parts
