"""Round 2 of issue 20, ``lalm-eval report`` as a new user meets it (findings F8-F13, F29, F30, F38):
the same folder twice, two runs whose folders share a name, several runs (tasks one at a time,
reruns, another model) in one folder, results of an older lalm-eval or a hand-made file, a
misspelt ``--metrics`` or a ``--layout`` of another benchmark, results files that are not a
results object or are cut short.

Every run folder is what ``lalm-eval --output_path DIR --log_samples`` writes: ``results_<stamp>.json``
and ``samples_<task>_<stamp>.jsonl`` written by the harness's own writers
(:func:`lalm_eval.report.results.write_results` / ``write_samples``), with a PALM recognition
task's config and sample fields as a real run records them (no model runs: the report reads files).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lalm_eval.report.results import write_results, write_samples
from tests.bad_inputs.harness import Case, run_case

CLI = "lalm-eval"
OLD, NEW = "2026-12-01T23-47-25.183812", "2026-12-01T23-56-48.362224"  # two runs, the second newer
METRICS = ("recognition_presence", "bleu", "token_f1", "bertscore", "llm_judge")
NO_JUDGE = "no LLM judge configured (run with --judge, e.g. --judge openai:model=...,base_url=...)"


def sample(doc_id: int, value: float, task: str = "recognition", n_speakers: int = 4, stratum: str = "semi-hard"):
    """One line of a PALM sample log as a run writes it (prompt, response, metrics, doc fields)."""
    metrics = {m: (None if m == "llm_judge" else value) for m in METRICS if task == "recognition" or m != "llm_judge"}
    return {
        "doc_id": doc_id,
        "messages": [{"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": "Did Jason speak?"}]}],
        "response": "No.",
        "target": "No, Jason did not speak.",
        "metrics": metrics,
        "error": None,
        "cached": False,
        "audio_s": 25.4,
        "seen_s": 25.4,
        "truncated": False,
        "task": task,
        "n_speakers": n_speakers,
        "negative_stratum": stratum,
        "language": "en",
    }


def task_config(task: str, kind: str, report: bool = True) -> dict:
    meta = {"version": 1.0, "strategy": "base", "breakdown": ["task", "n_speakers"], "answer_kind": kind}
    if report:
        meta["report"] = "palm_speakers"
    return {
        "task": task,
        "dataset_path": "palm-bench",
        "dataset_name": kind,
        "test_split": "test",
        "doc_to_audio": "{{ audio }}",
        "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True} for m in METRICS],
        "metadata": meta,
    }


def write_run(
    folder: Path,
    values: list[float],
    *,
    model: str | None = "qwen2_audio",
    model_args: str = "pretrained=tiny",
    task: str = "palm_recognition",
    stamp: str = OLD,
    report: bool = True,
    **sample_kw,
) -> Path:
    """A run of ``task`` with one sample per value (all ``sample_kw`` fields alike) into ``folder``."""
    kind = task.split("_")[1]
    rows = [sample(i, v, task=kind, **sample_kw) for i, v in enumerate(values)]
    write_samples(folder, task, rows, stamp=stamp)
    mean = sum(values) / len(values)
    entry = {"alias": f"PALM {kind} (Base)"}
    for m in METRICS:
        entry[f"{m},none"] = None if m == "llm_judge" else mean
        entry[f"{m}_stderr,none"] = "N/A"
        entry[f"{m}_ci95,none"] = None if m == "llm_judge" else [min(values), max(values)]
    config = {"model": model, "model_args": model_args, "batch_size": "1", "seed": 0, "limit": len(values)}
    return write_results(
        folder,
        {
            "results": {task: entry},
            "configs": {task: task_config(task, kind, report)},
            "versions": {task: 1.0},
            "n-samples": {task: {"original": 408, "effective": len(values), "scored": len(values)}},
            "higher_is_better": {task: {m: True for m in METRICS}},
            "config": config if model is not None else {},
            "metric_info": {task: {"llm_judge": {"n": 0, "failures": len(values), "missing": NO_JUDGE}}},
        },
        stamp=stamp,
    )


def edit_results(path: Path, edit) -> None:
    """Change a written results file the way a hand edit or an older version would."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc = edit(doc) or doc
    path.write_text(json.dumps(doc), encoding="utf-8")


