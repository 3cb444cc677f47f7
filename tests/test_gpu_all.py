"""``bench/gpu_all.sh``: the GPU check's table (issue 23).

The ``vllm``-marked test runs ``bash bench/gpu_all.sh --tiny`` (the same code path as the full-size
run, CPU sizes, in ``.venv-vllm``; ``scripts/test_vllm.sh``) and checks that its JSON has all four
rows with numbers. The others need no vLLM: the table's rendering of a failed row and the
script's flag check.
"""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _gpu_all():
    spec = importlib.util.spec_from_file_location("gpu_all", ROOT / "bench" / "gpu_all.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_table_reports_a_failed_row_in_place_and_the_ratio_of_the_others():
    g = _gpu_all()
    rows = [
        g.row("1 hf", "adapter vs hand loop", 3.0, 2.0, "8 clips"),
        g.failed("2 vllm", "row_vllm", "exit 1: RuntimeError: engine died"),
        g.row("3 serve", "serve", 5.0, None, "8/8 answered"),
    ]
    lines = g.table(rows).splitlines()
    assert lines[2] == "| 1 hf | adapter vs hand loop | 3.00 | 2.00 | 1.50 | 8 clips |"
    assert lines[3] == "| 2 vllm | row_vllm | — | — | — | failed: exit 1: RuntimeError: engine died |"
    assert lines[4] == "| 3 serve | serve | 5.00 | — | — | 8/8 answered |"


def test_every_lora_recipe_is_a_training_row():
    names = _gpu_all().lora_recipes()
    assert "lora_attn" in names and "lora_audio_tower" in names
    assert "full" not in names and "prompt_tuning" not in names


def test_script_rejects_an_unknown_flag():
    proc = subprocess.run(["bash", "bench/gpu_all.sh", "--tinny"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "gpu_all.sh: error: --tinny: unknown flag" in proc.stderr


@pytest.mark.vllm
def test_tiny_run_prints_all_four_rows_with_numbers(tmp_path):
    pytest.importorskip("vllm")
    env = {**os.environ, "WORK": str(tmp_path), "VLLM_VENV": str(Path(sys.executable).parents[1])}
    if os.environ.get("LALM_VLLM_TEST_CACHE"):  # as tests/test_vllm_serve.py: the PALM build's cache
        env["CACHE_DIR"] = os.environ["LALM_VLLM_TEST_CACHE"]
    proc = subprocess.run(
        ["bash", "bench/gpu_all.sh", "--tiny"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((tmp_path / "gpu_all.json").read_text())
    rows = data["rows"]
    assert [r["row"] for r in rows[:3]] == ["1 hf", "2 vllm", "3 serve"]
    train = [r for r in rows if r["row"] == "4 train"]
    assert len(train) == len(_gpu_all().lora_recipes()) == len(rows) - 3
    for r in rows:
        assert r["samples_per_s"] is not None and r["samples_per_s"] > 0, r
    for r in rows[:2]:
        assert r["reference_per_s"] > 0, r
    assert "identical outputs" in rows[1]["note"] and "8/8 answered" in rows[2]["note"]
    for r in rows:
        assert f"| {r['row']} | {r['what']} |" in proc.stdout


def test_full_size_without_a_gpu_is_a_clear_error(tmp_path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    cmd = [sys.executable, "bench/gpu_all.py", "--work", str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 2
    assert "gpu_all.py: error: no CUDA device visible to torch; pass --tiny" in proc.stderr
    assert "Traceback" not in proc.stderr
