"""Several runs (one output folder per model) → one report: the report layouts of the runs' tasks
(``metadata.report``; layouts in the task folders' ``report_layouts*.yaml``) with a row per run
(model × the task-metadata fields the report declares), and the plots with a line or bar per run.

    lalm-eval report results/cascade results/tiny-qwen2-audio --output_path results/report
    lalm-eval report results/* --layout palm_table1
    lalm-eval report results/* --layout msu_table4,msu_table6 --error_sample 200 --seed 0

Each folder holds ``results_<stamp>.json`` files and their ``samples_<task>_<stamp>.jsonl``
(``--log_samples``). A folder is one model's runs, as lm-eval writes them: every task is taken
from the newest results file that holds it (tasks run one at a time into one folder all count),
and the report's "Runs" list says which file each task came from, which results were replaced by
newer ones, and which files were left out (a run of another model than the newest file's).

Each run's row label is its model (``config.model``); when two runs share a model (a base model
and its fine-tunes), every row is labelled by the shortest end of its folder's path that no other
folder shares (``e1/qwen`` and ``e2/qwen``), and so is a run whose results name no model. A
folder given twice is reported once. Tasks that declare no ``metadata.report`` (an older lalm-eval's results, a
hand-made file, a task of your own) get a table of their task-level values. Runs of the
forgetting checks (tasks with ``metadata.table: forgetting``) add PALM Table 4's table
(:mod:`.forgetting`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
from collections.abc import Sequence
from pathlib import Path

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.report.assemble import metric_details, missing_reasons
from lalm_eval.report.cells import task_aggregations
from lalm_eval.report.forgetting import TABLE as FORGETTING
from lalm_eval.report.forgetting import forgetting_table
from lalm_eval.report.layouts import LayoutIndex, render_reports, report_plots, tag_rows
from lalm_eval.report.results import _safe_name, timestamp
from lalm_eval.report.tables import DASH, _markdown

RERUN = "rerun lalm-eval with --output_path this folder"
# the per-task parts of a results document, merged task by task from the file that holds each task
PER_TASK = ("results", "configs", "versions", "n-samples", "higher_is_better", "task_hashes", "metric_info")


@dataclasses.dataclass
class Run:
    """One output folder: its tasks merged from its results files (``doc``: a results document),
    the file each task came from, and what was replaced or left out."""

    folder: Path
    doc: dict
    sources: dict[str, Path]
    notes: list[str]
    model: str | None
    label: str = ""


def results_files(folder: str | Path) -> list[Path]:
    """The folder's ``results_*.json`` files, oldest first (their stamps sort as times)."""
    files = sorted(p for p in Path(folder).glob("results_*.json") if p.is_file())
    if not files:
        nested = sorted(
            p.name for p in Path(folder).iterdir() if p.is_dir() and any(p.glob("results_*.json"))
        )  # lm-eval's layout: <output_path>/<model>/results_*.json
        hint = f"its folders {', '.join(nested)} hold runs: give those folders" if nested else ""
        raise DataError(
            folder, f"no results_*.json here; {hint or 'run lalm-eval with --output_path to this folder first'}"
        )
    return files


def latest_results(folder: str | Path) -> Path:
    return results_files(folder)[-1]


def _kind(value) -> str:
    kinds = {
        dict: "a JSON object",
        list: "a JSON list",
        str: "a JSON string",
        type(None): "null",
        bool: "a JSON boolean",
    }
    return kinds.get(type(value), "a JSON number")