# ---------------------------------------------------------------- reading the report


def table(text: str, title: str) -> tuple[list[str], list[list[str]]]:
    """(header, body rows) of the first Markdown table under the ``## title`` heading."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("## ") and title in line)
    block = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.startswith("|"):
            block.append([c.strip() for c in line.strip("|").split("|")])
        elif block:
            break
    return block[0], block[2:]


def cells(text: str, title: str) -> dict[str, dict[str, str]]:
    """{row label: {column: cell}} of a layout table."""
    header, body = table(text, title)
    return {row[0]: dict(zip(header, row)) for row in body}


STRATA = "negative samples by the stratum"
FULL = "speakers × task, every metric"


def runs_list(text: str) -> str:
    return text.split("## Runs", 1)[1].split("\n## ", 1)[0]


# ---------------------------------------------------------------- F8: the same folder twice


def same_folder_twice(tmp):
    write_run(tmp / "base", [0.0, 1.0])
    return ["report", tmp / "base", tmp / "base"]


def same_folder_other_spelling(tmp):
    write_run(tmp / "base", [0.0, 1.0])
    os.symlink(tmp / "base", tmp / "link")
    (tmp / "x").mkdir()
    return ["report", tmp / "base", f"{tmp}/x/../base/", tmp / "link"]


def counted_once(tmp, result):
    strata = cells(result.out, STRATA)
    assert list(strata) == ["qwen2_audio"], strata
    assert strata["qwen2_audio"]["semi-hard · n"] == "2"  # not 4 (or 6): each sample counted once
    assert strata["qwen2_audio"]["semi-hard · token F1"] == "50.00"
    note = [line for line in runs_list(result.out).splitlines() if "reported once" in line]
    assert len(note) == 1 and f"{tmp}/base was given " in note[0], note


# ---------------------------------------------------------------- F9: labels that clash


def same_basename(tmp):
    write_run(tmp / "e1" / "qwen", [0.0])
    write_run(tmp / "e2" / "qwen", [1.0, 1.0], stamp=NEW)
    return ["report", tmp / "e1" / "qwen", tmp / "e2" / "qwen"]


def two_rows_by_path(tmp, result):
    strata = cells(result.out, STRATA)
    assert list(strata) == ["e1/qwen", "e2/qwen"], strata
    assert strata["e1/qwen"]["semi-hard · n"] == "1" and strata["e1/qwen"]["semi-hard · token F1"] == "0.00"
    assert strata["e2/qwen"]["semi-hard · n"] == "2" and strata["e2/qwen"]["semi-hard · token F1"] == "100.00"
    listed = runs_list(result.out)  # which folder each label is
    assert f"- e1/qwen: {tmp}/e1/qwen (results_{OLD}.json" in listed
    assert f"- e2/qwen: {tmp}/e2/qwen (results_{NEW}.json" in listed


def same_deep_suffix(tmp):
    for top, v in (("a", 0.0), ("b", 1.0)):
        write_run(tmp / top / "exp" / "qwen2_audio", [v])
    write_run(tmp / "c" / "qwen2_audio", [0.5])
    return ["report", tmp / "a" / "exp" / "qwen2_audio", tmp / "b" / "exp" / "qwen2_audio", tmp / "c" / "qwen2_audio"]


def three_rows_by_shortest_suffix(tmp, result):
    strata = cells(result.out, STRATA)
    assert list(strata) == ["a/exp/qwen2_audio", "b/exp/qwen2_audio", "c/qwen2_audio"], strata
    assert [strata[k]["semi-hard · token F1"] for k in strata] == ["0.00", "100.00", "50.00"]


def fine_tunes(tmp):
    write_run(tmp / "base", [0.0])
    write_run(tmp / "lora_attn", [1.0])
    return ["report", tmp / "base", tmp / "lora_attn"]


def rows_by_folder_name(tmp, result):
    assert list(cells(result.out, STRATA)) == ["base", "lora_attn"]


def model_named_like_a_folder(tmp):
    """Run 1's model is "qwen2_audio"; run 2 names none and lives in a folder called qwen2_audio."""
    write_run(tmp / "runs" / "a", [0.0])
    write_run(tmp / "other" / "qwen2_audio", [1.0], model=None)
    return ["report", tmp / "runs" / "a", tmp / "other" / "qwen2_audio"]


