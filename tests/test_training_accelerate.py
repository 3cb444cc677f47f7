"""`lalm-eval train` under `accelerate launch --multi_gpu --num_processes 2` with 2 CPU processes
(DDP over gloo): disjoint data shards, only rank 0 writes, the result reloads and evaluates.

(`accelerate launch --cpu --num_processes 2` starts one process: accelerate's multi-CPU launch
goes through mpirun; `--multi_gpu` uses torchrun's launcher, and the Trainer's `use_cpu` makes it
a gloo process group on a machine without GPUs.)"""

import json
import shutil
import subprocess

import pytest

from lalm_eval.cli import main as cli_main
from tests.test_training import setup, train_argv  # noqa: F401 - the tiny model and a `who` task with a train split


def _launch(setup, recipe, out, port, *extra):
    cmd = [
        "accelerate",
        "launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(port),
        "-m",
        "lalm_eval.cli",
        *train_argv(
            setup,
            recipe,
            out,
            "--limit",
            "4",
            "--max_steps",
            "2",
            "--save_steps",
            "2",
            *extra,
        ),
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # 2-3 min on 2 shared cores (two processes load, train, save; then one evaluates)
@pytest.mark.parametrize("recipe,port", [("lora_attn", 29531), ("prompt_tuning", 29533)])
def test_two_cpu_processes_train_disjoint_shards_and_rank0_writes(setup, recipe, port, tmp_path):  # noqa: F811
    if shutil.which("accelerate") is None:
        pytest.skip("accelerate's launcher not on PATH")
    out = tmp_path / recipe
    extra = ["--tokens", "2"] if recipe == "prompt_tuning" else []
    run = _launch(setup, recipe, out, port, *extra)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.count("wrote ") == 1  # rank 0 alone reports (and writes)
    info = json.loads((out / "train_info.json").read_text())
    assert info["world_size"] == 2 and info["global_step"] == 2
    # 2 steps x batch 1 on each process over 4 examples: each saw 2, none was seen by both
    assert info["examples_seen_per_rank"] == [2, 2]
    assert info["distinct_examples_seen"] == 4 and info["examples_seen_by_several_ranks"] == 0
    assert len(json.loads((out / "loss.json").read_text())) == 2 and (out / "loss.png").stat().st_size > 0
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["checkpoint-2"]
    if recipe == "prompt_tuning":
        model_args = f"soft_prompts={out}"
        assert (out / "soft_prompts" / "index.json").is_file()
    else:
        model_args = f"peft={out}"
        assert (out / "adapter_model.safetensors").is_file()
    ev = tmp_path / "eval"
    assert (
        cli_main(
            [
                "--model",
                "qwen2_audio",
                "--model_args",
                f"pretrained={setup['model']},{model_args}",
                "--tasks",
                "who",
                "--include_path",
                str(setup["tasks"]),
                "--limit",
                "2",
                "--cache_dir",
                str(setup["cache"]),
                "--output_path",
                str(ev),
            ]
        )
        == 0
    )
    results = json.dumps(json.loads(next(ev.glob("**/results_*.json")).read_text()), default=str)
    assert '"token_f1' in results  # evaluated, with the trained weights in the model identity
    assert ("soft_prompts_hash" if recipe == "prompt_tuning" else "peft_hash") in results


def test_shard_record_counts_examples_seen_by_several_ranks(monkeypatch):
    import torch.distributed as dist

    from lalm_eval.training.trainer import _seen_by_rank

    assert _seen_by_rank([("who", "0"), ("who", "1")], 1) == {
        "world_size": 1,
        "examples_seen_per_rank": [2],
        "distinct_examples_seen": 2,
        "examples_seen_by_several_ranks": 0,
    }

    def gather(parts, mine):  # rank 1 saw doc 1 too (as a padded, uneven shard would)
        parts[:] = [mine, [("who", "1"), ("who", "2")]]

    monkeypatch.setattr(dist, "all_gather_object", gather)
    assert _seen_by_rank([("who", "0"), ("who", "1")], 2) == {
        "world_size": 2,
        "examples_seen_per_rank": [2, 2],
        "distinct_examples_seen": 3,
        "examples_seen_by_several_ranks": 1,
    }
