"""`lalm-eval train` on the tiny Qwen2-Audio: every recipe trains, saves, reloads and evaluates;
per-speaker soft prompts (placement rule, only their rows train); bad input."""

import io
import json

import datasets
import numpy as np
import pytest
import soundfile as sf

from lalm_eval.api import Request
from lalm_eval.cli import main as cli_main
from lalm_eval.errors import ConfigError
from lalm_eval.hub.card import front_matter, write_card
from lalm_eval.hub.parquet import export_dataset_dict
from lalm_eval.training.recipes import available_recipes

NAMES = ["Alice", "Bob", "Carol"]


def flac(seconds, freq):
    t = np.arange(int(16000 * seconds)) / 16000
    buf = io.BytesIO()
    sf.write(buf, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), 16000, format="FLAC")
    return buf.getvalue()


def _split(n, offset):
    rows = {k: [] for k in ("question", "answer", "audio", "n_speakers", "queried")}
    for i in range(n):
        name = NAMES[(i + offset) % 3]
        rows["question"].append(f"Is {name} speaking?")
        rows["answer"].append(f"Yes, {name} is speaking." if i % 2 else f"No, {name} is not speaking.")
        rows["audio"].append({"bytes": flac(1.0, 200 + 40 * i), "path": None})
        rows["n_speakers"].append(1 + i % 2)
        rows["queried"].append([name])
    features = datasets.Features(
        {
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "audio": datasets.Audio(sampling_rate=16000),
            "n_speakers": datasets.Value("int32"),
            "queried": datasets.Sequence(datasets.Value("string")),
        }
    )
    return datasets.Dataset.from_dict(rows, features=features)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from lalm_eval.models.tiny import make_tiny_model

    root = tmp_path_factory.mktemp("train")
    model = make_tiny_model("qwen2_audio", root / "tiny")
    data = root / "ds"
    files = export_dataset_dict({"main": datasets.DatasetDict({"train": _split(6, 0), "test": _split(3, 0)})}, data)
    write_card(data, f"---\n{front_matter(files)}\n---\n")
    tasks = root / "tasks"
    tasks.mkdir()
    base = f"""dataset_path: {data}
dataset_name: main
test_split: test
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
doc_to_subjects: "{{{{ queried }}}}"
generation_kwargs: {{max_new_tokens: 4}}
metric_list:
  - {{metric: token_f1, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1}}
"""
    (tasks / "who.yaml").write_text(base + "task: who\ntraining_split: train\n")
    (tasks / "who_eval_only.yaml").write_text(base + "task: who_eval_only\n")
    return {"root": root, "model": model, "tasks": tasks, "cache": root / "cache"}


def train_argv(setup, recipe, out, *extra) -> list[str]:
    """`lalm-eval train` arguments for the tiny model on the `who` task (also launched by
    tests/test_training_accelerate.py)."""
    return [
        "train",
        "--model",
        "qwen2_audio",
        "--model_args",
        f"pretrained={setup['model']}",
        "--tasks",
        "who",
        "--include_path",
        str(setup["tasks"]),
        "--recipe",
        recipe,
        "--output_dir",
        str(out),
        "--cache_dir",
        str(setup["cache"]),
        "--learning_rate",
        "1e-2",
        *extra,
    ]


def _train(setup, recipe, out, *extra):
    return cli_main(train_argv(setup, recipe, out, *extra))


def _eval(setup, model_args, out):
    return cli_main(
        [
            "--model",
            "qwen2_audio",
            "--model_args",
            f"pretrained={setup['model']},{model_args}".rstrip(","),
            "--tasks",
            "who",
            "--include_path",
            str(setup["tasks"]),
            "--limit",
            "2",
            "--batch_size",
            "2",
            "--cache_dir",
            str(setup["cache"]),
            "--output_path",
            str(out),
        ]
    )


def _results(out):
    return json.loads(next(out.glob("**/results_*.json")).read_text())