def two_distinct_rows(tmp, result):
    strata = cells(result.out, STRATA)  # labels clash: both by folder, and the Runs list says which is which
    assert {k: v["semi-hard · token F1"] for k, v in strata.items()} == {"a": "0.00", "qwen2_audio": "100.00"}
    assert f"- qwen2_audio: {tmp}/other/qwen2_audio (" in runs_list(result.out) and "| None |" not in result.out


# ---------------------------------------------------------------- F10: several results files in a folder


def tasks_one_at_a_time(tmp):
    write_run(tmp / "mix", [1.0], task="palm_recognition", stamp=OLD)
    write_run(tmp / "mix", [0.5, 0.5], task="palm_captioning", stamp=NEW, n_speakers=2)
    return ["report", tmp / "mix"]


def both_tasks_each_from_its_file(tmp, result):
    full = cells(result.out, FULL)["qwen2_audio"]
    assert full["4 speakers · recognition · token F1"] == "100.00"  # the older file's task is reported
    assert full["2 speakers · captioning · token F1"] == "50.00"
    listed = runs_list(result.out)
    assert f"results_{NEW}.json: palm_captioning" in listed and f"results_{OLD}.json: palm_recognition" in listed


def rerun_of_a_task(tmp):
    write_run(tmp / "run", [0.0, 0.0, 0.0], stamp=OLD)
    write_run(tmp / "run", [1.0], stamp=NEW)
    return ["report", tmp / "run"]


def newest_result_used_and_older_named(tmp, result):
    strata = cells(result.out, STRATA)["qwen2_audio"]
    assert strata["semi-hard · n"] == "1" and strata["semi-hard · token F1"] == "100.00"  # not pooled
    assert f"not used: palm_recognition of results_{OLD}.json" in runs_list(result.out)


def another_model_in_the_folder(tmp):
    write_run(tmp / "run", [0.0, 0.0], model="cascade", model_args="", task="palm_captioning", stamp=OLD)
    write_run(tmp / "run", [1.0], stamp=NEW)
    return ["report", tmp / "run"]


def other_model_left_out_and_said(tmp, result):
    header, _ = table(result.out, FULL)
    assert not any("captioning" in h for h in header), header  # cascade's captioning is not qwen2_audio's
    assert cells(result.out, STRATA)["qwen2_audio"]["semi-hard · n"] == "1"
    listed = runs_list(result.out)
    assert f"left out: results_{OLD}.json (a run of cascade" in listed and "its own --output_path" in listed


def other_model_args_in_the_folder(tmp):
    write_run(tmp / "run", [0.0], model_args="pretrained=ckpt-100", task="palm_captioning", stamp=OLD)
    write_run(tmp / "run", [1.0], model_args="pretrained=ckpt-900", stamp=NEW)
    return ["report", tmp / "run"]


def other_checkpoint_left_out(tmp, result):
    assert "other model_args" in runs_list(result.out)
    header, _ = table(result.out, FULL)
    assert not any("captioning" in h for h in header), header  # ckpt-100's captioning is not merged in


def older_file_damaged(tmp):
    write_run(tmp / "run", [1.0], stamp=NEW)
    (tmp / "run" / f"results_{OLD}.json").write_text('{"results": {"palm_recogn', encoding="utf-8")
    return ["report", tmp / "run"]


def older_file_without_sample_log(tmp):
    write_run(tmp / "run", [1.0], task="palm_recognition", stamp=OLD)
    (tmp / "run" / f"samples_palm_recognition_{OLD}.jsonl").unlink()  # run without --log_samples
    write_run(tmp / "run", [1.0], task="palm_captioning", stamp=NEW)
    return ["report", tmp / "run"]


def lm_eval_nested_layout(tmp):
    write_run(tmp / "out" / "qwen2_audio", [1.0])  # lm-eval's <output_path>/<model>/results_*.json
    return ["report", tmp / "out"]


