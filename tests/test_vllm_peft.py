"""Training outputs on `--model vllm`: vLLM applies LoRA to the language model only (and not at all
for Qwen2-Audio in vLLM 0.32), so `peft=` adapters are refused with the way out, or merged with
`merge_peft=true`; `soft_prompts=` is refused. The refusals are construct-time checks that run
without vLLM; the `vllm`-marked test (scripts/test_vllm.sh) serves a merged adapter with the real
engine and compares it with the HF adapter's `peft=` on the same weights."""

import json
import os

import numpy as np
import pytest

from lalm_eval.api import Request
from lalm_eval.errors import ConfigError
from lalm_eval.models import vllm_adapter as va

SR = 16000


def _adapter(model_dir, placements, out, seed=0, r=4):
    """A peft LoRA of ``placements`` (``projector``: the projector's linear layer) on the tiny model
    with random B (so that it changes the outputs)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2AudioForConditionalGeneration

    from lalm_eval.training.recipes import resolve_placement

    torch.manual_seed(seed)
    model = Qwen2AudioForConditionalGeneration.from_pretrained(str(model_dir))
    targets = [n for p in placements if p != "projector" for n in resolve_placement(model, p)]
    if "projector" in placements:
        targets += [
            n for n, m in model.named_modules() if "multi_modal_projector" in n and isinstance(m, torch.nn.Linear)
        ]
    peft_model = get_peft_model(
        model, LoraConfig(r=r, lora_alpha=2 * r, target_modules=targets, init_lora_weights=False)
    )
    peft_model.save_pretrained(str(out))
    return out


def _make(tmp_path_factory, head_dim=None):
    from lalm_eval.models.tiny import make_tiny_model

    root = tmp_path_factory.mktemp("vllm_peft")
    kw = {"head_dim": head_dim} if head_dim else {}
    model = make_tiny_model("qwen2_audio", root / "tiny", **kw)
    return {
        "root": root,
        "model": str(model),
        "attn": _adapter(model, ["attn"], root / "lora_attn"),
        "tower": _adapter(model, ["audio_tower"], root / "lora_tower", seed=1),
        # the audio tower, the projector and the language model's linear layers
        "all": _adapter(model, ["audio_tower", "projector", "all_linear"], root / "lora_all", seed=2),
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return _make(tmp_path_factory)


def _request(doc, freq=220.0, text="Who is speaking?"):
    t = np.arange(int(1.5 * SR)) / SR
    audio = (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    content = [{"type": "audio"}, {"type": "text", "text": text}]
    return Request(
        "t", doc, (audio,), ({"role": "user", "content": content},), {"max_new_tokens": 8, "do_sample": False}
    )


# -- refusals: construct time, before vLLM is imported or found missing -------------------------


def test_audio_tower_or_projector_adapter_is_refused_with_the_way_out(tiny, monkeypatch):
    from lalm_eval.training.recipes import peft_components

    monkeypatch.setattr(va, "vllm_available", lambda: False)  # the checks come first
    # peft shortened the long target list to leaf names ('q_proj' is the tower's and the LM's): the
    # weights tell which modules the adapter touches
    assert "q_proj" in json.loads((tiny["all"] / "adapter_config.json").read_text())["target_modules"]
    comps = peft_components(tiny["all"])
    assert set(comps) == {"audio_tower", "projector", "language_model"}
    assert comps["projector"] == ["model.multi_modal_projector.linear"]
    for key in ("tower", "all"):
        with pytest.raises(ConfigError) as err:
            va.VLLMAdapter(tiny["model"], peft=str(tiny[key]))
        msg = str(err.value)
        assert "outside the language model (audio_tower: " in msg and "LoRA to the language model only" in msg
        assert "merge_peft=true" in msg and "merge_and_unload()" in msg and "pretrained=MERGED" in msg
    with pytest.raises(ConfigError, match=r"multi_modal_projector"):  # the projector alone is refused too
        (tiny["root"] / "proj").mkdir(exist_ok=True)
        (tiny["root"] / "proj" / "adapter_config.json").write_text(
            json.dumps({"peft_type": "LORA", "r": 4, "target_modules": ["multi_modal_projector.linear"]})
        )
        va.VLLMAdapter(tiny["model"], peft=str(tiny["root"] / "proj"))


def test_language_model_lora_on_qwen2_audio_is_refused_vllm_has_no_lora_for_it(tiny, monkeypatch):
    monkeypatch.setattr(va, "vllm_available", lambda: False)
    with pytest.raises(ConfigError, match=r"no LoRA support for Qwen2AudioForConditionalGeneration .*merge_peft=true"):
        va.VLLMAdapter(tiny["model"], peft=str(tiny["attn"]))


def test_soft_prompts_and_bad_peft_args_are_refused(tiny, monkeypatch, tmp_path):
    monkeypatch.setattr(va, "vllm_available", lambda: False)
    with pytest.raises(ConfigError, match=r"soft_prompts=.* is not supported.*--model qwen2_audio"):
        va.VLLMAdapter(tiny["model"], soft_prompts=str(tmp_path))
    with pytest.raises(ConfigError, match=r"peft=.*no adapter_config.json"):
        va.VLLMAdapter(tiny["model"], peft=str(tmp_path))
    with pytest.raises(ConfigError, match=r"merge_peft=true needs peft=DIR"):
        va.VLLMAdapter(tiny["model"], merge_peft="true")
    with pytest.raises(ConfigError, match=r"merge_peft must be true or false"):
        va.VLLMAdapter(tiny["model"], peft=str(tiny["tower"]), merge_peft="maybe")
    # accepted with merge_peft=true: now only vLLM's absence stops it
    with pytest.raises(ConfigError, match=r"vLLM is not installed"):
        va.VLLMAdapter(tiny["model"], peft=str(tiny["tower"]), merge_peft="true")


# -- merging, identity, the LoRARequest path (engine replaced) -----------------------------------


def test_merged_model_equals_the_peft_model(tiny, tmp_path):
    import torch

    from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter
    from lalm_eval.training.merge import merge_peft

    merged = merge_peft(tiny["model"], str(tiny["all"]), tmp_path / "merged")
    assert (merged / "config.json").is_file() and (merged / "tokenizer_config.json").is_file()
    assert not (merged / "adapter_config.json").exists()
    reqs = [_request(0), _request(1, 330.0, "Is Alice speaking?")]
    peft_ad = Qwen2AudioAdapter(tiny["model"], device="cpu", peft=str(tiny["all"]))
    merged_ad = Qwen2AudioAdapter(str(merged), device="cpu")
    base_ad = Qwen2AudioAdapter(tiny["model"], device="cpu")
    inputs = peft_ad.build_inputs(reqs)
    with torch.no_grad():
        logits = {
            k: ad.model(**inputs).logits for k, ad in (("peft", peft_ad), ("merged", merged_ad), ("base", base_ad))
        }
    assert torch.allclose(logits["merged"], logits["peft"], atol=1e-4)
    assert (logits["base"] - logits["peft"]).abs().max() > 1e-2  # the adapter does change the model
    assert [r.text for r in merged_ad.generate(reqs)] == [r.text for r in peft_ad.generate(reqs)]


def test_merge_refuses_weights_for_modules_the_model_lacks(tiny, tmp_path):
    import shutil

    from safetensors.torch import load_file, save_file

    from lalm_eval.training.merge import merge_peft

    moved = tmp_path / "moved"
    shutil.copytree(tiny["tower"], moved)
    weights = load_file(moved / "adapter_model.safetensors")
    save_file(
        {k.replace("model.audio_tower.", "model.thinker.audio_tower."): v for k, v in weights.items()},
        moved / "adapter_model.safetensors",
    )
    with pytest.raises(
        ConfigError,
        match=r"weights for 12 module\(s\) that Qwen2AudioForConditionalGeneration .* "
        r"does not have, e.g. \['model.thinker.audio_tower",
    ):
        merge_peft(tiny["model"], str(moved), tmp_path / "merged")


class _Engine:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


def test_identity_holds_the_adapter_and_merge_serves_a_merged_copy(tiny, monkeypatch):
    monkeypatch.setattr(va, "vllm_available", lambda: True)
    monkeypatch.setattr(va.VLLMAdapter, "make_engine", lambda self, **kw: _Engine(**kw))
    base = va.VLLMAdapter(tiny["model"]).identity()
    tower = va.VLLMAdapter(tiny["model"], peft=str(tiny["tower"]), merge_peft="true")
    every = va.VLLMAdapter(tiny["model"], peft=str(tiny["all"]), merge_peft="true")
    ids = [base, tower.identity(), every.identity()]
    assert "peft_hash" not in base and ids[1]["merge_peft"] is True
    assert len({json.dumps(i, sort_keys=True) for i in ids}) == 3 and ids[1]["peft_hash"] != ids[2]["peft_hash"]
    engine = tower.engine(1)
    served = engine.kwargs["model"]
    assert served != tiny["model"] and os.path.isfile(os.path.join(served, "config.json"))
    assert "enable_lora" not in engine.kwargs  # merged: vLLM sees a plain model
    assert tower.served_model() == served  # merged once per adapter


def test_language_model_lora_goes_to_vllm_as_a_lora_request_where_vllm_has_lora(tiny, monkeypatch, tmp_path):
    """Request construction only (no LoRA-capable audio architecture runs here): an architecture
    not in VLLM_NO_LORA_ARCHITECTURES gets enable_lora and the adapter's rank rounded up."""
    config = json.loads((tiny["root"] / "tiny" / "config.json").read_text())
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["SomeLoRAAudioModel"]}))
    monkeypatch.setattr(va, "vllm_available", lambda: True)
    ad = va.VLLMAdapter(str(folder), peft=str(tiny["attn"]), prompt_format="qwen2_audio")
    kw = ad.engine_kwargs(1)
    assert kw["enable_lora"] is True and kw["max_lora_rank"] == 8  # r=4 → vLLM's next allowed rank
    with pytest.raises(ConfigError, match="outside the language model"):  # the tower still is not vLLM's
        va.VLLMAdapter(str(folder), peft=str(tiny["tower"]), prompt_format="qwen2_audio")