@pytest.mark.parametrize("recipe", available_recipes())
def test_every_recipe_trains_saves_and_evaluates(setup, recipe, tmp_path):
    out = tmp_path / recipe
    extra = ["--tokens", "2"] if recipe == "prompt_tuning" else []
    assert _train(setup, recipe, out, "--max_steps", "2", "--limit", "2", *extra) == 0
    info = json.loads((out / "train_info.json").read_text())
    assert info["global_step"] == 2 and info["examples"] == 2 and info["recipe"]["name"] == recipe
    assert len(json.loads((out / "loss.json").read_text())) == 2 and (out / "loss.png").stat().st_size > 0
    if recipe == "full":
        model_args = ""
        setup_model = {**setup, "model": out}
    elif recipe == "prompt_tuning":
        model_args, setup_model = f"soft_prompts={out}", setup
        assert sorted(p.name for p in (out / "soft_prompts").iterdir()) == [
            "Alice.safetensors",
            "Bob.safetensors",
            "index.json",
        ]
    else:
        model_args, setup_model = f"peft={out}", setup
        assert (out / "adapter_model.safetensors").is_file()
    if recipe in ("full", "prompt_tuning", "lora_audio_tower"):  # evaluation: one of each kind of output
        assert _eval(setup_model, model_args, tmp_path / "eval") == 0
        identity = json.dumps(_results(tmp_path / "eval"), default=str)
        assert '"token_f1' in identity
        if recipe != "full":
            assert ("peft_hash" if recipe.startswith("lora") else "soft_prompts_hash") in identity


def test_loss_falls_and_resume(setup, tmp_path, capsys):
    out = tmp_path / "la"
    assert _train(setup, "lora_attn", out, "--max_steps", "6", "--limit", "1", "--save_steps", "3") == 0
    err = capsys.readouterr().err  # the steps on the console (not a terminal: first and last line)
    assert "lalm-eval train: lora_attn: 0/6 training steps (from step 0)" in err
    assert "lalm-eval train: lora_attn: 6/6 training steps, loss " in err
    losses = [p["loss"] for p in json.loads((out / "loss.json").read_text())]
    assert losses[-1] < losses[0] - 0.1, losses  # one example, six steps: it fits
    assert (out / "checkpoints" / "checkpoint-6").is_dir()
    assert (
        _train(
            setup, "lora_attn", out, "--max_steps", "8", "--limit", "1", "--save_steps", "3", "--resume_from_checkpoint"
        )
        == 0
    )
    assert "lalm-eval train: lora_attn: 0/2 training steps (from step 6)" in capsys.readouterr().err
    info = json.loads((out / "train_info.json").read_text())
    assert info["resumed_from_step"] == 6 and info["global_step"] == 8  # continued from the last checkpoint
    assert [p["step"] for p in json.loads((out / "loss.json").read_text())] == list(range(1, 9))


def test_prompt_tuning_changes_only_the_soft_rows(setup, tmp_path):
    import torch
    from safetensors.torch import load_file

    from lalm_eval.models.build import build_adapter
    from lalm_eval.training.trainer import TrainOptions, train

    adapter = build_adapter("qwen2_audio", f"pretrained={setup['model']}", None, str(setup["cache"]))
    before = {k: v.clone() for k, v in adapter.model.state_dict().items()}
    opts = TrainOptions(
        tasks=["who"],
        recipe="prompt_tuning",
        output_dir=tmp_path / "pt",
        cache_dir=setup["cache"],
        include_path=[str(setup["tasks"])],
        tokens=4,
        max_steps=3,
        learning_rate=1e-1,
        seed=3,
    )
    info = train(adapter, opts)
    after = adapter.model.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    index = json.loads((tmp_path / "pt" / "soft_prompts" / "index.json").read_text())
    assert index["tokens"] == 4 and sorted(index["subjects"]) == NAMES and index["rule"] == "after_each_mention"
    assert info["trainable_parameters"] == 3 * 4 * 64
    trained = {n: load_file(tmp_path / "pt" / "soft_prompts" / f)["embeddings"] for n, f in index["subjects"].items()}
    from lalm_eval.training.soft_prompts import SoftPrompts

    init = SoftPrompts.initialise(NAMES, 4, adapter.model, adapter.tokenizer, seed=3)
    assert not torch.equal(init.by_name["Alice"].detach(), init.by_name["Bob"].detach())  # independent per speaker
    changed = [n for n in NAMES if not torch.equal(trained[n], init.by_name[n].detach())]
    assert changed  # the subjects seen in the 3 steps moved from their seeded initialisation


def test_soft_prompt_placement_rule():
    import torch

    from lalm_eval.training.soft_prompts import SoftPrompts

    soft = SoftPrompts({"Ann": torch.zeros(2, 4), "Annabel": torch.ones(2, 4), "李雷": torch.ones(2, 4)}, "<P>", 0)
    req = Request(
        "t",
        0,
        (),
        (
            {
                "role": "user",
                "content": [{"type": "audio"}, {"type": "text", "text": "Is Annabel or Ann here? Ann’s voice; Anne."}],
            },
        ),
        {},
        subjects=("Ann", "Annabel"),
    )
    text = soft.mark(req).messages[0]["content"][1]["text"]
    assert text == "Is Annabel<P><P> or Ann<P><P> here? Ann<P><P>’s voice; Anne."
    assert soft.mentions(req) == ["Annabel", "Ann", "Ann"]
    zh = Request("t", 1, (), ({"role": "user", "content": "李雷在说话吗？"},), {}, subjects=("李雷",))
    assert soft.mark(zh).messages[0]["content"] == "李雷<P><P>在说话吗？"
    with pytest.raises(ConfigError, match=r"no learned tokens for subject\(s\) \['Zoe'\]"):
        soft.check([Request("t", 2, (), (), {}, subjects=("Zoe",))])