# ---------------------------------------------------------------- F11 / F30: results without task metadata or config


def older_version_results(tmp):
    path = write_run(tmp / "old", [0.0, 1.0])

    def strip(doc):
        for key in ("metric_info", "lalm_eval_version", "sample_info", "usage", "adapter_counters", "model_identity"):
            doc.pop(key, None)
        for cfg in doc["configs"].values():
            cfg.pop("metadata", None)

    edit_results(path, strip)
    return ["report", tmp / "old"]


def task_level_values_shown(tmp, result):
    header, body = table(result.out, "Tasks without a report layout")
    row = dict(zip(header, body[0]))
    assert row["Model"] == "qwen2_audio"
    assert row["PALM recognition (Base) · token_f1"] == "0.5000 [0.0000, 1.0000]"
    assert row["PALM recognition (Base) · llm_judge"] == "—"
    assert "declare no metadata.report" in result.out


def own_task_without_report(tmp):
    """A task of the user's own (``metadata: {version: 1}``) next to a PALM task, in two runs."""
    for model, v in (("m1", 1.0), ("m2", 0.0)):
        write_run(tmp / model, [v], model=model, stamp=OLD)
        write_run(tmp / model, [v], model=model, task="my_task", stamp=NEW, report=False)
    return ["report", tmp / "m1", tmp / "m2", "--metrics", "token_f1"]


def own_task_in_its_table(tmp, result):
    header, body = table(result.out, "Tasks without a report layout")
    assert header == ["Model", "PALM task (Base) · token_f1"] and body == [
        ["m1", "1.0000 [1.0000, 1.0000]"],
        ["m2", "0.0000 [0.0000, 0.0000]"],
    ]
    assert cells(result.out, STRATA)["m1"]["semi-hard · token F1"] == "100.00"


def empty_results(tmp):
    path = write_run(tmp / "run", [1.0])
    edit_results(path, lambda d: {**d, "results": {}})
    return ["report", tmp / "run"]


def no_metric_values(tmp):
    path = write_run(tmp / "run", [1.0], report=False)
    edit_results(path, lambda d: {**d, "results": {"palm_recognition": {"alias": "r"}}})
    return ["report", tmp / "run"]


def without_config(tmp):
    path = write_run(tmp / "noconf", [1.0])
    edit_results(path, lambda d: {k: v for k, v in d.items() if k != "config"})
    return ["report", tmp / "noconf"]


def labelled_by_folder(tmp, result):
    assert list(cells(result.out, STRATA)) == ["noconf"]
    assert "| None |" not in result.out
    assert "names no model (no config.model)" in runs_list(result.out)


def two_without_config(tmp):
    for name, v in (("a", 0.0), ("b", 1.0)):
        path = write_run(tmp / name, [v])
        edit_results(path, lambda d: {**d, "config": None})
    return ["report", tmp / "a", tmp / "b"]


def two_rows_by_folder(tmp, result):
    strata = cells(result.out, STRATA)
    assert {k: v["semi-hard · token F1"] for k, v in strata.items()} == {"a": "0.00", "b": "100.00"}


# ---------------------------------------------------------------- F12 / F13: flags the runs cannot satisfy


def base_run(*flags):
    def make(tmp):
        write_run(tmp / "base", [1.0])
        return ["report", tmp / "base", *flags]

    return make


def only_one_speaker_table_note(tmp, result):
    assert "no sample of the runs given is in this table" in result.out and "n_speakers 1" in result.out


# ---------------------------------------------------------------- F29 / F38: files that are not results


def results_text(text: str | bytes, name: str = f"results_{OLD}.json"):
    def make(tmp):
        write_run(tmp / "run", [1.0])
        path = tmp / "run" / name
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return ["report", tmp / "run"]

    return make


def results_edit(edit):
    def make(tmp):
        edit_results(write_run(tmp / "run", [1.0]), edit)
        return ["report", tmp / "run"]

    return make


def truncated_results(tmp):
    path = write_run(tmp / "trunc", [1.0])
    path.write_bytes(path.read_bytes()[:300])
    return ["report", tmp / "trunc"]


