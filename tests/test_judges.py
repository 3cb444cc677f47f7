"""LLM judges: prompts (paper tables verbatim), strict parsing with one retry, failures as None,
the judge cache (hits first, chunked stores, resume), registry and --judge specs."""

import json
import re
import sqlite3
import threading
from pathlib import Path

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.judges import (
    CACHE_FILE,
    JUDGES,
    JudgeCache,
    JudgeItem,
    JudgeResult,
    count_failures,
    judge_llm_from_spec,
    make_judge,
    parse_judge_spec,
)
from lalm_eval.judges.cache import judge_key
from lalm_eval.llm.base import LLMError, TextLLM
from lalm_eval.llm.openai_http import OpenAIChatLLM
from msu_bench.judges import ERROR_TYPES, MsuErrorTypeJudge, MsuJudge
from palm_bench.judges import PalmCaptioningJudge, PalmReasoningJudge, PalmRecognitionJudge
from tests.papers import MSU_TITLE, PALM_TITLE, has_paper, paper_text


class ScriptedLLM(TextLLM):
    """Answers each chat with ``reply(chat)``; records every chat it was sent."""

    def __init__(self, reply, model="judge-model", temperature=0.0):
        self.reply, self.model, self.temperature = reply, model, temperature
        self.calls: list[list[dict]] = []  # one entry per complete() call: its batch
        self.lock = threading.Lock()

    def complete(self, batch, **settings):
        with self.lock:
            self.calls.append(batch)
        return [self.reply(chat) for chat in batch]

    @property
    def settings(self):
        return {
            "backend": "scripted",
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": 64,
            "base_url": "http://nowhere",
        }

    @property
    def chats(self):
        return [chat for batch in self.calls for chat in batch]


def verdict(score, comment="ok"):
    return json.dumps({"score": score, "comment": comment})


def response_of(chat):
    """The item's response as rendered at the end of a judge prompt."""
    return re.findall(r"• response: “(.*)”", chat[0]["content"])[-1]


def item(i, **kw):
    return JudgeItem(
        question=f"What does Bob say? ({i})", reference=f"Bob blesses the other person {i}.", response=f"resp-{i}", **kw
    )


# ---- prompts -----------------------------------------------------------------------------------


def _paper_block(start: str, end: str) -> str:
    text = paper_text(PALM_TITLE)
    body = text[text.index(start) + len(start) : text.index(end)]
    return body.replace("$\\rightarrow$", "→").strip()


@pytest.mark.parametrize(
    "judge_cls, start, end",
    [
        (PalmCaptioningJudge, "Prompt: Captioning Evaluation", "Table 25:"),
        (PalmRecognitionJudge, "Prompt: Recognition Evaluation", "Table 26:"),
    ],
)
def test_palm_prompts_contain_the_paper_tables_verbatim(judge_cls, start, end):
    table = _paper_block(start, end)
    assert len(table.splitlines()) > 40
    prompt = judge_cls(ScriptedLLM(verdict)).render(item(0))
    assert table in prompt
    # the item follows the table
    assert prompt.index(table) < prompt.index("resp-0") and "Bob blesses the other person 0." in prompt


def test_palm_prompt_key_sentences_and_item():
    cap = PalmCaptioningJudge(ScriptedLLM(verdict)).render(item(1))
    assert cap.startswith("You are a strict but not overly nitpicky reviewer")
    assert "• Example 8 (Recognition failure → Score 0)" in cap and "$\\rightarrow$" not in cap
    rec = PalmRecognitionJudge(ScriptedLLM(verdict)).render(item(1))
    assert "• N=3 → score {1, 0.6, 0.3, 0}." in rec
    assert "• ground_truth: “Bob blesses the other person 1.”" in rec and "• response: “resp-1”" in rec
    for path in sorted({p for n in JUDGES.names() for p in JUDGES.get(n).templates_dir().glob("*.j2")}):
        head = path.read_text(encoding="utf-8").lstrip()
        assert head.startswith("{#") and "Source:" in head.split("#}")[0], path.name


