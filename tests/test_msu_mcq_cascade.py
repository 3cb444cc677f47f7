"""The `cascade` reference system on the msu_mcq tasks: they declare `answer_kind: multiple_choice`,
so the cascade answers them by that kind (never `undeclared_kind`): the letter of the option that
states the speaker count it finds when the question asks how many speakers there are, else
"cannot determine" — counted, and scored by the authors' parser as instruction_not_follow.

Prompts are rendered by the real msu_mcq task (its doc_to_text), so the option lines parsed are the
ones a model sees. Expected values are worked out by hand from the prompts and the fixture."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from lalm_eval.api import Request
from lalm_eval.models.cascade_parts.answers import AnswerBook
from lalm_eval.tasks import TaskManager

TM = TaskManager()
MCQ = TM.load_task("msu_mcq")
BOOK = AnswerBook()


def prompt(question: str, options: list[str], language: str = "en") -> str:
    return MCQ.render_text(
        {"language": language, "question": question, "options": options, "option_letters": list("ABCD")}
    )


@pytest.mark.parametrize(
    "question, options, language, want",
    [
        (
            "How many speakers are there in the conversation?",
            ["1", "2", "3", "4"],
            "en",
            {1: "A", 2: "B", 3: "C", 4: "D"},
        ),
        (
            "How many different speakers take part?",
            ["Three people", "One speaker", "Four", "two voices"],
            "en",
            {3: "A", 1: "B", 4: "C", 2: "D"},
        ),  # number words, any case
        ("对话中有几位说话人？", ["两位", "三位", "四位", "五位"], "zh", {2: "A", 3: "B", 4: "C", 5: "D"}),
        (
            "对话中有几个人在说话？",
            ["1人", "二人", "3人", "4人"],
            "zh",
            {1: "A", 2: "B", 3: "C", 4: "D"},
        ),  # 二: extra_numbers
        ("Who speaks first?", ["1", "2", "3", "4"], "en", None),  # not a counting question
        ("How many speakers are there?", ["2", "two", "3", "4"], "en", None),  # two options state 2
        ("How many speakers are there?", ["2 or 3", "4", "5", "6"], "en", None),  # an option states two numbers
        ("How many speakers are there?", ["many", "2", "3", "4"], "en", None),  # an option states none
    ],
)
def test_count_options_from_the_rendered_prompt(question, options, language, want):
    assert BOOK.count_options(prompt(question, options, language), language) == want


def test_every_msu_mcq_task_declares_the_multiple_choice_kind():
    names = [t for t in TM.all_tasks() if t.startswith("msu_mcq")]
    assert len(names) == 26  # 16 codes + 6 schemes + en/zh + all + strict
    for name in names:
        declared = TM.load_task(name).config.metadata.get("answer_kind")
        assert declared == "multiple_choice" and BOOK.kinds[declared] == "multiple_choice", name


# -- the adapter itself (enrollment: a few embedded-corpus subjects, as tests/test_cascade.py) --

SUBJECTS = {"en_s01": "Alice", "en_s02": "Bob", "en_s04": "David"}


@pytest.fixture(scope="module")
def cascade(tmp_path_factory, corpus):
    torch = pytest.importorskip("torch")
    from lalm_eval.models import MODELS

    root = tmp_path_factory.mktemp("enroll")
    for sid, name in SUBJECTS.items():
        (root / name).mkdir()
        for utt in corpus.utterances_of(sid)[:3]:
            shutil.copy(utt.audio, root / name / utt.audio.name)
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield MODELS.get("cascade")(enrollment=str(root))
    torch.set_num_threads(before)


def _request(text: str, audio, doc_id: int = 0) -> Request:
    return Request(
        "renamed_mcq_task",
        doc_id,
        (audio,),
        ({"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": text}]},),
        {"max_new_tokens": 8},
        task_metadata={"version": 1.0, "answer_kind": "multiple_choice"},
    )


def test_cascade_answers_the_count_letter_or_cannot_determine(cascade, corpus):
    from lalm_eval.metrics.choice import parse_final_answer, parse_letter

    clips = [corpus.utterances_of(sid)[9].load_audio() for sid in SUBJECTS]  # never enrolled
    silence = np.zeros(8000, np.float32)
    three = np.concatenate([clips[0], silence, clips[1], silence, clips[2]]).astype(np.float32)
    before = dict(cascade.counters)
    out = cascade.generate(
        [
            _request(prompt("How many speakers are there in the conversation?", ["1", "2", "3", "4"]), three),
            _request(prompt("对话中有几位说话人？", ["一位", "两位", "三位", "四位"], "zh"), three, 1),
            _request(prompt("Who speaks first?", ["Alice", "Bob", "David", "Nobody"]), three, 2),
            _request(prompt("How many speakers are there?", ["5", "6", "7", "8"]), three, 3),
        ]
    )
    texts = [r.text for r in out]
    assert texts == [
        "Final answer: C",
        "最后答案：C",
        "I cannot determine this from the audio.",
        "I cannot determine this from the audio.",
    ]
    assert [parse_letter(t) for t in texts] == ["C", "C", "", ""]  # the authors' parser
    assert [parse_final_answer(t) for t in texts] == ["C", "C", "", ""]  # msu_mcq_strict's
    grew = {k: cascade.counters[k] - before.get(k, 0) for k in cascade.counters}
    assert grew["kind:multiple_choice"] == 4 and grew.get("undeclared_kind", 0) == 0
    assert grew["choice_unsupported"] == 1 and grew["choice_no_option"] == 1 and grew["cannot_determine"] == 2


def test_cascade_on_the_release_fixture_counts_every_answer(cascade, tmp_path):
    """`--model cascade --tasks msu_mcq` on the release fixture: the 13 scored questions are answered
    by the declared kind. None of them asks how many speakers there are (the one that does, zh-BI-1,
    is reverse_* and left out), so all 13 are "cannot determine": instruction_not_follow, counted."""
    from msu_bench.mcq_export import build_mcq
    from tests.evaluation_helpers import evaluate_names
    from tests.msu_release_fixture import make_release

    build_mcq(tmp_path / "msu-bench-mcq", make_release(tmp_path / "MSU-Bench"))
    before = dict(cascade.counters)
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = evaluate_names(cascade, ["msu_mcq"], cache_dir=tmp_path / "cache", use_cache=False)
    finally:
        os.chdir(old)
    r = result.results["msu_mcq"]
    assert r.n["scored"] == 13 and r.summary["mcq_accuracy"] == 0.0
    assert r.metrics["mcq_accuracy"]["error_types"] == {"instruction_not_follow": 13}
    grew = {k: result.adapter_counters[k] - before.get(k, 0) for k in result.adapter_counters}
    assert grew["kind:multiple_choice"] == 13 and grew["choice_unsupported"] == 13 and grew["cannot_determine"] == 13
    assert grew.get("undeclared_kind", 0) == 0 and not any(k.startswith("unsupported_kind") for k in grew if grew[k])
