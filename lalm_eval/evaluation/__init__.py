"""The evaluation in stages, one module each:

- :mod:`~lalm_eval.evaluation.docs`: tasks loaded and their datasets opened once (``open_tasks``),
  ``process_docs`` run once, audio kept encoded; ``decode_audio``;
- :mod:`~lalm_eval.evaluation.requests`: docs scanned (prompts, cache keys from the encoded audio)
  and streamed into requests, a chunk of decoded audio at a time;
- :mod:`~lalm_eval.evaluation.generation`: the response cache read once per doc, the misses
  generated through it (it owns the batch alignment) and shared between data-parallel processes;
- :mod:`~lalm_eval.evaluation.filters`: the ``filter_list`` registry, resolved when a task loads;
- :mod:`~lalm_eval.evaluation.scoring`: sample rows and the task's own metrics;
- :mod:`~lalm_eval.evaluation.usage`: what adapters report, summed per task and per run;
- :mod:`~lalm_eval.evaluation.groups`: group aggregation;
- :mod:`~lalm_eval.evaluation.plan`: the dry run;
- :mod:`~lalm_eval.evaluation.run`: ``evaluate(adapter, tasks)`` → :class:`EvalRun`.

The names below are imported when first used (the task loader imports the filters stage, and
the stages import the tasks).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "DEFAULT_STREAM_CHUNK": "generation",
    "EvalRun": "run",
    "OpenedTask": "docs",
    "OpenedTasks": "docs",
    "TaskResult": "run",
    "decode_audio": "docs",
    "decoded_requests": "requests",
    "evaluate": "run",
    "open_docs": "docs",
    "open_tasks": "docs",
    "plan_run": "plan",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'lalm_eval.evaluation' has no attribute {name!r}")
    return getattr(importlib.import_module(f"lalm_eval.evaluation.{_EXPORTS[name]}"), name)
