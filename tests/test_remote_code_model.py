"""``hf-audio`` runs a remote-code model (classes shipped as Python beside the weights, found
through ``auto_map``, like MiDashengLM's Hub folder) only when ``trust_remote_code=true``."""

import json

import numpy as np
import pytest

from lalm_eval.api import AUDIO_SR, Request
from lalm_eval.errors import ConfigError
from lalm_eval.models.hf_base import HFAudioAdapter
from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter
from lalm_eval.models.tiny import make_tiny_model

CONFIG_PY = """
from transformers import Qwen2AudioConfig


class TinyRemoteAudioConfig(Qwen2AudioConfig):
    pass  # model_type stays qwen2_audio, so transformers maps the checkpoint's weight names as for the native class
"""
MODELING_PY = '''
from transformers import Qwen2AudioForConditionalGeneration

from .configuration_tiny_remote import TinyRemoteAudioConfig

LOADED = []


class TinyRemoteAudioLM(Qwen2AudioForConditionalGeneration):
    """The model's own code: marks each instance so a test can tell it ran."""

    config_class = TinyRemoteAudioConfig

    def __init__(self, config):
        super().__init__(config)
        self.remote_code_ran = True
'''


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("remote")
    plain = make_tiny_model("qwen2_audio", root / "plain")
    remote = make_tiny_model("qwen2_audio", root / "remote")
    (remote / "configuration_tiny_remote.py").write_text(CONFIG_PY)
    (remote / "modeling_tiny_remote.py").write_text(MODELING_PY)
    cfg = json.loads((remote / "config.json").read_text())
    cfg.update(
        architectures=["TinyRemoteAudioLM"],
        auto_map={
            "AutoConfig": "configuration_tiny_remote.TinyRemoteAudioConfig",
            "AutoModelForCausalLM": "modeling_tiny_remote.TinyRemoteAudioLM",
        },
    )
    (remote / "config.json").write_text(json.dumps(cfg))
    # the checkpoint as the remote class itself saves it (weight names round-trip through that class)
    import transformers

    model = transformers.AutoModelForCausalLM.from_config(
        transformers.AutoConfig.from_pretrained(remote, trust_remote_code=True), trust_remote_code=True
    )
    model.load_state_dict(transformers.Qwen2AudioForConditionalGeneration.from_pretrained(plain).state_dict())
    model.save_pretrained(remote)
    return plain, remote


def requests():
    rng = np.random.default_rng(1)
    out = []
    for i, seconds in enumerate((2.0, 3.5)):
        content = [{"type": "audio"}, {"type": "text", "text": "Who is speaking?"}]
        out.append(
            Request(
                "t",
                i,
                (rng.uniform(-0.3, 0.3, int(seconds * AUDIO_SR)).astype(np.float32),),
                ({"role": "user", "content": content},),
                {"max_new_tokens": 6},
            )
        )
    return out


def test_remote_code_needs_trust_remote_code(folders):
    _, remote = folders
    with pytest.raises(ConfigError, match="remote code .*trust_remote_code=true"):
        HFAudioAdapter(str(remote), device="cpu").load()


def test_remote_code_model_runs_its_own_class_and_matches_the_native_one(folders):
    plain, remote = folders
    adapter = HFAudioAdapter(str(remote), device="cpu", trust_remote_code="true")
    out = adapter.generate(requests(), batch_size=2)
    assert type(adapter.model).__name__ == "TinyRemoteAudioLM" and adapter.model.remote_code_ran
    native = Qwen2AudioAdapter(str(plain), device="cpu").generate(requests(), batch_size=2)
    assert [r.text for r in out] == [r.text for r in native] and all(r.text for r in out)
