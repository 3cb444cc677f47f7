"""Metrics as the harness runs them: one ``metric_list`` entry → per-sample values + task summary.

A task's ``metric_list`` names metrics as lm-eval does (``metric``, ``aggregation``,
``higher_is_better``); any further keys of an entry are the metric's options, e.g.::

    - metric: bertscore
      backbone: {en: /path/to/encoder, zh: bert-base-chinese}  # default: bert-score's per language
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

``aggregation`` says what the task value is: ``mean`` or ``median`` of the per-sample values, or
``corpus`` — the metric's corpus-level value from summed statistics (corpus BLEU, corpus WER/CER),
for the metrics that have one; ``bleu`` is lm-eval's name for corpus BLEU. A ``!function`` is
called with the list of scored values. :func:`make_metric` checks the name, the options and the
aggregation of an entry; the task loader calls it, so a typo fails before any model loads.

This module defines :data:`METRICS`, the one metric registry: every built-in metric is
registered here as a lazy ``"module:attr"`` entry, plug-ins through the ``lalm_eval.metrics``
entry-point group.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from lalm_eval.errors import ConfigError
from lalm_eval.registry import Registry

METRICS = Registry("metric", entry_point_group="lalm_eval.metrics")
LM_EVAL_KEYS = ("metric", "aggregation", "higher_is_better")
#: aggregations of the per-sample values, accepted by every metric
ITEM_AGGREGATIONS: dict[str, Callable[[np.ndarray], float]] = {"mean": np.mean, "median": np.median}
#: aggregation names meaning "the metric's corpus-level value" (``bleu``: lm-eval's corpus BLEU)
CORPUS_AGGREGATIONS = ("corpus", "bleu")


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
    # the corpus-level value from summed statistics (corpus BLEU, corpus WER), for metrics that have
    # one: the task value under ``aggregation: corpus``
    summary: float | None = None
    extra: dict = dataclasses.field(default_factory=dict)  # signature, backbone, judge settings, agreement…
    details: list | None = None  # per-item dicts for the sample log (judge comments)
    missing: str | None = None  # why the metric could not be computed at all
    # ``statistic(indices) -> summary`` of the scored items (non-None values) at ``indices``: the CI's
    # statistic under ``aggregation: corpus``
    statistic: Any = None


@dataclasses.dataclass
class ScoringContext:
    """What metrics may need beyond the items: the judge's text LLM and where caches live."""

    judge_llm: Any = None  # a lalm_eval.llm.TextLLM, or None when no --judge was given
    cache_dir: Any = None
    seed: int = 0
    judge_samples: int = 1  # --judge_samples K: verdicts per item, each seeded from ``seed``
    # --bertscore_model: {language (or "default"): folder or Hub id}, over the tasks' ``backbone``
    bertscore_models: Any = None


class Metric(abc.ABC):
    """A metric over all scored items of a task. Subclasses register in :data:`METRICS`."""

    #: options the metric accepts (beyond lm-eval's keys); others are a ConfigError
    OPTIONS: tuple[str, ...] = ()
    #: True when :meth:`compute` gives the corpus-level ``summary`` and ``statistic`` (then
    #: ``aggregation: corpus`` is accepted)
    CORPUS_LEVEL: bool = False
    #: the aggregation names beside mean/median/corpus that mean the corpus-level value
    #: (``bleu`` for the BLEU metric, as lm-eval names it)
    CORPUS_ALIASES: tuple[str, ...] = ()
    #: how the report names the metric (its full name, never an abbreviation) and the factor that
    #: turns its per-sample values into % (None: the report prints them as computed, with a
    #: footnote saying their scale is unknown). A plain-function metric carries the same two
    #: attributes on the function.
    display_name: str | None = None
    percent: float | None = None

    def __init__(self, name: str, options: Mapping, context: ScoringContext):
        unknown = sorted(set(options) - set(self.OPTIONS))
        if unknown:
            raise ConfigError(f"metric {name!r}: unknown option(s) {unknown}; accepted: {list(self.OPTIONS)}")
        self.name, self.options, self.context = name, dict(options), context
        self.check_options()

    def check_options(self) -> None:  # noqa: B027 - an optional hook: most metrics have nothing to check
        """Check the option values (raise :class:`ConfigError`); runs when the task loads."""

    @classmethod
    def aggregations(cls) -> list[str]:
        """The aggregation names this metric accepts."""
        corpus = ["corpus", *cls.CORPUS_ALIASES] if cls.CORPUS_LEVEL else []
        return [*ITEM_AGGREGATIONS, *corpus]

    @classmethod
    def corpus_from_details(cls, details: list) -> float | None:
        """The corpus-level value of a subset of the samples from their logged ``details`` (a
        report cell under ``aggregation: corpus``); None when the details carry no statistics."""
        return None

    @abc.abstractmethod
    def compute(self, items: list[ScoreItem]) -> MetricResult: ...


