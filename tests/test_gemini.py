"""``gemini`` (google-genai) against a local Gemini-protocol server: the shared API-adapter
contract (tests/api_contract.py), the request's generation and thinking config, block and finish
reasons, thoughts kept out of the answer, and the CLI end to end on the palm and msu groups."""

from __future__ import annotations

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.models.gemini import GeminiAdapter
from tests.api_contract import SECRET, AdapterContract, api_datasets, check_cli_run, request
from tests.api_servers import GeminiServer


class TestGeminiContract(AdapterContract):
    Server, Adapter, KEY_ENV, PRICED = GeminiServer, GeminiAdapter, "GEMINI_API_KEY", "gemini-2.5-flash"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


@pytest.fixture
def server():
    with GeminiServer() as srv:
        yield srv


def test_generation_and_thinking_config_on_the_wire(server):
    adapter = GeminiAdapter(
        model="gemini-2.5-pro", base_url=server.base_url, thinking_budget=128, include_thoughts="true"
    )
    req = request(gen={"max_gen_toks": 40, "do_sample": False, "top_k": 3, "seed": 9})
    req = type(req)(
        req.task,
        0,
        req.audios,
        ({"role": "system", "content": [{"type": "text", "text": "Be brief."}]}, *req.messages),
        req.gen_kwargs,
    )
    adapter.generate([req])
    rec = server.records[0]
    assert rec.path.endswith("/models/gemini-2.5-pro:generateContent")
    config = rec.body["generationConfig"]
    assert config["maxOutputTokens"] == 40 and config["temperature"] == 0.0 and config["topK"] == 3
    assert config["seed"] == 9 and "stopSequences" not in config
    thinking = {_camel(k): v for k, v in config["thinkingConfig"].items()}  # the SDK sends these snake_case
    assert thinking == {"thinkingBudget": 128, "includeThoughts": True}
    assert rec.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert [c["role"] for c in rec.body["contents"]] == ["user"]
    identity = adapter.identity()
    assert identity["thinking_budget"] == 128 and identity["include_thoughts"] is True
    assert adapter.estimate([req])["max_completion_tokens"] == 40 + 128  # thinking is billed output
    with pytest.raises(ConfigError, match="thinking_budget"):
        GeminiAdapter(model="m", base_url=server.base_url, thinking_budget="lots")


def test_thoughts_never_reach_the_answer(server):
    server.script(
        {
            "text": "Alice is speaking.",
            "thought": "The voice sounds like the reference clip.",
            "usage": {
                "promptTokenCount": 50,
                "candidatesTokenCount": 4,
                "thoughtsTokenCount": 30,
                "totalTokenCount": 84,
                "promptTokensDetails": [{"modality": "AUDIO", "tokenCount": 32}],
            },
        }
    )
    adapter = GeminiAdapter(model="gemini-2.5-flash", base_url=server.base_url, include_thoughts=True)
    (resp,) = adapter.generate([request()])
    assert resp.text == "Alice is speaking." and resp.meta["thoughts"].startswith("The voice sounds")
    assert resp.meta["usage"] == {
        "prompt_tokens": 50,
        "completion_tokens": 4,
        "thoughts_tokens": 30,
        "total_tokens": 84,
        "audio_tokens": 32,
    }
    assert resp.meta["cost_usd"] == pytest.approx((18 * 0.30 + 32 * 1.00 + 34 * 2.50) / 1e6)


def test_block_and_finish_reasons_are_failures(server):
    server.script({"block": "PROHIBITED_CONTENT"}, match="#0")
    server.script({"refusal": True}, match="#1")
    server.script({"filter": True}, match="#2")
    blocked, language, safety, fine = GeminiAdapter(model="m", base_url=server.base_url).generate(
        [request(i) for i in range(4)]
    )
    assert blocked.failure == "content_filter" and "PROHIBITED_CONTENT" in blocked.error
    assert language.failure == "refusal" and safety.failure == "content_filter"
    assert fine.text and fine.meta["finish_reason"] == "STOP"


def test_key_from_google_api_key_and_sent_in_its_header(server, monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", SECRET)
    adapter = GeminiAdapter(model="m", base_url=server.base_url)
    assert adapter.key_env == "GOOGLE_API_KEY"
    adapter.generate([request()])
    assert {k.lower(): v for k, v in server.records[0].headers.items()}["x-goog-api-key"] == SECRET


def test_cli_palm_and_msu_against_the_server(tmp_path_factory, tmp_path, monkeypatch):
    monkeypatch.chdir(api_datasets(tmp_path_factory))
    monkeypatch.setenv("GEMINI_API_KEY", SECRET)
    with GeminiServer() as server:
        server.script({"status": 503, "retry_after": "0.2"}, {"delay": 1.2}, {"block": "SAFETY"}, {"refusal": True})
        check_cli_run(
            "gemini",
            server,
            "model=gemini-2.5-flash,timeout=0.8,retry_delay=0.01,concurrency=4",
            ["palm", "msu", "palm_captioning_enroll"],
            tmp_path,
            retried=2,
            failures={"content_filter": 1, "refusal": 1},
        )