def test_zh_items_tell_the_judge_the_answer_may_be_chinese():
    for name in JUDGES.names():
        judge = make_judge(name, ScriptedLLM(verdict))
        ctx = {"target": "爱丽丝", "profile": "喜欢爵士乐"}
        zh = judge.render(JudgeItem("他说了什么？", "他说你好。", "你好", language="zh", context=ctx))
        en = judge.render(JudgeItem("What?", "Hello.", "Hello", language="en", context=ctx))
        assert "may be written in Chinese" in zh and "may be written in Chinese" not in en, name
        assert zh.isascii() is False and "Output:" in zh


def test_reasoning_judge_needs_target_and_profile():
    judge = PalmReasoningJudge(ScriptedLLM(verdict))
    with pytest.raises(ConfigError, match="profile"):
        judge.render(JudgeItem("q", "r", "a", context={"target": "Amy"}))
    ctx = {"target": "Amy", "profile": "Likes jazz."}
    prompt = judge.render(JudgeItem("Recommend a song.", "ref", "a", context=ctx))
    assert "• target: Amy" in prompt and "• profile: Likes jazz." in prompt and "OUR" not in prompt
    assert "• what other speakers in the audio said" not in prompt
    prompt = judge.render(JudgeItem("q", "r", "a", context={"target": "Amy", "profile": "p", "others": "Bob: rock!"}))
    assert "what other speakers in the audio said: Bob: rock!" in prompt


def test_msu_prompt_quotes_the_paper_and_picks_task_requirements():
    judge = MsuJudge(ScriptedLLM(verdict))
    transcription = judge.render(
        JudgeItem(
            "What does each speaker say?", "spk_1: hi", "hi", context={"task_id": "msu_t4_mst_dialogue_transcription"}
        )
    )
    counting = judge.render(JudgeItem("How many speakers?", "Two.", "2", context={"task_id": "t1_sr_speaker_counting"}))
    generic = judge.render(JudgeItem("How many speakers?", "Two.", "2"))
    fallback = judge.render(JudgeItem("How many speakers?", "Two.", "2", context={"answer_type": "count"}))
    assert "attributed to the right speaker" in transcription and "attributed to the right speaker" not in counting
    assert "must state a number" in counting and "must state a number" in fallback
    assert "Task-specific requirements" not in generic
    if has_paper(MSU_TITLE):
        paper = paper_text(MSU_TITLE)
        quote = paper[paper.index("The evaluation uses a dedicated scoring prompt") :].split("\n")[0].strip()
        quote = quote.replace("$3$", "3")
        assert quote in generic
        for definition in (
            "The model fails to perceive the audio accurately, resulting in an inaccurate or "
            "incomplete understanding of the input.",
            "The model fails to follow instructions for answer extraction, resulting in an "
            "incorrectly formatted response.",
        ):
            assert definition in paper and definition in MsuErrorTypeJudge(ScriptedLLM(verdict)).render(item(0))


# ---- parsing, retry, failures ----------------------------------------------------------------------


def test_valid_replies_give_scores_in_order_with_settings():
    llm = ScriptedLLM(lambda chat: verdict({"resp-0": 1, "resp-1": 0.5, "resp-2": 0}[response_of(chat)]))
    judge = PalmCaptioningJudge(llm)
    results = judge.judge([item(0), item(1), item(2)])
    assert [r.score for r in results] == [1.0, 0.5, 0.0]
    assert all(r.ok and not r.cached and r.detail["comment"] == "ok" for r in results)
    s = judge.settings
    assert s["judge"] == "palm_captioning" and s["model"] == "judge-model" and s["prompt_version"] == "1"
    import hashlib

    template = PalmCaptioningJudge.templates_dir() / "palm_captioning.j2"
    assert s["prompt_sha256"] == hashlib.sha256(template.read_bytes()).hexdigest()
    assert s["prompt_sha256"].startswith("0e080a6dd63e8bdc")  # the template's bytes, as results recorded them
    assert judge.last_stats == {"items": 3, "cached": 0, "asked": 3, "llm_calls": 3, "retried": 0, "failed": 0}


