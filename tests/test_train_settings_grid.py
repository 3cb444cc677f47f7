"""Every setting each recipe YAML lists parses and resolves; `lalm-eval train --setting grid` trains
every point of a sweep grid (tiny model, one step each) and records each; a misspelt setting is
exit 2 with a did-you-mean; the `all_linear` and `every_linear` placements on the tiny
Qwen2-Audio (the first is attn_ffn's modules, the second adds the audio tower and projector)."""

import json

import pytest
import yaml

from lalm_eval.cli import main as cli_main
from lalm_eval.training.recipes import (
    RECIPE_DIR,
    available_recipes,
    choose_setting,
    load_recipe,
    load_recipe_and_setting,
    point_label,
    resolve_placement,
)
from tests.test_train_select_best import argv, val_setup  # noqa: F401 - tiny model, `who` with a validation split


def test_every_setting_of_every_recipe_parses_and_resolves():
    seen = 0
    for name in available_recipes():
        raw = yaml.safe_load((RECIPE_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
        recipe = load_recipe(name)
        assert list(recipe.settings or {}) == list(raw.get("settings") or {})
        for setting, value in (raw.get("settings") or {}).items():
            seen += 1
            assert choose_setting(recipe, setting) == setting
            points = value if isinstance(value, list) else [value]
            assert recipe.is_grid(setting) is isinstance(value, list)
            assert recipe.grid_points(setting) == points
            for i, point in enumerate(points):
                hp = recipe.training_args(setting, i if recipe.is_grid(setting) else None)
                # the point's own values win over the recipe's base, the rest is the base
                expected = {**raw["training"], **{k: v for k, v in point.items() if k != "tokens"}}
                assert hp == expected and isinstance(float(hp["learning_rate"]), float)
                assert float(hp["num_train_epochs"]) > 0
            chosen, got = (
                load_recipe_and_setting(name, setting=setting)[0],
                load_recipe_and_setting(name, setting=setting)[1],
            )
            assert got == setting and chosen.name == name
            if recipe.method == "prompt_tuning" and "tokens" in points[0]:
                assert chosen.tokens == points[0]["tokens"]
    assert seen >= len(available_recipes())  # every recipe lists multi_speaker; full its grid too
    full = load_recipe("full")
    labels = [point_label(p, full.training) for p in full.grid_points("grid")]
    assert labels == ["1e-6-epoch3", "1e-5-epoch5", "3e-6-epoch3"]  # PALM Table 2's names
    with pytest.raises(Exception, match="sweep grid"):
        full.training_args("grid")  # a grid's hyperparameters need the point


def test_misspelt_or_misused_setting_exits_2(val_setup, tmp_path, capsys):  # noqa: F811
    cases = [
        (("--recipe", "full", "--setting", "gird"), ("--setting", "no setting 'gird'", "did you mean 'grid'")),
        (("--recipe", "lora_attn", "--setting", "grid"), ("no setting 'grid'", "its settings: multi_speaker")),
        (("--recipe", "full", "--setting", "grid"), ("--learning_rate: --setting grid sweeps the learning rate",)),
    ]
    for extra, says in cases:
        recipe = extra[1]
        assert cli_main(argv(val_setup, tmp_path / "x", *extra[2:], recipe=recipe)) == 2
        err = capsys.readouterr().err
        assert all(s in err for s in says), (extra, err)
        assert not (tmp_path / "x").exists()


def test_grid_trains_every_point_and_records_each(val_setup, tmp_path, monkeypatch):  # noqa: F811
    """Three points of `full`'s grid, one step each; their validation values (the harness stubbed:
    0.1, 0.4, 0.2) make the second the best point."""
    from lalm_eval.training import validation

    calls = iter([0.1, 0.4, 0.2])

    def fake_evaluate(adapter, plan, batch_size, seed=0):
        value = next(calls)
        return {"value": value, "per_task": {"who": {plan.metric: value}}}

    monkeypatch.setattr(validation, "evaluate_now", fake_evaluate)
    out = tmp_path / "grid"
    base = argv(val_setup, out, recipe="full")
    base = base[: base.index("--learning_rate")]  # the grid gives the learning rates
    extra = ["--setting", "grid", "--max_steps", "1", "--limit", "1", "--freeze", "audio_tower"]
    extra += ["--eval_split", "validation", "--eval_limit", "1", "--eval_steps", "1", "--select", "best:token_f1"]
    assert cli_main([*base, *extra]) == 0
    info = json.loads((out / "train_info.json").read_text())
    full = load_recipe("full")
    points = full.grid_points("grid")
    assert info["status"] == "finished" and info["setting"] == "grid" and len(info["points"]) == len(points) == 3
    for point, row in zip(points, info["points"]):
        sub = json.loads((out / "grid" / row["label"] / "train_info.json").read_text())
        assert sub["status"] == "finished" and sub["global_step"] == 1
        assert sub["learning_rate"] == row["learning_rate"] == point["learning_rate"]
        assert sub["epochs"] == point["num_train_epochs"] and sub["grid_point"]["overrides"] == point
        assert (out / "grid" / row["label"] / "model.safetensors").is_file()  # full: a model folder per point
        assert row["validation_best"] == sub["validation"]["best"] and row["validation_best"]["step"] == 1
    assert [row["validation_best"]["value"] for row in info["points"]] == [0.1, 0.4, 0.2]
    assert info["best_point"] == "1e-5-epoch5" and info["select"] == "best:token_f1"


@pytest.mark.parametrize("arch", ["qwen2_audio", "qwen2_5_omni"])
def test_every_linear_adds_tower_and_projector_to_all_linear(arch, tmp_path):
    import torch
    import transformers

    from lalm_eval.models.tiny import make_tiny_model
    from lalm_eval.training.recipes import placement_report

    folder = make_tiny_model(arch, tmp_path / arch)
    cls = {
        "qwen2_audio": transformers.Qwen2AudioForConditionalGeneration,
        "qwen2_5_omni": transformers.Qwen2_5OmniThinkerForConditionalGeneration,
    }[arch]
    model = cls.from_pretrained(folder)
    linear = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]
    all_linear, every_linear = (
        set(resolve_placement(model, "all_linear")),
        set(resolve_placement(model, "every_linear")),
    )
    lm = {n for n in linear if ".language_model." in n}
    tower = {n for n in linear if ".audio_tower." in n}
    projector = {n for n in linear if ".multi_modal_projector." in n}
    assert all_linear == lm == set(resolve_placement(model, "attn_ffn"))  # ms-swift's all-linear: the LM only
    assert every_linear == lm | tower | projector and tower and not tower & all_linear
    assert not any("lm_head" in n or ".visual." in n for n in every_linear)  # no head, no vision tower (Omni)
    report = placement_report(model, "all_linear")
    assert report["same_modules_as"] == ["attn_ffn"] and report["modules"] == len(lm) == 14
    assert "freeze_vit" in report["note"] and "every_linear" in report["note"]
    every = placement_report(model, "every_linear")
    assert every["modules_per_component"] == {
        "language_model": len(lm),
        "audio_tower": len(tower),
        **({"projector": 1} if arch == "qwen2_audio" else {}),
    }
    assert every["same_modules_as"] == [] and load_recipe("lora_every_linear").placement == "every_linear"
