"""Reports: lm-eval-shaped results JSON, samples JSONL, breakdown math, plots, the combined report.
The report layouts (the papers' tables as data) are tested in tests/test_report_layouts.py."""

import datetime as dt
import json
import re

import numpy as np
import pytest

from lalm_eval.errors import DataError
from lalm_eval.report import (
    breakdown,
    load_results,
    metric_key,
    plots,
    task_entry,
    timestamp,
    write_results,
    write_samples,
)

STAMP_RE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{6}"


def table_cells(markdown: str) -> tuple[list[str], list[list[str]]]:
    lines = [line for line in markdown.splitlines() if line.startswith("|")]

    def split(line):
        return [c.strip() for c in line.strip("|").split("|")]

    return split(lines[0]), [split(line) for line in lines[2:]]


def test_timestamp_format():
    assert timestamp(dt.datetime(2026, 1, 2, 3, 4, 5, 6)) == "2026-01-02T03-04-05.000006"
    assert re.fullmatch(STAMP_RE, timestamp())


def test_results_json_has_lm_eval_layout_and_round_trips(tmp_path):
    results = {
        "results": {
            "palm_recognition": task_entry(
                "palm_recognition", {"token_f1": 0.5, "bleu": np.float64(12.5)}, {"token_f1": 0.02}
            ),
            "palm": {"alias": "palm", metric_key("token_f1"): 0.5, "token_f1_stderr,none": "N/A"},
        },
        "groups": {"palm": {"alias": "palm", "token_f1,none": 0.5}},
        "group_subtasks": {"palm": ["palm_recognition"]},
        "configs": {"palm_recognition": {"task": "palm_recognition", "dataset_path": "x/palm"}},
        "versions": {"palm_recognition": 1.0},
        "n-samples": {"palm_recognition": {"original": 120, "effective": 100}},
        "higher_is_better": {"palm_recognition": {"token_f1": True, "bleu": True}},
        "config": {
            "model": "qwen2_audio",
            "model_args": "pretrained=Qwen/Qwen2-Audio-7B-Instruct",
            "batch_size": 8,
            "seed": 1234,
            "limit": 100,
            "gen_kwargs": {"max_new_tokens": 64},
        },
        "task_hashes": {"palm_recognition": "abc123"},
        "cache": {"hits": 40, "misses": 60},
        "errors": {"palm_recognition": [{"doc_id": 7, "error": "CUDA out of memory"}]},
        "total_evaluation_time_seconds": "12.5",
        "date": 1767225600.0,
    }
    path = write_results(tmp_path / "out", results)
    assert re.fullmatch(f"results_{STAMP_RE}.json", path.name)
    back = load_results(path)
    for key in (
        "results",
        "groups",
        "group_subtasks",
        "configs",
        "versions",
        "n-samples",
        "higher_is_better",
        "config",
        "task_hashes",
        "cache",
        "errors",
        "total_evaluation_time_seconds",
        "date",
        "lalm_eval_version",
    ):
        assert key in back, key
    entry = back["results"]["palm_recognition"]
    assert entry == {
        "alias": "palm_recognition",
        "token_f1,none": 0.5,
        "token_f1_stderr,none": 0.02,
        "bleu,none": 12.5,
        "bleu_stderr,none": "N/A",
    }
    assert back["config"]["device"] is None and back["config"]["batch_size"] == 8  # every config key written
    assert back["n-samples"]["palm_recognition"] == {"original": 120, "effective": 100}
    assert back["errors"]["palm_recognition"][0]["doc_id"] == 7
    assert back["lalm_eval_version"]
    # round trip: writing what was read gives the same content
    again = load_results(write_results(tmp_path / "again", back, stamp="2026-01-01T00-00-00.000000"))
    assert again == back


def test_results_defaults_and_validation(tmp_path):
    back = load_results(write_results(tmp_path, {"results": {"t": {"alias": "t", "acc,none": float("nan")}}}))
    assert back["results"]["t"]["acc,none"] is None  # strict JSON: NaN → null
    assert back["cache"] == {"hits": 0, "misses": 0} and back["errors"] == {} and back["groups"] == {}
    with pytest.raises(DataError, match="unknown top-level"):
        write_results(tmp_path, {"resultz": {}})
    with pytest.raises(DataError, match="lacks a filter"):
        write_results(tmp_path, {"results": {"t": {"acc": 1.0}}})


def test_samples_jsonl_one_line_per_doc(tmp_path):
    rows = [
        {
            "language": "en",
            "n_speakers": 2,
            "doc_id": i,
            "target": "yes",
            "response": "yes" if i else None,
            "messages": [{"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": "Q?"}]}],
            "metrics": {"token_f1": np.float32(1.0) if i else None},
            "error": None if i else "timeout",
            "negative_stratum": "hard",
            "tier": "tier1",
            "capability": "sr",
        }
        for i in range(3)
    ]
    path = write_samples(tmp_path, "palm/recognition", rows, stamp="2026-01-01T00-00-00.000000")
    assert path.name == "samples_palm_recognition_2026-01-01T00-00-00.000000.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 3 and [row["doc_id"] for row in lines] == [0, 1, 2]
    assert list(lines[1])[:5] == ["doc_id", "messages", "response", "target", "metrics"]
    assert lines[0]["error"] == "timeout" and lines[0]["response"] is None
    assert lines[1]["metrics"] == {"token_f1": 1.0}
    assert lines[2]["language"] == "en" and lines[2]["negative_stratum"] == "hard" and lines[2]["capability"] == "sr"
    with pytest.raises(DataError, match="doc_id"):
        write_samples(tmp_path, "t", [{"response": "x"}])