@pytest.mark.parametrize(
    "judge_cls, bad, good",
    [
        (PalmCaptioningJudge, verdict(0.7), verdict(0.5)),  # 0.7 is not on the 0/0.5/1 scale
        (PalmCaptioningJudge, '{"score": 1}', verdict(1)),  # comment missing
        (PalmCaptioningJudge, verdict(True), verdict(1)),  # a bool is not a score
        (PalmCaptioningJudge, verdict("1"), verdict(1)),  # a string is not a score
        (PalmRecognitionJudge, verdict(1.2), verdict(0.6)),  # out of [0, 1]
        (PalmRecognitionJudge, "The score is 1.", "```json\n" + verdict(0.3) + "\n```"),  # no JSON at all
    ],
)
def test_invalid_reply_is_retried_once_with_a_format_reminder(judge_cls, bad, good):
    llm = ScriptedLLM(lambda chat: bad if len(chat) == 1 else good)
    judge = judge_cls(llm)
    [result] = judge.judge([item(0)])
    assert result.ok and result.score == json.loads(re.search(r"\{.*\}", good, re.S).group())["score"]
    first, retry = llm.chats
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert retry[0] == first[0] and retry[1]["content"] == bad
    assert "could not be used" in retry[2]["content"] and "EXACTLY" in retry[2]["content"]
    assert judge.last_stats["retried"] == 1 and judge.last_stats["llm_calls"] == 2


def test_still_invalid_after_retry_is_a_failure_not_a_zero():
    llm = ScriptedLLM(lambda chat: "I think it is fine." if response_of(chat) == "resp-1" else verdict(1))
    judge = PalmCaptioningJudge(llm)
    results = judge.judge([item(0), item(1), item(2)])
    assert [r.score for r in results] == [1.0, None, 1.0]
    bad = results[1]
    assert not bad.ok and "after 2 attempts" in bad.error and "no JSON object" in bad.error
    assert bad.detail["replies"] == ["I think it is fine.", "I think it is fine."]
    assert count_failures(results) == 1 and judge.last_stats["failed"] == 1


def test_recognition_accepts_paper_fractions():
    for score in (0, 0.25, 0.3, 0.5, 0.6, 0.75, 1):
        [r] = PalmRecognitionJudge(ScriptedLLM(lambda chat, s=score: verdict(s))).judge([item(0)])
        assert r.ok and r.score == score


def msu_reply(**over):
    reply = {
        "question_type": "progressive",
        "sub_questions": [{"question": "emotions?", "score": 1}, {"question": "related?", "score": 0.5}],
        "relevance": 5,
        "accuracy": 4,
        "causal_question": True,
        "causal_soundness": 3,
        "overall": 0.7,
        "comment": "mostly right",
    }
    reply.update(over)
    return json.dumps(reply)


def test_msu_judge_scores_overall_on_the_papers_0_1_scale():
    judge = MsuJudge(ScriptedLLM(lambda chat: msu_reply()))
    [r] = judge.judge([item(0, context={"task_id": "t4_mscr_causal_attribution"})])
    assert r.ok and r.score == 0.7
    assert r.detail["question_type"] == "progressive" and r.detail["causal_soundness"] == 3
    assert [s["score"] for s in r.detail["sub_questions"]] == [1.0, 0.5]


