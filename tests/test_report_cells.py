"""A report grid cell honours its task's aggregation (lalm_eval/report/cells.py), as the results
summary does: the median under ``aggregation: median``, the corpus WER under ``aggregation:
corpus``; a cell that cannot be computed from the samples is "—" with the reason."""

import textwrap

from lalm_eval.report.cells import aggregate, task_aggregations
from lalm_eval.report.results import write_results, write_samples
from tests.test_report_layouts import tables

LAYOUTS = """
    reports:
      toy_rooms:
        metadata_fields: {room_kind: unknown}
        default: [toy_by_room]
    layouts:
      toy_by_room:
        report: toy_rooms
        title: "Toy: rooms"
        kind: grid
        rows: [model]
        columns:
          - {field: room, values: [kitchen, hall], columns: [{metric: exact_match}, {metric: wer}, {metric: bleu}]}
"""


def _wer(edits: int, units: int) -> dict:
    return {"substitutions": edits, "deletions": 0, "insertions": 0, "reference_units": units}


# kitchen: exact match 0, 0, 1 (mean 1/3, median 0); WER 1/1 and 0/9 (mean 0.5, corpus 0.1)
ROWS = [
    {
        "room": "kitchen",
        "metrics": {"exact_match": 0.0, "wer": 1.0, "bleu": 10.0},
        "metric_details": {"wer": _wer(1, 1)},
    },
    {
        "room": "kitchen",
        "metrics": {"exact_match": 0.0, "wer": 0.0, "bleu": 30.0},
        "metric_details": {"wer": _wer(0, 9)},
    },
    {"room": "kitchen", "metrics": {"exact_match": 1.0}},
    {"room": "hall", "metrics": {"exact_match": 1.0, "wer": 0.5, "bleu": 20.0}, "metric_details": {"wer": _wer(2, 4)}},
]
INFO = {"exact_match": {"aggregation": "median"}, "wer": {"aggregation": "corpus"}, "bleu": {"aggregation": "bleu"}}


def test_aggregate_follows_the_declared_aggregation():
    rows = [{**r, "task_name": "t"} for r in ROWS if r["room"] == "kitchen"]
    assert aggregate(rows, "exact_match") == (1 / 3, None)  # no declaration: the mean
    declared = task_aggregations({"t": INFO, "u": {"exact_match": {"aggregation": "mean"}}})
    assert declared == {"t": {"exact_match": "median", "wer": "corpus", "bleu": "bleu"}}
    assert aggregate(rows, "exact_match", declared) == (0.0, None)
    assert aggregate(rows, "wer", declared) == (0.1, None)
    value, reason = aggregate(rows, "bleu", declared)
    assert value is None and "corpus-level (aggregation: bleu)" in reason
    mixed = rows + [{"room": "kitchen", "task_name": "u", "metrics": {"exact_match": 1.0}}]
    value, reason = aggregate(mixed, "exact_match", declared)
    assert value is None and "aggregate it differently (median, mean)" in reason
    assert aggregate(rows, "no_such_metric", declared) == (None, None)


def _run(tmp_path, info):
    run = tmp_path / "run"
    write_samples(run, "toy_task", [{"doc_id": i, **r} for i, r in enumerate(ROWS)], stamp="S")
    write_results(
        run,
        {
            "results": {"toy_task": {"alias": "toy"}},
            "configs": {"toy_task": {"metadata": {"report": "toy_rooms"}}},
            "metric_info": {"toy_task": info},
            "config": {"model": "m"},
        },
        stamp="S",
    )
    return run


def test_report_cells_use_the_task_aggregation_and_say_when_they_cannot(tmp_path):
    from lalm_eval.report.combine import combine

    folder = tmp_path / "toy_tasks"
    folder.mkdir()
    (folder / "report_layouts.yaml").write_text(textwrap.dedent(LAYOUTS))
    text, _ = combine([_run(tmp_path / "declared", INFO)], include_paths=[folder])
    [(header, body)] = tables(text)
    assert header[1:4] == ["kitchen · exact match", "kitchen · word error rate", "kitchen · BLEU"]
    assert body == [["m", "0.00", "10.00", "—", "100.00", "50.00", "—"]]  # median, corpus WER, no corpus BLEU
    assert "— BLEU: its task value is corpus-level (aggregation: bleu)" in text
    text, _ = combine([_run(tmp_path / "means", {})], include_paths=[folder])  # no declaration: the means
    assert tables(text)[0][1] == [["m", "33.33", "50.00", "20.00", "100.00", "50.00", "20.00"]]
    assert "corpus-level" not in text
