"""The LLM QA pipeline (generate → filter) with a scripted TextLLM double."""

import dataclasses
import json
import re
from pathlib import Path

import pytest

from lalm_eval.errors import DataError
from lalm_eval.llm import TextLLM
from msu_bench import plan as plan_module
from msu_bench.plan import MsuConfig, make_plan
from msu_bench.types import ReadReport
from tests.test_msu_segments_qa import conversation


class ScriptedLLM(TextLLM):
    """Answers generate prompts with a pair naming the task, filter prompts by a rule."""

    def __init__(self, decline=(), reject=(), garbage=()):
        self.decline, self.reject, self.garbage = set(decline), set(reject), set(garbage)
        self.prompts = []

    @property
    def settings(self):
        return {"backend": "scripted", "model": "double"}

    def complete(self, batch, **settings):
        replies = []
        for chat in batch:
            text = chat[0]["content"]
            self.prompts.append(text)
            task = re.search(r"Task: (.+?)\.?$", text, re.M).group(1)
            if "Keep the pair only if" in text:
                replies.append(json.dumps({"keep": task not in self.reject, "reason": "checked"}))
            elif task in self.garbage:
                replies.append("I would rather not.")
            elif task in self.decline:
                replies.append(json.dumps({"question": "", "answer": "", "evidence": "no basis"}))
            else:
                replies.append(
                    f"```json\n{json.dumps({'question': f'Q about {task}?', 'answer': 'A.', 'evidence': 'line 1'})}\n```"
                )
        return replies


@pytest.fixture
def synthetic_corpus(monkeypatch):
    # a conversation without audio is a reported skip: give it a path (and no audio check of it)
    conv = dataclasses.replace(conversation(n_turns=20), audio=Path("c.wav"))
    monkeypatch.setattr(plan_module, "read_corpus", lambda kind, d, o: ReadReport([conv]))
    monkeypatch.setattr(plan_module, "segment_audio_problem", lambda seg: None)
    return conv


def test_llm_fills_tasks_the_annotation_cannot_answer(synthetic_corpus):
    without = make_plan(MsuConfig(languages=("en",)), corpus="test")
    (seg_id,) = without.questions
    n_template = len(without.questions[seg_id])
    assert n_template < 10  # a bare transcript supports only some tasks
    llm = ScriptedLLM(decline={"Dialogue Result Reasoning"}, reject={"Motivation Reasoning"})
    with_llm = make_plan(MsuConfig(languages=("en",)), corpus="test", llm=llm)
    items = with_llm.questions[seg_id]
    generated = [q for q in items if q.evidence.get("generated_by") == "llm"]
    assert generated and len(items) <= 10
    assert all(q.question.startswith("Q about") and q.evidence["llm"]["model"] == "double" for q in generated)
    assert with_llm.stats["llm"]["backend"] == "scripted"
    asked_names = {q.question for q in generated}
    assert "Q about Dialogue Result Reasoning?" not in asked_names
    assert "Q about Motivation Reasoning?" not in asked_names
    assert any("Speaker_1:" in p for p in llm.prompts)  # the transcript is in the prompt


def test_invalid_reply_is_retried_then_an_error(synthetic_corpus):
    llm = ScriptedLLM(garbage={"Dialogue Background Reasoning"})
    with pytest.raises(DataError, match="invalid LLM reply after one retry"):
        make_plan(MsuConfig(languages=("en",), per_segment=25), corpus="test", llm=llm)