@pytest.mark.parametrize(
    "bad, field",
    [
        (dict(relevance=6), "relevance"),
        (dict(accuracy=3.5), "accuracy"),
        (dict(overall=70), "overall"),
        (dict(overall=0.95), "overall"),  # above the mean sub-question score 0.75
        (dict(causal_question=False), "causal_soundness"),  # non-causal needs causal_soundness 5
        (dict(causal_question="yes"), "causal_question"),
        (dict(question_type="single"), "sub_questions"),  # single needs exactly one sub-question
        (dict(question_type="nested"), "question_type"),
        (dict(sub_questions=[]), "sub_questions"),
        (dict(sub_questions=[{"question": "a", "score": 0.3}, {"question": "b", "score": 1}]), "score"),
    ],
)
def test_msu_judge_rejects_out_of_rubric_replies(bad, field):
    llm = ScriptedLLM(lambda chat: msu_reply(**bad))
    [r] = MsuJudge(llm).judge([item(0)])
    assert r.score is None and not r.ok and field in r.error
    assert len(llm.chats) == 2  # asked, then retried once


def test_error_type_classifier_is_not_a_failure():
    replies = {
        "resp-0": {"error_type": "perceptual", "comment": "misheard"},
        "resp-1": {"error_type": "Answer_Extraction", "comment": "partial"},
        "resp-2": {"error_type": "hallucination", "comment": "?"},
    }
    llm = ScriptedLLM(lambda chat: json.dumps(replies[response_of(chat)]))
    judge = MsuErrorTypeJudge(llm)
    results = judge.judge([item(0), item(1), item(2)])
    assert [r.score for r in results] == [None, None, None]
    assert results[0].ok and results[0].error is None and results[0].detail["error_type"] == "perceptual"
    assert results[1].ok and results[1].detail["error_type"] == "answer_extraction"
    assert not results[2].ok and "error_type" in results[2].error
    assert set(ERROR_TYPES) == {"perceptual", "reasoning", "lack_of_knowledge", "rejection", "answer_extraction"}


class FlakyTransport(ScriptedLLM):
    """complete_each gives an LLMError for the responses in ``down``."""

    def __init__(self, reply, down):
        super().__init__(reply)
        self.down = down

    def complete_each(self, batch, **settings):
        self.calls.append(batch)
        return [LLMError("POST x: HTTP status 503") if response_of(c) in self.down else self.reply(c) for c in batch]


