"""PALM-Bench QA templates: counts against the paper, presence cases, rendering, validation."""

from collections import Counter
from itertools import combinations

import pytest

from lalm_eval.errors import ConfigError, DataError
from palm_bench.templates import CANDIDATES, KINDS, LANGUAGES, PLACEHOLDERS, load_templates, render

# Counted by hand from the paper (Wang et al., PALM-Bench, Appendix B.3 / B.4).
EXPECTED = {
    ("recognition", "rec_pos"): 20,  # Table 12, positive samples
    ("recognition", "rec_neg"): 20,  # Table 12, negative samples
    ("captioning", "cap_pos"): 11,  # Table 13, positive samples (question only)
    ("captioning", "cap_neg"): 11,  # Table 13, negative samples
    ("multi_speaker", "ms2_c1"): 27,  # Table 14, two speakers, case 1 (both present)
    ("multi_speaker", "ms2_c2"): 27,  # Table 14, case 2 (only A present)
    ("multi_speaker", "ms2_c3"): 27,  # Table 15, case 3 (only B present)
    ("multi_speaker", "ms2_c4"): 26,  # Table 15, case 4 (none present)
    ("multi_speaker", "ms3_c1"): 23,  # Table 16, three speakers, case 1 (all present)
    ("multi_speaker", "ms3_c2"): 20,  # Table 16, case 2 (two present)
    ("multi_speaker", "ms3_c3"): 18,  # Table 17, case 3 (one present)
    ("multi_speaker", "ms3_c4"): 22,  # Table 17, case 4 (none present)
    ("multi_speaker", "ms4_c1"): 25,  # Table 18, four speakers, case 1 (all present)
    ("multi_speaker", "ms4_c2"): 20,  # Table 18, case 2 (three present)
    ("multi_speaker", "ms4_c3"): 19,  # Table 19, case 3 (two present)
    ("multi_speaker", "ms4_c4"): 19,  # Table 19, case 4 (one present)
    ("multi_speaker", "ms4_c5"): 23,  # Table 20, case 5 (none present)
    ("reasoning", "rsn"): 15,  # Table 21, personalized reasoning questions
}
TABLES = {
    "rec": 12,
    "cap": 13,
    "ms2_c1": 14,
    "ms2_c2": 14,
    "ms2_c3": 15,
    "ms2_c4": 15,
    "ms3_c1": 16,
    "ms3_c2": 16,
    "ms3_c3": 17,
    "ms3_c4": 17,
    "ms4_c1": 18,
    "ms4_c2": 18,
    "ms4_c3": 19,
    "ms4_c4": 19,
    "ms4_c5": 20,
    "rsn": 21,
}


def all_templates(language):
    return [t for kind in KINDS for t in load_templates(kind, language)]


@pytest.mark.parametrize("language", LANGUAGES)
def test_counts_per_table_match_the_paper(language):
    counts = Counter((t.kind, t.group) for t in all_templates(language))
    assert dict(counts) == EXPECTED
    for t in all_templates(language):
        prefix = t.group if t.kind == "multi_speaker" else t.group[:3]
        assert t.table == TABLES[prefix], t.id


def test_ids_are_unique_and_both_languages_align():
    en, zh = all_templates("en"), all_templates("zh")
    assert len({t.id for t in en}) == len(en) == 373
    assert [t.id for t in en] == [t.id for t in zh]
    for a, b in zip(en, zh):
        assert set(a.placeholders) == set(b.placeholders), a.id
        assert bool(a.placeholders) == (a.kind != "reasoning"), a.id
        assert (a.answer is None) == (b.answer is None)
        assert b.question != a.question


def test_text_is_the_papers():
    rec = {t.id: t for t in load_templates("recognition", "en")}
    assert rec["rec_pos_01"].question == "Can you help me confirm whether {spk} spoke?"
    assert rec["rec_pos_01"].answer == "Confirmed—{spk} did speak."
    assert rec["rec_neg_20"].answer == "I’m very sure this isn’t {spk}’s voice."
    cap = load_templates("captioning", "en")
    assert all(t.answer is None for t in cap if t.group == "cap_pos")
    assert all(t.answer for t in cap if t.group == "cap_neg")
    ms = {t.id: t for t in load_templates("multi_speaker", "en")}
    assert ms["ms4_c2_09"].answer == "It includes {P1} and {P2}, but not {UP1}."  # as printed
    assert ms["ms4_c2_09"].note
    last = load_templates("reasoning", "en")[-1]
    assert last.question == "How does he or she usually cope with pressure?"