def test_bad_input(setup, tmp_path, capsys):
    assert _train(setup, "lora_atn", tmp_path / "x", "--max_steps", "1") == 2
    assert "unknown recipe 'lora_atn'" in capsys.readouterr().err
    argv = [
        "train",
        "--model",
        "qwen2_audio",
        "--model_args",
        f"pretrained={setup['model']}",
        "--tasks",
        "who_eval_only",
        "--include_path",
        str(setup["tasks"]),
        "--recipe",
        "lora_attn",
        "--output_dir",
        str(tmp_path / "y"),
        "--cache_dir",
        str(setup["cache"]),
    ]
    assert cli_main(argv) == 2
    assert "declares no training_split" in capsys.readouterr().err
    # a soft-prompt folder without one of the subjects the requests name: the run fails, naming it
    out = tmp_path / "pt"
    assert _train(setup, "prompt_tuning", out, "--max_steps", "1", "--limit", "1", "--tokens", "2") == 0
    assert _eval(setup, f"soft_prompts={out}", tmp_path / "eval") == 2
    err = capsys.readouterr().err
    assert "no learned tokens for subject(s) ['Bob']" in err and "the folder has ['Alice']" in err
    assert _eval(setup, f"peft={tmp_path / 'nothing'}", tmp_path / "eval") == 2
    assert "no adapter_config.json" in capsys.readouterr().err


def test_collator_prompt_is_the_evaluation_prompt_and_loss_is_on_the_answer(setup):
    from lalm_eval.models.build import build_adapter
    from lalm_eval.training.data import Collator, training_examples

    adapter = build_adapter("qwen2_audio", f"pretrained={setup['model']}", None, str(setup["cache"]))
    examples = training_examples(["who"], setup["cache"], [str(setup["tasks"])], speakers="multi_speaker")
    assert [e.doc_id for e in examples] == [1, 3, 5]  # n_speakers == 2 only
    batch = Collator(adapter)(examples[:2])
    for row, example in enumerate(examples[:2]):
        evaluation = adapter.build_inputs([example.request()])["input_ids"][0]
        n = len(evaluation)
        assert batch["input_ids"][row, :n].tolist() == evaluation.tolist()  # the prompt evaluation sends
        answer = [t for t in batch["labels"][row].tolist() if t != -100]
        assert (batch["labels"][row, :n] == -100).all()
        assert adapter.tokenizer.decode(answer) == example.target + "<|im_end|>"
    assert batch["input_features"].shape[0] == 2


def test_freeze_keeps_the_audio_tower_and_trains_the_rest(setup, tmp_path):
    import torch

    from lalm_eval.models.build import build_adapter
    from lalm_eval.training.trainer import TrainOptions, train

    adapter = build_adapter("qwen2_audio", f"pretrained={setup['model']}", None, str(setup["cache"]))
    before = {k: v.clone() for k, v in adapter.model.state_dict().items()}
    common = dict(tasks=["who"], cache_dir=setup["cache"], include_path=[str(setup["tasks"])], max_steps=2)
    for recipe, freeze, message in (
        ("lora_attn", ("audio_tower",), "applies to the full recipe"),
        ("full", ("vision_tower",), "no such component; it has"),
    ):
        with pytest.raises(ConfigError, match=message):
            train(adapter, TrainOptions(recipe=recipe, output_dir=tmp_path / "x", freeze=freeze, **common))
    opts = TrainOptions(recipe="full", output_dir=tmp_path / "f", learning_rate=1e-2, freeze=("audio_tower",), **common)
    info = train(adapter, opts)
    after = adapter.model.state_dict()
    tower = [k for k in before if "audio_tower" in k]
    assert tower and all(torch.equal(before[k], after[k]) for k in tower)  # bit-identical
    assert any(not torch.equal(before[k], after[k]) for k in before if k not in tower)  # the rest trained
    total = sum(p.numel() for p in adapter.model.parameters())
    assert info["frozen_components"]["audio_tower"] == total - info["trainable_parameters"] > 0
