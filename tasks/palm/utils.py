"""Hooks of the PALM-Bench tasks (loaded by path by the task system, never imported as a package).

- ``prepare_dataset``: which folder ``load_dataset`` opens (builds the embedded ``small`` preset once;
  :func:`lalm_eval.hub.build_once.prepare_dataset_hook`);
- ``attach_enrollment``, ``enroll_messages``, ``enroll_audio``: the in-context enrollment tasks
  (``palm_*_enroll``): reference clips of each queried subject from the dataset's ``enrollment``
  config (train split only), labelled by name, before the test audio.

This file is the only place where the harness's side reaches the ``palm_bench`` builder: the
``lalm_eval`` package never imports it (docs/ARCHITECTURE.md, "The dependency rule"), and even
here the import happens only when a build is needed.
"""

from __future__ import annotations

import logging
from pathlib import Path

from lalm_eval.hub.build_once import prepare_dataset_hook

log = logging.getLogger(__name__)

DATASET_NAME = "palm-bench"  # the tasks' dataset_path, and palm_bench.export.DEFAULT_OUT
PRESET = "small"


def _load_config(preset: str):
    from palm_bench.config import load_preset

    return load_preset(preset)  # its to_dict() has `enrollment: true`: builds made before that config are rebuilt


def _run_build(out: Path, cfg, cache_dir: Path) -> None:
    from palm_bench.export import build

    log.warning("building PALM-Bench (%s preset, embedded corpus) into %s; this happens once", PRESET, out)
    build(out, cfg, work_dir=cache_dir)


#: ``./palm-bench`` when it is a build, a Hub id as it is, else the embedded corpus's ``small``
#: preset built once into ``<cache_dir>/datasets/palm-bench-small`` (minutes on a CPU)
prepare_dataset = prepare_dataset_hook(
    DATASET_NAME, PRESET, load_config=_load_config, build=_run_build, build_command="palm-bench build"
)


# -- in-context enrollment (palm_*_enroll) ---------------------------------------------------------

ENROLLMENT_CONFIG, ENROLLMENT_SPLIT = "enrollment", "train"  # never the test split
_DOC_COLUMNS = ["language", "queried", "queried_ids", "source_clips"]


def attach_enrollment(dataset, dataset_path: str | None = None, metadata: dict | None = None):
    """``process_docs`` of the enrollment tasks: each doc gets ``enrollment``, the reference clips
    of its queried subjects (``queried_ids`` order), ``metadata.n_enroll`` each (default 1), the
    first by ``clip_id`` among the subject's rows of the ``enrollment`` config (train split) of
    the same dataset (``dataset_path``, passed by the evaluator), each ``{subject_id, name,
    clip_id, label, audio}``; and ``enroll_test_label``, the label of the test audio. Labels come
    from ``metadata.enroll_labels[language]`` (``reference`` with ``{name}``, ``test``).

    ``dataset`` is a ``datasets.Dataset`` (a column is added) or a list of docs (copies are
    returned). A subject with too few clips, a name that differs from the question's, or a
    reference clip that is one of the doc's own ``source_clips`` is a DataError.
    """
    from lalm_eval.errors import ConfigError

    metadata = metadata or {}
    n_enroll = int(metadata.get("n_enroll", 1))
    labels = metadata.get("enroll_labels") or {}
    if n_enroll < 1:
        raise ConfigError(f"metadata.n_enroll must be at least 1, got {n_enroll}")
    if dataset_path is None:
        raise ConfigError(
            "attach_enrollment needs the dataset path (the evaluator passes dataset_path=) to open "
            f"its {ENROLLMENT_CONFIG!r} config"
        )
    clips = _enrollment_clips(str(dataset_path))
    is_list = isinstance(dataset, (list, tuple))
    docs = dataset if is_list else dataset.select_columns(_DOC_COLUMNS)
    column, test_labels = [], []
    for doc in docs:
        language = labels.get(doc["language"]) or labels.get("en")
        if not language or "reference" not in language or "test" not in language:
            raise ConfigError(
                f"metadata.enroll_labels needs {{reference, test}} for language {doc['language']!r} "
                f"(or 'en'), got {labels!r}"
            )
        column.append(_references(doc, clips, n_enroll, language["reference"], str(dataset_path)))
        test_labels.append(language["test"])
    if is_list:
        return [
            {**doc, "enrollment": refs, "enroll_test_label": label}
            for doc, refs, label in zip(dataset, column, test_labels)
        ]
    import hashlib
    import json

    fingerprint = hashlib.sha256(
        json.dumps(
            [dataset._fingerprint, [[r["clip_id"] for r in refs] for refs in column], test_labels, n_enroll],
            ensure_ascii=False,
        ).encode()
    ).hexdigest()[:32]
    dataset = dataset.add_column("enrollment", column, new_fingerprint=fingerprint + "e", feature=_enrollment_feature())
    return dataset.add_column("enroll_test_label", test_labels, new_fingerprint=fingerprint + "t")


