"""`lalm-eval train --eval_split validation --select best:<metric>` on the tiny Qwen2-Audio: the
harness evaluates every epoch (or every N steps), the best checkpoint is the one kept, the curve is
in train_info.json and validation.png; a split the dataset lacks, a metric the tasks lack and
--select without --eval_split are exit 2 before the model loads; prompt tuning validated on subjects
it has no soft prompts for is exit 2 before any step."""

import dataclasses
import json

import datasets
import pytest
from safetensors.torch import load_file

from lalm_eval.cli import main as cli_main
from lalm_eval.hub.card import front_matter, write_card
from lalm_eval.hub.parquet import export_dataset_dict
from tests.test_training import _split

TASK = """dataset_path: {data}
dataset_name: main
test_split: test
training_split: train
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
doc_to_subjects: "{{{{ queried }}}}"
generation_kwargs: {{max_new_tokens: 4}}
metric_list:
  - {{metric: token_f1, aggregation: mean, higher_is_better: true}}
  - {{metric: exact_match, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1}}
task: {name}
"""


def _dataset(folder, splits):
    """Parquet + card configs, as the builders write them (palm-bench: train / validation / test)."""
    files = export_dataset_dict({"main": datasets.DatasetDict(splits)}, folder)
    write_card(folder, f"---\n{front_matter(files)}\n---\n")
    return folder


@pytest.fixture(scope="module")
def val_setup(tmp_path_factory):
    from lalm_eval.models.tiny import make_tiny_model

    root = tmp_path_factory.mktemp("select")
    model = make_tiny_model("qwen2_audio", root / "tiny")
    # validation rows: other clips (offset tones) of the training subjects
    data = _dataset(root / "ds", {"train": _split(4, 0), "validation": _split(3, 1), "test": _split(2, 2)})
    bare = _dataset(root / "bare", {"train": _split(2, 0), "test": _split(2, 2)})
    tasks = root / "tasks"
    tasks.mkdir()
    (tasks / "who.yaml").write_text(TASK.format(data=data, name="who"))
    (tasks / "who_bare.yaml").write_text(TASK.format(data=bare, name="who_bare"))
    # the validation split as an evaluation task: what `lalm-eval` itself scores on it
    (tasks / "who_val.yaml").write_text(
        TASK.format(data=data, name="who_val").replace("test_split: test", "test_split: validation")
    )
    return {"root": root, "model": model, "tasks": tasks, "cache": root / "cache"}


def argv(s, out, *extra, task="who", recipe="lora_attn"):
    return [
        "train", "--model", "qwen2_audio", "--model_args", f"pretrained={s['model']}", "--tasks", task,
        "--include_path", str(s["tasks"]), "--recipe", recipe, "--output_dir", str(out),
        "--cache_dir", str(s["cache"]), "--learning_rate", "2e-2", *extra,
    ]  # fmt: skip


def _weights(folder):
    return load_file(folder / "adapter_model.safetensors")


def _same(a, b) -> bool:
    return a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)


def test_evaluates_every_epoch_through_the_harness_and_keeps_the_best(val_setup, tmp_path):
    """The acceptance run: 3 epochs of 1 step, best:token_f1 on the validation split."""
    out = tmp_path / "best"
    extra = ("--epochs", "3", "--limit", "1", "--eval_split", "validation", "--eval_limit", "1")
    assert cli_main(argv(val_setup, out, *extra, "--select", "best:token_f1")) == 0
    info = json.loads((out / "train_info.json").read_text())
    v = info["validation"]
    assert v["split"] == "validation" and v["select"] == "best:token_f1" and v["every"] == "epoch"
    assert [p["step"] for p in v["curve"]] == [1, 2, 3] and v["evaluations"] == 3  # one per epoch
    assert v["docs_per_task"] == {"who": 1}
    values = [p["value"] for p in v["curve"]]
    assert values == [p["per_task"]["who"]["token_f1"] for p in v["curve"]]
    assert all("exact_match" in p["per_task"]["who"] for p in v["curve"])  # every metric of the task, recorded
    best = values.index(max(values))  # ties: the earlier checkpoint
    assert v["kept"] == "best" and v["kept_step"] == v["curve"][best]["step"] == v["best"]["step"]
    assert (out / "validation.png").stat().st_size > 0
    assert _same(_weights(out), _weights(out / "checkpoints" / f"checkpoint-{v['kept_step']}"))
    # the value recorded for the kept checkpoint is what `lalm-eval` scores on that split with it
    ev = tmp_path / "eval"
    run = [
        "--model",
        "qwen2_audio",
        "--model_args",
        f"pretrained={val_setup['model']},peft={out}",
        "--tasks",
        "who_val",
    ]
    run += ["--include_path", str(val_setup["tasks"]), "--cache_dir", str(val_setup["cache"]), "--limit", "1"]
    assert cli_main([*run, "--output_path", str(ev), "--no_cache"]) == 0
    results = json.loads(next(ev.glob("**/results_*.json")).read_text())["results"]["who_val"]
    assert results["token_f1,none"] == pytest.approx(max(values))
    assert info["lora_targets"]["placement"] == "attn" and info["lora_targets"]["modules"] == 8


