"""The toy benchmark's own metric: 1 when the answer names the reference speaker."""

from lalm_eval.metrics.scoring import Metric, MetricResult


class NameMatch(Metric):
    display_name, percent = "speaker named", 100

    def compute(self, items):
        values = [float(i.reference.lower() in (i.prediction or "").lower()) for i in items]
        return MetricResult(values, [None] * len(items))
