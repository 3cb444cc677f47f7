"""A metric names itself in the report: ``display_name`` and ``percent`` on its registered class
(or function), read through the METRICS registry, so a plug-in metric needs no file in lalm_eval."""

from __future__ import annotations

import textwrap

import pytest

from lalm_eval.metrics.scoring import METRICS, Metric, MetricResult
from lalm_eval.report.layouts import metric_name, percent_factor
from lalm_eval.report.results import write_results, write_samples
from tests.test_report_layouts import tables

# what the report printed for the built-in metrics before they declared it (the former table)
BUILT_IN = {
    "bleu": ("BLEU", 1),
    "token_f1": ("token F1", 100),
    "exact_match": ("exact match", 100),
    "bertscore": ("BERTScore F1", 100),
    "recognition_presence": ("presence score by rule", 100),
    "llm_judge": ("LLM-judge score", 100),
    "mcq_accuracy": ("accuracy", 100),
    "option_accuracy": ("accuracy", 100),
    "wer": ("word error rate", 100),
    "cer": ("character error rate", 100),
}


def test_built_in_metrics_declare_the_names_and_scales_the_report_printed():
    assert {m: (metric_name(m), percent_factor(m)) for m in BUILT_IN} == BUILT_IN


class RoomScore(Metric):
    display_name, percent = "room score", 10

    def compute(self, items):
        return MetricResult([1.0] * len(items), [None] * len(items))


LAYOUT = """
    reports:
      rooms:
        default: [by_room]
    layouts:
      by_room:
        report: rooms
        kind: grid
        rows: [model]
        columns:
          - {field: room, values: [kitchen, hall], columns: [{metric: room_score}, {metric: raw_score}]}
"""


@pytest.fixture
def room_score():
    METRICS.register("room_score", RoomScore)
    yield
    METRICS._entries.pop("room_score")


def test_a_registered_metric_names_itself_and_an_unregistered_one_gets_the_footnote(tmp_path, room_score):
    from lalm_eval.report.combine import combine

    folder = tmp_path / "tasks"
    folder.mkdir()
    (folder / "report_layouts.yaml").write_text(textwrap.dedent(LAYOUT))
    run = tmp_path / "run"
    rows = [
        {"doc_id": i, "room": room, "metrics": {"room_score": v, "raw_score": v}}
        for i, (room, v) in enumerate((("kitchen", 1.0), ("kitchen", 2.0), ("hall", 4.0)))
    ]
    write_samples(run, "t", rows, stamp="S")
    results = {"results": {"t": {"alias": "t"}}, "configs": {"t": {"metadata": {"report": "rooms"}}}}
    write_results(run, {**results, "config": {"model": "m"}}, stamp="S")
    text, _ = combine([run], include_paths=[folder])
    [(header, body)] = tables(text)
    assert header == ["Model", "kitchen · room score", "kitchen · raw_score", "hall · room score", "hall · raw_score"]
    assert body == [["m", "15.00", "1.50", "40.00", "4.00"]]  # room_score × its percent 10; raw as computed
    assert "raw_score: scale unknown to the report, printed as computed (not %)." in text
    assert "room score: scale unknown" not in text and "room_score: scale unknown" not in text
