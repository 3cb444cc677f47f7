"""Recipes as data and LoRA placements resolved on the loaded tiny models (trainable parameters)."""

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.training.recipes import (
    apply_recipe,
    available_recipes,
    load_recipe,
    resolve_placement,
    trainable_parameters,
)

LM_ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")
LM_FFN = ("gate_proj", "up_proj", "down_proj")


@pytest.fixture(scope="module", params=["qwen2_audio", "qwen2_5_omni"])
def tiny(request, tmp_path_factory):
    import transformers

    from lalm_eval.models.tiny import make_tiny_model

    folder = make_tiny_model(request.param, tmp_path_factory.mktemp(request.param))
    cls = {
        "qwen2_audio": transformers.Qwen2AudioForConditionalGeneration,
        "qwen2_5_omni": transformers.Qwen2_5OmniThinkerForConditionalGeneration,
    }[request.param]
    return lambda: cls.from_pretrained(folder)


def _lora_modules(model) -> set[str]:
    """The wrapped modules: names of LoRA A weights minus the peft prefix and the adapter suffix."""
    return {
        n.removeprefix("base_model.model.").split(".lora_A")[0] for n in trainable_parameters(model) if ".lora_A." in n
    }


def test_every_recipe_loads_and_cites_the_paper():
    names = available_recipes()
    assert set(names) >= {
        "full",
        "lora_ffn",
        "lora_attn",
        "lora_audio_tower",
        "lora_attn_ffn",
        "lora_all_linear",
        "prompt_tuning",
    }
    for name in names:
        recipe = load_recipe(name)
        assert "§5.2" in recipe.citation and recipe.training["learning_rate"] > 0
    assert load_recipe("lora_attn").training_args("multi_speaker")["learning_rate"] == 1e-4
    assert load_recipe("prompt_tuning", tokens=4).tokens == 4
    assert load_recipe("prompt_tuning", setting="multi_speaker").tokens == 16


@pytest.mark.parametrize(
    "placement,check",
    [
        ("attn", lambda n: ".language_model." in n and n.rsplit(".", 1)[-1] in LM_ATTN),
        ("ffn", lambda n: ".language_model." in n and ".mlp." in n and n.rsplit(".", 1)[-1] in LM_FFN),
        ("attn_ffn", lambda n: ".language_model." in n and n.rsplit(".", 1)[-1] in LM_ATTN + LM_FFN),
        ("audio_tower", lambda n: ".audio_tower." in n and ".language_model." not in n),
        ("all_linear", lambda n: ".language_model." in n and "lm_head" not in n),
    ],
)
def test_lora_placement_trains_only_its_modules(tiny, placement, check):
    model = apply_recipe(tiny(), load_recipe(f"lora_{placement}"))
    wrapped = _lora_modules(model)
    assert wrapped and all(check(n) for n in wrapped), sorted(wrapped)
    # only LoRA weights train; nothing else in the model
    assert all(".lora_" in n for n in trainable_parameters(model))
    expected = {"attn": 4, "ffn": 3, "attn_ffn": 7, "audio_tower": 6, "all_linear": 7}[placement]
    assert len(wrapped) == 2 * expected  # tiny models have 2 layers
    if placement == "audio_tower":
        assert {n.rsplit(".", 1)[-1] for n in wrapped} == {"q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2"}


def test_full_and_prompt_tuning(tiny):
    model = tiny()
    assert set(trainable_parameters(apply_recipe(model, load_recipe("full")))) == {
        n for n, _ in model.named_parameters()
    }
    assert trainable_parameters(apply_recipe(tiny(), load_recipe("prompt_tuning"))) == []


def test_bad_recipes_and_placements(tiny):
    with pytest.raises(ConfigError, match="unknown recipe 'lora_atn'.*did you mean 'lora_attn'"):
        load_recipe("lora_atn")
    with pytest.raises(ConfigError, match="one of \\[2, 4, 8, 16, 32, 64\\]"):
        load_recipe("prompt_tuning", tokens=5)
    with pytest.raises(ConfigError, match="applies to prompt tuning"):
        load_recipe("lora_attn", tokens=4)
    model = tiny()
    # a placement the architecture lacks: the error lists what exists
    with pytest.raises(ConfigError, match="matches nothing.*components.*language_model"):
        resolve_placement(model.model.language_model, "audio_tower")
    with pytest.raises(ConfigError, match="unknown LoRA placement 'mlp'"):
        resolve_placement(model, "mlp")


def test_peft_components_tells_audio_tower_adapters_apart(tiny, tmp_path):
    from lalm_eval.training.recipes import peft_components

    for placement, comps in (("audio_tower", {"audio_tower"}), ("attn_ffn", {"language_model"})):
        model = apply_recipe(tiny(), load_recipe(f"lora_{placement}"))
        model.save_pretrained(tmp_path / placement)
        assert set(peft_components(tmp_path / placement)) == comps
    with pytest.raises(ConfigError, match="no adapter_config.json"):
        peft_components(tmp_path / "nothing")
