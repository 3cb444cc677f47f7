"""``openai_audio`` against a local OpenAI-protocol server: the shared API-adapter contract
(tests/api_contract.py), the request body, the price table and Budget, the CLI end to end on the
palm and msu groups, and a killed run that resumes without asking twice."""

from __future__ import annotations

import email.utils
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lalm_eval.cost import Budget, load_prices
from lalm_eval.errors import ConfigError, DataError
from lalm_eval.models.api_base import parse_retry_after
from lalm_eval.models.openai_audio import OpenAIAudioAdapter
from tests.api_contract import SECRET, AdapterContract, api_datasets, audio_digest, check_cli_run, request, results_of
from tests.api_servers import OpenAIServer

ROOT = Path(__file__).resolve().parents[1]


class TestOpenAIContract(AdapterContract):
    Server, Adapter, KEY_ENV, PRICED = OpenAIServer, OpenAIAudioAdapter, "OPENAI_API_KEY", "gpt-4o-audio-preview"


@pytest.fixture
def server():
    with OpenAIServer() as srv:
        yield srv


def test_body_fields_map_the_gen_kwargs_exactly(server):
    adapter = OpenAIAudioAdapter(model="m", base_url=server.base_url, server="openai")
    adapter.generate([request(gen={"max_gen_toks": 33, "do_sample": False, "seed": 5, "top_p": 0.5})])
    body = server.records[0].body
    assert body["model"] == "m" and body["modalities"] == ["text"]
    assert body["max_completion_tokens"] == 33 and body["temperature"] == 0.0 and body["seed"] == 5
    assert body["top_p"] == 0.5 and "stop" not in body and "max_tokens" not in body
    part = body["messages"][0]["content"][0]
    assert part["type"] == "input_audio" and part["input_audio"]["format"] == "wav"


def test_compatible_servers_get_no_modalities_and_vllm_gets_its_extra_fields(server):
    plain = OpenAIAudioAdapter(model="m", base_url=server.base_url, max_tokens_field="max_tokens")
    plain.generate([request()])
    assert "modalities" not in server.records[0].body and server.records[0].body["max_tokens"] == 16
    with pytest.raises(ConfigError, match="top_k"):
        plain.generate([request(gen={"top_k": 20})])
    vllm = OpenAIAudioAdapter(model="m", base_url=server.base_url, server="vllm")
    vllm.generate([request(gen={"top_k": 20, "repetition_penalty": 1.1, "max_new_tokens": 4})])
    body = server.records[-1].body
    assert body["top_k"] == 20 and body["repetition_penalty"] == 1.1
    assert vllm.identity()["server"] == "vllm" != plain.identity()["server"]


def test_system_message_is_one_string(server):
    req = request()
    req = type(req)(
        req.task,
        0,
        req.audios,
        ({"role": "system", "content": [{"type": "text", "text": "Be brief."}]}, *req.messages),
        req.gen_kwargs,
    )
    OpenAIAudioAdapter(model="m", base_url=server.base_url).generate([req])
    assert server.records[0].body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_retry_after_parsing():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 27 <= parse_retry_after({"retry-after": when}) <= 30
    assert parse_retry_after({"retry-after": "soon"}) is None and parse_retry_after({}) is None