class SampleMetric(Metric):
    """A plain ``fn(prediction, reference) -> float`` (exact match, token F1, plug-ins)."""

    def __init__(self, name: str, options: Mapping, context: ScoringContext, fn):
        super().__init__(name, options, context)
        self.fn = fn

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        values = [float(self.fn(i.prediction, i.reference)) for i in items]
        return MetricResult(values, [None] * len(items))


def metric_name(entry: Mapping) -> str:
    """The name a ``metric_list`` entry reports under: the metric, or a ``!function``'s function."""
    name = entry["metric"]
    return name if isinstance(name, str) else str(getattr(name, "attr", name))


def make_metric(entry: Mapping, context: ScoringContext | None = None, where: str = "metric_list") -> Metric:
    """The metric of one ``metric_list`` entry, its name, options and aggregation checked.

    Every problem is a :class:`ConfigError` starting with ``where`` (the task file and entry).
    """
    if not isinstance(entry, Mapping) or "metric" not in entry:
        raise ConfigError(f"{where}: entry without 'metric': {entry!r}")
    context = context or ScoringContext()
    name, options = entry["metric"], {k: v for k, v in entry.items() if k not in LM_EVAL_KEYS}
    try:
        if callable(name):  # metric: !function module.fn → fn(prediction, reference)
            metric: Metric = SampleMetric(metric_name(entry), options, context, name)
        else:
            target = METRICS.get(name)
            if isinstance(target, type) and issubclass(target, Metric):
                metric = target(name, options, context)
            else:
                metric = SampleMetric(name, options, context, target)
    except ConfigError as exc:  # say where, keep the kind (an unknown name is also a KeyError)
        exc.args = (f"{where}: {exc}", *exc.args[1:])
        raise
    aggregation = entry.get("aggregation", "mean")
    if not callable(aggregation) and aggregation not in type(metric).aggregations():
        corpus = (
            ""
            if type(metric).CORPUS_LEVEL or aggregation not in CORPUS_AGGREGATIONS
            else f" ({metric.name!r} has no corpus-level value)"
        )
        raise ConfigError(
            f"{where}: metric {metric.name!r}: unknown aggregation {aggregation!r}{corpus}; "
            f"accepted: {', '.join(type(metric).aggregations())} or !function module.fn"
        )
    return metric


def summarize(result: MetricResult, seed_parts: tuple, aggregation: Any = "mean") -> dict:
    """``{value, stderr, ci95, n, failures}`` of a metric's result under ``aggregation``.

    ``value`` is the mean or median of the scored values, the corpus-level ``result.summary``
    (``corpus`` / ``bleu``), or ``aggregation(values)`` for a ``!function``; ``ci95`` is the
    percentile bootstrap interval of that same statistic, seeded by ``seed_parts``; ``stderr`` is
    the standard error of the mean, given for ``mean`` only.
    """
    from lalm_eval.metrics.bootstrap import bootstrap_ci
    from lalm_eval.seeding import stable_int

    vals = [v for v in result.values if v is not None]
    data = np.asarray(vals, dtype=float)
    statistic = None  # None: the CI of the mean
    if aggregation == "mean":
        value = float(data.mean()) if vals else None
    elif aggregation in CORPUS_AGGREGATIONS:
        value, statistic = result.summary, result.statistic
    else:  # median, or a !function (given the scored values as a list)
        user = callable(aggregation)
        fn = aggregation if user else ITEM_AGGREGATIONS[aggregation]

        def statistic(idx) -> float:
            picked = data[idx]
            return float(fn(picked.tolist() if user else picked))

        value = statistic(np.arange(len(vals))) if vals else None
    stderr = float(np.std(data, ddof=1) / np.sqrt(len(vals))) if aggregation == "mean" and len(vals) > 1 else None
    ci = bootstrap_ci(vals, seed=stable_int(*map(str, seed_parts)), statistic=statistic) if len(vals) > 1 else None
    return {
        "value": value,
        "stderr": stderr,
        "ci95": list(ci) if ci else None,
        "n": len(vals),
        "failures": sum(v is None for v in result.values),
    }


METRICS.register("exact_match", "lalm_eval.metrics.text:exact_match")
METRICS.register("token_f1", "lalm_eval.metrics.text:token_f1")
METRICS.register("bleu", "lalm_eval.metrics.task_metrics:BleuMetric")
METRICS.register("bertscore", "lalm_eval.metrics.task_metrics:BertScoreMetric")
METRICS.register("llm_judge", "lalm_eval.metrics.task_metrics:JudgeMetric")
METRICS.register("mcq_accuracy", "lalm_eval.metrics.choice:ChoiceMetric")
METRICS.register("option_accuracy", "lalm_eval.metrics.choice:OptionMetric")
METRICS.register("wer", "lalm_eval.metrics.asr:WerMetric")
METRICS.register("cer", "lalm_eval.metrics.asr:CerMetric")
