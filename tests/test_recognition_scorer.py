"""Rule-based recognition scorer (PALM-Bench Appendix C.3, Table 26) without an LLM."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import yaml

from lalm_eval.metrics.agreement import agreement
from palm_bench import recognition
from palm_bench.recognition import (
    PresenceResult,
    extract_names,
    presence_judgments,
    recognition_presence_score,
)


def score(question, reference, response, **kw):
    return recognition_presence_score(question, reference, response, **kw)


# --------------------------------------------------------------------------- Table 26 examples

TABLE_26 = [
    # (example, question, ground truth, response, expected score: exact k/N)
    (
        1,
        "Please confirm: do the speakers include Bob and Amy?",
        "This audio indeed contains the voices of Bob and Amy.",
        "Confirmed, it includes Bob and Amy.",
        1.0,
    ),
    (
        2,
        "Amy is speaking in this audio; is there also Catherine’s voice?",
        "Amy is present, but Catherine is not.",
        "Amy’s voice is present, and so is Catherine’s.",
        0.5,
    ),
    (
        3,
        "Do Amy and Daisy both appear in this conversation at the same time?",
        "Only Daisy appears; Amy does not.",
        "Amy appears; Daisy does not.",
        0.0,
    ),
    (
        4,
        "Can you hear Amy, Catherine, and Daisy in this conversation?",
        "All three voices can be heard.",
        "The voices of Amy, Catherine, and Daisy can all be heard.",
        1.0,
    ),
    # the paper prints 0.6; the rubric's k/N is 2/3
    (
        5,
        "I hear Amy, Catherine, and Daisy in the dialogue, right?",
        "Only Amy appears; Catherine and Daisy do not appear.",
        "Amy and Daisy appear; Catherine does not.",
        2 / 3,
    ),
    (
        11,
        "Among Amy, Bob, Catherine, and Daisy, who appears?",
        "Only Bob appears.",
        "Amy, Bob, Catherine, and Daisy all appear.",
        0.25,
    ),
    (
        12,
        "Do Amy, Bob, Catherine, and Daisy speak in the audio?",
        "Amy and Bob appear; Catherine and Daisy do not appear.",
        "Only Catherine and Daisy appear; Amy and Bob do not.",
        0.0,
    ),
    (13, "Does Daisy speak?", "Does not really seem like Daisy.", "Does not really seem like Daisy.", 1.0),
]


@pytest.mark.parametrize(
    "example,question,truth,response,expected", TABLE_26, ids=[f"example{row[0]}" for row in TABLE_26]
)
def test_table_26_examples(example, question, truth, response, expected):
    assert score(question, truth, response) == pytest.approx(expected, abs=1e-12)


def test_table_26_example_5_details_are_exact_thirds():
    result = presence_judgments(*TABLE_26[4][1:4])
    assert result.names == ("Amy", "Catherine", "Daisy")
    assert result.reference == {"Amy": True, "Catherine": False, "Daisy": False}
    assert result.response == {"Amy": True, "Catherine": False, "Daisy": True}
    assert result.correct == 2 and result.score == 2 / 3 and result.score != 0.6
    assert result.undecided == ()


def test_table_26_example_13_also_parses_without_the_identity_rule():
    # same meaning, different wording: parsed, not matched as a string
    assert score("Does Daisy speak?", "Does not really seem like Daisy.", "That is not Daisy's voice.") == 1.0
    assert score("Does Daisy speak?", "Does not really seem like Daisy.", "Daisy is speaking.") == 0.0


# --------------------------------------------------------------------------- English cases


@pytest.mark.parametrize(
    "question,reference,response,expected",
    [
        # negation
        ("Is Bob in this audio clip?", "Bob is not in this clip.", "I didn't hear Bob.", 1.0),
        ("Is Bob in this audio clip?", "Bob is not in this clip.", "Bob is talking.", 0.0),
        ("Can you identify Bob's voice?", "Bob is absent.", "I can't identify Bob's voice here.", 1.0),
        # "only" makes every other queried name absent
        ("Are Amy, Bob, and Carl speaking?", "Only Amy speaks.", "Only Bob speaks.", 1 / 3),
        ("Are Amy, Bob, and Carl speaking?", "Only Amy speaks.", "You can only hear Amy's voice.", 1.0),
        # neither ... nor / none of / no one
        ("Did Amy and Bob both appear?", "Neither Amy nor Bob appears.", "No—neither Amy nor Bob is present.", 1.0),
        ("Did Amy and Bob both appear?", "Neither Amy nor Bob appears.", "Both Amy and Bob are present.", 0.0),
        ("Does this include Amy, Bob, and Carl?", "None of Amy, Bob, or Carl is present.", "None of them spoke.", 1.0),
        ("Does this include Amy, Bob, and Carl?", "None of Amy, Bob, or Carl is present.", "No one is speaking.", 1.0),
        # all four / both
        (
            "Are Amy, Bob, Carl, and Dan talking?",
            "Yes—all four are present.",
            "Amy, Bob, and Carl are present, but Dan is not.",
            0.75,
        ),
        ("Are Amy and Bob talking to each other?", "Both Amy and Bob are talking.", "Yes, both of them.", 1.0),
        # yes / no replies
        ("Is Daisy speaking?", "Daisy is speaking.", "Yes.", 1.0),
        ("Is Daisy speaking?", "Daisy is speaking.", "No.", 0.0),
        ("Is Daisy speaking?", "Daisy does not speak.", "No.", 1.0),
        ("Is Daisy speaking?", "Daisy does not speak.", "Absolutely, that is Daisy.", 0.0),
        ("Are Amy and Bob in this conversation?", "Yes, it includes both Amy and Bob.", "Yes.", 1.0),
        # "X is present but Y is not"
        ("Can you hear Amy and Bob?", "Amy is present but Bob is not.", "Bob is present but Amy is not.", 0.0),
        # a list that names people who are not queried stays one negated list
        ("Is Leo speaking?", "Leo is not speaking.", "No—it includes none of Henry, David, or Leo.", 1.0),
    ],
)
def test_english_cases(question, reference, response, expected):
    assert score(question, reference, response) == pytest.approx(expected, abs=1e-12)


def test_hedged_reply_is_undecided_and_wrong():
    result = presence_judgments(
        "Is Daisy speaking?", "Daisy is speaking.", "I cannot determine whether Daisy is speaking."
    )
    assert result.response == {"Daisy": None}
    assert result.undecided == ("Daisy",) and result.score == 0.0
    # a hedge about one name leaves the other decided
    result = presence_judgments(
        "Are Amy and Bob here?", "Amy is present, but Bob is not.", "Amy is present, but I'm not sure about Bob."
    )
    assert result.response == {"Amy": True, "Bob": None}
    assert result.undecided == ("Bob",) and result.score == 0.5
    # a bare "unable to determine" (Table 25's failure example) is not a "no"
    assert score("Is Daisy speaking?", "Daisy does not speak.", "Unable to recognize / unable to determine.") == 0.0


def test_refusal_decides_nothing_but_naming_someone_else_means_absent():
    refusal = "I'm sorry, but I can't identify specific individuals from audio."
    result = presence_judgments("Is Amy speaking?", "Amy is not speaking.", refusal)
    assert result.response == {"Amy": None} and result.score == 0.0
    assert score("Is Amy speaking?", "Amy is not speaking.", "The speaker is Bob.") == 1.0
    assert score("这段音频里有王芳吗？", "音频中没有检测到王芳的声音。", "是张伟在说话。") == 1.0
    assert score("这段音频里有王芳吗？", "音频中没有检测到王芳的声音。", "抱歉，我无法识别说话人的身份。") == 0.0


def test_only_scope_announced_before_the_names():
    question = "Are Amy and Bob here?"
    assert presence_judgments(question, "Only Amy is here.", "Only one of them is present: Amy.").response == {
        "Amy": True,
        "Bob": False,
    }
    assert presence_judgments("王芳和李明在吗？", "只有王芳在。", "音频中只有一个说话人，是王芳。").response == {
        "王芳": True,
        "李明": False,
    }


def test_later_clause_overrides_and_unrelated_no_is_ignored():
    # a self-correction wins; "Amy?" echoes the question
    assert (
        presence_judgments(
            "Is Daisy speaking?", "Daisy is not speaking.", "Daisy? No, I don't think Daisy is speaking."
        ).score
        == 1.0
    )
    # a long clause naming nobody is not a yes/no answer
    assert presence_judgments(
        "Is Daisy speaking?",
        "Daisy is not speaking.",
        "The recording has a lot of background noise that I cannot filter out.",
    ).response == {"Daisy": None}


def test_empty_reply_scores_zero_with_every_name_undecided():
    for empty in ("", "   \n"):
        result = presence_judgments("Are Amy and Bob here?", "Only Amy is here.", empty)
        assert result.score == 0.0 and result.correct == 0
        assert result.undecided == ("Amy", "Bob")
        assert result.response == {"Amy": None, "Bob": None}


def test_identical_reply_scores_one_even_when_unparseable():
    reference = "Hmm, hard to say about Daisy."
    assert presence_judgments("Does Daisy speak?", reference, reference).reference == {"Daisy": None}
    assert score("Does Daisy speak?", reference, "hmm,  HARD to say about daisy.") == 1.0
    assert score("Does Daisy speak?", reference, "Hmm, hard to say.") == 0.0


def test_who_question_makes_the_listed_names_exhaustive():
    question = "Which voices can you hear among Amy, Bob, and Carl?"
    result = presence_judgments(question, "You can hear Amy and Bob.", "Amy and Carl.")
    assert result.reference == {"Amy": True, "Bob": True, "Carl": False}
    assert result.response == {"Amy": True, "Bob": False, "Carl": True}
    assert result.score == pytest.approx(1 / 3)


def test_question_presupposition_with_also():
    question = "Is Amy speaking in this audio, and do you also hear Bob?"
    result = presence_judgments(question, "Yes, Bob is also present.", "No, Bob's voice is not present.")
    assert result.reference == {"Amy": True, "Bob": True}
    assert result.response == {"Amy": True, "Bob": False}
    assert result.score == 0.5


def test_reply_in_the_other_language():
    question = "Did Amy and Bob both appear?"
    reference = "Only Amy appears; Bob does not."
    assert score(question, reference, "只有Amy在说话，Bob不在。") == 1.0
    assert score(question, reference, "Amy和Bob都不在。") == 0.5


def test_names_given_explicitly_skip_extraction():
    question = "Can you hear both of them?"  # names nowhere in the question
    assert extract_names(question) == ()
    assert score(question, "Amy is here but Bob isn't.", "Only Amy.") == 0.0
    result = presence_judgments(question, "Amy is here but Bob isn't.", "Only Amy.", names=["Amy", "Bob"])
    assert result.names == ("Amy", "Bob") and result.score == 1.0
    # explicit names win over what the question would give
    assert presence_judgments("Is Amy here?", "Amy is here; Bob is not.", "Bob is not.", names=["Bob"]).score == 1.0


def test_english_name_extraction():
    assert extract_names("Is Mary Ann in the clip with Bob?") == ("Mary Ann", "Bob")
    assert extract_names("Among Grace, Karen, and Jason, who appears?") == ("Grace", "Karen", "Jason")
    assert extract_names("Is Isabel’s voice present in this recording?") == ("Isabel",)
    assert extract_names("I think I heard Henry—is that right?") == ("Henry",)
    assert extract_names("Please confirm: Does Amy speak? Is Amy there?") == ("Amy",)


# --------------------------------------------------------------------------- Chinese cases


@pytest.mark.parametrize(
    "question,reference,response,expected",
    [
        # 没有 / 不在
        ("这段音频里有王芳吗？", "我没有听到王芳的声音。", "没有，王芳不在。", 1.0),
        ("这段音频里有王芳吗？", "我没有听到王芳的声音。", "有，王芳在说话。", 0.0),
        # 只有 / 仅
        ("王芳和李明都出现在这段对话里了吗？", "只有王芳在，李明不在。", "只有李明在。", 0.0),
        ("王芳和李明都出现在这段对话里了吗？", "只有王芳在，李明不在。", "只能听到王芳的声音。", 1.0),
        ("赵敏、李明和王芳都参与了这段对话吗？", "没有——只有赵敏参与了。", "仅有赵敏和李明。", 2 / 3),
        # 都在 / 三人都 / 都没有 / 均未
        ("在赵敏、王芳和周强中，谁出现在这段对话里，谁没有？", "赵敏、王芳和周强都在。", "三人都在。", 1.0),
        ("在赵敏、王芳和周强中，谁出现在这段对话里，谁没有？", "赵敏、王芳和周强都没有说话。", "他们都不在。", 1.0),
        ("在赵敏、王芳和周强中，谁出现在这段对话里，谁没有？", "赵敏、王芳和周强均未出现。", "三位都在说话。", 0.0),
        # 并未 / 未
        ("张伟说话了吗？", "张伟并未说话。", "张伟未出现。", 1.0),
        # 是的 / 不是
        ("说话人是李明吗？", "是的，说话人是李明。", "是的。", 1.0),
        ("说话人是李明吗？", "是的，说话人是李明。", "不是。", 0.0),
        ("这个声音是李明的吗？", "这不是李明的声音。", "听起来不像是李明。", 1.0),
        # 既…也 / 两人都
        ("这段对话里有王芳和李明吗？", "有，王芳和李明都在里面。", "既有王芳也有李明。", 1.0),
        ("这段对话里有王芳和李明吗？", "王芳和李明都不在。", "两人都没有出现。", 1.0),
        # X在，Y不在 (four speakers)
        (
            "在赵敏、王芳、周强和陈伟中，谁出现在这段对话里，谁没有？",
            "周强、赵敏和陈伟在，而王芳不在。",
            "赵敏和王芳在，周强和陈伟不在。",
            0.25,
        ),
        # 无疑 / 没错 are not negations
        ("这段录音里有赵敏吗？", "有。那个熟悉的声音无疑就是赵敏。", "没错——就是赵敏。", 1.0),
        # an English reply to a Chinese question
        ("王芳和李明都出现在这段对话里了吗？", "只有王芳在，李明不在。", "Only 王芳 is present; 李明 is not.", 1.0),
    ],
)
def test_chinese_cases(question, reference, response, expected):
    assert score(question, reference, response) == pytest.approx(expected, abs=1e-12)


def test_chinese_hedge_and_empty_reply():
    result = presence_judgments("这个声音是李明的吗？", "这不是李明的声音。", "我无法确定是否有李明的声音。")
    assert result.response == {"李明": None} and result.undecided == ("李明",)
    assert result.score == 0.0
    result = presence_judgments("这个声音是李明的吗？", "这不是李明的声音。", "")
    assert result.score == 0.0 and result.undecided == ("李明",)


def test_chinese_names_given_explicitly():
    result = presence_judgments("这段音频里有她吗？", "有，欧阳娜娜在说话。", "没有听到欧阳娜娜。", names=["欧阳娜娜"])
    assert result.reference == {"欧阳娜娜": True} and result.response == {"欧阳娜娜": False}
    assert result.score == 0.0


def test_chinese_name_extraction():
    assert extract_names("在赵敏、王芳、周强和陈伟中，谁出现在这段对话里，谁没有？") == ("赵敏", "王芳", "周强", "陈伟")
    assert extract_names("你能帮我确认一下张伟有没有说话吗？") == ("张伟",)
    assert extract_names("这段录音里有王小明的声音吗？") == ("王小明",)
    assert extract_names("在这段对话里，你能同时听到王芳和李明吗？") == ("王芳", "李明")
    assert extract_names("李明在这段对话中说话了吗？") == ("李明",)


# --------------------------------------------------------------------------- PALM templates


def _render_all():
    """Every PALM recognition template with fixed names: (id, question, answer, truth)."""
    templates = pytest.importorskip("palm_bench.templates")
    answers = yaml.safe_load((Path(templates.TEMPLATE_DIR) / "answers.yaml").read_text(encoding="utf-8"))
    excluded = set(answers.get("excluded_templates", {}))
    pool = {"en": ["Alice", "Bob", "Catherine", "David"], "zh": ["王芳", "李明", "张静", "周强"]}
    rows = []
    for kind in ("recognition", "multi_speaker"):
        for language in ("en", "zh"):
            for t in templates.load_templates(kind, language):
                if t.answer is None or t.id in excluded:
                    continue
                values, present = _bind(t, pool[language])
                question, answer = templates.render(t, **values)
                queried = tuple(sorted({v for v in values.values() if v in question}, key=question.find))
                truth = {name: name in present for name in queried}
                rows.append((f"{t.id}.{language}", question, answer, queried, truth))
    return rows


def _bind(template, pool):
    if template.kind == "recognition":
        return {"spk": pool[0]}, ({pool[0]} if template.present else set())
    n = template.n_speakers
    values = dict(zip("ABCD", pool[:n]))
    roles = template.present and template.present[0].startswith("P")
    present = list(pool[: len(template.present)]) if roles else [values[p] for p in template.present]
    absent = [name for name in pool[:n] if name not in present]
    values.update({f"P{i + 1}": name for i, name in enumerate(present)})
    values.update({f"UP{i + 1}": name for i, name in enumerate(absent)})
    return values, set(present)


def test_every_palm_template_extracts_names_and_judges_its_own_answer():
    rows = _render_all()
    assert len(rows) > 600
    wrong_names = [(tid, q) for tid, q, _, queried, _ in rows if extract_names(q) != queried]
    assert wrong_names == []
    wrong = [
        (tid, a)
        for tid, q, a, queried, truth in rows
        if presence_judgments(q, a, "-", names=queried).reference != truth
    ]
    assert wrong == []


def test_palm_answers_of_another_presence_pattern_score_below_one():
    rows = _render_all()
    by_key = {}
    for tid, q, a, queried, truth in rows:
        by_key.setdefault((tid.split(".")[1], queried), []).append((q, a, truth))
    compared = 0
    for group in by_key.values():
        # one answer per presence pattern is enough to stand for the others
        patterns = {tuple(truth.items()): answer for _, answer, truth in group}
        for q, a, truth in group:
            for pattern, other in patterns.items():
                if pattern != tuple(truth.items()):
                    assert score(q, a, other) < 1, (q, a, other)
                    compared += 1
    assert compared > 400


# --------------------------------------------------------------------------- result, agreement


def test_presence_result_is_frozen():
    result = presence_judgments("Is Daisy speaking?", "Daisy is speaking.", "Yes.")
    assert isinstance(result, PresenceResult)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.score = 0.0


def test_agreement_hand_computed_kappa():
    # p_o = 3/4; p_e = 0.5*0.25 + 0.5*0.75 = 0.5; kappa = (0.75 - 0.5) / (1 - 0.5) = 0.5
    out = agreement([1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0])
    assert out["n"] == 4
    assert out["exact_agreement"] == pytest.approx(0.75)
    assert out["cohen_kappa"] == pytest.approx(0.5)
    # exact k/N scores as categories: 2/3 from two computations agree within 1e-9
    out = agreement([2 / 3, 0.5, 0.0], [1 - 1 / 3, 0.5, 0.0])
    assert out["exact_agreement"] == 1.0 and out["cohen_kappa"] == pytest.approx(1.0)


def test_agreement_undefined_kappa():
    assert agreement([], []) == {"n": 0, "exact_agreement": None, "cohen_kappa": None}
    out = agreement([1.0, 1.0], [1.0, 1.0])
    assert out["exact_agreement"] == 1.0 and out["cohen_kappa"] is None
    with pytest.raises(ValueError):
        agreement([1.0], [1.0, 0.0])


# --------------------------------------------------------------------------- packaging rules


def test_cue_lists_live_in_yaml_inside_the_package():
    path = recognition.CUES_FILE
    assert path.parent == Path(recognition.__file__).parent and path.suffix == ".yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert "not" in data["english"]["negation"] and "no" in data["english"]["negation"]
    assert "没有" in data["zh"]["negation"]
    with pytest.raises(ValueError, match="quote"):
        recognition._check_strings({"negation": ["not", False]})


def test_module_does_not_import_benchmark_packages():
    tree = ast.parse(Path(recognition.__file__).read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {"palm_bench", "msu_bench"}