def test_transport_failures_are_failed_items_and_a_dead_chunk_raises(tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    judge = PalmCaptioningJudge(FlakyTransport(lambda c: verdict(1), down={"resp-1"}), cache=cache)
    results = judge.judge([item(0), item(1), item(2)])
    assert [r.score for r in results] == [1.0, None, 1.0] and "503" in results[1].error
    assert len(cache) == 2  # the failure is not cached
    dead = PalmCaptioningJudge(FlakyTransport(lambda c: verdict(1), down={"resp-3", "resp-4"}), cache=cache)
    with pytest.raises(LLMError, match="all 2 judge calls"):
        dead.judge([item(3), item(4)])


def test_default_complete_each_isolates_a_failing_chat():
    class OneBad(ScriptedLLM):
        def complete(self, batch, **settings):
            self.calls.append(batch)
            if any(response_of(c) == "resp-1" for c in batch):
                raise LLMError("boom")
            return [self.reply(c) for c in batch]

    llm = OneBad(lambda c: verdict(1))
    out = llm.complete_each([PalmCaptioningJudge(llm).messages(item(i)) for i in range(3)])
    assert out[0] == verdict(1) and isinstance(out[1], LLMError) and out[2] == verdict(1)


# ---- cache ---------------------------------------------------------------------------------------


def test_second_run_is_served_from_the_cache_and_failures_are_retried(tmp_path):
    broken = {"resp-2"}
    llm = ScriptedLLM(lambda chat: "nonsense" if response_of(chat) in broken else verdict(0.5))
    judge = make_judge("palm_captioning", llm, cache_dir=tmp_path)
    items = [item(i) for i in range(4)]
    first = judge.judge(items)
    assert [r.score for r in first] == [0.5, 0.5, None, 0.5]
    assert (tmp_path / CACHE_FILE).is_file()
    calls = len(llm.chats)
    broken.clear()
    second = make_judge("palm_captioning", llm, cache_dir=tmp_path).judge(items)
    assert [r.score for r in second] == [0.5] * 4
    assert [r.cached for r in second] == [True, True, False, True]
    assert [response_of(c) for c in llm.chats[calls:]] == ["resp-2"]  # only the failure was asked again
    calls = len(llm.chats)
    third = make_judge("palm_captioning", llm, cache_dir=tmp_path).judge(items)
    assert len(llm.chats) == calls and all(r.cached for r in third)
    assert [r.detail for r in third] == [r.detail for r in second]


def test_cache_key_changes_with_what_changes_the_verdict(tmp_path):
    chat = [{"role": "user", "content": "p"}]
    base = judge_key("j", "1", chat, {"backend": "openai", "model": "m", "temperature": 0.0, "max_tokens": 9})
    same = judge_key(
        "j",
        "1",
        chat,
        {
            "backend": "openai",
            "model": "m",
            "temperature": 0.0,
            "max_tokens": 9,
            "base_url": "http://other",
            "concurrency": 16,
        },
    )
    assert base == same
    for other in (
        judge_key("k", "1", chat, {"backend": "openai", "model": "m", "temperature": 0.0, "max_tokens": 9}),
        judge_key("j", "2", chat, {"backend": "openai", "model": "m", "temperature": 0.0, "max_tokens": 9}),
        judge_key(
            "j",
            "1",
            [{"role": "user", "content": "q"}],
            {"backend": "openai", "model": "m", "temperature": 0.0, "max_tokens": 9},
        ),
        judge_key("j", "1", chat, {"backend": "openai", "model": "n", "temperature": 0.0, "max_tokens": 9}),
        judge_key("j", "1", chat, {"backend": "openai", "model": "m", "temperature": 0.7, "max_tokens": 9}),
        judge_key("j", "1", chat, {"backend": "hf", "model": "m", "temperature": 0.0, "max_tokens": 9}),
    ):
        assert other != base
    # a different judge model misses the cache of the first
    cache_dir = tmp_path
    a = ScriptedLLM(lambda c: verdict(1), model="a")
    make_judge("palm_captioning", a, cache_dir).judge([item(0)])
    b = ScriptedLLM(lambda c: verdict(0), model="b")
    [r] = make_judge("palm_captioning", b, cache_dir).judge([item(0)])
    assert r.score == 0.0 and not r.cached and len(b.chats) == 1


def test_chunks_are_stored_as_they_finish_so_a_killed_run_resumes(tmp_path):
    class Killed(Exception):
        pass

    state = {"calls": 0}

    def reply(chat):
        return verdict(1)

    class DiesOnThirdCall(ScriptedLLM):
        def complete(self, batch, **settings):
            state["calls"] += 1
            if state["calls"] == 3:
                raise Killed()
            return super().complete(batch, **settings)

    items = [item(i) for i in range(10)]
    judge = make_judge("palm_captioning", DiesOnThirdCall(reply), tmp_path, chunk_size=4)
    with pytest.raises(Killed):
        judge.judge(items)
    cache = JudgeCache(tmp_path / CACHE_FILE)
    assert len(cache) == 8  # two chunks of 4 were stored before the third call died
    llm = ScriptedLLM(reply)
    results = make_judge("palm_captioning", llm, tmp_path, chunk_size=4).judge(items)
    assert [r.cached for r in results] == [True] * 8 + [False] * 2
    assert sorted(response_of(c) for c in llm.chats) == ["resp-8", "resp-9"]
    assert [len(b) for b in llm.calls] == [2]


def test_identical_items_are_asked_once_and_order_is_kept(tmp_path):
    llm = ScriptedLLM(lambda chat: verdict({"resp-0": 0, "resp-1": 1}[response_of(chat)]))
    judge = make_judge("palm_captioning", llm, tmp_path, chunk_size=1)
    judge.judge([item(1)])
    results = judge.judge([item(0), item(1), item(0), item(0)])
    assert [r.score for r in results] == [0.0, 1.0, 0.0, 0.0]
    assert [r.cached for r in results] == [False, True, False, False]
    assert [response_of(c) for c in llm.chats] == ["resp-1", "resp-0"]


def test_judge_cache_is_shared_between_connections(tmp_path):
    path = tmp_path / "j.sqlite"
    writer, reader = JudgeCache(path), JudgeCache(path)
    assert (
        writer.put_many(
            [
                ("k1", JudgeResult(0.5, {"comment": "x"}), "j"),
                ("k2", JudgeResult(None, {}, error="bad"), "j"),
                ("k3", JudgeResult(None, {"error_type": "perceptual"}), "j"),
            ]
        )
        == 2
    )
    got = reader.get_many(["k1", "k2", "k3", "k4"])
    assert set(got) == {"k1", "k3"} and got["k1"].score == 0.5 and got["k1"].cached
    assert got["k3"].score is None and got["k3"].ok and got["k3"].detail == {"error_type": "perceptual"}
    mode = sqlite3.connect(str(path)).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    errors = []

    def read_many():
        try:
            for _ in range(50):
                assert reader.get_many(["k1"])["k1"].score == 0.5
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=read_many) for _ in range(3)]
    for t in threads:
        t.start()
    writer.put_many((f"w{i}", JudgeResult(1.0, {}), "j") for i in range(50))
    for t in threads:
        t.join()
    assert not errors and len(reader) == 52


