"""The proof of issue 22 step 5: a third benchmark (tests/toy_bench/) is installed as a distribution
(a ``toy_bench-0.1.dist-info`` on the path) and reaches the harness through entry points only: its
task folder, its metric (its own display name), its judge (its own template), a stand-in model and
its builder's card template. ``lalm-eval --tasks toy_bench`` runs end to end and ``lalm-eval
report`` prints its layout, and no file under lalm_eval/ names it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "tests" / "toy_bench"

SCRIPT = r"""
import contextlib, io, json, sys
from lalm_eval.cli import main

eval_rc = main(["--model", "toy_echo", "--tasks", "toy_bench", "--limit", "2", "--output_path", "out",
                "--cache_dir", "cache", "--log_samples"])
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    report_rc = main(["report", "out"])

from lalm_eval.judges import make_judge
from lalm_eval.judges.base import JudgeItem
from lalm_eval.llm.base import TextLLM
from lalm_eval.report.layouts import metric_name, percent_factor


class NoLLM(TextLLM):
    settings = property(lambda self: {"model": "none"})

    def complete(self, batch, **settings):
        raise AssertionError("not asked")


judge = make_judge("toy_speaker", NoLLM())
prompt = judge.render(JudgeItem("Who is speaking?", "Alice", "I hear Alice."))
print("RESULT " + json.dumps({"eval": eval_rc, "report": report_rc, "printed": printed.getvalue(),
                              "prompt": prompt, "name": metric_name("toy_name_match"),
                              "percent": percent_factor("toy_name_match")}))
"""


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    work = tmp_path_factory.mktemp("toy_run")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(TOY), str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(work / "hf"),
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=work, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :]), work


def test_the_toy_benchmark_runs_end_to_end_through_entry_points(toy_run):
    out, work = toy_run
    assert out["eval"] == 0
    [results] = (work / "out").glob("results_*.json")
    data = json.loads(results.read_text())
    speaker = data["results"]["toy_bench_speaker"]
    assert speaker["toy_name_match,none"] == 1.0  # the stand-in names Alice, the first clips' speaker
    assert data["results"]["toy_bench_words"]["toy_name_match,none"] == 0.0
    card = (work / "cache" / "datasets" / "toy-rooms-tiny" / "README.md").read_text()
    assert "built by the toy benchmark's own card template" in card and "config_name: rooms" in card


def test_lalm_eval_report_prints_the_toy_layout_with_its_metric_names(toy_run):
    out, _ = toy_run
    assert out["report"] == 0
    printed = out["printed"]
    assert "## Toy: by question" in printed
    header = "| Model | speaker · speaker named | speaker · token F1 | words · speaker named | words · token F1 |"
    assert header in printed and "| toy_echo | 100.00 | — | 0.00 |" in printed
    assert (out["name"], out["percent"]) == ("speaker named", 100)


def test_the_toy_judge_renders_its_own_template(toy_run):
    out, _ = toy_run
    assert out["prompt"].startswith('Does the answer name the speaker "Alice"? Question: Who is speaking?')


def test_no_file_under_lalm_eval_names_the_toy_benchmark():
    offenders = []
    for path in sorted((ROOT / "lalm_eval").rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        text = path.read_bytes().decode("utf-8", errors="ignore").lower()
        if "toy" in text:
            offenders.append(path.relative_to(ROOT).as_posix())
    assert not offenders, offenders


def test_a_broken_task_folder_entry_point_is_a_clear_error(monkeypatch, tmp_path):
    import importlib.metadata as metadata

    from lalm_eval.errors import ConfigError
    from lalm_eval.resources import TASK_FOLDERS_GROUP, task_folders, tasks_dir

    def points(value):
        return lambda group: [metadata.EntryPoint("rooms", value, group)] if group == TASK_FOLDERS_GROUP else []

    monkeypatch.setattr(metadata, "entry_points", points("no_such_package_here:TASKS"))
    with pytest.raises(ConfigError, match=r"entry point rooms = no_such_package_here:TASKS .*cannot load it"):
        task_folders()
    monkeypatch.setattr(metadata, "entry_points", points("os.path:devnull"))  # loads, but names no folder
    with pytest.raises(ConfigError, match="is not a folder; reinstall or remove the package"):
        task_folders()
    monkeypatch.setattr(metadata, "entry_points", points("tests.test_third_benchmark:TOY"))
    assert task_folders() == [tasks_dir(), TOY]
