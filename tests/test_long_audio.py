"""Long audio: refused, truncated or chunked under the adapter's limit, and always on the record."""

import numpy as np
import pytest

from lalm_eval.api import AUDIO_SR, Request
from lalm_eval.errors import ConfigError
from lalm_eval.models.long_audio import LongAudioError, fit_request, resolve_policy
from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter
from lalm_eval.models.tiny import make_tiny_model


def noise(seconds, seed=0):
    return np.random.default_rng(seed).uniform(-0.3, 0.3, int(seconds * AUDIO_SR)).astype(np.float32)


def request(*seconds, text="Who speaks?"):
    audios = tuple(noise(s, i) for i, s in enumerate(seconds))
    content = [{"type": "audio"} for _ in audios] + [{"type": "text", "text": text}]
    return Request("t", 0, audios, ({"role": "user", "content": content},), {"max_new_tokens": 4})


def audio_parts(req):
    return [p for m in req.messages for p in m["content"] if p.get("type") == "audio"]


def test_within_the_limit_nothing_changes():
    req = request(10.0, 20.0)
    fitted, meta = fit_request(req, 30.0, "per_audio", "refuse")
    assert fitted is req and meta == {"audio_s": 30.0, "seen_s": 30.0, "truncated": False}
    assert fit_request(req, None, "per_request", "refuse")[0] is req  # no limit known


def test_refuse_names_the_length_and_the_limit():
    with pytest.raises(LongAudioError, match=r"45\.0 s, over the model's limit of 30 s"):
        fit_request(request(5.0, 45.0), 30.0, "per_audio", "refuse")
    with pytest.raises(LongAudioError, match="request's audio is 40.0 s"):
        fit_request(request(20.0, 20.0), 30.0, "per_request", "refuse")


def test_truncate_per_audio_cuts_each_part_to_its_first_seconds():
    req = request(5.0, 45.0)
    fitted, meta = fit_request(req, 30.0, "per_audio", "truncate")
    assert [len(a) for a in fitted.audios] == [5 * AUDIO_SR, 30 * AUDIO_SR]
    np.testing.assert_array_equal(fitted.audios[1], req.audios[1][: 30 * AUDIO_SR])
    assert meta == {"audio_s": 50.0, "seen_s": 35.0, "truncated": True}
    assert fitted.messages == req.messages


def test_truncate_per_request_keeps_parts_in_order_until_the_budget_is_spent():
    fitted, meta = fit_request(request(20.0, 20.0), 30.0, "per_request", "truncate")
    assert [len(a) / AUDIO_SR for a in fitted.audios] == [20.0, 10.0] and meta["seen_s"] == 30.0
    with pytest.raises(LongAudioError, match="nothing of the later parts"):
        fit_request(request(30.0, 5.0), 30.0, "per_request", "truncate")


def test_chunk_splits_a_long_part_into_consecutive_parts_in_its_place():
    req = request(5.0, 70.0)
    fitted, meta = fit_request(req, 30.0, "per_audio", "chunk")
    assert [len(a) / AUDIO_SR for a in fitted.audios] == [5.0, 30.0, 30.0, 10.0]
    np.testing.assert_array_equal(np.concatenate(fitted.audios[1:]), req.audios[1])
    assert len(audio_parts(fitted)) == 4 and fitted.messages[0]["content"][-1]["text"] == "Who speaks?"
    assert meta == {"audio_s": 75.0, "seen_s": 75.0, "truncated": False, "chunks": [1, 3]}


def test_policy_argument_is_checked():
    assert resolve_policy(None, "truncate", "per_audio", "m") == "truncate"
    assert resolve_policy("REFUSE", "truncate", "per_audio", "m") == "refuse"
    with pytest.raises(ConfigError, match="choose one of refuse, truncate, chunk"):
        resolve_policy("cut", "truncate", "per_audio", "m")
    with pytest.raises(ConfigError, match="needs a per-audio limit"):
        resolve_policy("chunk", "refuse", "per_request", "m")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return make_tiny_model("qwen2_audio", tmp_path_factory.mktemp("tiny") / "q")


def test_qwen2_audio_truncates_explicitly_and_records_it(tiny):
    long_req, short_req = request(35.0), request(4.0)
    cut = Request("t", 0, (long_req.audios[0][: 30 * AUDIO_SR],), long_req.messages, long_req.gen_kwargs)
    adapter = Qwen2AudioAdapter(str(tiny), device="cpu")
    out = adapter.generate([long_req, short_req, cut], batch_size=2)
    assert out[0].meta == {"audio_s": 35.0, "seen_s": 30.0, "truncated": True}
    assert out[1].meta == {"audio_s": 4.0, "seen_s": 4.0, "truncated": False}
    assert out[0].text == out[2].text  # what the model heard is exactly the first 30 s


def test_qwen2_audio_refuse_and_chunk(tiny):
    refuse = Qwen2AudioAdapter(str(tiny), device="cpu", long_audio="refuse")
    out = refuse.generate([request(35.0), request(3.0)])
    assert out[0].text is None and out[0].failure == "audio_over_limit" and "35.0 s" in out[0].error
    assert out[1].text is not None and refuse.n_failed == 1
    chunk = Qwen2AudioAdapter(str(tiny), device="cpu", long_audio="chunk")
    (resp,) = chunk.generate([request(65.0)])
    assert resp.text is not None and resp.meta["chunks"] == [3] and resp.meta["seen_s"] == 65.0
    # the three chunks reach the processor as three audios (three rows of features)
    fitted, _ = fit_request(request(65.0), 30.0, "per_audio", "chunk")
    assert chunk.build_inputs([fitted])["input_features"].shape[0] == 3
    assert refuse.identity()["long_audio"] == "refuse" != chunk.identity()["long_audio"]
