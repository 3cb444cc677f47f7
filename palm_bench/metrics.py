"""PALM-Bench's metric of its own: Table 26 scored by rule (:mod:`palm_bench.recognition`), as the
harness metric ``recognition_presence`` (registered through the ``lalm_eval.metrics`` entry
points in pyproject.toml; a task selects it from its ``metric_list``, and ``llm_judge`` names it
as its ``cross_check``)."""

from __future__ import annotations

from lalm_eval.metrics.scoring import Metric, MetricResult, ScoreItem


class RecognitionPresenceMetric(Metric):
    OPTIONS = ("question_field", "names_field")
    display_name, percent = "presence score by rule", 100  # PALM Table 26 by rule, k/N in 0–1

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        from palm_bench.recognition import presence_judgments

        q_field, n_field = self.options.get("question_field", "question"), self.options.get("names_field")
        values, errors, details = [], [], []
        for i in items:
            names = list(i.doc[n_field]) if n_field and i.doc.get(n_field) else None
            try:
                res = presence_judgments(str(i.doc.get(q_field, i.question)), i.reference, i.prediction, names=names)
            except Exception as exc:  # noqa: BLE001 - a question it cannot parse: counted, not scored 0
                values.append(None)
                errors.append(f"recognition_presence: {exc}")
                details.append(None)
                continue
            values.append(float(res.score))
            errors.append(None)
            details.append({"names": list(res.names), "reference": res.reference, "response": res.response})
        return MetricResult(values, errors, details=details)
