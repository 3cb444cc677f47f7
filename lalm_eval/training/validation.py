"""Validation during ``lalm-eval train`` (PALM §5.2: "hyperparameters are tuned on validation sets").

``--eval_split validation`` evaluates the model being trained on that split of each task's dataset
at the end of every epoch (or every ``--eval_steps`` steps), through the harness itself: the
tasks' own prompts, generation kwargs, filters and ``metric_list`` (:func:`lalm_eval.evaluation.run.evaluate`
on copies of the tasks whose ``test_split`` is the validation split; no response cache, since the
weights change between evaluations). ``--select best:<metric>`` keeps the checkpoint with the best
value of that metric (the mean over the tasks that report it; higher or lower is better as the
task's ``metric_list`` entry says), ``--select last`` (the default) the last one. The curve goes
to ``train_info.json`` (``validation``) and ``validation.png``.

Everything a run could trip on is checked before the model trains (:func:`plan_validation`): the
split must exist in every task's dataset (else the error names ``--eval_split`` and the splits
that do), and the metric must be one the tasks report.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from pathlib import Path

from lalm_eval.errors import ConfigError, LalmEvalError

SELECT_FIX = "give --select last, or best:<metric> with a metric of the tasks' metric_list (e.g. best:token_f1)"


def parse_select(text: str | None) -> str | None:
    """``--select``: ``last`` → None (keep the last checkpoint), ``best:<metric>`` → the metric."""
    text = (text or "last").strip()
    if text == "last":
        return None
    kind, _, metric = text.partition(":")
    if kind.strip() != "best" or not metric.strip():
        raise ConfigError(f"--select: {text!r} is not last or best:<metric>; {SELECT_FIX}")
    return metric.strip()


@dataclasses.dataclass
class ValidationPlan:
    """What :func:`evaluate_now` runs: the tasks (copies reading ``split``), the selection metric
    (None: ``--select last``) and whether higher is better, and the docs per task."""

    split: str
    tasks: list  # lalm_eval.tasks.Task, test_split replaced by `split`
    manager: object
    include_path: list | None
    cache_dir: Path
    limit: int | None
    metric: str | None
    greater_is_better: bool = True
    docs_per_task: dict = dataclasses.field(default_factory=dict)
    opened: object = None  # lalm_eval.evaluation.docs.OpenedTasks: the copies' docs, opened once

    def describe(self) -> dict:
        return {
            "split": self.split,
            "select": f"best:{self.metric}" if self.metric else "last",
            "metric": self.metric,
            "greater_is_better": self.greater_is_better,
            "docs_per_task": self.docs_per_task,
            "limit": self.limit,
        }


def _splits_of(task, cache_dir: Path) -> list[str] | None:
    """The splits the task's dataset (its config) lists in its card, or None when that cannot be
    told without loading it (a Hub id, a folder without a card)."""
    from lalm_eval.hub.card import card_configs

    cfg = task.config
    path = cfg.dataset_path
    prepare = task.hook("prepare_dataset")
    if prepare is not None:
        path = prepare(cfg.dataset_path, cfg.dataset_name, cache_dir)
    if not Path(str(path)).is_dir():
        return None
    found = card_configs(Path(str(path)))
    if found is None:
        return None
    configs, default = found
    return list(configs.get(cfg.dataset_name if cfg.dataset_name is not None else default) or [])


def plan_validation(
    task_names: list[str],
    split: str,
    metric: str | None,
    *,
    include_path=None,
    cache_dir: Path,
    limit: int | None = None,
) -> ValidationPlan:
    """The tasks of ``task_names`` reading ``split``, their docs opened once (the split exists, its
    first doc renders) and the selection metric checked against their ``metric_list``."""
    from lalm_eval.evaluation.docs import OpenedTasks, naming_task, open_docs, probe_doc
    from lalm_eval.metrics.scoring import metric_name
    from lalm_eval.tasks import TaskManager

    manager = TaskManager(include_paths=include_path)
    tasks, docs, opened = [], {}, []
    for task in [manager.load_task(n) for n in manager.resolve(task_names)]:
        splits = _splits_of(task, Path(cache_dir))
        if splits is not None and split not in splits:
            raise ConfigError(
                f"--eval_split {split}: the dataset of task {task.name!r} ({task.config.dataset_path}) has no "
                f"split {split!r}, its splits are {', '.join(splits)}; give one of them, or build the dataset "
                "with a validation split"
            )
        copy = task.replaced(test_split=split)
        try:
            with naming_task(copy):
                one = open_docs(copy, Path(cache_dir), limit)
                probe_doc(copy, one.docs)
        except LalmEvalError as exc:
            raise ConfigError(f"--eval_split {split}: {exc}") from None
        if not len(one):
            raise ConfigError(
                f"--eval_split {split}: task {task.name!r} has no docs in split {split!r}; "
                "give a split with docs, or leave out --eval_split"
            )
        one.park()  # mapped again when validation reads it
        tasks.append(copy)
        opened.append(one)
        docs[copy.name] = len(one)
    greater = True
    if metric is not None:
        entries = {metric_name(e): e for t in tasks for e in (t.config.metric_list or [])}
        if metric not in entries:
            close = difflib.get_close_matches(metric, list(entries), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"--select best:{metric}: no task of {', '.join(t.name for t in tasks)} reports {metric!r}{hint}, "
                f"they report {', '.join(entries)}; {SELECT_FIX}"
            )
        greater = bool(entries[metric].get("higher_is_better", True))
    every = OpenedTasks([t.name for t in tasks], manager, opened, Path(cache_dir), limit)
    return ValidationPlan(split, tasks, manager, include_path, Path(cache_dir), limit, metric, greater, docs, every)


def plan_subjects(plan: ValidationPlan) -> set[str]:
    """Every subject the plan's docs name (``doc_to_subjects``; no audio decoded): per-speaker prompt
    tuning checks them against the training subjects before it trains."""
    return {str(n) for o in plan.opened.opened for doc in o.docs for n in o.task.subjects_of(doc)}


def evaluate_now(adapter, plan: ValidationPlan, batch_size, seed: int = 0) -> dict:
    """Evaluate ``adapter`` (its model as it is now) on the plan's tasks through the harness:
    ``{"value": <selection metric, mean over the tasks reporting it>, "per_task": {task: {metric:
    value}}}``. The model is put in eval mode for it and back in train mode after."""
    from lalm_eval.evaluation.run import evaluate

    model = adapter.model
    was_training = model.training
    model.eval()
    try:
        out = evaluate(
            adapter,
            plan.opened,
            batch_size=str(batch_size),
            cache_dir=plan.cache_dir,
            use_cache=False,  # the weights change between evaluations: nothing may come from a cache
            seed=seed,
        )
    finally:
        model.train(was_training)
    per_task = {}
    for name, result in out.results.items():
        summary = result.summary
        per_task[name] = {
            k: v
            for k, v in summary.items()
            if not k.endswith(("_stderr", "_ci95")) and isinstance(v, (int, float)) and not isinstance(v, bool)
        }
    value = None
    if plan.metric is not None:
        values = [m[plan.metric] for m in per_task.values() if m.get(plan.metric) is not None]
        value = sum(values) / len(values) if values else None
    return {"value": value, "per_task": per_task}


def validation_plot(curve: list[dict], metric: str | None, best_step: int | None, out: Path) -> None:
    """``validation.png``: the selection metric (or, under ``--select last``, each task's first
    metric) per evaluated step, the kept checkpoint marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    steps = [p["step"] for p in curve]
    if metric is not None:
        ax.plot(steps, [p["value"] for p in curve], marker=".", label=f"{metric} (mean over tasks)")
    else:
        for task in dict.fromkeys(t for p in curve for t in p["per_task"]):
            first = next(iter(curve[0]["per_task"].get(task) or {}), None)
            if first is not None:
                ax.plot(
                    steps, [p["per_task"].get(task, {}).get(first) for p in curve], marker=".", label=f"{task} {first}"
                )
    if best_step is not None:
        ax.axvline(best_step, color="grey", linestyle="--", label=f"kept: step {best_step}")
    ax.set_xlabel("step")
    ax.set_ylabel("validation")
    ax.set_title(out.name)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "validation.png", dpi=120)
    plt.close(fig)


def write_json(path: Path, data) -> None:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