def _references(doc: dict, clips: dict, n_enroll: int, template: str, where: str) -> list[dict]:
    from lalm_eval.errors import DataError

    refs = []
    for subject_id, name in zip(doc["queried_ids"], doc["queried"]):
        rows = clips.get(subject_id, [])[:n_enroll]
        if len(rows) < n_enroll:
            raise DataError(
                where,
                f"subject {subject_id!r} ({name}) has {len(rows)} clip(s) in the "
                f"{ENROLLMENT_CONFIG!r} config, {n_enroll} needed (metadata.n_enroll)",
                field="subject_id",
            )
        for row in rows:
            if row["name"] != name:
                raise DataError(
                    where,
                    f"{ENROLLMENT_CONFIG!r} names subject {subject_id!r} {row['name']!r}, the "
                    f"question {name!r}: another build's data?",
                    field="name",
                )
            if row["clip_id"] in doc["source_clips"]:
                raise DataError(
                    where,
                    f"reference clip {row['clip_id']!r} of {name} is in the test audio itself "
                    "(the enrollment config leaks test clips)",
                    field="clip_id",
                )
            refs.append(
                {
                    "subject_id": subject_id,
                    "name": name,
                    "clip_id": row["clip_id"],
                    "label": template.format(name=name),
                    "audio": row["audio"],
                }
            )
    return refs


def _enrollment_clips(path: str) -> dict[str, list[dict]]:
    """``{subject_id: [rows sorted by clip_id]}`` of the train split of ``path``'s enrollment config
    (audio kept encoded: ``{"bytes", "path"}``)."""
    import datasets

    from lalm_eval.errors import ConfigError, LalmEvalError
    from lalm_eval.hub.load import load_dataset_fresh

    try:
        table = load_dataset_fresh(path, ENROLLMENT_CONFIG, split=ENROLLMENT_SPLIT)
    except LalmEvalError:  # the loader names the folder, the missing config and the fix
        raise
    except ValueError as exc:  # no such config (a build from before it, or another dataset)
        raise ConfigError(
            f"{path}: no {ENROLLMENT_CONFIG!r} config to take reference clips from ({exc}); "
            "rebuild it with `palm-bench build`"
        ) from exc
    table = table.cast_column("audio", datasets.Audio(decode=False))
    by_subject: dict[str, list[dict]] = {}
    for row in table:
        by_subject.setdefault(row["subject_id"], []).append(row)
    return {sid: sorted(rows, key=lambda r: r["clip_id"]) for sid, rows in by_subject.items()}


def _enrollment_feature():
    """The ``enrollment`` column's feature (audio kept as encoded bytes, as the evaluator wants)."""
    import datasets

    string = datasets.Value("string")
    return datasets.List(
        {
            "subject_id": string,
            "name": string,
            "clip_id": string,
            "label": string,
            "audio": {"bytes": datasets.Value("binary"), "path": string},
        }
    )


def enroll_messages(doc: dict) -> list[dict]:
    """``doc_to_messages`` of the enrollment tasks: each reference clip after its label, then the
    test audio after its label (the task appends the question prompt, ``doc_to_text``)."""
    if "enrollment" not in doc:
        from lalm_eval.errors import ConfigError

        raise ConfigError(
            "the doc has no 'enrollment' field: the task needs process_docs: !function utils.attach_enrollment"
        )
    parts = []
    for ref in doc["enrollment"]:
        parts += [{"type": "text", "text": ref["label"]}, {"type": "audio"}]
    return parts + [{"type": "text", "text": doc["enroll_test_label"]}, {"type": "audio"}]


def enroll_audio(doc: dict) -> list:
    """``doc_to_audio`` of the enrollment tasks: the reference clips, then the test audio."""
    return [ref["audio"] for ref in doc.get("enrollment", [])] + [doc["audio"]]
