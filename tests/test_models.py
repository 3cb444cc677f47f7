"""Model adapters on tiny random-weight models of the real architectures (CPU, offline)."""

import numpy as np
import pytest
import torch
import transformers

from lalm_eval.api import Request
from lalm_eval.errors import ConfigError, LalmEvalError
from lalm_eval.models import MODELS
from lalm_eval.models.batching import (
    AUTO_CPU,
    AUTO_CUDA_START,
    plan_batches,
    resolve_batch_size,
    split_gen_kwargs,
    truncate_at,
)
from lalm_eval.models.hf_base import HFAudioAdapter
from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter
from lalm_eval.models.qwen_omni import ManualOmniProcessor, Qwen3OmniThinkerAdapter, Qwen25OmniThinkerAdapter
from lalm_eval.models.tiny import TINY_ARCHS, make_tiny_model

SR = 16_000
ADAPTERS = {
    "qwen2_audio": Qwen2AudioAdapter,
    "qwen2_5_omni": Qwen25OmniThinkerAdapter,
    "qwen3_omni": Qwen3OmniThinkerAdapter,
}
OMNI = [a for a in TINY_ARCHS if a != "qwen2_audio"]


def sound(seconds, kind, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    if kind == "tone":
        return (0.3 * np.sin(2 * np.pi * (150 + 60 * seed) * t)).astype(np.float32)
    return (0.1 * rng.standard_normal(len(t))).astype(np.float32)


def request(doc, audios, text="Transcribe the audio.", **gen):
    content = [{"type": "audio"} for _ in audios] + [{"type": "text", "text": text}]
    return Request(
        "t",
        doc,
        tuple(audios),
        ({"role": "user", "content": content},),
        gen or {"max_new_tokens": 8, "do_sample": False},
    )


def six_requests(**gen):
    specs = [(2.0, "noise"), (5.0, "tone"), (3.5, "noise"), (8.0, "tone"), (2.5, "tone"), (6.0, "noise")]
    return [request(i, [sound(s, k, i)], **gen) for i, (s, k) in enumerate(specs)]


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {arch: make_tiny_model(arch, root / arch) for arch in TINY_ARCHS}


@pytest.fixture(scope="module")
def adapters(tiny_dirs):
    return {arch: ADAPTERS[arch](str(tiny_dirs[arch]), device="cpu") for arch in TINY_ARCHS}


class Spy:
    """Wraps ``model.generate``: records kwargs and outputs; ``fail(kw)`` → raise."""

    def __init__(self, model, fail=None):
        self.orig, self.fail, self.calls = model.generate, fail, []

    def __call__(self, **kw):
        if self.fail and self.fail(kw):
            raise RuntimeError("injected failure")
        out = self.orig(**kw)
        self.calls.append((kw, out[:, kw["input_ids"].shape[1] :]))
        return out


# ---- (a) batched == batch size 1 --------------------------------------------------------------
@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_batched_greedy_equals_single(adapters, arch):
    ad, reqs = adapters[arch], six_requests()
    single = ad.generate(reqs, batch_size=1)
    assert all(r.text is not None and r.error is None for r in single)
    for bs in (4, 6):
        assert [r.text for r in ad.generate(reqs, batch_size=bs)] == [r.text for r in single]
    # (b) different audios, different answers
    assert len({r.text for r in single}) > 1


# ---- (b) every audio reaches the model ---------------------------------------------------------
@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_each_audio_gets_its_own_features(adapters, arch):
    ad = adapters[arch]
    reqs = [request(0, [sound(2, "noise", 0), sound(3, "tone", 1)]), request(1, [sound(4, "tone", 2)])]
    prompts = [ad.render_prompt(r) for r in reqs]
    assert [p.count("<|AUDIO|>") for p in prompts] == [2, 1]
    inputs = ad.build_inputs(reqs)
    feats = inputs["input_features"]
    assert feats.shape[0] == 3
    assert not torch.equal(feats[0], feats[1]) and not torch.equal(feats[1], feats[2])
    n_audio_tokens = (inputs["input_ids"] == ad.tokenizer.convert_tokens_to_ids("<|AUDIO|>")).sum(-1).tolist()
    assert n_audio_tokens[0] > n_audio_tokens[1] > 0  # 5 s of audio in row 0, 4 s in row 1
    assert inputs["attention_mask"][:, 0].tolist() == [1, 0]  # left padding: the shorter row starts padded


def test_processor_that_ignores_audio_is_refused(tiny_dirs):
    ad = Qwen2AudioAdapter(str(tiny_dirs["qwen2_audio"]), device="cpu")
    real = ad.processor

    class DropsAudio:
        tokenizer, feature_extractor = real.tokenizer, real.feature_extractor
        apply_chat_template = staticmethod(real.apply_chat_template)

        def __call__(self, text, audio=None, **kw):
            return real.tokenizer(text, return_tensors="pt", padding=True)

    ad._processor = DropsAudio()
    with pytest.raises(LalmEvalError, match="no audio features"):
        ad.build_inputs([request(0, [sound(2, "tone", 0)])])
    one_part = request(0, [sound(1, "tone", 0)])
    with pytest.raises(ConfigError, match="1 audio parts in the messages, 2 audios"):
        ad.build_inputs([Request("t", 0, one_part.audios * 2, one_part.messages, {})])


# ---- (c) gen kwargs passed exactly; until truncates ------------------------------------------
def test_gen_kwargs_are_honoured_and_until_truncates(adapters, monkeypatch):
    ad = adapters["qwen2_audio"]
    spy = Spy(ad.model)
    monkeypatch.setattr(ad.model, "generate", spy)
    req = six_requests()[0]
    plain = ad.generate([req])[0].text
    first = int(spy.calls[-1][1][0, 0])
    # stopping on the first generated token ends at once, unless min_new_tokens says otherwise
    ad.generate([request(0, req.audios, max_gen_toks=8, do_sample=False, eos_token_id=first)])
    kw, out = spy.calls[-1]
    assert kw["max_new_tokens"] == 8 and "max_gen_toks" not in kw and out.shape[1] == 1
    ad.generate([request(0, req.audios, max_new_tokens=8, min_new_tokens=5, do_sample=False, eos_token_id=first)])
    kw, out = spy.calls[-1]
    assert kw["min_new_tokens"] == 5 and kw["eos_token_id"] == first and out.shape[1] >= 5
    stop = plain[3:5]
    cut = ad.generate([request(0, req.audios, max_new_tokens=8, do_sample=False, until=[stop, "\x00never"])])[0]
    assert "until" not in spy.calls[-1][0]
    assert cut.text == plain[: plain.find(stop)] and len(cut.text) < len(plain)


def test_split_gen_kwargs_and_truncate():
    kw, stops = split_gen_kwargs({"until": "\n", "max_gen_toks": 5, "temperature": 0.0, "do_sample": False})
    assert kw == {"max_new_tokens": 5, "temperature": 0.0, "do_sample": False} and stops == ["\n"]
    assert split_gen_kwargs({"max_gen_toks": 5, "max_new_tokens": 7})[0] == {"max_new_tokens": 7}
    assert truncate_at("a. b\nc", [".", "\n"]) == "a" and truncate_at("abc", []) == "abc"
    with pytest.raises(ConfigError):
        split_gen_kwargs({"until": 3})


# ---- (d) one failing sample does not sink its batch -----------------------------------------
@pytest.mark.parametrize("arch", TINY_ARCHS)
def test_failing_sample_gets_error_others_succeed(adapters, arch, monkeypatch):
    ad, reqs = adapters[arch], six_requests()
    clean = [r.text for r in ad.generate(reqs, batch_size=6)]
    bad = list(reqs)
    bad[2] = request(2, [np.full(SR, np.nan, dtype=np.float32)])
    bad[4] = request(4, [np.zeros(0, dtype=np.float32)])
    before = ad.n_failed, ad.n_generated
    out = ad.generate(bad, batch_size=6)
    assert out[2].text is None and "NaN" in out[2].error and out[4].text is None and "non-empty" in out[4].error
    assert [out[i].text for i in (0, 1, 3, 5)] == [clean[i] for i in (0, 1, 3, 5)]
    assert (ad.n_failed - before[0], ad.n_generated - before[1]) == (2, 4)
    # a model error on the longest request (doc 3): its batch is retried one by one
    n_long = ad.build_inputs([reqs[3]])["input_ids"].shape[1]
    monkeypatch.setattr(ad.model, "generate", Spy(ad.model, fail=lambda kw: kw["input_ids"].shape[1] == n_long))
    out = ad.generate(reqs, batch_size=3)
    assert out[3].text is None and "injected failure" in out[3].error
    assert [r.text for i, r in enumerate(out) if i != 3] == [t for i, t in enumerate(clean) if i != 3]


# ---- (e) identity ----------------------------------------------------------------------------
def test_identity_stable_and_sensitive(tiny_dirs, tmp_path):
    src = tiny_dirs["qwen2_audio"]
    a, b = Qwen2AudioAdapter(str(src), device="cpu"), Qwen2AudioAdapter(str(src), device="cpu")
    ida = a.identity()
    assert ida == b.identity() and a._model is None  # computing it loads no weights
    assert set(ida) == {"name", "pretrained", "config_hash", "dtype", "transformers", "long_audio"}
    assert ida["long_audio"] == "truncate"  # the documented default of the local models
    assert ida["dtype"] == "float32" and ida["transformers"] == transformers.__version__
    assert Qwen2AudioAdapter(str(src), device="cpu", dtype="bf16").identity()["dtype"] == "bfloat16"
    rebuilt = make_tiny_model("qwen2_audio", tmp_path / "rebuilt")  # deterministic build
    assert Qwen2AudioAdapter(str(rebuilt)).identity()["config_hash"] == ida["config_hash"]
    cfg = rebuilt / "config.json"
    cfg.write_text(cfg.read_text().replace('"encoder_layers": 2', '"encoder_layers": 3'))
    changed = Qwen2AudioAdapter(str(rebuilt)).identity()["config_hash"]
    assert changed != ida["config_hash"]
    weights = rebuilt / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-10] ^= 0xFF
    weights.write_bytes(bytes(data))
    assert Qwen2AudioAdapter(str(rebuilt)).identity()["config_hash"] not in (changed, ida["config_hash"])


