"""Several OpenAI-protocol endpoints behind one adapter (``base_url=URL1|URL2``, ``endpoints=FILE``):
requests spread, a failing or killed endpoint taken out, no request lost or sent twice, stats per
endpoint, cache keys independent of the endpoints' order."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.models.endpoints import parse_endpoints
from lalm_eval.models.openai_audio import OpenAIAudioAdapter
from lalm_eval.report.assemble import endpoint_notes
from tests.api_contract import request
from tests.api_servers import OpenAIServer

ROOT = Path(__file__).resolve().parents[1]


def _answer(record) -> str:
    return "heard " + " ".join(record.texts)[::-1]


def _servers(n: int, latency: float = 0.0):
    return [OpenAIServer(latency=latency, answer=_answer) for _ in range(n)]


def _adapter(servers, **kw) -> OpenAIAudioAdapter:
    kw.setdefault("retry_delay", 0.01)
    return OpenAIAudioAdapter(model="served", base_url="|".join(s.base_url for s in servers), cache_dir="none", **kw)


def _answered_prompts(servers) -> Counter:
    return Counter(" ".join(r.texts) for s in servers for r in s.records if r.answered)


def test_two_endpoints_share_the_work_and_answer_as_one():
    reqs = [request(i, seconds=0.2) for i in range(24)]
    with OpenAIServer(answer=_answer) as one:
        single = [r.text for r in _adapter([one], concurrency=4).generate(reqs)]
    servers = _servers(2, latency=0.05)
    try:
        adapter = _adapter(servers, concurrency=3)
        out = adapter.generate(reqs)
        assert [r.text for r in out] == single
        assert all(s.max_in_flight <= 3 for s in servers)  # concurrency is per endpoint
        assert all(len(s.records) >= 6 for s in servers)  # both took a share
        assert sum(s.answered for s in servers) == 24
        assert set(_answered_prompts(servers).values()) == {1}
        stats = adapter.counters["endpoints"]
        assert [e["url"] for e in stats] == [s.base_url for s in servers]
        assert [e["requests"] for e in stats] == [len(s.records) for s in servers]
        assert [e["answered"] for e in stats] == [s.answered for s in servers]
        assert all(e["failures"] == 0 and e["taken_out"] == 0 for e in stats)
        assert all(0.05 <= e["latency_s"]["p50"] <= e["latency_s"]["p95"] for e in stats)
        table = endpoint_notes(stats)  # the report's table, one row per endpoint
        rows = [line for line in table if line.startswith("| http")]
        assert [r.split(" | ")[:3] for r in rows] == [
            [f"| {s.base_url}", str(len(s.records)), str(s.answered)] for s in servers
        ]
        assert endpoint_notes(stats[:1]) == []  # one endpoint: the report as before
    finally:
        for s in servers:
            s.close()


def test_a_failing_endpoint_is_taken_out_and_its_requests_answered_elsewhere():
    servers = _servers(3, latency=0.02)
    try:
        servers[1].script(*[{"status": 500}] * 100)
        adapter = _adapter(servers, concurrency=2, eject_after=2, cooldown_s=60)
        out = adapter.generate([request(i, seconds=0.2) for i in range(30)])
        assert all(r.text is not None for r in out), [r.error for r in out if r.text is None]
        good = [servers[0], servers[2]]  # the scripted 500s are all the failing one answered
        assert len(servers[1].records) == servers[1].answered > 0
        assert sum(s.answered for s in good) == 30
        assert set(_answered_prompts(good).values()) == {1}
        bad = adapter.counters["endpoints"][1]
        assert bad["failures"] == len(servers[1].records) == bad["requests"]
        assert bad["taken_out"] == 1
        assert bad["moved_elsewhere"] == bad["failures"]  # every failed attempt was re-sent elsewhere
        assert bad["answered"] == 0 and "latency_s" not in bad
    finally:
        for s in servers:
            s.close()


def test_an_endpoint_killed_mid_run_loses_no_request_and_duplicates_none():
    servers = _servers(3, latency=0.1)
    try:
        adapter = _adapter(servers, concurrency=2, cooldown_s=60)
        reqs = [request(i, seconds=0.2) for i in range(30)]
        timer = threading.Timer(0.25, servers[0].kill)
        timer.start()
        out = adapter.generate(reqs)
        timer.join()
        assert all(r.text is not None for r in out), [r.error for r in out if r.text is None]
        answered = _answered_prompts(servers)
        assert sum(answered.values()) == 30 and set(answered.values()) == {1}
        assert [r.text for r in out] == [f"heard {r.messages[0]['content'][-1]['text'][::-1]}" for r in reqs]
        dead = adapter.counters["endpoints"][0]
        assert dead["failures"] >= 1 and dead["taken_out"] == 1
        assert dead["answered"] == servers[0].answered
    finally:
        for s in servers:
            s.close()


def test_refusals_and_bad_requests_are_not_endpoint_failures():
    servers = _servers(2)
    try:
        for s in servers:
            s.script({"status": 400, "message": "bad audio"}, {"refusal": "no"}, {"status": 400}, {"refusal": "no"})
        adapter = _adapter(servers, concurrency=1, eject_after=1)
        out = adapter.generate([request(i, seconds=0.1) for i in range(8)])
        assert sorted(r.meta.get("failure") for r in out) == ["bad_request"] * 4 + ["refusal"] * 4
        assert all(e["failures"] == 0 and e["taken_out"] == 0 for e in adapter.counters["endpoints"])
        assert sum(len(s.records) for s in servers) == 8  # none retried
    finally:
        for s in servers:
            s.close()


def test_when_every_endpoint_is_out_the_request_waits_for_the_first_back():
    servers = _servers(2)
    try:
        for s in servers:
            s.script({"status": 503})
        adapter = _adapter(servers, concurrency=1, eject_after=1, cooldown_s=0.3, max_retries=3)
        out = adapter.generate([request(0, seconds=0.1)])
        assert out[0].text is not None
        stats = adapter.counters["endpoints"]
        assert [e["taken_out"] for e in stats] == [1, 1]
        assert sum(e["answered"] for e in stats) == 1
        assert sum(s.answered for s in servers) == 3  # two 503s, then the answer
    finally:
        for s in servers:
            s.close()


def test_identity_one_endpoint_unchanged_several_independent_of_order():
    one = OpenAIAudioAdapter(model="m", base_url="http://127.0.0.1:8000/v1/", cache_dir="none")
    assert one.identity()["base_url"] == "http://127.0.0.1:8000/v1"  # the key of earlier runs
    assert one.counters["endpoints"][0]["url"] == "http://127.0.0.1:8000/v1"
    urls = ["http://127.0.0.1:8001/v1", "http://localhost:8002/v1", "http://127.0.0.1:8000/v1"]
    ids = [
        OpenAIAudioAdapter(model="m", base_url="|".join(order), cache_dir="none").identity()
        for order in (urls, urls[::-1], sorted(urls))
    ]
    assert ids[0] == ids[1] == ids[2]
    assert ids[0]["base_url"] == sorted(urls)
    assert ids[0] != one.identity()


def test_urls_shown_without_userinfo(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    adapter = OpenAIAudioAdapter(model="m", base_url="http://me:pw@gpu1:8000/v1|http://gpu2:8000/v1?x=1")
    shown = json.dumps([adapter.identity(), adapter.counters])
    assert "pw" not in shown and "me@" not in shown and "x=1" not in shown
    assert adapter.counters["endpoints"][0]["url"] == "http://gpu1:8000/v1"


def test_endpoints_file(tmp_path):
    f = tmp_path / "nodes.txt"
    f.write_text("# the cluster\nhttp://node1:8000/v1\n\n  http://node2:8000/v1/  # second\n")
    assert parse_endpoints(None, str(f), "https://api.openai.com/v1") == [
        "http://node1:8000/v1",
        "http://node2:8000/v1",
    ]
    f.write_text("http://127.0.0.1:8001/v1  # gpu 0-3\nhttp://127.0.0.1:8002/v1\n")
    adapter = OpenAIAudioAdapter(model="m", endpoints=str(f), cache_dir="none")
    assert adapter.base_urls == ["http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"]
    assert sorted(adapter._clients) == adapter.base_urls


@pytest.mark.parametrize(
    "content, needle",
    [
        (None, "no such file"),
        ("# only a comment\n\n", "holds no URL"),
        ("http://node1:8000/v1\nnode2:8000\n", "line 2"),
        ("http://a:1/v1\nhttp://a:1/v1/\n", "given twice"),
    ],
)
def test_endpoints_file_errors(tmp_path, content, needle):
    f = tmp_path / "nodes.txt"
    if content is not None:
        f.write_text(content)
    with pytest.raises(ConfigError, match=needle) as err:
        OpenAIAudioAdapter(model="m", endpoints=str(f), cache_dir="none")
    assert str(err.value).startswith("--model_args endpoints: ")


def test_endpoints_file_error_through_the_cli(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lalm_eval.cli",
            "--model",
            "openai_audio",
            "--model_args",
            f"model=m,endpoints={tmp_path / 'missing.txt'}",
            "--tasks",
            "palm_recognition",
            "--limit",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert "lalm-eval: error: --model_args endpoints: " in proc.stderr
    assert "no such file" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_url_in_base_url_list():
    with pytest.raises(ConfigError, match=r"^--model_args base_url: 'ftp://x' is not an http\(s\) URL"):
        OpenAIAudioAdapter(model="m", base_url="http://127.0.0.1:1/v1|ftp://x", cache_dir="none")
    with pytest.raises(ConfigError, match="not both"):
        OpenAIAudioAdapter(model="m", base_url="http://127.0.0.1:1/v1", endpoints="f.txt", cache_dir="none")


def test_bench_quick_loses_nothing():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "endpoints.py"), "--quick", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    killed = result["killed"]
    assert killed["lost"] == 0 and killed["duplicated"] == 0
    assert killed["answered"] == killed["requests"] > 0


def test_gemini_spreads_over_endpoints_and_moves_off_a_failing_one():
    from lalm_eval.models.gemini import GeminiAdapter
    from tests.api_servers import GeminiServer

    servers = [GeminiServer(latency=0.02, answer=_answer) for _ in range(2)]
    try:
        servers[0].script(*[{"status": 503}] * 100)
        adapter = GeminiAdapter(
            model="gemini-2.5-flash",
            base_url="|".join(s.base_url for s in servers),
            concurrency=2,
            retry_delay=0.01,
            eject_after=2,
            cache_dir="none",
        )
        out = adapter.generate([request(i, seconds=0.2) for i in range(10)])
        assert all(r.text is not None for r in out), [r.error for r in out if r.text is None]
        assert servers[1].answered == 10 and set(_answered_prompts(servers[1:]).values()) == {1}
        first, second = adapter.counters["endpoints"]
        assert first["failures"] == len(servers[0].records) > 0 and first["taken_out"] == 1
        assert second["answered"] == 10 and second["failures"] == 0
    finally:
        for s in servers:
            s.close()