def test_every_n_steps_the_best_checkpoint_is_the_one_written(val_setup, tmp_path, monkeypatch):
    """Validation values that peak at the second of three evaluations (the harness stubbed): the
    Trainer keeps checkpoint-2, OUT holds its adapter (not the last step's), the curve says so."""
    from lalm_eval.training import validation

    real_plan = validation.plan_validation
    for metric, greater, values, kept in (("token_f1", True, [0.2, 0.5, 0.3], 2),):
        calls = iter(values)

        def fake_evaluate(adapter, plan, batch_size, seed=0, calls=calls):
            value = next(calls)
            return {"value": value, "per_task": {"who": {plan.metric: value}}}

        def plan_as(*args, metric=metric, greater=greater, **kwargs):  # the tasks' real plan, this metric
            return dataclasses.replace(real_plan(*args[:2], None, **kwargs), metric=metric, greater_is_better=greater)

        monkeypatch.setattr(validation, "evaluate_now", fake_evaluate)
        monkeypatch.setattr(validation, "plan_validation", plan_as)
        out = tmp_path / metric
        extra = ("--max_steps", "3", "--limit", "1", "--eval_split", "validation", "--eval_steps", "1")
        assert cli_main(argv(val_setup, out, *extra, "--select", "best:token_f1")) == 0
        v = json.loads((out / "train_info.json").read_text())["validation"]
        assert [p["value"] for p in v["curve"]] == values and v["every"] == "1 steps"
        assert v["kept"] == "best" and v["kept_step"] == kept and v["greater_is_better"] is greater
        assert _same(_weights(out), _weights(out / "checkpoints" / f"checkpoint-{kept}"))
        if kept != 3:
            assert not _same(_weights(out), _weights(out / "checkpoints" / "checkpoint-3"))


def test_bad_validation_flags_exit_2_before_the_model(val_setup, tmp_path, capsys):
    cases = [
        (
            ("--eval_split", "validation"),
            "who_bare",
            ("--eval_split validation", "no split 'validation'", "train, test"),
        ),
        (("--eval_split", "validation", "--select", "best:token_f2"), "who", ("did you mean 'token_f1'",)),
        (("--eval_split", "validation", "--select", "top:token_f1"), "who", ("--select", "best:<metric>")),
        (("--select", "best:token_f1"), "who", ("--select", "add --eval_split")),
        (("--eval_steps", "2"), "who", ("--eval_steps", "add --eval_split")),
    ]
    for extra, task, says in cases:
        out = tmp_path / f"x{len(says)}"
        assert cli_main(argv(val_setup, out, *extra, task=task)) == 2, extra
        err = capsys.readouterr().err
        assert all(s in err for s in says), (extra, err)
        assert not (out / "train_info.json").exists()
    # per-speaker prompt tuning: validation docs naming subjects no training doc names (before any step)
    extra = ("--tokens", "2", "--limit", "1", "--max_steps", "1", "--eval_split", "validation")
    assert cli_main(argv(val_setup, tmp_path / "pt", *extra, recipe="prompt_tuning")) == 2
    err = capsys.readouterr().err
    assert "subjects no training doc names (Bob, Carol)" in err and "--eval_split validation" in err
    assert not (tmp_path / "pt" / "train_info.json").exists()  # refused before the training started
