"""The MSU template QA generators: one per taxonomy task id, every word from templates.yaml."""

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import msu_bench.qa.generate as generate
from lalm_eval.errors import DataError, UnknownNameError
from msu_bench.embedded import load_embedded_conversations
from msu_bench.qa.facts import Facts
from msu_bench.qa.generate import generate_segment_qa, task_candidates, templates
from msu_bench.qa.tasks import GENERATORS, Candidate, generator, generator_for
from msu_bench.taxonomy import load_taxonomy
from tests.test_msu_segments_qa import conversation

TASK_IDS = [t.id for t in load_taxonomy().tasks]
TASKS_DIR = Path(generate.__file__).parent / "tasks"


def facts_of(conv, language):
    tpl = templates()
    return Facts(conv, tpl["labels"], language, tpl["speaker_label"][language])


def test_every_taxonomy_task_has_exactly_one_generator_and_no_generator_is_orphaned():
    assert sorted(GENERATORS) == sorted(TASK_IDS)
    assert sorted(templates()["tasks"]) == sorted(TASK_IDS)


def test_every_task_asks_in_both_languages_on_the_embedded_conversations():
    unfilled = re.compile(r"\{[a-z_]+\}")  # a placeholder a generator forgot to fill
    asked = {}
    for conv in load_embedded_conversations().conversations:
        for language in ("en", "zh"):
            facts = facts_of(conv, language)
            for task_id in TASK_IDS:
                for c in task_candidates(facts, task_id, np.random.default_rng(0)):
                    assert isinstance(c, Candidate) and c.question.strip() and c.answer.strip()
                    assert not unfilled.search(c.question + c.answer), (task_id, language, c)
                    asked[task_id, language] = asked.get((task_id, language), 0) + 1
    assert sorted(asked) == sorted((t, lang) for t in TASK_IDS for lang in ("en", "zh"))


def test_wording_comes_from_the_yaml_per_language(monkeypatch):
    seg = conversation(n_turns=20)
    en, zh = facts_of(seg, "en"), facts_of(seg, "zh")
    rng = np.random.default_rng(0)
    assert task_candidates(en, "t1_sr_speaker_counting", rng)[0].answer == "Two."  # capitalize: [count_word]
    assert task_candidates(zh, "t1_sr_speaker_counting", rng)[0].answer == "两位。"
    (first, _) = task_candidates(en, "t1_sr_speaker_recognition", rng)
    assert first.answer.startswith("“sentence number 0 from A here” / “sentence number 2 from A here” / ")
    emotion_en = task_candidates(en, "t1_spa_emotion_recognition", rng)[0]
    emotion_zh = task_candidates(zh, "t1_spa_emotion_recognition", rng)[0]
    assert (emotion_en.answer, emotion_zh.answer) == ("Sad.", "难过。")
    assert task_candidates(zh, "t1_sac_language_recognition", rng)[0].answer == "英语。"
    evolution = task_candidates(zh, "t2_sda_emotion_evolution", rng)[0].answer
    assert evolution.startswith("说话人1说“sentence number 0 from A here”时难过，然后说“")
    tpl = templates()
    recognition = tpl["tasks"]["t1_sr_speaker_recognition"]
    reworded = {**recognition, "en": {**recognition["en"], "utterance": "<{text}>", "sep": " | "}}
    monkeypatch.setattr(
        generate, "templates", lambda: {**tpl, "tasks": {**tpl["tasks"], "t1_sr_speaker_recognition": reworded}}
    )
    (first, _) = task_candidates(en, "t1_sr_speaker_recognition", rng)
    assert first.answer.startswith("<sentence number 0 from A here> | <sentence number 2 from A here> | ")


def test_a_task_without_a_generator_is_named_with_the_closest_one():
    with pytest.raises(UnknownNameError) as err:
        generator_for("t1_sr_speaker_countin")
    message = str(err.value)
    assert message.startswith("MSU task 't1_sr_speaker_countin': no QA generator; ")
    assert "did you mean 't1_sr_speaker_counting'?" in message and "@generator('t1_sr_speaker_countin')" in message


def test_a_task_without_wording_is_a_data_error_naming_the_yaml_key(monkeypatch):
    tpl = templates()
    tasks = {k: v for k, v in tpl["tasks"].items() if k != "t1_sr_speaker_counting"}
    monkeypatch.setattr(generate, "templates", lambda: {**tpl, "tasks": tasks})
    with pytest.raises(DataError) as err:
        task_candidates(facts_of(conversation(), "en"), "t1_sr_speaker_counting", np.random.default_rng(0))
    assert "templates.yaml" in str(err.value) and "tasks.t1_sr_speaker_counting.en" in str(err.value)


def test_a_registered_generator_is_asked_with_its_own_wording(monkeypatch):
    tpl = templates()
    wording = {"en": {"q": ["How long is the segment?"], "a": "{seconds} seconds."}}
    monkeypatch.setattr(generate, "templates", lambda: {**tpl, "tasks": {**tpl["tasks"], "t9_toy_length": wording}})
    monkeypatch.setattr("msu_bench.qa.tasks.registry.GENERATORS", dict(GENERATORS))

    @generator("t9_toy_length")
    def segment_length(facts, wording):
        return [Candidate(wording.question(), wording.answer(seconds=f"{facts.conv.duration:.0f}"), {})]

    with pytest.raises(ValueError, match="two QA generators for MSU task 't9_toy_length'"):
        generator("t9_toy_length")(segment_length)
    (item,) = generate_segment_qa(conversation(n_turns=20), ["t9_toy_length"], {}, np.random.default_rng(0))
    assert (item.task_id, item.question, item.answer) == ("t9_toy_length", "How long is the segment?", "100 seconds.")


def test_no_generator_module_holds_user_facing_wording():
    """Questions and answers (en and zh) live in templates.yaml: the generators' string
    constants are docstrings, YAML keys, placeholder names and annotation values only."""
    wording = re.compile(r"[\u4e00-\u9fff“”，。]|\s")
    for path in sorted(TASKS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                is_message = path.name == "registry.py"  # the registry's error messages
                assert is_message or not wording.search(node.value), f"{path.name}:{node.lineno}: {node.value!r}"