def test_breakdown_math_by_hand():
    rows = [
        {"language": "en", "n_speakers": 1, "f1": 1.0, "metrics": {"bleu": 10.0}},
        {"language": "en", "n_speakers": 2, "f1": 0.5, "metrics": {"bleu": 30.0}},
        {"language": "en", "n_speakers": 2, "f1": None},
        {"language": "zh", "n_speakers": 1, "f1": 0.0, "metrics": {"bleu": float("nan")}},
    ]
    by_lang = breakdown(rows, ["language"], ["f1", "bleu"])
    assert by_lang == [
        {"language": "en", "count": 3, "f1": 0.75, "f1_count": 2, "bleu": 20.0, "bleu_count": 2},
        {"language": "zh", "count": 1, "f1": 0.0, "f1_count": 1, "bleu": None, "bleu_count": 0},
    ]
    two = breakdown(rows, ["n_speakers", "language"], ["f1"])
    assert [(r["n_speakers"], r["language"], r["f1"]) for r in two] == [(1, "en", 1.0), (1, "zh", 0.0), (2, "en", 0.5)]
    with_ci = breakdown(rows, ["language"], ["f1", "bleu"], ci=True)
    lo, hi = with_ci[0]["f1_ci"]
    assert 0.5 <= lo <= 0.75 <= hi <= 1.0
    assert with_ci[1]["f1_ci"] is None and with_ci[1]["bleu_ci"] is None  # one value: no interval
    assert breakdown(rows, ["language"], ["f1"], ci=True) == breakdown(rows, ["language"], ["f1"], ci=True)
    # a group's CI does not move when another group is added
    more = breakdown(rows + [{"language": "fr", "f1": 0.3}], ["language"], ["f1"], ci=True)
    assert more[0]["f1_ci"] == breakdown(rows, ["language"], ["f1"], ci=True)[0]["f1_ci"]


def test_plots_write_png(tmp_path):
    rows = [
        {"model": m, "strategy": s, "n_speakers": n, "task_id": f"t{n}", "f1": v * n}
        for m, v in (("a", 0.1), ("b", 0.2))
        for s in ("Base", "HD")
        for n in (1, 2, 3, 4)
    ]
    line = plots.line_plot(
        rows,
        "f1",
        tmp_path / "plots" / "speakers.png",
        x_field="n_speakers",
        x_values=[1, 2, 3, 4],
        series=["model", "strategy"],
    )
    bars = plots.bar_plot(rows, "f1", tmp_path / "plots" / "tasks.png", x_field="task_id")
    for path in (line, bars):
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    with pytest.raises(DataError, match="no rows"):
        plots.line_plot(rows, "missing_metric", tmp_path / "x.png", x_field="n_speakers")


def test_combined_report_has_a_row_per_model_and_the_missing_reason(tmp_path):
    from lalm_eval.cli import main
    from lalm_eval.report.combine import combine
    from lalm_eval.report.results import write_results, write_samples

    for model, value in (("cascade", 1.0), ("tiny", 0.0)):
        out = tmp_path / model
        rows = [
            {
                "doc_id": i,
                "task": "recognition",
                "n_speakers": n,
                "negative_stratum": "",
                "metrics": {"recognition_presence": value, "llm_judge": None},
            }
            for i, n in enumerate((1, 2, 2))
        ]
        write_samples(out, "palm_recognition", rows, stamp="S")
        write_results(
            out,
            {
                "results": {"palm_recognition": {"alias": "r", "recognition_presence,none": value}},
                "configs": {"palm_recognition": {"metadata": {"strategy": "base", "report": "palm_speakers"}}},
                "config": {"model": model},
                "metric_info": {"palm_recognition": {"llm_judge": {"missing": "no judge given"}}},
            },
            stamp="S",
        )
    text, files = combine([tmp_path / "cascade", tmp_path / "tiny"], tmp_path / "rep")
    lines = [line for line in text.splitlines() if line.startswith("| cascade") or line.startswith("| tiny")]
    # palm_full: per speaker count, recognition · {LLM-judge score, presence score} (metrics sorted
    # by id), in %; 3 and 4 speakers have no rows
    assert lines[0] == "| cascade | base | — | 100.00 | — | 100.00 | — | — | — | — |"
    assert lines[1] == "| tiny | base | — | 0.00 | — | 0.00 | — | — | — | — |"
    assert "— LLM-judge score: no judge given" in text
    assert any(p.suffix == ".png" for p in files)
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2  # a folder without results: a clear error