def truncated_sample_log(tmp):
    write_run(tmp / "run", [1.0, 0.0])
    log = tmp / "run" / f"samples_palm_recognition_{OLD}.jsonl"
    log.write_bytes(log.read_bytes()[:-40])
    return ["report", tmp / "run"]


def sample_metrics_a_list(tmp):
    write_run(tmp / "run", [1.0])
    log = tmp / "run" / f"samples_palm_recognition_{OLD}.jsonl"
    log.write_text(log.read_text() + json.dumps({"doc_id": 1, "metrics": ["token_f1", 1.0]}) + "\n")
    return ["report", tmp / "run"]


def sample_log_not_utf8(tmp):
    write_run(tmp / "run", [1.0])
    log = tmp / "run" / f"samples_palm_recognition_{OLD}.jsonl"
    log.write_bytes(log.read_bytes() + b"\xff\xfe\n")
    return ["report", tmp / "run"]


def sample_log_line_not_object(tmp):
    write_run(tmp / "run", [1.0])
    log = tmp / "run" / f"samples_palm_recognition_{OLD}.jsonl"
    log.write_text(log.read_text() + "[1, 2]\n")
    return ["report", tmp / "run"]


RESULTS = f"{{tmp}}/run/results_{OLD}.json"
FIX = "rerun lalm-eval with --output_path this folder"