def read_results(path: str | Path) -> dict:
    """A results file, checked as far as the report reads it: an object whose ``results`` maps each
    task to its values and whose ``configs`` / ``config`` are objects; errors name the file and the
    field and say what to do."""
    fix = f"the file is damaged or not a results file of lalm-eval: {RERUN} or remove the file"
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(path, f"not UTF-8 text; {fix}") from None
    except OSError as exc:
        raise DataError(path, f"cannot read it ({exc.strerror or exc}); check the file's permissions") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(
            path, f"invalid JSON ({exc.msg}): the file is cut short or damaged; {RERUN} or remove it", line=exc.lineno
        ) from None
    if not isinstance(doc, dict):
        raise DataError(path, f"not a results object ({_kind(doc)}); {fix}")
    if "results" not in doc:
        raise DataError(path, f"no 'results' (task values) in it; {fix}", field="results")
    for key in ("results", "configs", "config", *PER_TASK[2:]):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise DataError(path, f"must be an object, got {_kind(doc[key])}; {fix}", field=key)
    for key in ("results", "configs", "higher_is_better", "metric_info"):
        for task, entry in (doc.get(key) or {}).items():
            if entry is not None and not isinstance(entry, dict):
                raise DataError(path, f"must be an object, got {_kind(entry)}; {fix}", field=f"{key}.{task}")
            meta = (entry or {}).get("metadata") if key == "configs" else None
            if meta is not None and not isinstance(meta, dict):
                raise DataError(path, f"must be an object, got {_kind(meta)}; {fix}", field=f"configs.{task}.metadata")
    return doc


def _model(doc: dict) -> str | None:
    model = (doc.get("config") or {}).get("model")
    return str(model) if model not in (None, "") else None


def _identity(doc: dict) -> tuple:
    config = doc.get("config") or {}
    return (config.get("model"), config.get("model_args"))


def load_run(folder: str | Path) -> Run:
    """A folder's tasks, each from the newest results file that holds it; files of another model
    (``config.model`` / ``model_args``) than the newest file's are left out, and said so."""
    files = results_files(folder)
    docs = {path: read_results(path) for path in files}
    newest = files[-1]
    chosen: dict[str, Path] = {}
    notes: list[str] = []
    for path in reversed(files):
        this = docs[path]
        if _identity(this) != _identity(docs[newest]):
            notes.append(
                f"left out: {path.name} (a run of {_model(this) or 'an unnamed model'}"
                + (", other model_args" if _model(this) == _model(docs[newest]) else "")
                + ", not of the newest file's model): give each model its own --output_path folder"
            )
            continue
        replaced = [task for task in this["results"] if task in chosen]
        chosen.update((task, path) for task in this["results"] if task not in chosen)
        if replaced:
            them = "it" if len(replaced) == 1 else "them"
            notes.append(f"not used: {', '.join(replaced)} of {path.name} (a newer results file holds {them})")
    # tasks in the order of the files (oldest first), then of each file
    sources = {task: path for path in files for task in docs[path]["results"] if chosen.get(task) == path}
    doc: dict = {"config": docs[newest].get("config") or {}, **{key: {} for key in PER_TASK}}
    for task, path in sources.items():
        for key in PER_TASK:
            if task in (docs[path].get(key) or {}):
                doc[key][task] = docs[path][key][task]
    if not sources:
        raise DataError(newest, f"holds no task results ('results' is empty); {RERUN} and --tasks", field="results")
    if _model(doc) is None:
        notes.append(f"{newest.name} names no model (no config.model): the row is labelled by its folder")
    return Run(Path(folder), doc, sources, notes, _model(doc))


def path_labels(folders: Sequence[Path]) -> list[str]:
    """The shortest end of each folder's resolved path that no other folder's path ends with."""
    parts = [Path(os.path.abspath(f)).parts for f in folders]  # as given (a link's own name)
    labels = []
    for i, mine in enumerate(parts):
        for k in range(1, len(mine) + 1):
            tail = mine[-k:]
            if all(other[-k:] != tail for j, other in enumerate(parts) if j != i):
                break
        labels.append(str(Path(*tail)))
    return labels


def label_runs(runs: list[Run]) -> None:
    """Each run's row label: its model, or (models shared or missing) its folder's path end."""
    models = [r.model for r in runs]
    by_path = path_labels([r.folder for r in runs])
    named = [m for m in models if m is not None]
    labels = by_path if len(set(named)) < len(named) else [m or p for m, p in zip(models, by_path)]
    if len(set(labels)) < len(labels):  # a folder's path end equals another run's model
        labels = by_path
    for run, label in zip(runs, labels):
        run.label = label


