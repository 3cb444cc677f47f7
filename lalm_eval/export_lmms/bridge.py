"""What an exported lmms-eval task folder runs: its ``utils.py`` hooks, each a call into the task as
``lalm-eval`` loads it, so that lmms-eval sends the same prompt and audio and scores with the same
metric code.

``lalm-eval export-tasks`` writes a ``utils.py`` whose module-level names (``<task>__doc_to_text``,
``<task>__agg__<metric>`` …) are :meth:`ExportedTasks.hook` values. At lmms-eval's first call the
task is loaded through :class:`lalm_eval.tasks.TaskManager` (the same YAML, ``process_docs``,
templates, filters and metrics) and its hash is compared with the one recorded at export: a task
changed since is an error that says to export again, never a quietly different prompt.

What each hook does, and what lmms-eval does around it:

``process_docs``
    Audio columns cast to ``Audio(decode=False)`` (``lalm-eval`` decodes audio itself, with
    soundfile, the same bytes → the same samples), then the task's own ``process_docs`` with the
    context ``lalm-eval`` gives it (``dataset_path``, ``excluded``).
``doc_to_visual``
    The doc's audios (``doc_to_audio``), decoded as ``lalm-eval`` decodes them, as lmms-eval's
    ``{"array", "sampling_rate"}`` dicts.
``doc_to_text`` / ``doc_to_target``
    The task's rendered prompt text and reference.
``process_results``
    One value per exported metric: the response and the doc without its audio bytes.
``agg__<metric>``
    The filters and metric of the task over all items, summarised as ``lalm-eval`` summarises
    them (:func:`lalm_eval.metrics.scoring.summarize`); a metric that cannot be computed is NaN
    with its reason logged (lmms-eval's table needs a number).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable

from lalm_eval.api import AUDIO_SR
from lalm_eval.errors import ConfigError

log = logging.getLogger(__name__)

HOOKS = ("process_docs", "doc_to_visual", "doc_to_text", "doc_to_target", "process_results")


def function_prefix(task_name: str) -> str:
    """The Python name prefix of a task's hooks in the exported ``utils.py``."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in task_name)
    return out if out[:1].isalpha() else f"t_{out}"


class ExportedTasks:
    """The tasks of one exported folder: ``spec`` maps each task name to what the export recorded
    (``task_hash``, ``dataset_path``, ``include_path``, ``metrics``: the exported metric names)."""

    def __init__(self, spec: dict):
        self.spec = dict(spec)

    def task(self, name: str):
        entry = self.spec[name]
        task = _load_task(name, tuple(entry.get("include_path") or ()))
        if task.task_hash != entry["task_hash"]:
            raise ConfigError(
                f"{task.yaml_file}: task {name!r} changed since it was exported (hash {task.task_hash[:12]}, "
                f"exported {entry['task_hash'][:12]}); run lalm-eval export-tasks again"
            )
        return task

    def hook(self, name: str, kind: str) -> Callable:
        """The hook ``kind`` (one of :data:`HOOKS`, or ``agg__<metric>``) of task ``name``."""
        if kind.startswith("agg__"):
            return functools.partial(self.aggregate, name, kind[len("agg__") :])
        return functools.partial(getattr(self, kind), name)

    # -- the hooks ---------------------------------------------------------------------------

    def process_docs(self, name: str, dataset):
        from lalm_eval.evaluation.docs import audio_left_encoded

        excluded: dict = {}
        out = self.task(name).process_docs(
            audio_left_encoded(dataset), dataset_path=self.spec[name]["dataset_path"], excluded=excluded
        )
        left_out = {k: v for k, v in excluded.items() if v}
        if left_out:
            log.warning("%s: process_docs left out %s", name, left_out)
        return out

    def doc_to_visual(self, name: str, doc: dict, lmms_eval_specific_kwargs=None) -> list[dict]:
        from lalm_eval.evaluation.docs import decode_audio

        return [{"array": decode_audio(a), "sampling_rate": AUDIO_SR} for a in self.task(name).audio_of(dict(doc))]

    def doc_to_text(self, name: str, doc: dict, lmms_eval_specific_kwargs=None) -> str:
        return prompt_text(self.task(name), dict(doc))

    def doc_to_target(self, name: str, doc: dict, model_specific_target_kwargs=None):
        return self.task(name).render_target(dict(doc))

    def process_results(self, name: str, doc: dict, results: list) -> dict:
        from lalm_eval.evaluation.docs import light_doc

        item = {"response": results[0] if results else "", "doc": light_doc(dict(doc))}
        return {metric: item for metric in self.spec[name]["metrics"]}

    def aggregate(self, name: str, metric: str, items: list) -> float:
        """The task's ``metric`` over lmms-eval's items, as ``lalm-eval``'s scoring stage computes it."""
        from lalm_eval.evaluation.scoring import bound, score_item
        from lalm_eval.metrics.scoring import ScoringContext, metric_name, summarize

        task = self.task(name)
        entries = list(zip(task.config.metric_list or [], task.metrics))
        entry, found = next(((e, m) for e, m in entries if metric_name(e) == metric), (None, None))
        if found is None:
            raise ConfigError(
                f"{task.yaml_file}: task {name!r} has no metric {metric!r}; run lalm-eval export-tasks again"
            )
        counters: dict = {}
        scored = [score_item(task, str(i["response"]), i["doc"], counters) for i in items]
        result = bound(found, ScoringContext()).compute(scored)
        value = summarize(result, (0, name, metric), entry.get("aggregation", "mean"))["value"]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            log.warning("%s: %s not computed (%s)", name, metric, result.missing or "no scored items")
            return math.nan
        return float(value)


@functools.cache
def _manager(include_path: tuple):
    from lalm_eval.tasks import TaskManager

    return TaskManager(include_paths=list(include_path) or None)


@functools.cache
def _load_task(name: str, include_path: tuple):
    """The task, loaded once per process (lmms-eval executes ``utils.py`` once per ``!function``)."""
    return _manager(include_path).load_task(name)


def prompt_text(task, doc: dict) -> str:
    """The prompt text of a doc as lmms-eval's audio models place it, after every audio: the task's
    ``doc_to_text``; for a task of interleaved parts (``doc_to_messages``, e.g. labelled reference
    clips) its text parts in order, joined by newlines (the one prompt that differs: docs/lmms_eval.md).
    lmms-eval renders it from the doc without its audio columns, so no audio is read here."""
    return "\n".join(task.text_parts(doc))
