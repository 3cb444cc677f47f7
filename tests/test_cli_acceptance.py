"""The issue's acceptance command, end to end on a fresh cache: tiny Qwen2-Audio, the embedded
PALM and MSU builds made by the task hooks, results + samples written, rerun served by the cache."""

import glob
import json
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "qwen2_audio"
    subprocess.run(
        [sys.executable, "-m", "lalm_eval.cli", "make-tiny-model", "qwen2_audio", str(out)],
        check=True,
        capture_output=True,
    )
    return out


def run_cli(tiny_model, out, cache, cwd):
    cmd = [
        sys.executable,
        "-m",
        "lalm_eval.cli",
        "--model",
        "qwen2_audio",
        "--model_args",
        f"pretrained={tiny_model}",
        "--tasks",
        "palm_recognition,msu_tier4",
        "--limit",
        "8",
        "--batch_size",
        "4",
        "--output_path",
        str(out),
        "--log_samples",
        "--cache_dir",
        str(cache),
        # the tier-4 tasks allow 512-1024 new tokens, which a random tiny model always uses up
        # (3 of this test's ~6 minutes on 2 cores); the command is otherwise the acceptance one
        "--gen_kwargs",
        "max_new_tokens=24",
    ]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=cwd)


def test_acceptance_command_and_cached_rerun(tiny_model, tmp_path):
    cache, cwd = tmp_path / "cache", tmp_path  # cwd without ./palm-bench: the hooks build the embedded data
    first = run_cli(tiny_model, tmp_path / "out1", cache, cwd)
    (results_file,) = glob.glob(str(tmp_path / "out1" / "results_*.json"))
    results = json.load(open(results_file))
    assert "palm_recognition" in results["results"] and "msu_tier4" in results["groups"]
    assert len(results["group_subtasks"]["msu_tier4"]) == 5
    assert results["n-samples"]["palm_recognition"]["effective"] == 8
    assert results["cache"]["hits"] == 0 and results["cache"]["misses"] > 0
    samples = glob.glob(str(tmp_path / "out1" / "samples_*.jsonl"))
    assert len(samples) == 6  # palm_recognition + the 5 tier-4 tasks
    assert (cache / "datasets" / "palm-bench-small" / "build_info.json").is_file()
    assert "model calls: " in first.stdout

    run_cli(tiny_model, tmp_path / "out2", cache, cwd)
    (again,) = glob.glob(str(tmp_path / "out2" / "results_*.json"))
    cached = json.load(open(again))
    assert cached["cache"]["misses"] == 0 and cached["cache"]["hits"] == results["cache"]["misses"]
    assert cached["results"] == results["results"]


def test_unknown_task_is_a_clear_error(tiny_model, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "lalm_eval.cli",
        "--model",
        "qwen2_audio",
        "--model_args",
        f"pretrained={tiny_model}",
        "--tasks",
        "palm_recogniton",
        "--cache_dir",
        str(tmp_path),
    ]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 2 and "did you mean palm_recognition" in res.stderr
