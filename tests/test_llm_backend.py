"""The text-LLM backend against a local OpenAI-protocol server (127.0.0.1 only), and profile/HD generation."""

import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lalm_eval.errors import DataError
from lalm_eval.llm import TEXT_LLMS, LLMError, TextLLM, get_text_llm, parse_json_reply
from lalm_eval.llm.openai_http import KeyRefused, OpenAIChatLLM
from palm_bench.acoustic import BandShare, VoiceMeasurements
from palm_bench.corpus.embedded import INTEREST_FIELDS, PROFILE_FIELDS
from palm_bench.corpus.types import Speaker
from palm_bench.profiles import generate_human_descriptions, generate_profiles

KEY = "sk-test-SECRET-4242"


def completion(text):
    return {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def profile_for(name):
    return {
        "age": 31,
        "occupation": "Bakery owner",
        "personality": "Warm and practical.",
        "interests": {k: f"{name} likes {k}." for k in INTEREST_FIELDS},
        "speaking_style": "Calm and direct.",
        "intro": f"{name} runs a small bakery.",
    }


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        srv = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with srv.lock:
            index = len(srv.requests)
            srv.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
            srv.active += 1
            srv.max_active = max(srv.max_active, srv.active)
        try:
            status, payload, delay = srv.respond(index, body, dict(self.headers))
            time.sleep(delay)
        finally:
            # counted as finished before the reply is sent: once the client has the reply it may
            # send its next request, which must not overlap this one in the count
            with srv.lock:
                srv.active -= 1
        try:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client timed out and went away

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    """``server(respond)`` starts a chat server; ``respond(index, body, headers) -> (status, payload, delay)``."""
    started = []

    def start(respond):
        srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        srv.daemon_threads = True
        srv.lock, srv.requests, srv.active, srv.max_active, srv.respond = threading.Lock(), [], 0, 0, respond
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        srv.url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.shutdown()
        srv.server_close()


def echo(index, body, headers):
    return 200, completion("echo: " + body["messages"][-1]["content"]), 0.0


def llm_for(srv, **kw):
    kw = {"api_key": KEY, "retry_delay": 0.01, **kw}
    return OpenAIChatLLM("test-model", base_url=srv.url, **kw)


def test_complete_returns_replies_in_order_with_protocol_body(server):
    srv = server(echo)
    llm = llm_for(srv, temperature=0.2, max_tokens=77)
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(5)]
    assert llm.complete(batch) == [f"echo: q{i}" for i in range(5)]
    req = srv.requests[0]
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    assert set(req["body"]) == {"model", "messages", "temperature", "max_tokens"}
    assert (req["body"]["model"], req["body"]["temperature"], req["body"]["max_tokens"]) == ("test-model", 0.2, 77)
    assert llm.complete(batch[:1], temperature=0.9) == ["echo: q0"]
    assert srv.requests[-1]["body"]["temperature"] == 0.9
    assert KEY not in repr(llm) and KEY not in json.dumps(llm.settings)
    assert llm.settings["model"] == "test-model" and llm.complete([]) == []


def test_concurrency_bound_is_respected(server):
    srv = server(lambda i, b, h: (200, completion("ok"), 0.1))
    llm = llm_for(srv, concurrency=3)
    assert llm.complete([[{"role": "user", "content": str(i)}] for i in range(10)]) == ["ok"] * 10
    assert len(srv.requests) == 10
    assert 2 <= srv.max_active <= 3


def test_retry_on_500_then_success(server):
    srv = server(lambda i, b, h: (500, {"error": "boom"}, 0.0) if i == 0 else (200, completion("fine"), 0.0))
    assert llm_for(srv).complete([[{"role": "user", "content": "x"}]]) == ["fine"]
    assert len(srv.requests) == 2


def test_timeout_is_retried(server):
    srv = server(lambda i, b, h: (200, completion("late" if i == 0 else "fast"), 1.0 if i == 0 else 0.0))
    assert llm_for(srv, timeout=0.3).complete([[{"role": "user", "content": "x"}]]) == ["fast"]
    assert len(srv.requests) == 2


