"""``lalm-eval score-samples LMMS_OUTPUT_DIR --tasks ...``: lmms-eval's ``--log_samples`` answers
scored by ``lalm-eval``'s tasks, metrics and judges, into ``lalm-eval``'s results JSON, samples and
report (the papers' layouts included).

lmms-eval 0.7.3 writes ``<output_path>/<model>/<date>_samples_<task>.jsonl``, one line per doc:
``doc_id``, ``input`` (the prompt text), ``target``, ``filtered_resps`` and, when the filters
changed it, ``resps`` (the raw answer), and the per-doc metric values. The answer scored is the raw
one (``resps``, else ``filtered_resps``), as ``lalm-eval`` scores its own answers: through the
task's ``filter_list``.

The docs are the task's own, opened as ``lalm-eval`` opens them (the first ``max(doc_id) + 1``, as
lmms-eval's ``--limit`` took them). Each logged ``input`` must be the prompt the task renders for
that doc: a prompt that differs means the samples come from another task or dataset, an error
naming the file and the doc, never a score of the wrong docs. A doc with no logged answer is a
counted failure (``error``), never an empty answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from lalm_eval.api import Adapter, Request, Response
from lalm_eval.errors import ConfigError, DataError

SAMPLES_RE = re.compile(r"^(?P<stamp>.+?)_samples_(?P<task>.+)\.jsonl$")


def find_samples(folder: Path, tasks: list[str] | None) -> dict[str, Path]:
    """``{task: samples file}`` under ``folder`` (lmms-eval's ``--output_path`` or its model
    folder): the newest file of each task; one model folder only."""
    if not folder.is_dir():
        raise ConfigError(f"LMMS_OUTPUT_DIR {folder}: not a folder; give lmms-eval's --output_path folder")
    found: dict[str, list[Path]] = {}
    for path in sorted(folder.rglob("*_samples_*.jsonl")):
        m = SAMPLES_RE.match(path.name)
        if m:
            found.setdefault(m["task"], []).append(path)
    if not found:
        raise ConfigError(
            f"LMMS_OUTPUT_DIR {folder}: no <date>_samples_<task>.jsonl files; run lmms-eval with --log_samples "
            "and --output_path, and give that folder"
        )
    parents = {p.parent for files in found.values() for p in files}
    if len(parents) > 1:
        shown = ", ".join(sorted(str(p) for p in parents)[:4])
        raise ConfigError(
            f"LMMS_OUTPUT_DIR {folder}: samples of several runs or models ({shown}); give one of these folders"
        )
    if tasks is not None:
        absent = [t for t in tasks if t not in found]
        if absent:
            raise ConfigError(
                f"--tasks: no lmms-eval samples of {', '.join(absent)} in {folder} (there are: "
                f"{', '.join(sorted(found))}); run those tasks in lmms-eval with --log_samples, or leave them out"
            )
    names = tasks if tasks is not None else sorted(found)
    return {t: max(found[t], key=lambda p: SAMPLES_RE.match(p.name)["stamp"]) for t in names}


def _answer(sample: dict, file: Path, line: int) -> str:
    value = sample.get("resps", sample.get("filtered_resps"))
    while isinstance(value, list) and value:
        value = value[0]
    if not isinstance(value, str):
        raise DataError(file, f"no answer text (resps / filtered_resps is {value!r})", field="resps", line=line)
    return value


def read_samples(file: Path) -> dict[int, dict]:
    """``{doc_id: {"answer", "input"}}`` of one lmms-eval samples file."""
    out: dict[int, dict] = {}
    with open(file, encoding="utf-8") as f:
        for line, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                sample = json.loads(text)
            except ValueError as exc:
                raise DataError(file, f"not JSON ({exc}); the file is cut or not lmms-eval's", line=line) from None
            doc_id = sample.get("doc_id")
            if not isinstance(doc_id, int) or isinstance(doc_id, bool) or doc_id < 0:
                raise DataError(file, f"doc_id {doc_id!r} is not a doc index", field="doc_id", line=line)
            if doc_id in out:
                raise DataError(file, f"doc_id {doc_id} logged twice", field="doc_id", line=line)
            out[doc_id] = {"answer": _answer(sample, file, line), "input": sample.get("input")}
    if not out:
        raise DataError(file, "no samples; rerun lmms-eval with --log_samples")
    return out


def lmms_config(folder: Path) -> dict:
    """The ``config`` block of lmms-eval's newest ``*_results.json`` beside the samples ({} when
    there is none)."""
    results = sorted(folder.glob("*_results.json"))
    if not results:
        return {}
    try:
        return dict(json.loads(results[-1].read_text(encoding="utf-8")).get("config") or {})
    except (OSError, ValueError, AttributeError):
        return {}


class LoggedAnswers(Adapter):
    """The answers lmms-eval logged, handed to the evaluation as a model's (nothing is generated)."""

    name = "lmms-eval"

    def __init__(self, answers: dict[str, dict[int, dict]], identity: dict):
        super().__init__()
        self.answers, self._identity = answers, identity

    def identity(self) -> dict:
        return dict(self._identity)

    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        out = []
        for r in requests:
            sample = self.answers.get(r.task, {}).get(r.doc_id)
            if sample is None:
                out.append(Response.failed("error", f"lmms-eval logged no answer for doc {r.doc_id}"))
            else:
                out.append(Response(sample["answer"]))
        return out


def check_prompts(opened, answers: dict[str, dict[int, dict]], files: dict[str, Path]) -> None:
    """Every logged ``input`` equals the prompt the task renders for its doc."""
    from lalm_eval.export_lmms.bridge import prompt_text

    for one in opened:
        task, logged = one.task, answers[one.task.name]
        for doc_id, sample in sorted(logged.items()):
            if doc_id >= len(one.docs):
                raise DataError(
                    files[task.name],
                    f"doc_id {doc_id}: task {task.name!r} has {len(one.docs)} docs; the samples are of another dataset",
                    field="doc_id",
                )
            if sample["input"] is None:
                continue
            want = prompt_text(task, dict(one.docs[doc_id]))
            if sample["input"] != want:
                raise DataError(
                    files[task.name],
                    f"doc_id {doc_id}: the logged prompt is not the one task {task.name!r} renders "
                    f"({sample['input'][:60]!r} against {want[:60]!r}); score samples of the tasks "
                    "lalm-eval export-tasks wrote, on the same dataset",
                    field="input",
                )