CASES = [
    # F8
    Case("nu-report-same-folder-twice", CLI, make=same_folder_twice, exit=0, check=counted_once),
    Case("nu-report-same-folder-other-spellings", CLI, make=same_folder_other_spelling, exit=0, check=counted_once),
    # F9
    Case("nu-report-same-basename-two-runs", CLI, make=same_basename, exit=0, check=two_rows_by_path),
    Case("nu-report-same-deep-suffix", CLI, make=same_deep_suffix, exit=0, check=three_rows_by_shortest_suffix),
    Case("nu-report-fine-tunes-by-folder-name", CLI, make=fine_tunes, exit=0, check=rows_by_folder_name),
    Case("nu-report-model-named-like-a-folder", CLI, make=model_named_like_a_folder, exit=0, check=two_distinct_rows),
    # F10
    Case("nu-report-tasks-one-at-a-time", CLI, make=tasks_one_at_a_time, exit=0, check=both_tasks_each_from_its_file),
    Case("nu-report-rerun-newest-wins", CLI, make=rerun_of_a_task, exit=0, check=newest_result_used_and_older_named),
    Case(
        "nu-report-another-model-left-out",
        CLI,
        make=another_model_in_the_folder,
        exit=0,
        check=other_model_left_out_and_said,
    ),
    Case(
        "nu-report-other-checkpoint-left-out",
        CLI,
        make=other_model_args_in_the_folder,
        exit=0,
        check=other_checkpoint_left_out,
    ),
    Case(
        "nu-report-older-results-damaged",
        CLI,
        make=older_file_damaged,
        says=(f"{{tmp}}/run/results_{OLD}.json:1:", "invalid json", "cut short", FIX),
    ),
    Case(
        "nu-report-older-task-without-sample-log",
        CLI,
        make=older_file_without_sample_log,
        says=(f"samples_palm_recognition_{OLD}.jsonl", f"results_{OLD}.json", "--log_samples", "an older run"),
    ),
    Case(
        "nu-report-lm-eval-nested-folders",
        CLI,
        make=lm_eval_nested_layout,
        says=("{tmp}/out: no results_*.json here", "qwen2_audio hold runs", "give those folders"),
    ),
    # F11
    Case("nu-report-older-version-results", CLI, make=older_version_results, exit=0, check=task_level_values_shown),
    Case("nu-report-own-task-without-report", CLI, make=own_task_without_report, exit=0, check=own_task_in_its_table),
    Case(
        "nu-report-no-task-results", CLI, make=empty_results, says=(RESULTS, "'results'", "no task results", "--tasks")
    ),
    Case("nu-report-no-metric-values", CLI, make=no_metric_values, says=(RESULTS, "no task of these runs has a value")),
    # F30
    Case("nu-report-no-config", CLI, make=without_config, exit=0, check=labelled_by_folder),
    Case("nu-report-two-runs-no-config", CLI, make=two_without_config, exit=0, check=two_rows_by_folder),
    # F12
    Case(
        "nu-report-metrics-misspelt",
        CLI,
        make=base_run("--metrics", "tokn_f1"),
        says=("--metrics", "'tokn_f1'", "did you mean token_f1", "bertscore, bleu"),
    ),
    Case("nu-report-metrics-only-commas", CLI, make=base_run("--metrics", ","), says=("--metrics", "names no metric")),
    Case(
        "nu-report-metrics-not-in-runs",
        CLI,
        make=base_run("--metrics", "wer"),
        says=("--metrics", "no run has a metric 'wer'"),
    ),
    # F13
    Case(
        "nu-report-layout-of-absent-tasks",
        CLI,
        make=base_run("--layout", "msu_table3"),
        says=("--layout", "msu_table3", "msu_tiers", "palm_table1"),
    ),
    Case(
        "nu-report-layout-misspelt",
        CLI,
        make=base_run("--layout", "palm_tabel1"),
        says=("--layout: unknown report layout 'palm_tabel1'", "did you mean palm_table1", "pick one of"),
    ),
    Case("nu-report-layout-only-commas", CLI, make=base_run("--layout", ","), says=("--layout", "names no layout")),
    Case(
        "nu-report-layout-filter-takes-nothing",
        CLI,
        make=base_run("--layout", "palm_table2"),
        exit=0,
        check=only_one_speaker_table_note,
    ),
    # F29
    Case(
        "nu-report-results-a-list",
        CLI,
        make=results_text("[1, 2]"),
        says=(RESULTS, "not a results object (a json list)", FIX),
    ),
    Case("nu-report-results-a-string", CLI, make=results_text('"done"'), says=(RESULTS, "(a json string)")),
    Case(
        "nu-report-results-field-a-list",
        CLI,
        make=results_edit(lambda d: {**d, "results": [1]}),
        says=(RESULTS, "field 'results'", "must be an object, got a json list"),
    ),
    Case(
        "nu-report-task-entry-a-number",
        CLI,
        make=results_edit(lambda d: {**d, "results": {"palm_recognition": 0.5}}),
        says=(RESULTS, "field 'results.palm_recognition'", "a json number"),
    ),
    Case(
        "nu-report-metadata-a-string",
        CLI,
        make=results_edit(lambda d: d["configs"]["palm_recognition"].update(metadata="palm_speakers")),
        says=(RESULTS, "field 'configs.palm_recognition.metadata'", "a json string"),
    ),
    Case(
        "nu-report-config-a-list",
        CLI,
        make=results_edit(lambda d: {**d, "config": ["qwen2_audio"]}),
        says=(RESULTS, "field 'config'"),
    ),
    Case(
        "nu-report-no-results-key",
        CLI,
        make=results_edit(lambda d: {k: v for k, v in d.items() if k != "results"}),
        says=(RESULTS, "no 'results'"),
    ),
    # F38
    Case(
        "nu-report-results-truncated",
        CLI,
        make=truncated_results,
        says=(f"{{tmp}}/trunc/results_{OLD}.json:", "cut short", FIX, "or remove it"),
    ),
    Case("nu-report-results-not-utf8", CLI, make=results_text(b"\xff\xfe\x00{"), says=(RESULTS, "not utf-8 text", FIX)),
    Case(
        "nu-report-sample-log-truncated",
        CLI,
        make=truncated_sample_log,
        says=(f"samples_palm_recognition_{OLD}.jsonl:2:", "cut short", "--log_samples"),
    ),
    Case(
        "nu-report-sample-line-not-object",
        CLI,
        make=sample_log_line_not_object,
        says=(f"samples_palm_recognition_{OLD}.jsonl:2:", "json object", "--log_samples"),
    ),
    Case(
        "nu-report-sample-metrics-a-list",
        CLI,
        make=sample_metrics_a_list,
        says=(f"samples_palm_recognition_{OLD}.jsonl:2:", "field 'metrics'", "a json list"),
    ),
    Case(
        "nu-report-sample-log-not-utf8",
        CLI,
        make=sample_log_not_utf8,
        says=(f"samples_palm_recognition_{OLD}.jsonl", "not utf-8", "--log_samples"),
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)