# ---- registry, specs ---------------------------------------------------------------------------------


def test_registry_lists_the_five_judges():
    assert JUDGES.names() == ["msu", "msu_error_type", "palm_captioning", "palm_reasoning", "palm_recognition"]
    assert JUDGES.get("msu") is MsuJudge and JUDGES.get("palm_reasoning") is PalmReasoningJudge
    with pytest.raises(KeyError, match="palm_captioning"):
        JUDGES.get("palm_caption")
    with pytest.raises(ConfigError, match="chunk_size"):
        make_judge("msu", ScriptedLLM(verdict), chunk_size=0)


def test_judge_llm_from_spec(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = judge_llm_from_spec("openai:model=gpt-4o-mini,base_url=http://127.0.0.1:8000/v1,concurrency=8,temperature=0")
    assert isinstance(llm, OpenAIChatLLM)
    assert (llm.model, llm.base_url, llm.concurrency, llm.temperature) == (
        "gpt-4o-mini",
        "http://127.0.0.1:8000/v1",
        8,
        0.0,
    )
    assert parse_judge_spec("openai:model=2024-05-13,max_tokens=64") == (
        "openai",
        {"model": "2024-05-13", "max_tokens": 64},
    )
    assert parse_judge_spec("hf:pretrained=/models/qwen") == ("hf", {"pretrained": "/models/qwen"})
    hf = judge_llm_from_spec("hf:pretrained=Qwen/Qwen3-8B,batch_size=4")  # a Hub id: resolved, loaded on first use
    assert type(hf).__name__ == "TransformersChatLLM" and hf.batch_size == 4 and hf._model is None
    with pytest.raises(ConfigError, match="--judge: pretrained '/nonexistent/model': no such folder"):
        judge_llm_from_spec("hf:pretrained=/nonexistent/model,batch_size=4")  # checked now, not after generation
    for bad in ("", "model=x", "openai:model"):
        with pytest.raises(ConfigError):
            judge_llm_from_spec(bad)
    with pytest.raises(ConfigError, match="colour"):
        judge_llm_from_spec("openai:model=m,colour=blue")
    with pytest.raises(KeyError, match="openai"):
        judge_llm_from_spec("opnai:model=m")
