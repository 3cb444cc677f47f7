"""``lalm-eval export-tasks --to lmms-eval OUT_DIR --tasks ...``: lmms-eval task folders of
``lalm-eval`` tasks.

One folder per source task folder (``OUT_DIR/<folder>/``): a YAML per task and per group, in
lmms-eval's schema (``doc_to_visual`` for the audio, ``doc_to_text``, ``doc_to_target``,
``process_docs``, ``generation_kwargs``, ``metric_list``, groups with ``aggregate_metric_list``),
and one ``utils.py`` whose hooks call the tasks as ``lalm-eval`` loads them
(:mod:`lalm_eval.export_lmms.bridge`). The templates are ``templates/`` beside this module.

What lmms-eval has no place for is not exported and is said so (the task YAML's notes,
``export_info.json`` and the command's report):

- judged metrics (``llm_judge``): lmms-eval 0.7.3's task schema has no judge configuration (its
  judged tasks call a judge from their own ``utils.py`` with an API key of their own), so they are
  computed afterwards from lmms-eval's samples by ``lalm-eval score-samples``;
- tasks without audio or not ``generate_until``: not exported, listed with the reason.

The output folder is staged and swapped in whole (:func:`lalm_eval.hub.atomic.staged_build`): a
killed export leaves the previous export or none.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from lalm_eval.errors import ConfigError, LalmEvalError
from lalm_eval.export_lmms.bridge import HOOKS, function_prefix
from lalm_eval.hub.atomic import FolderKind, staged_build

TEMPLATES = Path(__file__).parent / "templates"
#: generation kwargs lmms-eval 0.7.3's audio models read (qwen2_audio: max_new_tokens,
#: temperature, top_p, num_beams, until; do_sample is derived from temperature)
LMMS_GEN_KEYS = ("max_new_tokens", "temperature", "top_p", "num_beams", "until", "do_sample")

LMMS_EXPORT = FolderKind(
    "export",
    "export_info.json",
    ("export_info.json",),
    (re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\.yaml$"), re.compile(r"^[A-Za-z0-9_.-]+/utils\.py$")),
    ("*/*.yaml", "*/utils.py"),
    ("files",),
)


@dataclasses.dataclass
class ExportedTask:
    name: str
    folder: str  # the source task folder's name: the export's subfolder
    yaml: dict  # what task.yaml.j2 renders
    metrics: list[str]  # exported metric names
    not_exported: dict  # metric → why
    notes: list[str]


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def _yaml_value(value) -> str:
    import yaml

    text = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10**9, sort_keys=False).strip()
    return text[: -len("...")].strip() if text.endswith("...") else text


def _env():
    from lalm_eval.templating import jinja_env

    env = jinja_env(TEMPLATES, keep_trailing_newline=True)
    env.filters["yaml"] = _yaml_value
    env.filters["py"] = repr
    return env


def lmms_generation_kwargs(gen_kwargs: dict) -> tuple[dict, list[str]]:
    """The task's generation kwargs as lmms-eval reads them, and what it would read differently.

    ``until`` is always written: without it lmms-eval stops at ``"\\n\\n"`` (its few-shot
    delimiter), which ``lalm-eval`` does not. ``max_gen_toks`` becomes ``max_new_tokens``; greedy
    (``do_sample: false``) gets ``temperature: 0``, from which lmms-eval's models derive
    ``do_sample``."""
    out, notes = dict(gen_kwargs), []
    if "max_gen_toks" in out:
        out.setdefault("max_new_tokens", out.pop("max_gen_toks"))
    until = out.get("until")
    out["until"] = [] if until is None else [until] if isinstance(until, str) else list(until)
    if not out.get("do_sample", False):
        out.setdefault("temperature", 0)
    ignored = sorted(k for k in out if k not in LMMS_GEN_KEYS)
    if ignored:
        notes.append(
            f"generation kwargs {ignored} are not read by lmms-eval's audio models (qwen2_audio reads "
            f"{', '.join(LMMS_GEN_KEYS[:-1])}): their answers may differ from lalm-eval's"
        )
    return out, notes


def export_task(task, cache_dir: Path, include_path: list[str] | None) -> ExportedTask | str:
    """What the export writes for ``task``, or the reason it cannot be exported."""
    from lalm_eval.metrics.scoring import metric_name
    from lalm_eval.metrics.task_metrics import JudgeMetric

    cfg = task.config
    if cfg.output_type not in (None, "generate_until"):
        return f"output_type {cfg.output_type!r}: the export writes generate_until tasks only"
    if cfg.doc_to_audio is None:
        return "no doc_to_audio: lmms-eval's audio models need the audio as doc_to_visual"
    path, notes = cfg.dataset_path, []
    prepare = task.hook("prepare_dataset")
    if prepare is not None:  # the embedded build, made once, as lalm-eval opens it
        try:
            path = prepare(cfg.dataset_path, cfg.dataset_name, cache_dir)
        except LalmEvalError as exc:  # e.g. a release not imported yet: the task still exports
            notes.append(f"dataset_path {cfg.dataset_path!r} was not found at export ({_one_line(exc)})")
    path = str(Path(path).resolve()) if Path(str(path)).exists() else str(path)
    metrics, not_exported = [], {}
    higher = {}
    for entry, metric in zip(cfg.metric_list or [], task.metrics):
        name = metric_name(entry)
        if isinstance(metric, JudgeMetric):
            not_exported[name] = (
                "a judged metric: lmms-eval has no judge configuration in its task schema; "
                "run lalm-eval score-samples on lmms-eval's --log_samples output"
            )
            continue
        if function_prefix(name) != name:
            not_exported[name] = "its name is not a Python identifier (the aggregation hook's name)"
            continue
        metrics.append(name)
        higher[name] = bool(entry.get("higher_is_better", True))
    gen_kwargs, gen_notes = lmms_generation_kwargs(task.gen_kwargs)
    notes += gen_notes
    if cfg.doc_to_messages is not None:
        notes.append(
            "doc_to_messages interleaves text and audio; lmms-eval's audio models put every audio first, "
            "then doc_to_text, which is the message's text parts joined by newlines"
        )
    for name, why in not_exported.items():
        notes.append(f"metric {name} not exported: {why}")
    metadata = {
        **{k: v for k, v in (cfg.metadata or {}).items() if isinstance(v, (str, int, float, bool))},
        "lalm_eval_task": task.name,
        "lalm_eval_task_hash": task.task_hash,
    }
    yaml = {
        "name": task.name,
        "alias": cfg.task_alias,
        "source": f"{task.folder.name}/{task.yaml_file.name}",
        "task_hash": task.task_hash,
        "notes": notes,
        "dataset_path": path,
        "dataset_name": cfg.dataset_name,
        "dataset_kwargs": dict(cfg.dataset_kwargs or {}),
        "split": task.eval_split,
        "prefix": function_prefix(task.name),
        "generation_kwargs": gen_kwargs,
        "metrics": [{"name": m, "higher_is_better": higher[m]} for m in metrics],
        "metadata": metadata,
        "spec": {
            "task_hash": task.task_hash,
            "dataset_path": path,
            "include_path": list(include_path or []),
            "metrics": metrics,
        },
    }
    return ExportedTask(task.name, task.folder.name, yaml, metrics, not_exported, notes)


def _group_files(manager, names: list[str], exported: dict[str, ExportedTask]) -> dict[str, dict]:
    """The groups among ``names`` (and the groups inside them) whose tasks were all exported, as
    group.yaml.j2 renders them: ``aggregate_metric_list`` keeps the metrics every task exports."""
    out: dict[str, dict] = {}
    all_groups = set(manager.all_groups())

    def visit(name: str) -> list[str] | None:
        if name in exported:
            return [name]
        if name not in all_groups:
            return None
        group = manager.load_group(name)
        members: list[str] = []
        for sub in group.task:
            subs = visit(sub)
            if subs is None:
                return None
            members += subs
        metrics = set.intersection(*(set(exported[t].metrics) for t in members)) if members else set()
        aggregate = [dict(e) for e in group.aggregate_metric_list or [] if e.get("metric") in metrics]
        left = [e["metric"] for e in group.aggregate_metric_list or [] if e.get("metric") not in metrics]
        folder = exported[members[0]].folder
        file = manager.file_of(name)
        out[name] = {
            "name": name,
            "alias": group.group_alias,
            "source": f"{file.parent.parent.name if file.parent.name == 'groups' else file.parent.name}/{file.name}",
            "tasks": list(group.task),
            "aggregate": aggregate,
            "metadata": {k: v for k, v in (group.metadata or {}).items() if isinstance(v, (str, int, float, bool))},
            "notes": [f"aggregate metric {m} left out: not exported by every task" for m in left],
            "folder": folder,
        }
        return members

    for name in names:
        if name in all_groups:
            visit(name)
    return out


def export_tasks(names: list[str], out, *, include_path=None, cache_dir: Path) -> dict:
    """Write the lmms-eval folders of ``names`` (tasks, groups, tags) into ``out``; returns the
    ``export_info.json`` content (tasks per folder, groups, what was not exported and why)."""
    from lalm_eval import __version__
    from lalm_eval.tasks import TaskManager

    manager = TaskManager(include_paths=include_path)
    task_names = manager.resolve(names)
    include = [str(Path(p).resolve()) for p in include_path or []]
    exported: dict[str, ExportedTask] = {}
    skipped: dict[str, str] = {}
    for name in task_names:
        result = export_task(manager.load_task(name), Path(cache_dir), include)
        if isinstance(result, str):
            skipped[name] = result
        else:
            exported[name] = result
    if not exported:
        raise ConfigError(
            f"--tasks {','.join(names)}: no task can be exported ({'; '.join(f'{k}: {v}' for k, v in skipped.items())})"
        )
    groups = _group_files(manager, names, exported)
    env = _env()
    files: list[str] = []
    folders: dict[str, list[ExportedTask]] = {}
    for t in exported.values():
        folders.setdefault(t.folder, []).append(t)
    with staged_build(out, "OUT_DIR", LMMS_EXPORT) as stage:
        for folder, tasks in folders.items():
            root = stage.path / folder
            root.mkdir(parents=True, exist_ok=True)
            for t in tasks:
                (root / f"{t.name}.yaml").write_text(
                    env.get_template("task.yaml.j2").render(version=__version__, **t.yaml), encoding="utf-8"
                )
                files.append(f"{folder}/{t.name}.yaml")
            spec = json.dumps({t.name: t.yaml["spec"] for t in tasks}, indent=4, ensure_ascii=False)
            (root / "utils.py").write_text(
                env.get_template("utils.py.j2").render(
                    version=__version__,
                    spec=spec.replace("\n", "\n    "),
                    hooks=HOOKS,
                    tasks=[{"name": t.name, "prefix": function_prefix(t.name), "metrics": t.metrics} for t in tasks],
                ),
                encoding="utf-8",
            )
            files.append(f"{folder}/utils.py")
        for name, g in groups.items():
            (stage.path / g["folder"]).mkdir(parents=True, exist_ok=True)
            (stage.path / g["folder"] / f"{name}.yaml").write_text(
                env.get_template("group.yaml.j2").render(version=__version__, **g), encoding="utf-8"
            )
            files.append(f"{g['folder']}/{name}.yaml")
        info = {
            "to": "lmms-eval",
            "lalm_eval_version": __version__,
            "tasks": {t.name: {"folder": t.folder, "metrics": t.metrics, "notes": t.notes} for t in exported.values()},
            "groups": sorted(groups),
            "not_exported": {
                "tasks": skipped,
                "metrics": {t.name: t.not_exported for t in exported.values() if t.not_exported},
            },
            "files": sorted(files),
        }
        (stage.path / "export_info.json").write_text(
            json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return info
