"""PALM's rule scorer is a metric of palm_bench, registered through the ``lalm_eval.metrics`` entry
points; ``llm_judge``'s ``cross_check`` resolves the metric it names through the same registry."""

from __future__ import annotations

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.metrics.scoring import METRICS, ScoreItem, ScoringContext, make_metric
from lalm_eval.metrics.task_metrics import JudgeMetric

QUESTION = "Do Amy and Daisy both appear?"
REFERENCE = "Only Daisy appears; Amy does not."
ITEMS = [
    ScoreItem(
        "Only Daisy appears; Amy does not.", REFERENCE, {"question": QUESTION, "who": ["Amy", "Daisy"]}, QUESTION
    ),
    ScoreItem("Amy appears; Daisy does not.", REFERENCE, {"question": QUESTION, "who": ["Amy", "Daisy"]}, QUESTION),
]


def test_recognition_presence_comes_from_palm_bench():
    cls = METRICS.get("recognition_presence")
    assert cls.__module__ == "palm_bench.metrics"
    result = make_metric({"metric": "recognition_presence", "names_field": "who"}).compute(ITEMS)
    assert result.values == [1.0, 0.0] and result.details[0]["names"] == ["Amy", "Daisy"]


def test_the_judges_cross_check_is_the_registered_metric_with_the_tasks_options():
    options = {
        "judge": "palm_recognition",
        "cross_check": "recognition_presence",
        "cross_check_options": {"names_field": "who"},
    }
    judge = JudgeMetric("llm_judge", options, ScoringContext())
    # the rule scores 1, 0 (test above); one score category each way, so no kappa (and no sklearn import)
    assert judge._agreement(ITEMS[:1], [1.0]) == {"n": 1, "exact_agreement": 1.0, "cohen_kappa": None}
    assert judge._agreement(ITEMS[1:], [0.0])["exact_agreement"] == 1.0  # the rule's 0 for the wrong answer
    exact = JudgeMetric("llm_judge", {"judge": "palm_recognition", "cross_check": "exact_match"}, ScoringContext())
    assert exact._agreement(ITEMS[:1], [1.0])["exact_agreement"] == 1.0  # exact_match: the same text
    bad = JudgeMetric("llm_judge", {**options, "cross_check_options": {"bogus": 1}}, ScoringContext())
    with pytest.raises(
        ConfigError, match=r"cross_check: metric 'recognition_presence': unknown option\(s\) \['bogus'\]"
    ):
        bad._agreement(ITEMS, [1.0, 1.0])  # the task's options reach the named metric
