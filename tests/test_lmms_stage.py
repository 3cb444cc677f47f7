"""The lmms-eval stage (scripts/test_lmms.sh): lalm-eval's exported tasks run in lmms-eval 0.7.3
(its own venv, .venv-lmms, made by scripts/install_lmms.sh), against lalm-eval on the same docs.

One session: the embedded PALM and MSU builds (MSU with every task asked of every segment, so that
each task has 16 docs), a tiny Qwen2-Audio given 100 full fine-tuning steps
(a random model answers every doc alike, so that equal answers would prove nothing), the three
tasks exported, then, with every Qwen2-Audio processor call recorded (tests/lmms_record.py):

- ``lmms-eval --include_path EXPORT --tasks palm_recognition,palm_captioning,MSU --limit 16``;
- ``lalm-eval`` on the same tasks, docs and greedy settings.

Asserted: the chat-templated prompts and audio reaching the model are identical; 16/16 answers per
task are identical; lmms-eval's metric values equal lalm-eval's to 1e-9; ``lalm-eval
score-samples`` on lmms-eval's samples reproduces lalm-eval's results JSON and prints PALM Table 1.

On CPU, lmms-eval 0.7.3's qwen2_audio model moves its inputs to "cuda" unconditionally;
scripts/install_lmms.sh patches that one line to the model's device (it prints the line). The
MSU conversations are 60–120 s: lmms-eval cuts audio over 30 s into 30 s clips, each an audio of
the prompt, which is lalm-eval's ``long_audio=chunk`` (its default is ``truncate``), so the
lalm-eval run takes ``long_audio=chunk`` (docs/lmms_eval.md).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.lmms

ROOT = Path(__file__).resolve().parents[1]
LMMS_PY = Path(os.environ.get("LMMS_VENV", ROOT / ".venv-lmms")) / "bin" / "python"
MSU_TASK = "msu_t1_sr_speaker_counting"
TASKS = ["palm_recognition", "palm_captioning", MSU_TASK]
LIMIT = 16
GEN = "max_new_tokens=32"


def run(cmd: list, cwd: Path, env: dict, log: Path) -> None:
    with open(log, "w", encoding="utf-8") as f:
        proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT)
    if proc.returncode:
        tail = log.read_text(encoding="utf-8", errors="replace")[-4000:]
        pytest.fail(f"{' '.join(map(str, cmd[:4]))} ... exited {proc.returncode}:\n{tail}")


@pytest.fixture(scope="session")
def stage(tmp_path_factory):
    if not LMMS_PY.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"{LMMS_PY} missing: scripts/test_lmms.sh installs lmms-eval first")
        pytest.skip("no .venv-lmms (bash scripts/install_lmms.sh)")
    work = tmp_path_factory.mktemp("lmms_stage")
    env = {**os.environ, "LALM_EVAL_CACHE": str(work / "cache"), "HF_HOME": str(work / "hf"), "OMP_NUM_THREADS": "2"}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    bin_dir = Path(sys.executable).parent
    logs = work / "logs"
    logs.mkdir()
    steps = [
        ([bin_dir / "palm-bench", "build", "--out", "palm-bench", "--tasks", "recognition,captioning"], "build-palm"),
        # every task for every segment (25 questions each): 16 docs of each MSU task, as of PALM's
        ([bin_dir / "msu-bench", "build", "--out", "msu-bench", "--set", "per_segment=25"], "build-msu"),
        ([bin_dir / "lalm-eval", "make-tiny-model", "qwen2_audio", "random"], "tiny"),
        (
            [bin_dir / "lalm-eval", "train", "--model", "qwen2_audio", "--model_args", "pretrained=random",
             "--tasks", "palm_recognition", "--recipe", "full", "--max_steps", "100", "--seed", "0",
             "--output_dir", "model"],
            "train",
        ),
        ([bin_dir / "lalm-eval", "export-tasks", "--to", "lmms-eval", "export", "--tasks", ",".join(TASKS)], "export"),
        (
            [LMMS_PY, ROOT / "tests" / "lmms_record.py", "lmms", "lmms_inputs.json", "--",
             "--model", "qwen2_audio", "--model_args", f"pretrained={work / 'model'},device=cpu,device_map=auto",
             "--tasks", ",".join(TASKS), "--include_path", "export", "--limit", LIMIT, "--batch_size", "1",
             "--gen_kwargs", GEN, "--log_samples", "--output_path", "lmms_out"],
            "lmms-eval",
        ),
        (
            [sys.executable, ROOT / "tests" / "lmms_record.py", "lalm", "lalm_inputs.json", "--",
             "--model", "qwen2_audio", "--model_args", "pretrained=model,long_audio=chunk",
             "--tasks", ",".join(TASKS), "--limit", LIMIT, "--batch_size", "1", "--gen_kwargs", GEN,
             "--log_samples", "--output_path", "lalm_out", "--no_cache"],
            "lalm-eval",
        ),
        ([bin_dir / "lalm-eval", "score-samples", "lmms_out", "--output_path", "scored", "--layout", "palm_table1"], "score-samples"),
    ]  # fmt: skip
    for cmd, name in steps:
        run(cmd, work, env, logs / f"{name}.log")
    return work


def lmms_samples(work: Path, task: str) -> list[dict]:
    (file,) = sorted(work.glob(f"lmms_out/*/*_samples_{task}.jsonl"))
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]


def lalm_samples(work: Path, task: str) -> list[dict]:
    (file,) = sorted(work.glob(f"lalm_out/samples_{task}_*.jsonl"))
    return [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]


def answer(sample: dict) -> str:
    value = sample.get("resps", sample["filtered_resps"])
    while isinstance(value, list):
        value = value[0]
    return value


def test_the_model_gets_the_same_prompts_and_audio(stage):
    ours = json.loads((stage / "lalm_inputs.json").read_text())
    theirs = json.loads((stage / "lmms_inputs.json").read_text())
    assert len(ours) == len(theirs) == LIMIT * len(TASKS)  # batch 1: one processor call per doc
    # lmms-eval orders each task's requests by prompt length; compare as multisets
    assert sorted(json.dumps(c, sort_keys=True) for c in ours) == sorted(json.dumps(c, sort_keys=True) for c in theirs)
    chunked = [c for c in ours if len(c["audio"]) > 1]
    assert chunked, "the MSU conversations are over 30 s: their audio reaches the model as 30 s clips"


@pytest.mark.parametrize("task", TASKS)
def test_every_answer_is_identical(stage, task):
    theirs, ours = lmms_samples(stage, task), lalm_samples(stage, task)
    assert [s["doc_id"] for s in theirs] == [s["doc_id"] for s in ours] == list(range(LIMIT))
    assert [answer(s) for s in theirs] == [s["response"] for s in ours]
    assert len({s["response"] for s in ours}) > 1, "the fine-tuned model's answers depend on the doc"


def results(folder: Path) -> dict:
    (file,) = sorted(folder.glob("**/*results*.json"))
    return json.loads(file.read_text(encoding="utf-8"))["results"]


def test_metric_values_are_equal(stage):
    theirs, ours = results(stage / "lmms_out"), results(stage / "lalm_out")
    info = json.loads((stage / "export" / "export_info.json").read_text())
    compared = 0
    for task in TASKS:
        for metric in info["tasks"][task]["metrics"]:
            key = f"{metric},none"
            assert math.isclose(theirs[task][key], ours[task][key], rel_tol=0, abs_tol=1e-9), (task, metric)
            compared += 1
    assert compared >= 7


def test_score_samples_reproduces_lalm_evals_results(stage):
    scored, ours = results(stage / "scored"), results(stage / "lalm_out")
    for task in TASKS:
        for key, value in ours[task].items():
            if key == "alias" or "_stderr" in key:
                continue
            if isinstance(value, float):
                assert math.isclose(scored[task][key], value, rel_tol=0, abs_tol=1e-9), (task, key)
            else:
                assert scored[task][key] == value, (task, key)
    log = (stage / "logs" / "score-samples.log").read_text(encoding="utf-8")
    assert "PALM-Bench Table 1" in log