# -- the real engine (.venv-vllm, scripts/test_vllm.sh) ------------------------------------------


@pytest.mark.vllm
def test_vllm_serves_a_merged_adapter_as_the_hf_adapter_applies_it(tmp_path_factory):
    pytest.importorskip("vllm")
    from vllm.model_executor.models.interfaces import supports_lora
    from vllm.model_executor.models.qwen2_audio import Qwen2AudioForConditionalGeneration

    from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter

    # the static list the construct-time refusal reads agrees with the installed vLLM
    assert not supports_lora(Qwen2AudioForConditionalGeneration)
    t64 = _make(tmp_path_factory, head_dim=64)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    reqs = [
        _request(i, 180.0 + 70 * i, text)
        for i, text in enumerate(["Who is speaking?", "Is Alice speaking?", "Describe the voice.", "What is said?"])
    ]
    hf_peft = [r.text for r in Qwen2AudioAdapter(t64["model"], device="cpu", peft=str(t64["all"])).generate(reqs)]
    hf_base = [r.text for r in Qwen2AudioAdapter(t64["model"], device="cpu").generate(reqs)]
    ad = va.VLLMAdapter(t64["model"], peft=str(t64["all"]), merge_peft="true")
    try:
        served = [r.text for r in ad.generate(reqs)]
    finally:
        ad.close()
    assert served == hf_peft
    assert hf_peft != hf_base  # the adapter (audio tower, projector, LM) changed the answers
