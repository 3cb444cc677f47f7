"""The HTTP judge client against a local OpenAI-protocol server on 127.0.0.1: concurrency bound,
retries on 5xx and timeouts, malformed replies counted as failures, a rescoring served entirely
from the judge cache, and a killed run resuming only the missing items."""

import json
import re
import time

import pytest

from lalm_eval.judges import CACHE_FILE, JudgeCache, JudgeItem, count_failures, judge_llm_from_spec, make_judge
from lalm_eval.llm.base import LLMError
from tests.test_llm_backend import completion, server  # noqa: F401 - the shared 127.0.0.1 chat server fixture


def items(n):
    return [
        JudgeItem(
            question=f"Summarise what Bob says ({i}).", reference=f"Bob talks about topic {i}.", response=f"resp-{i}"
        )
        for i in range(n)
    ]


def response_in(body):
    """Which item a request judges (the first user message ends with the item's response)."""
    return re.findall(r"• response: “(.*)”", body["messages"][0]["content"])[-1]


def judge_for(srv, cache_dir=None, chunk_size=32, **llm_options):
    options = {"model": "judge-m", "base_url": srv.url, "retry_delay": 0.01, "api_key": "k", **llm_options}
    spec = "openai:" + ",".join(f"{k}={v}" for k, v in options.items())
    return make_judge("palm_captioning", judge_llm_from_spec(spec), cache_dir, chunk_size=chunk_size)


def ok(score=1):
    return 200, completion(json.dumps({"score": score, "comment": "fine"})), 0.0


def test_concurrency_bound_is_respected(server):
    srv = server(lambda i, body, h: (200, completion('{"score": 1, "comment": "ok"}'), 0.1))
    judge = judge_for(srv, concurrency=4)
    results = judge.judge(items(16))
    assert [r.score for r in results] == [1.0] * 16
    assert len(srv.requests) == 16
    assert 1 < srv.max_active <= 4


def test_5xx_then_ok_is_retried(server):
    failed = set()

    def respond(i, body, h):
        who = response_in(body)
        if who in ("resp-1", "resp-3") and who not in failed:
            failed.add(who)
            return 500, {"error": "overloaded"}, 0.0
        return ok(0.5)

    srv = server(respond)
    results = judge_for(srv).judge(items(4))
    assert [r.score for r in results] == [0.5] * 4 and count_failures(results) == 0
    assert len(srv.requests) == 6  # 4 + one retry each for resp-1 and resp-3


def test_timeout_once_is_retried(server):
    slow = {"resp-2"}

    def respond(i, body, h):
        who = response_in(body)
        if who in slow:
            slow.discard(who)
            return 200, completion('{"score": 0, "comment": "late"}'), 1.0
        return ok(1)

    srv = server(respond)
    results = judge_for(srv, timeout=0.3).judge(items(3))
    assert [r.score for r in results] == [1.0, 1.0, 1.0]
    assert [response_in(r["body"]) for r in srv.requests].count("resp-2") == 2


def test_malformed_replies_are_counted_failures_and_not_cached(server, tmp_path):
    bad = {"resp-1", "resp-4"}

    def respond(i, body, h):
        if response_in(body) in bad:
            return 200, completion("The response looks mostly right to me."), 0.0
        return ok(1)

    srv = server(respond)
    judge = judge_for(srv, tmp_path)
    results = judge.judge(items(6))
    assert [r.score for r in results] == [1.0, None, 1.0, 1.0, None, 1.0]
    assert count_failures(results) == 2 and judge.last_stats["failed"] == 2
    assert all("after 2 attempts" in results[i].error for i in (1, 4))
    assert len(srv.requests) == 8  # 6 + one retry for each malformed reply
    retry = [r["body"]["messages"] for r in srv.requests if len(r["body"]["messages"]) == 3]
    assert len(retry) == 2 and all(m[1]["content"] == "The response looks mostly right to me." for m in retry)
    assert len(JudgeCache(tmp_path / CACHE_FILE)) == 4


def test_rescoring_is_served_entirely_from_the_cache(server, tmp_path):
    srv = server(lambda i, body, h: ok(0.5))
    first = judge_for(srv, tmp_path).judge(items(12))
    assert len(srv.requests) == 12 and not any(r.cached for r in first)
    # a second process: new client, new judge, same cache folder, a different server URL and
    # concurrency (neither changes a verdict); the server is not even needed
    srv.shutdown()
    srv.server_close()
    other = server(lambda i, body, h: ok(0))
    second = judge_for(other, tmp_path, concurrency=8).judge(items(12))
    assert len(other.requests) == 0
    assert [r.score for r in second] == [0.5] * 12 and all(r.cached for r in second)


def test_killed_run_resumes_computing_only_the_missing_items(server, tmp_path):
    # the server dies (every request refused with a 4xx, not retried) after the first chunk of 4
    # (a 400: a 401/403 is a refused key, which stops the command at once, KeyRefused)
    def dying(i, body, h):
        return ok(1) if i < 4 else (400, {"error": "gone"}, 0.0)

    srv = server(dying)
    with pytest.raises(LLMError, match="all 4 judge calls"):
        judge_for(srv, tmp_path, chunk_size=4).judge(items(10))
    assert len(JudgeCache(tmp_path / CACHE_FILE)) == 4
    healthy = server(lambda i, body, h: ok(0.5))
    t0 = time.monotonic()
    results = judge_for(healthy, tmp_path, chunk_size=4).judge(items(10))
    assert time.monotonic() - t0 < 5
    assert sorted(response_in(r["body"]) for r in healthy.requests) == [f"resp-{i}" for i in range(4, 10)]
    assert [r.cached for r in results] == [True] * 4 + [False] * 6
    assert [r.score for r in results] == [1.0] * 4 + [0.5] * 6
