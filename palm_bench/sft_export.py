"""``palm-bench export-sft``: PALM-Bench rows as supervised fine-tuning data for other trainers.

The prompts are the harness tasks' own (``tasks/palm/``): each row becomes the task's chat messages
(``Task.messages``: its ``doc_to_text`` / ``doc_to_messages`` / ``description``), audios
(``Task.audio_of``) and answer (``Task.render_target``), so a model trained on the export is asked
exactly what ``lalm-eval`` asks it. Nothing here writes prompt text.

Output folder::

    DIR/audio/<sha256[:16]>.wav    every distinct audio once (16 kHz mono PCM16; named by content)
    DIR/<split>.jsonl              one training example a line
    DIR/dataset_info.json          llamafactory only: the dataset's registration
    DIR/export_info.json           format, tasks (with their task hashes), dataset, counts, kept_files

The folder is written as a whole (:func:`lalm_eval.hub.atomic.staged_build` with
:data:`~lalm_eval.hub.atomic.SFT_EXPORT`): into a temporary sibling that replaces it when complete.
A rerun into the same folder replaces the earlier export's files (its JSONL, ``audio/``,
``dataset_info.json``, ``export_info.json``), so no audio of an earlier, larger export is left
behind; every other file in the folder is kept and listed (``kept_files``, and on stderr).

One JSONL line (both formats)::

    {"messages": [{"role": "system", "content": "..."},          # only when the task has a description
                  {"role": "user", "content": "<audio>Listen to the audio, then answer ..."},
                  {"role": "assistant", "content": "Yes, Amy is speaking ..."}],
     "audios": ["/abs/DIR/audio/3f2a....wav"],                  # llamafactory: "audio/3f2a....wav"
     "task": "palm_recognition", "doc_id": 0}

The user turn is the task's content parts in order, an audio part as ``<audio>`` and text parts as
they are (a newline after a text part that another part follows), so there is one ``<audio>`` tag
per entry of ``audios``, in the same order; ``task`` and ``doc_id`` say where a line came from
(trainers ignore extra keys).

- **ms-swift** (``--format ms-swift``; the PALM authors trained with it): the ``messages`` +
  ``audios`` rows of its custom-dataset documentation, ``<audio>`` tags in the user content,
  ``audios`` as absolute paths. Train with ``swift sft --dataset DIR/train.jsonl ...``.
- **LLaMA-Factory** (``--format llamafactory``): its ``sharegpt`` format with OpenAI-style
  ``role`` / ``content`` tags and an ``audios`` column, registered in ``dataset_info.json``
  (``formatting: sharegpt``, ``columns: {messages, audios}``, ``tags: {role_tag, content_tag,
  user_tag, assistant_tag, system_tag}``), as its ``data/README.md`` and ``mllm_audio_demo``
  describe; audio paths relative to ``DIR``, which is both ``dataset_dir`` and (its default)
  ``media_dir``. Train with ``dataset: palm_bench_<split>``, ``dataset_dir: DIR``,
  ``template: qwen2_audio``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from lalm_eval.errors import ConfigError, DataError, LalmEvalError

log = logging.getLogger(__name__)

FORMATS = ("ms-swift", "llamafactory")
PALM_TASKS = ("recognition", "captioning", "reasoning")
#: what a PALM-Bench task declares (tasks/palm/_palm_base.yaml ``metadata.report``): its rows feed
#: the PALM report, so they have PALM-Bench's columns
PALM_REPORT = "palm_speakers"
TASKS_FIX = "give recognition, captioning, reasoning or a palm_* task name (lalm-eval tasks lists them)"
STRATEGIES = {"base": "", "hd": "_hd", "hd_cot": "_hd_cot", "ad": "_ad", "ad_cot": "_ad_cot"}
AUDIO_TAG = "<audio>"
LLAMAFACTORY_TAGS = {
    "role_tag": "role",
    "content_tag": "content",
    "user_tag": "user",
    "assistant_tag": "assistant",
    "system_tag": "system",
}


def harness_task_names(tasks: tuple[str, ...], strategy: str = "base") -> list[str]:
    """``recognition`` → ``palm_recognition`` (+ the strategy's suffix); other names are harness
    task names already (``palm_recognition_enroll``)."""
    if strategy not in STRATEGIES:
        raise ConfigError(f"--prompt {strategy!r}: use one of {', '.join(STRATEGIES)}")
    return [f"palm_{t}{STRATEGIES[strategy]}" if t in PALM_TASKS else t for t in tasks]


def check_request(tasks: tuple[str, ...], limit, strategy: str = "base") -> list[str]:
    """The harness task names of ``tasks``, after checking the flags that need no data: ``--tasks``
    not empty and without repeats, ``--limit`` a whole number >= 1 (a :class:`ConfigError` naming
    the flag and the fix)."""
    tasks = tuple(t.strip() for t in tasks if t and t.strip())
    if not tasks:
        raise ConfigError(f"--tasks: names no task; {TASKS_FIX}, comma-separated, e.g. --tasks recognition,captioning")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigError(
            f"--limit: must be a whole number >= 1, got {limit!r}; give e.g. --limit 100, or leave it out for every row"
        )
    names = harness_task_names(tasks, strategy)
    seen: dict[str, str] = {}
    for given, name in zip(tasks, names):
        if name in seen:
            raise ConfigError(
                f"--tasks: {given!r} and {seen[name]!r} are the same task ({name}), its rows would be exported "
                "twice; give each task once"
            )
        seen[name] = given
    return names


def check_palm_task(task, name: str) -> None:
    """A :class:`ConfigError` naming ``--tasks`` unless ``task`` is a PALM-Bench task (its YAML's
    ``metadata.report`` is the PALM report): another benchmark's task reads other columns."""
    report = (task.config.metadata or {}).get("report")
    if report != PALM_REPORT:
        raise ConfigError(
            f"--tasks {name}: not a PALM-Bench task (its dataset_path is {task.config.dataset_path!r}, "
            f"its report {report!r}), and export-sft exports PALM-Bench rows; {TASKS_FIX}"
        )


def export_sft(
    out_dir: str | Path,
    fmt: str,
    split: str = "train",
    dataset: str = "palm-bench",
    tasks: tuple[str, ...] = ("recognition", "captioning"),
    strategy: str = "base",
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    include_path=None,
) -> dict:
    """Write the export (module docstring); returns ``export_info``. ``dataset`` replaces the tasks'
    ``dataset_path`` (the bare name ``palm-bench`` is ``./palm-bench`` or the embedded small preset,
    built once, as in evaluation); ``limit`` caps the rows per task. The folder is staged and
    replaces an earlier export whole, other files kept (module docstring); without ``cache_dir``
    the dataset cache is a temporary one inside the stage."""
    from lalm_eval.hub.atomic import SFT_EXPORT, stage_report, staged_build

    if fmt not in FORMATS:
        raise ConfigError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    names = check_request(tuple(tasks), limit, strategy)
    with staged_build(out_dir, "--out", SFT_EXPORT) as stage:  # a file, under a file, unwritable: before any work
        info = _export(stage, names, fmt, split, dataset, strategy, cache_dir, limit, include_path)
    info["folder"] = stage_report(stage)
    return info


def _export(stage, names, fmt, split, dataset, strategy, cache_dir, limit, include_path) -> dict:
    import shutil

    from lalm_eval.evaluation.docs import open_docs
    from lalm_eval.tasks import TaskManager

    out, final = stage.path, stage.final  # written into the stage; ms-swift's absolute paths name the final folder
    manager = TaskManager(include_paths=include_path)
    cache = Path(cache_dir) if cache_dir is not None else out / ".cache"
    audio_files: dict[str, str] = {}  # content id → path relative to out
    lines, per_task = [], {}
    tasks = []
    for name in names:  # every task checked before any row is read
        task = manager.load_task(name)
        check_palm_task(task, name)
        tasks.append((name, task))
    for name, task in tasks:
        task = task.replaced(dataset_path=dataset, test_split=split)
        try:
            docs = open_docs(task, cache, limit).docs
        except LalmEvalError:  # says what is wrong already (the dataset loader names folder, config, split)
            raise
        except ValueError as exc:  # datasets: no such split / config
            raise DataError(
                dataset,
                f"task {name!r}: cannot read split {split!r} of config {task.config.dataset_name!r} "
                f"({' '.join(str(exc).split()).replace(';', ',')}); give --split and --tasks the dataset has",
                field="split",
            ) from exc
        for doc_id, doc in enumerate(docs):
            paths = [_write_audio(value, out, audio_files) for value in task.audio_of(doc)]
            messages = chat_messages(task.messages(doc), f"task {name!r} doc {doc_id}")
            target = task.render_target(doc)
            target = target[0] if isinstance(target, (list, tuple)) and target else target
            if not isinstance(target, str) or not target:
                raise DataError(
                    dataset,
                    f"task {name!r} doc {doc_id}: doc_to_target gave {target!r}; fix the task's doc_to_target "
                    "(or the dataset's answer column)",
                    field="doc_to_target",
                )
            n_tags = sum(m["content"].count(AUDIO_TAG) for m in messages)
            if n_tags != len(paths):
                raise DataError(
                    dataset,
                    f"task {name!r} doc {doc_id}: {n_tags} {AUDIO_TAG} tag(s) for {len(paths)} audio(s); "
                    "make the task's prompt hold one audio part per audio",
                    field="messages",
                )
            audios = [str(final / p) for p in paths] if fmt == "ms-swift" else paths
            lines.append(
                {
                    "messages": messages + [{"role": "assistant", "content": target}],
                    "audios": audios,
                    "task": name,
                    "doc_id": doc_id,
                }
            )
        per_task[name] = {"rows": len(docs), "task_hash": task.task_hash}
    if not lines:
        raise DataError(
            dataset, f"no {split!r} rows in tasks {list(per_task)}; give --split and --tasks that have rows"
        )
    jsonl = out / f"{split}.jsonl"
    jsonl.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines), encoding="utf-8")
    info = {
        "format": fmt,
        "split": split,
        "dataset": dataset,
        "strategy": strategy,
        "tasks": per_task,
        "rows": len(lines),
        "audio_files": len(audio_files),
        "jsonl": jsonl.name,
    }
    if fmt == "llamafactory":
        entry = {
            "file_name": jsonl.name,
            "formatting": "sharegpt",
            "columns": {"messages": "messages", "audios": "audios"},
            "tags": LLAMAFACTORY_TAGS,
        }
        info["dataset_info"] = f"palm_bench_{split}"
        (out / "dataset_info.json").write_text(
            json.dumps({info["dataset_info"]: entry}, indent=2) + "\n", encoding="utf-8"
        )
    if cache_dir is None:
        shutil.rmtree(out / ".cache", ignore_errors=True)  # this export's own, not part of it
    info["kept_files"] = list(stage.kept)
    (out / "export_info.json").write_text(json.dumps(info, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return info


def chat_messages(messages: list[dict], where: str) -> list[dict]:
    """The harness's messages (content parts) as ``{"role", "content": str}``, audio parts as ``<audio>``."""
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        else:
            parts = list(content)
        pieces = []
        for k, part in enumerate(parts):
            if part.get("type") == "audio":
                pieces.append(AUDIO_TAG)
                continue
            text = part.get("text", "")
            if AUDIO_TAG in text:
                raise DataError(
                    where,
                    f"the prompt text contains the literal {AUDIO_TAG!r} tag: {text!r}; remove it from the prompt "
                    "(the export writes one tag per audio part)",
                    field="messages",
                )
            pieces.append(text + ("\n" if k + 1 < len(parts) else ""))
        out.append({"role": message["role"], "content": "".join(pieces)})
    return out


def _write_audio(value, out: Path, written: dict[str, str]) -> str:
    """The audio's file under ``out/audio/`` (written once per distinct content), relative to ``out``."""
    from lalm_eval.audio.io import write_audio
    from lalm_eval.evaluation.docs import decode_audio

    data = value.get("bytes") if isinstance(value, dict) else None
    key = hashlib.sha256(bytes(data)).hexdigest() if isinstance(data, (bytes, bytearray)) else None
    if key is not None and key in written:
        return written[key]
    audio = decode_audio(value)
    name = hashlib.sha256(audio.tobytes()).hexdigest()[:16]
    rel = f"audio/{name}.wav"
    if not (out / rel).is_file():
        write_audio(out / rel, audio, 16_000)
    written[key or name] = rel
    return rel
