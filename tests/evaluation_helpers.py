"""Tests' shorthand for what ``lalm-eval`` does: open the named tasks (the docs stage), then run or
plan them (``evaluate`` / ``plan_run`` take loaded tasks)."""

from __future__ import annotations

from pathlib import Path

from lalm_eval.evaluation.docs import open_tasks
from lalm_eval.evaluation.plan import plan_run
from lalm_eval.evaluation.run import EvalRun, evaluate


def evaluate_names(adapter, names, *, include_path=None, limit=None, cache_dir, **kwargs) -> EvalRun:
    """:func:`evaluate` of the tasks ``names`` resolves to, opened from ``cache_dir``."""
    tasks = open_tasks(list(names), include_path=include_path, cache_dir=Path(cache_dir), limit=limit)
    return evaluate(adapter, tasks, cache_dir=Path(cache_dir), **kwargs)


def plan_names(adapter, names, *, include_path=None, limit=None, cache_dir, **kwargs) -> dict:
    """:func:`plan_run` (``--dry_run``) of the tasks ``names`` resolves to."""
    tasks = open_tasks(list(names), include_path=include_path, cache_dir=Path(cache_dir), limit=limit)
    return plan_run(adapter, tasks, cache_dir=Path(cache_dir), **kwargs)