def test_hf_audio_generic_adapter(adapters, tiny_dirs):
    ad = MODELS.get("hf-audio")(str(tiny_dirs["qwen2_audio"]), device="cpu")
    assert ad.resolve_model_class() is transformers.Qwen2AudioForConditionalGeneration  # config.architectures[0]
    reqs = six_requests()[:3]
    assert [r.text for r in ad.generate(reqs, 3)] == [r.text for r in adapters["qwen2_audio"].generate(reqs, 3)]


def test_settings_validation(tiny_dirs):
    with pytest.raises(ConfigError):
        HFAudioAdapter(str(tiny_dirs["qwen2_audio"]), dtype="float8")
    with pytest.raises(ConfigError):
        HFAudioAdapter(str(tiny_dirs["qwen2_audio"]), device="tpu")
    ad = HFAudioAdapter(str(tiny_dirs["qwen2_audio"]))
    assert ad.device == ("cuda" if torch.cuda.is_available() else "cpu")
    assert ad.torch_dtype == (torch.bfloat16 if torch.cuda.is_available() else torch.float32)


def test_adapter_identity_needs_no_torch_on_a_cpu_build(tiny_dirs):
    """A cached rerun builds the adapter and its identity only: on a CPU-only torch build that
    must not import torch (seconds of start-up); on other builds the CUDA probe imports it."""
    import subprocess
    import sys
    from importlib.metadata import version

    from lalm_eval.models.batching import cuda_available

    assert cuda_available() == torch.cuda.is_available()
    code = (
        "import sys; from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter; "
        f"a = Qwen2AudioAdapter(pretrained={str(tiny_dirs['qwen2_audio'])!r}); i = a.identity(); "
        "print(i['dtype'], 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == ("bfloat16" if torch.cuda.is_available() else "float32")
    if version("torch").endswith("+cpu"):
        assert out[1] == "False"


# ---- (f) batch planning ------------------------------------------------------------------------
class R:
    def __init__(self, seconds, gen=None):
        self.audio_seconds, self.gen_kwargs = seconds, gen or {}


def test_plan_batches_caps_and_order():
    reqs = [R(s) for s in (1, 5, 3, 5, 2, 9, 4)]
    assert plan_batches(reqs, 3, None) == [[5, 1, 3], [6, 2, 4], [0]]  # longest first, ties in order
    assert plan_batches(reqs, 10, 10) == [[5], [1, 3], [6, 2, 4, 0]]  # 9 | 5+5 | 4+3+2+1
    assert plan_batches(reqs, 10, 9) == [[5], [1], [3, 6], [2, 4, 0]]  # 9 | 5 | 5+4 | 3+2+1
    assert plan_batches([R(30), R(1)], 4, 10) == [[0], [1]]  # too long alone still runs
    for batch in plan_batches(reqs, 2, 8):
        assert len(batch) <= 2 and (len(batch) == 1 or sum(reqs[i].audio_seconds for i in batch) <= 8)
    mixed = [R(1, {"max_new_tokens": 4}), R(2, {"max_new_tokens": 8}), R(3, {"max_new_tokens": 4})]
    assert plan_batches(mixed, 8, None) == [[2, 0], [1]]  # one gen-kwargs set per batch
    with pytest.raises(ConfigError):
        plan_batches(reqs, 0, None)


def test_auto_batch_size_halves_on_cuda_oom(tiny_dirs):
    assert resolve_batch_size("auto", on_cuda=False) == (AUTO_CPU, False)
    assert resolve_batch_size("auto", on_cuda=True) == (AUTO_CUDA_START, True)
    assert resolve_batch_size("4", on_cuda=False) == (4, False)
    with pytest.raises(ConfigError):
        resolve_batch_size("many", on_cuda=False)

    class FakeCuda(HFAudioAdapter):
        sizes = []

        def generate_batch(self, requests):
            self.sizes.append(len(requests))
            if len(requests) > 5:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory")
            return [f"doc{r.doc_id}" for r in requests]

    ad = FakeCuda(str(tiny_dirs["qwen2_audio"]), device="cpu")
    ad.device = "cuda"  # only the batch-size policy looks at it here
    reqs = [request(i, [sound(1 + i % 3, "tone", 0)]) for i in range(100)]
    out = ad.generate(reqs, batch_size="auto")
    assert [r.text for r in out] == [f"doc{i}" for i in range(100)]
    assert ad.sizes[:4] == [64, 32, 16, 8] and max(ad.sizes[4:]) == 4 and ad.n_generated == 100


# ---- Omni: the hand-built inputs equal Qwen*OmniProcessor's ----------------------------------
@pytest.mark.parametrize("arch", OMNI)
def test_manual_omni_inputs_match_processor(adapters, arch, monkeypatch):
    ad = adapters[arch]
    assert isinstance(ad.processor, ManualOmniProcessor)  # no torchvision here, or no processor saved
    # No skip: transformers 5 (pyproject) has these classes, and this is the only check that the
    # hand-built inputs equal the real processor's, so a failure to build it must fail the test.
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
    from transformers.processing_utils import ProcessorMixin
    from transformers.video_processing_utils import BaseVideoProcessor

    cls = {"qwen2_5_omni": "Qwen2_5OmniProcessor", "qwen3_omni": "Qwen3OmniMoeProcessor"}[arch]
    # The video processor is never used for audio + text; without torchvision its type check
    # cannot run, so it is skipped here (the audio/text code under test is the real one).
    monkeypatch.setattr(ProcessorMixin, "check_argument_for_proper_class", lambda *a: None)
    real = getattr(transformers, cls)(
        image_processor=Qwen2VLImageProcessorPil(),
        video_processor=BaseVideoProcessor(),
        feature_extractor=ad.processor.feature_extractor,
        tokenizer=ad.tokenizer,
        chat_template=ad.processor.chat_template,
    )
    reqs = six_requests()[:3] + [request(9, [sound(1.5, "tone", 3), sound(4, "noise", 4)])]
    if arch == "qwen3_omni":
        reqs.append(request(10, [sound(33, "noise", 5)]))  # no 30 s cut
    manual = ad.build_inputs(reqs)
    other = ADAPTERS[arch](ad.pretrained, device="cpu")
    other._processor = real
    via_processor = other.build_inputs(reqs)
    assert sorted(manual) == sorted(via_processor)
    for key in manual:
        assert torch.equal(manual[key], via_processor[key]), key


def test_registry():
    names = MODELS.names()
    assert {"qwen2_audio", "qwen2_5_omni", "hf-audio"} <= set(names)
    assert ("qwen3_omni" in names) == hasattr(transformers, "Qwen3OmniMoeThinkerForConditionalGeneration")
    assert MODELS.get("qwen2_audio") is Qwen2AudioAdapter and MODELS.get("hf-audio") is HFAudioAdapter
    if "qwen3_omni" in names:
        assert MODELS.get("qwen3_omni").model_class_name == "Qwen3OmniMoeThinkerForConditionalGeneration"
    with pytest.raises(ConfigError):
        make_tiny_model("llama", "/nonexistent")
