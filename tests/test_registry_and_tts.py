import shutil

import numpy as np
import pytest

from lalm_eval.audio.tts import VoiceRecipe, synthesize
from lalm_eval.errors import ConfigError
from lalm_eval.registry import Registry


def test_registry_duplicate_and_lazy_entries():
    reg = Registry("widget")
    reg.register("json-dumps", "json:dumps")
    import json

    assert reg.get("json-dumps") is json.dumps
    with pytest.raises(ValueError, match="already registered"):
        reg.register("json-dumps", "json:loads")
    with pytest.raises(KeyError, match="Did you mean 'json-dumps'"):
        reg.get("json-dump")


def test_voice_recipe_validation():
    with pytest.raises(ConfigError, match="unknown TTS engine"):
        VoiceRecipe(engine="say", voice="x")
    with pytest.raises(ConfigError, match="espeak-ng options"):
        VoiceRecipe(engine="flite", voice="slt", pitch=50)
    with pytest.raises(ConfigError, match=r"voices.yaml: en_s01: unknown field\(s\) \['pitchh'\]"):
        VoiceRecipe.from_dict({"engine": "flite", "voice": "slt", "pitchh": 3}, where="voices.yaml: en_s01")
    with pytest.raises(ConfigError, match="missing field 'voice'"):
        VoiceRecipe.from_dict({"engine": "flite"})
    r = VoiceRecipe.from_dict({"engine": "flite", "voice": "slt", "pitch_cents": 250})
    assert r.to_dict() == {"engine": "flite", "voice": "slt", "pitch_cents": 250}


@pytest.mark.skipif(
    shutil.which("espeak-ng") is None or shutil.which("sox") is None,
    reason="rendering needs Debian's espeak-ng and sox (not needed to use the corpus)",
)
def test_synthesis_is_deterministic_and_shifts_apply():
    recipe = VoiceRecipe(engine="espeak-ng", voice="en-us+f3")
    a = synthesize("The quick brown fox jumps over the lazy dog.", recipe)
    b = synthesize("The quick brown fox jumps over the lazy dog.", recipe)
    assert a.dtype == np.float32 and np.array_equal(a, b)
    slower = synthesize(
        "The quick brown fox jumps over the lazy dog.", VoiceRecipe(engine="espeak-ng", voice="en-us+f3", tempo=0.8)
    )
    assert len(slower) == pytest.approx(len(a) / 0.8, rel=0.05)