def test_price_table_lookup_and_budget(tmp_path):
    prices = load_prices()
    assert prices.lookup("gpt-4o-audio-preview-2024-10-01").input_audio == 100.0  # exact beats the glob
    assert prices.lookup("gpt-4o-audio-preview-2025-06-03").input_audio == 40.0
    assert prices.lookup("gemini-2.5-flash-lite-preview").pattern == "gemini-2.5-flash-lite*"  # longest pattern
    assert prices.lookup("gemini-2.5-flash").audio_tokens_per_s == 32 and prices.lookup("llama-3") is None
    price = prices.lookup("gpt-4o-audio-preview")
    usage = {"prompt_tokens": 1000, "audio_tokens": 600, "completion_tokens": 100}
    assert price.cost(usage) == pytest.approx((400 * 2.5 + 600 * 40 + 100 * 10) / 1e6)
    gem = prices.lookup("gemini-2.5-flash")
    assert gem.cost({"prompt_tokens": 10, "completion_tokens": 5, "thoughts_tokens": 20}) == pytest.approx(
        (10 * 0.3 + 25 * 2.5) / 1e6
    )  # thinking billed as output
    budget = Budget(price.cost(usage) * 2.5, prices)
    assert [budget.exhausted for _ in range(3) if budget.charge("gpt-4o-audio-preview", usage)] == [False, False, True]
    assert budget.charge("unknown-model", usage) is None and budget.unpriced == 1
    bad = tmp_path / "p.yaml"
    bad.write_text("models:\n  m:\n    input_text: 1\n    input_audio: -2\n    output: 1\n    audio_tokens_per_s: 1\n")
    with pytest.raises(DataError, match="input_audio"):
        load_prices(bad)
    bad.write_text("models:\n  m:\n    input_txt: 1\n")
    with pytest.raises(DataError, match="input_txt"):
        load_prices(bad)


# -- end to end through the CLI ---------------------------------------------------------------------


def test_cli_palm_and_msu_against_the_server(tmp_path_factory, tmp_path, monkeypatch):
    monkeypatch.chdir(api_datasets(tmp_path_factory))
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    with OpenAIServer() as server:
        server.script({"status": 429, "retry_after": "0.2"}, {"status": 500}, {"delay": 1.2}, {"filter": True})
        check_cli_run(
            "openai_audio",
            server,
            "model=gpt-4o-audio-preview,timeout=0.8,retry_delay=0.01,concurrency=4",
            ["palm", "msu", "palm_recognition_enroll"],
            tmp_path,
            retried=3,
            failures={"content_filter": 1},
        )


def _count_cached(path: Path) -> int:
    from lalm_eval.cache import ResponseCache

    if not path.exists():
        return 0
    with ResponseCache(path) as cache:
        return len(cache)


def test_killed_run_resumes_without_asking_twice(tmp_path_factory, tmp_path):
    data = api_datasets(tmp_path_factory)
    tasks, limit, first = "palm_recognition,palm_captioning", 6, 5
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    env.pop("OPENAI_API_KEY", None)
    with OpenAIServer() as server:
        cmd = [
            sys.executable,
            "-m",
            "lalm_eval.cli",
            "--model",
            "openai_audio",
            "--model_args",
            f"model=gpt-4o-audio-preview,base_url={server.base_url},concurrency=2",
            "--tasks",
            tasks,
            "--limit",
            str(limit),
            "--cache_dir",
            str(tmp_path / "cache"),
            "--output_path",
            str(tmp_path / "out"),
        ]
        server.script(*[{}] * first, *[{"hold": True}] * 50)  # answer 5, then hold every request
        db = tmp_path / "cache" / "responses.sqlite"
        with open(tmp_path / "run1.log", "w") as log:
            proc = subprocess.Popen(cmd, cwd=data, env=env, stdout=log, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 120
            while server.answered < first or _count_cached(db) < first:
                assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
                assert time.monotonic() < deadline, "run 1 made no progress"
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        run1 = {audio_digest(r.audios, r.prompt) for r in server.records if r.answered}
        assert len(run1) == first and _count_cached(db) == first  # the evaluator's chunk never finished
        server.clear_script()
        server.release()
        time.sleep(0.2)
        n_before = len(server.records)
        done = subprocess.run(cmd, cwd=data, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        run2 = [audio_digest(r.audios, r.prompt) for r in server.records[n_before:]]
    assert len(run2) == len(set(run2)) == 2 * limit - first  # every request once, none of run 1's
    assert run1.isdisjoint(run2)
    results = results_of(tmp_path / "out")
    assert results["cache"] == {"hits": first, "misses": 2 * limit - first}
    assert results["n-samples"]["palm_recognition"]["effective"] == limit
