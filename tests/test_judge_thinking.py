"""The paper's judge by name (``--judge palm_paper``) and replies with thinking traces, against a local
OpenAI-protocol server on 127.0.0.1 that answers the way Qwen3-Omni-30B-A3B-Thinking does."""

import json
import re

import pytest

from lalm_eval.judges import JudgeItem, judge_llm_from_spec, judge_presets, make_judge
from lalm_eval.llm import LLMError, parse_json_reply, strip_thinking
from lalm_eval.metrics.scoring import ScoreItem, ScoringContext, make_metric
from tests.api_servers import OpenAIServer


class ThinkingServer(OpenAIServer):
    """:class:`OpenAIServer` whose scripted action ``{"reasoning_only": "..."}`` answers as vLLM's
    reasoning parser does when the trace used up ``max_tokens``: ``content`` null, the trace in
    ``reasoning_content``."""

    def reply(self, record, action):
        status, headers, payload = super().reply(record, {k: v for k, v in action.items() if k != "reasoning_only"})
        if "reasoning_only" in action:
            payload["choices"][0]["message"] = {
                "role": "assistant",
                "content": None,
                "reasoning_content": action["reasoning_only"],
            }
            payload["choices"][0]["finish_reason"] = "length"
        return status, headers, payload


def _response_of(prompt: str) -> str:
    return re.findall(r"• response: “(.*)”", prompt)[-1]


def _qwen_thinking_reply(record) -> str:
    """A trace that opens inside the reply (Qwen3's template puts ``<think>`` in the prompt) and
    holds a draft JSON with the wrong score, then the verdict: 1 for responses starting "good"."""
    score = 1 if _response_of(record.prompt).startswith("good") else 0
    return (
        'Okay, the ground truth says Bob talks about a topic. A first draft: {"score": 0.5, '
        '"comment": "draft"} — no, let me check again.\n</think>\n\n'
        + json.dumps({"score": score, "comment": "checked"})
    )


@pytest.fixture
def server():
    with ThinkingServer(answer=_qwen_thinking_reply) as srv:
        yield srv


def items(*responses):
    return [
        JudgeItem(question="What did Bob say?", reference="Bob talks about the weather.", response=r) for r in responses
    ]


@pytest.mark.parametrize(
    "reply, expected",
    [
        ('<think>draft {"score": 0}</think>{"score": 1, "comment": "c"}', {"score": 1, "comment": "c"}),
        ('I think {"score": 0} fits.\n</think>\n{"score": 0.5, "comment": "c"}', {"score": 0.5, "comment": "c"}),
        ('<THINKING>{"score": 0}</THINKING>\n```json\n{"score": 1, "comment": "c"}\n```', {"score": 1, "comment": "c"}),
        ('<thought>{"score": 0}</thought><reasoning>{"score": 0}</reasoning>{"score": 1}', {"score": 1}),
        ('[THINK]{"score": 0}[/THINK]{"score": 1}', {"score": 1}),
        ('<seed:think>{"score": 0}</seed:think>{"score": 1}', {"score": 1}),
        ('<|begin_of_thought|>{"score": 0}<|end_of_thought|>{"score": 1}', {"score": 1}),
        (
            '<|channel|>analysis<|message|>{"score": 0}<|end|><|start|>assistant<|channel|>final<|message|>{"score": 1}',
            {"score": 1},
        ),
        ('{"score": 1, "comment": "no trace at all"}', {"score": 1, "comment": "no trace at all"}),
    ],
)
def test_the_verdict_after_the_trace_is_parsed_not_a_draft_inside_it(reply, expected):
    assert parse_json_reply(reply) == expected


def test_a_trace_cut_off_by_max_tokens_is_an_error_that_says_so():
    with pytest.raises(LLMError, match="only a thinking trace"):
        parse_json_reply('<think>The response mentions {"score": 1} but')
    assert strip_thinking('<think>never closed {"score": 1}') == ""
    assert strip_thinking('{"score": 1}\n<think>trailing, unclosed') == '{"score": 1}'
    assert strip_thinking("Amy said hello.") == "Amy said hello."


