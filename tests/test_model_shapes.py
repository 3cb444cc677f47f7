"""lalm_eval/models/model_shapes.yaml: the one definition of the shapes of the models built from
scratch (make-tiny-model's architectures, the GPU benchmarks' Qwen2-Audio-7B, the tests' tiny LM)."""

import pytest

from lalm_eval.models.tiny import TINY_ARCHS, model_shape


def test_every_tiny_arch_has_a_shape_and_each_call_is_a_fresh_copy():
    for arch in TINY_ARCHS:
        shape = model_shape(arch)
        assert shape["text_config"]["num_hidden_layers"] == 2 and shape["audio_config"]["d_model"] == 64
    shape = model_shape("qwen2_audio")
    shape["text_config"]["hidden_size"] = 8  # a caller's change (--hidden-size) stays its own
    assert model_shape("qwen2_audio")["text_config"]["hidden_size"] == 64
    with pytest.raises(KeyError):
        model_shape("no_such_shape")


def test_the_7b_shape_is_qwen2_audio_7b():
    shape = model_shape("qwen2_audio_7b")
    text, audio = shape["text_config"], shape["audio_config"]
    assert (text["hidden_size"], text["num_hidden_layers"], text["intermediate_size"]) == (4096, 32, 11008)
    assert (text["vocab_size"], text["num_key_value_heads"], text["max_position_embeddings"]) == (156032, 32, 8192)
    assert text["rms_norm_eps"] == 1e-6 and text["rope_parameters"]["rope_theta"] == 10000.0
    assert (audio["d_model"], audio["encoder_layers"], audio["encoder_attention_heads"]) == (1280, 32, 20)