def test_errors_name_url_and_status_never_the_key(server):
    # the server echoes the Authorization header back: the client must redact it
    leak = lambda i, b, h: (503, {"error": f"bad auth {h.get('Authorization')}"}, 0.0)  # noqa: E731
    srv = server(leak)
    with pytest.raises(LLMError) as err:
        llm_for(srv, max_retries=2).complete([[{"role": "user", "content": "x"}]])
    assert len(srv.requests) == 3
    msg = str(err.value)
    assert srv.url + "/chat/completions" in msg and "503" in msg and KEY not in msg and "***" in msg

    srv = server(lambda i, b, h: (401, {"error": f"bad key {h.get('Authorization')}"}, 0.0))
    with pytest.raises(KeyRefused) as err:  # a refused key stops the command: no chat can succeed
        llm_for(srv).complete([[{"role": "user", "content": "x"}]])
    assert len(srv.requests) == 1  # a 4xx is not retried
    assert "401" in str(err.value) and KEY not in str(err.value) and "OPENAI_API_KEY" in str(err.value)

    srv = server(lambda i, b, h: (200, b"<html>not json</html>", 0.0))
    with pytest.raises(LLMError, match="not a chat completion"):
        llm_for(srv).complete([[{"role": "user", "content": "x"}]])


def test_connection_error_is_retried_then_raised(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm = get_text_llm("openai", model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, retry_delay=0.01)
    with pytest.raises(LLMError) as err:
        llm.complete([[{"role": "user", "content": "x"}]])
    assert f"127.0.0.1:{port}" in str(err.value) and "2 attempts" in str(err.value)
    assert KEY not in str(err.value) and llm._api_key == KEY


def test_registry_and_interface():
    assert "openai" in TEXT_LLMS and TEXT_LLMS.get("openai") is OpenAIChatLLM
    assert issubclass(OpenAIChatLLM, TextLLM)
    with pytest.raises(KeyError, match="openai"):
        get_text_llm("opnai", model="m")


def test_parse_json_reply():
    assert parse_json_reply('{"a": 1}') == {"a": 1}
    assert parse_json_reply('Sure!\n```json\n{"a": [1, 2]}\n```\nDone.') == {"a": [1, 2]}
    assert parse_json_reply('Here it is: {"a": {"b": "}"}} hope it helps') == {"a": {"b": "}"}}
    with pytest.raises(LLMError, match=re.escape(repr("x" * 200))):
        parse_json_reply("x" * 500)
    with pytest.raises(LLMError):
        parse_json_reply("[1, 2]")


SPEAKERS = [Speaker("a1", "subject", "en", "female", name="Ada"), Speaker("z1", "subject", "zh", "male", name="李雷")]
TRANSCRIPTS = {"a1": ["I bake sourdough every morning."], "z1": ["我每天早上都做面包。"]}


def profile_server(index, body, headers):
    prompt = body["messages"][0]["content"]
    name = "Ada" if "Ada" in prompt else "李雷"
    reply = json.dumps(profile_for(name))
    return 200, completion(f"```json\n{reply}\n```" if name == "Ada" else reply), 0.0


def test_generate_profiles_returns_validated_profiles(server):
    srv = server(profile_server)
    profiles = generate_profiles(llm_for(srv), SPEAKERS, TRANSCRIPTS)
    assert list(profiles) == ["a1", "z1"]
    assert profiles["a1"] == profile_for("Ada") and profiles["z1"] == profile_for("李雷")
    assert tuple(profiles["a1"]) == PROFILE_FIELDS and tuple(profiles["a1"]["interests"]) == INTEREST_FIELDS
    prompts = [r["body"]["messages"][0]["content"] for r in srv.requests]
    assert any("I bake sourdough every morning." in p for p in prompts)
    assert any("我每天早上都做面包。" in p and "转写文本" in p for p in prompts)


def test_malformed_reply_is_retried_once_then_data_error(server):
    srv = server(lambda i, b, h: (200, completion("I cannot do that."), 0.0))
    with pytest.raises(DataError, match="speaker a1") as err:
        generate_profiles(llm_for(srv), SPEAKERS[:1], TRANSCRIPTS)
    assert len(srv.requests) == 2 and "I cannot do that." in str(err.value)
    retry = srv.requests[1]["body"]["messages"]
    assert [m["role"] for m in retry] == ["user", "assistant", "user"] and "could not be used" in retry[2]["content"]


def test_invalid_profile_then_valid_one(server):
    bad = {**profile_for("Ada"), "age": "thirty"}
    srv = server(lambda i, b, h: (200, completion(json.dumps(bad if i == 0 else profile_for("Ada"))), 0.0))
    assert generate_profiles(llm_for(srv), SPEAKERS[:1], TRANSCRIPTS)["a1"]["age"] == 31
    assert "age" in srv.requests[1]["body"]["messages"][2]["content"]
    srv = server(
        lambda i, b, h: (200, completion(json.dumps({**profile_for("Ada"), "interests": {"movie": "x"}})), 0.0)
    )
    with pytest.raises(DataError, match="interests"):
        generate_profiles(llm_for(srv), SPEAKERS[:1], TRANSCRIPTS)
    with pytest.raises(DataError, match="a1"):
        generate_profiles(llm_for(srv), SPEAKERS[:1], {"a1": []})


def test_generate_human_descriptions_uses_measurements(server):
    meas = VoiceMeasurements(
        language="en",
        n_clips=3,
        audio_seconds=9.0,
        speech_seconds=8.0,
        voiced_seconds=5.0,
        f0_mean_hz=121.0,
        f0_median_hz=119.0,
        f0_p10_hz=100.0,
        f0_p90_hz=140.0,
        f0_std_hz=12.0,
        f0_std_semitones=1.7,
        f0_upper_excursion_hz=21.0,
        rate_unit="words",
        rate_units=30,
        rate_per_minute=225.0,
        bands=tuple(
            BandShare(lo, hi, s)
            for (lo, hi), s in zip(
                ((0, 300), (300, 1000), (1000, 3000), (3000, 5000), (5000, None)), (0.4, 0.4, 0.15, 0.04, 0.01)
            )
        ),
        band_basis="voiced",
        rms_mean_dbfs=-20.0,
        rms_peak_dbfs=-8.0,
    )
    srv = server(lambda i, b, h: (200, completion('{"description": "A low, calm voice."}'), 0.0))
    out = generate_human_descriptions(llm_for(srv), SPEAKERS[:1], {"a1": meas}, notes={"a1": "a TTS voice"})
    assert out == {"a1": "A low, calm voice."}
    prompt = srv.requests[0]["body"]["messages"][0]["content"]
    assert "median F0 120 Hz" in prompt and "mid-low" in prompt and "fast" in prompt and "a TTS voice" in prompt


# ---- the local transformers backend ("hf") ------------------------------------------------------

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


SHAPE_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads")


def _tiny_chat_lm(folder, seed):
    """A 2-layer random-weight Qwen2 causal LM with a byte-level BPE tokenizer, built offline."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from lalm_eval.models.tiny import model_shape

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        ["Judge the caption. The score is one.", "user assistant system"] * 20,
        trainers.BpeTrainer(
            vocab_size=280,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE
    )
    text = model_shape("qwen2_audio")["text_config"]  # the tiny models' text shape: 2 layers of 64
    cfg = Qwen2Config(
        vocab_size=len(tokenizer),
        **{k: text[k] for k in SHAPE_KEYS},
        max_position_embeddings=512,
        eos_token_id=None,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
        initializer_range=0.5,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(cfg)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory):
    return _tiny_chat_lm(tmp_path_factory.mktemp("tiny_lm"), seed=0)


def test_transformers_backend_batched_equals_one_by_one(tiny_lm):
    pytest.importorskip("transformers")
    chats = [
        [{"role": "user", "content": "Judge the caption."}],
        [
            {"role": "system", "content": "You are a judge."},
            {"role": "user", "content": "The score is one. Judge the caption, user assistant system."},
        ],
        [{"role": "user", "content": "score"}],
        [{"role": "user", "content": "The caption is one score."}],
        [{"role": "user", "content": "Judge."}],
    ]
    batched = get_text_llm("hf", pretrained=str(tiny_lm), device="cpu", max_new_tokens=6, batch_size=3)
    single = get_text_llm("hf", pretrained=str(tiny_lm), device="cpu", max_new_tokens=6, batch_size=1)
    out = batched.complete(chats)
    assert len(out) == len(chats) and all(isinstance(t, str) for t in out)
    assert out == [single.complete([chat])[0] for chat in chats]
    assert out == single.complete(chats)
    assert len(set(out)) > 1  # different prompts, different continuations: the order is really tested
    assert batched.complete(chats[::-1]) == out[::-1]
    assert batched.complete([]) == []
    with pytest.raises(Exception, match="unsupported settings"):
        batched.complete(chats[:1], top_k=3)


def test_transformers_backend_settings_fingerprint_the_weights(tiny_lm, tmp_path):
    from lalm_eval.llm.transformers_lm import TransformersChatLLM

    llm = TransformersChatLLM(str(tiny_lm), max_new_tokens=7)
    s = llm.settings
    assert s["backend"] == "hf" and s["model"] == str(tiny_lm) and s["max_tokens"] == 7 and len(s["weights"]) == 64
    assert llm._model is None  # settings never load the model
    assert TransformersChatLLM(str(tiny_lm)).settings["weights"] == s["weights"]
    other = _tiny_chat_lm(tmp_path / "other", seed=1)
    assert TransformersChatLLM(str(other)).settings["weights"] != s["weights"]
    assert TEXT_LLMS.get("hf") is TransformersChatLLM