def unique_folders(folders: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """The folders in the order given, each once (the same folder by another spelling or through a
    link too), and a note for each folder given more than once."""
    seen: dict[Path, list[Path]] = {}
    for folder in map(Path, folders):
        seen.setdefault(folder.resolve(), []).append(folder)
    notes = []
    for spellings in seen.values():
        if len(spellings) > 1:
            others = sorted({str(s) for s in spellings[1:]} - {str(spellings[0])})
            also = f" (also as {', '.join(others)})" if others else ""
            notes.append(f"{spellings[0]} was given {len(spellings)} times{also}: reported once")
    return [spellings[0] for spellings in seen.values()], notes


def load_runs(folders: Sequence[str | Path]) -> tuple[list[Run], list[str]]:
    unique, notes = unique_folders(folders)
    runs = [load_run(f) for f in unique]
    label_runs(runs)
    return runs, notes


def run_documents(folders: list[str | Path]) -> list[tuple[str, dict]]:
    """``(label, results document)`` per folder (its tasks merged from its results files)."""
    runs, _ = load_runs(folders)
    return [(r.label, r.doc) for r in runs]


def read_sample_log(path: Path, results: Path, task: str, older: bool = False) -> list[dict]:
    """The rows of ``task``'s sample log ``path`` (written beside ``results``), each checked to be a
    JSON object; a missing, damaged or cut log is a :class:`DataError` naming the file and line."""
    if not path.is_file():
        move = f" (or move {results.name}, an older run, out of the folder)" if older else ""
        raise DataError(
            path, f"sample log of {task} ({results.name}) missing; rerun lalm-eval with --log_samples{move}"
        )
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise DataError(path, f"not UTF-8 text, the log is damaged; {RERUN} --log_samples") from None
    except OSError as exc:
        raise DataError(path, f"cannot read it ({exc.strerror or exc}); check the file's permissions") from None
    rows = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise DataError(
                path, f"invalid JSON ({exc.msg}): the log is cut short or damaged; {RERUN} --log_samples", line=lineno
            ) from None
        if isinstance(row, dict) and not isinstance(row.get("metrics") or {}, dict):
            raise DataError(
                path,
                f"must be an object of metric values, got {_kind(row['metrics'])}; {RERUN} --log_samples",
                field="metrics",
                line=lineno,
            )
        if not isinstance(row, dict):
            raise DataError(
                path, f"each line must be a JSON object, got {_kind(row)}; {RERUN} --log_samples", line=lineno
            )
        rows.append(row)
    return rows


def load_run_rows(run: Run, index: LayoutIndex) -> dict[str, list[dict]]:
    """``{report: tagged scored sample rows}`` of a run: the rows of each task that declares
    ``metadata.report``, read from the sample log beside the results file the task came from."""
    by_report: dict[str, list[dict]] = {}
    for task, source in run.sources.items():
        meta = (run.doc["configs"].get(task) or {}).get("metadata") or {}
        if not meta.get("report"):
            continue
        stamp = source.stem[len("results_") :]
        samples = source.parent / f"samples_{_safe_name(task)}_{stamp}.jsonl"
        by_report.setdefault(meta["report"], []).extend(
            tag_rows(
                read_sample_log(samples, source, task, older=source != max(run.sources.values())),
                model=run.label,
                task=task,
                metadata=meta,
                report=index.report(meta["report"]),
            )
        )
    return by_report


def _metric_of(key: str) -> tuple[str, str] | None:
    """``"token_f1,none"`` → ``("token_f1", "none")``; None for alias, stderr and interval keys."""
    metric, comma, filt = key.partition(",")
    if not comma or metric.endswith(("_stderr", "_ci95")):
        return None
    return metric, filt


def _plain_tasks(run: Run) -> list[str]:
    """The run's tasks that no layout renders: no ``metadata.report`` and not a forgetting check."""
    out = []
    for task in run.doc["results"]:
        meta = (run.doc["configs"].get(task) or {}).get("metadata") or {}
        if not meta.get("report") and meta.get("table") != FORGETTING:
            out.append(task)
    return out


def _cell(entry: dict, metric: str, filt: str) -> str:
    v, ci = entry.get(f"{metric},{filt}"), entry.get(f"{metric}_ci95,{filt}")
    if v is None:
        return DASH
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    ok = isinstance(ci, list) and len(ci) == 2 and all(isinstance(x, (int, float)) for x in ci)
    return f"{v:.4f}" + (f" [{ci[0]:.4f}, {ci[1]:.4f}]" if ok else "")


def task_level_table(runs: Sequence[Run], metrics: Sequence[str] | None = None) -> str:
    """Markdown of the task-level values of the tasks no layout renders (``""`` when none)."""
    columns: dict[tuple[str, str, str], str] = {}
    for run in runs:
        for task in _plain_tasks(run):
            entry = run.doc["results"][task] or {}
            for key in entry:
                parsed = _metric_of(key)
                if parsed is None or (metrics is not None and parsed[0] not in metrics):
                    continue
                name = parsed[0] + ("" if parsed[1] == "none" else f" ({parsed[1]})")
                columns.setdefault((task, *parsed), f"{entry.get('alias') or task} · {name}")
    if not columns:
        return ""
    body = [[run.label] + [_cell(run.doc["results"].get(task) or {}, m, f) for task, m, f in columns] for run in runs]
    note = (
        "These tasks declare no metadata.report (results of an older lalm-eval, a hand-made results file, "
        "or a task of your own), so no report layout renders them: their task-level values from the "
        "results files, as computed (not %), with the 95 % interval where the file has one."
    )
    header = ["Model"] + list(columns.values())
    details = _run_details(runs)  # what the values rest on (BERTScore's backbone per language, judges)
    shown = dict.fromkeys((task, m) for task, m, _ in columns)
    notes = [f"{task} · {m}: {details[task][m]}" for task, m in shown if m in details.get(task, {})]
    note = "  \n".join([note, *notes])
    return "\n".join(["## Tasks without a report layout", "", _markdown(header, body), "", note]) + "\n"


def runs_section(runs: Sequence[Run], notes: Sequence[str]) -> str:
    """Which folder each row label is, the results file each task came from, what was left out."""
    lines = ["## Runs", "", "Row label: folder (results file: its tasks in this report)."]
    lines.append("")
    for run in runs:
        by_file: dict[Path, list[str]] = {}
        for task, source in run.sources.items():
            by_file.setdefault(source, []).append(task)
        files = "; ".join(f"{p.name}: {', '.join(tasks)}" for p, tasks in sorted(by_file.items(), reverse=True))
        lines.append(f"- {run.label}: {run.folder} ({files})")
        lines += [f"  - {note}" for note in run.notes]
    lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def _check_metrics(metrics: Sequence[str] | None, runs: Sequence[Run], rows: dict[str, list[dict]]) -> None:
    if metrics is None:
        return
    if not metrics:
        raise ConfigError("--metrics: names no metric; give comma-separated metric names, e.g. --metrics token_f1,bleu")
    have = {m for rs in rows.values() for r in rs for m in (r.get("metrics") or {})}
    for run in runs:
        for entry in run.doc["results"].values():
            have |= {p[0] for p in map(_metric_of, entry or {}) if p}
    for m in metrics:
        if m not in have:
            close = difflib.get_close_matches(m, sorted(have), n=3)
            raise ConfigError(
                f"--metrics: no run has a metric {m!r}"
                + (f" (did you mean {', '.join(close)}?)" if close else "")
                + f"; give metrics the runs have: {', '.join(sorted(have)) or 'none'}"
            )


def _check_layouts(layouts: Sequence[str] | None, index: LayoutIndex, rows: dict[str, list[dict]]) -> None:
    for name in layouts or ():
        lay = index.layout(name, flag="--layout")
        if not rows.get(lay.report):
            present = sorted(n for n, lay2 in index.layouts.items() if rows.get(lay2.report))
            raise ConfigError(
                f"--layout: no run given has a task of {name} (tasks with metadata.report {lay.report}); "
                + (f"use one of the runs' layouts ({', '.join(present)}) or add" if present else "add")
                + f" the folder of a run of {lay.report}'s tasks"
                + ("" if present else ", or leave out --layout for the task-level values")
            )


def combine(
    folders: list[str | Path],
    output_path: str | Path | None = None,
    metrics: list[str] | None = None,
    layouts: Sequence[str] | None = None,
    error_sample: int | None = None,
    seed: int = 0,
    include_paths: Sequence[str | Path] | None = None,
) -> tuple[str, list[Path]]:
    """The combined Markdown (and, with ``output_path``, ``report_<stamp>.md`` plus plots).
    ``layouts``: layout names (default: each present report's defaults); ``error_sample``/``seed``:
    the distribution layouts' sample of failed answers per group (default: all). Every check of
    the runs and the flags comes before anything is written."""
    index = LayoutIndex.load(include_paths)
    if layouts is not None and not layouts:
        raise ConfigError(
            f"--layout: names no layout; give comma-separated names of {', '.join(sorted(index.layouts))}"
        )
    for name in layouts or ():
        index.layout(name, flag="--layout")
    runs, notes = load_runs(folders)
    by_report: dict[str, list[dict]] = {}
    info: dict = {}
    for run in runs:
        for name, rows in load_run_rows(run, index).items():
            by_report.setdefault(name, []).extend(rows)
        for task, metrics_info in (run.doc.get("metric_info") or {}).items():
            info.setdefault(task, metrics_info)
    _check_layouts(layouts, index, by_report)
    _check_metrics(metrics, runs, by_report)
    pseudo = _as_run(info)
    tables = render_reports(
        by_report,
        index,
        layouts,
        metrics=metrics,
        missing=missing_reasons(pseudo),
        details=_run_details(runs),
        error_sample=error_sample,
        seed=seed,
        aggregations=task_aggregations(info),
    )
    extra = [] if layouts else [task_level_table(runs, metrics), forgetting_table([(r.label, r.doc) for r in runs])]
    if not tables.strip() and not any(p.strip() for p in extra):
        raise DataError(
            next(iter(runs[0].sources.values())),
            "no task of these runs has a value to report (no metric values, no report layout); "
            f"{RERUN}, its tasks with a metric_list",
        )
    parts = ["# lalm-eval: combined report", runs_section(runs, notes), tables, *extra]
    text = "\n\n".join(p.strip("\n") for p in parts if p.strip()) + "\n"
    files: list[Path] = []
    if output_path is not None:
        out, stamp = Path(output_path), timestamp()
        out.mkdir(parents=True, exist_ok=True)
        report = out / f"report_{stamp}.md"
        report.write_text(text, encoding="utf-8")
        files.append(report)
        files += report_plots(by_report, index, out, stamp)
    return text, files


def _run_details(runs: Sequence[Run]) -> dict[str, dict[str, str]]:
    """:func:`metric_details` over every run, not the first run of a task alone: runs of one task
    scored with other BERTScore backbones (or judges) each get their line, labelled by run when
    they differ."""
    per_run = [(run, metric_details(_as_run(run.doc.get("metric_info") or {}))) for run in runs]
    out: dict[str, dict[str, str]] = {}
    for task in dict.fromkeys(t for _, d in per_run for t in d):
        for metric in dict.fromkeys(m for _, d in per_run for m in d.get(task, {})):
            texts = {run.label: d[task][metric] for run, d in per_run if metric in d.get(task, {})}
            distinct = list(dict.fromkeys(texts.values()))
            out.setdefault(task, {})[metric] = (
                distinct[0] if len(distinct) == 1 else "  \n".join(f"{label}: {text}" for label, text in texts.items())
            )
    return out


def _as_run(metric_info: dict):
    """A results file's ``metric_info`` in the shape :func:`missing_reasons` and :func:`metric_details`
    read from an :class:`~lalm_eval.evaluation.run.EvalRun` (``.results[task].metrics``)."""
    from types import SimpleNamespace

    tasks = {t: SimpleNamespace(metrics=m) for t, m in (metric_info or {}).items() if isinstance(m, dict)}
    return SimpleNamespace(results=tasks)


__all__ = ["combine", "latest_results", "load_run", "read_results", "run_documents"]