@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_presence_case_is_covered(n):
    cases = {t.group: t for t in load_templates("multi_speaker", "en") if t.n_speakers == n}
    assert sorted({t.n_present for t in cases.values()}) == list(range(n + 1))
    for case in cases.values():
        assert len(case.present) + len(case.absent) == n
        assert not set(case.present) & set(case.absent)
        used = {p for t in load_templates("multi_speaker", "en") if t.group == case.group for p in t.placeholders}
        assert set(case.present) | set(case.absent) <= used
        assert used <= set(case.present) | set(case.absent) | set(CANDIDATES[:n])
    if n == 2:  # candidates named A and B: all four subsets appear literally
        subsets = {frozenset(c) for k in range(3) for c in combinations("AB", k)}
        assert {frozenset(t.present) for t in cases.values()} == subsets


@pytest.mark.parametrize("language", LANGUAGES)
def test_render_fills_every_placeholder(language):
    values = {name: f"<{name}>" for kind in KINDS for name in PLACEHOLDERS[kind]}
    for t in all_templates(language):
        qa = render(t, **values)
        for text in (qa.question, qa.answer or ""):
            assert "{" not in text and "}" not in text, t.id
        for name in t.placeholders:
            assert f"<{name}>" in qa.question + (qa.answer or "")


def test_render_names_file_and_id_for_a_missing_value():
    t = next(t for t in load_templates("multi_speaker", "en") if t.id == "ms3_c2_01")
    with pytest.raises(ConfigError, match=r"multi_speaker\.yaml.*ms3_c2_01.*P2"):
        render(t, A="Amy", B="Bob", C="Cat", P1="Amy", UP1="Cat")
    assert (
        render(t, A="Amy", B="Bob", C="Cat", P1="Amy", P2="Bob", UP1="Cat").answer
        == "Amy and Bob spoke in the conversation, while Cat did not."
    )


def test_loading_is_cached_and_arguments_checked():
    assert load_templates("recognition", "en")[0] is load_templates("recognition", "en")[0]
    with pytest.raises(ConfigError, match="kind"):
        load_templates("recogniton", "en")
    with pytest.raises(ConfigError, match="language"):
        load_templates("recognition", "fr")


GOOD = """\
kind: recognition
groups:
  - group: rec_pos
    table: 12
    present: [spk]
    absent: []
    templates:
      - id: t1
        en: {{question: "Is {{spk}} here?", answer: "{answer}"}}
{zh}
      - id: {second_id}
        en: {{question: "Is {{spk}} speaking?", answer: "Yes."}}
        zh: {{question: "是{{spk}}吗？", answer: "是。"}}
"""


ZH_OK = '        zh: {question: "{spk}在吗？", answer: "是的，{spk}在。"}'


def write(tmp_path, answer="Yes, {spk} is.", zh=ZH_OK, second_id="t2"):
    path = tmp_path / "recognition.yaml"
    path.write_text(GOOD.format(answer=answer, zh=zh, second_id=second_id), encoding="utf-8")
    return path


def test_a_good_folder_loads(tmp_path):
    write(tmp_path)
    assert [t.id for t in load_templates("recognition", "zh", folder=tmp_path)] == ["t1", "t2"]


def test_unknown_placeholder_names_the_file(tmp_path):
    path = write(tmp_path, answer="Yes, {speaker} is.")
    with pytest.raises(DataError, match="speaker") as err:
        load_templates("recognition", "en", folder=tmp_path)
    assert str(path) in str(err.value) and err.value.field == "t1.en.answer"
    assert err.value.line == 8


def test_missing_zh_names_the_file(tmp_path):
    path = write(tmp_path, zh="")
    with pytest.raises(DataError, match="zh") as err:
        load_templates("recognition", "en", folder=tmp_path)
    assert str(path) in str(err.value) and err.value.field == "t1.zh"


def test_duplicate_id_names_the_file(tmp_path):
    path = write(tmp_path, second_id="t1")
    with pytest.raises(DataError, match="duplicate.*t1") as err:
        load_templates("recognition", "en", folder=tmp_path)
    assert str(path) in str(err.value) and err.value.field == "id" and err.value.line == 11


def test_zh_with_other_placeholders_is_refused(tmp_path):
    write(tmp_path, zh='        zh: {question: "在吗？", answer: "在。"}')
    with pytest.raises(DataError, match="placeholders"):
        load_templates("recognition", "en", folder=tmp_path)


def test_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_templates("captioning", "en", folder=tmp_path)