def test_palm_paper_preset_is_qwen3_omni_thinking_with_the_model_cards_decoding():
    preset = judge_presets()["palm_paper"]
    assert preset["backend"] == "openai"
    assert preset["options"]["model"] == "Qwen/Qwen3-Omni-30B-A3B-Thinking"
    llm = judge_llm_from_spec("palm_paper:base_url=http://127.0.0.1:9/v1,model=omni-served,concurrency=2")
    assert llm.settings == {
        "backend": "openai",
        "model": "omni-served",
        "base_url": "http://127.0.0.1:9/v1",
        "temperature": 0.6,
        "max_tokens": 16384,
        "top_p": 0.95,
        "top_k": 20,
        "preset": "palm_paper",
    }
    assert llm.concurrency == 2
    # an explicit backend spec records no preset and sends no extra decoding keys
    assert "preset" not in judge_llm_from_spec("openai:model=m").settings
    assert "top_p" not in judge_llm_from_spec("openai:model=m").settings


def test_judge_over_a_thinking_server_scores_the_final_verdicts_and_sends_the_preset(server, tmp_path):
    llm = judge_llm_from_spec(f"palm_paper:base_url={server.base_url},retry_delay=0.01")
    judge = make_judge("palm_captioning", llm, tmp_path)
    results = judge.judge(items("good: weather", "bad: football", "good again"))
    assert [r.score for r in results] == [1.0, 0.0, 1.0]
    assert judge.last_stats["retried"] == 0 and judge.last_stats["failed"] == 0
    body = server.records[0].body
    assert body["model"] == "Qwen/Qwen3-Omni-30B-A3B-Thinking"
    assert (body["temperature"], body["top_p"], body["top_k"], body["max_tokens"]) == (0.6, 0.95, 20, 16384)
    assert judge.settings["preset"] == "palm_paper" and judge.settings["top_k"] == 20
    # the verdicts were cached: judged again, nothing reaches the server
    n = len(server.records)
    again = make_judge("palm_captioning", judge_llm_from_spec(f"palm_paper:base_url={server.base_url}"), tmp_path)
    assert [r.score for r in again.judge(items("good: weather", "bad: football", "good again"))] == [1.0, 0.0, 1.0]
    assert len(server.records) == n


def test_a_reply_that_is_only_a_trace_is_retried_then_a_counted_failure(server):
    server.script(
        {"text": '<think>Let me weigh the response {"score": 1'}, {"reasoning_only": "still thinking about it..."}
    )
    judge = make_judge(
        "palm_captioning", judge_llm_from_spec(f"palm_paper:base_url={server.base_url},retry_delay=0.01,max_retries=0")
    )
    [result] = judge.judge(items("good: weather"))
    assert result.score is None
    assert "only a thinking trace" in result.error
    assert "max_tokens" in result.error  # the retry's failure names the likely cause


def test_llm_judge_metric_records_the_judges_decoding_with_the_scores(server, tmp_path):
    llm = judge_llm_from_spec(f"palm_paper:base_url={server.base_url},retry_delay=0.01")
    metric = make_metric(
        {"metric": "llm_judge", "judge": "palm_captioning"}, ScoringContext(judge_llm=llm, cache_dir=tmp_path)
    )
    doc = {"question": "What did Bob say?"}
    result = metric.compute(
        [
            ScoreItem("good", "Bob talks about the weather.", doc, "What did Bob say?"),
            ScoreItem("bad", "Bob talks about the weather.", doc, "What did Bob say?"),
        ]
    )
    assert result.values == [1.0, 0.0]
    recorded = result.extra["judge"]
    assert recorded["judge"] == "palm_captioning" and recorded["preset"] == "palm_paper"
    assert {k: recorded[k] for k in ("model", "temperature", "top_p", "top_k", "max_tokens")} == {
        "model": "Qwen/Qwen3-Omni-30B-A3B-Thinking",
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
        "max_tokens": 16384,
    }
