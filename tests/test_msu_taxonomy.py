"""The MSU-Bench taxonomy (msu_bench/taxonomy.yaml) against the seed paper's Table 2 / Table 5."""

from pathlib import Path

import pytest

from lalm_eval.errors import DataError
from msu_bench.taxonomy import ANSWER_TYPES, TAXONOMY_FILE, load_taxonomy
from tests.papers import MSU_TITLE, paper_text

# Table 2 "Hierarchical Multi-Speaker Understanding Tasks", written out from the paper.
TIERS = {
    "tier1": "Single-Speaker Static Attribute Understanding",
    "tier2": "Single-Speaker Dynamic Attribute Understanding",
    "tier3": "Multi-Speaker Background Understanding",
    "tier4": "Multi-Speaker Interaction Understanding",
}
CAPABILITY_TIER = {
    "sr": "tier1",
    "sac": "tier1",
    "spa": "tier1",
    "sda": "tier2",
    "scii": "tier2",
    "mssi": "tier3",
    "msri": "tier3",
    "mst": "tier4",
    "msia": "tier4",
    "mscr": "tier4",
}
CAPABILITY_NAME = {
    "sr": "Speaker Recognition",
    "sac": "Speaker Attribute Comprehension",
    "spa": "Speaker Paralinguistic Analysis",
    "sda": "Speaker Dynamic Analysis",
    "scii": "Speaker Cultural Identity Integration",
    "mssi": "Multi-Speaker Scene Inference",
    "msri": "Multi-Speaker Relationship Inference",
    "mst": "Multi-Speaker Transcription",
    "msia": "Multi-Speaker Interaction Analysis",
    "mscr": "Multi-Speaker Contextual Reasoning",
}
CAPABILITY_TASKS = {
    "sr": ["Speaker Recognition", "Speaker Counting", "Silence/Overlap Detection"],
    "sac": ["Accent/Dialect Recognition", "Language Recognition", "Gender Recognition", "Age Recognition"],
    "spa": ["Voice Quality Analysis", "Speech Flow Analysis", "Emotion Recognition"],
    "sda": ["Emotion Evolution", "Voice Quality Evolution", "Opinion Change Recognition"],
    "scii": [
        "Language/Accent Cultural Reasoning",
        "Expression Preference Recognition",
        "Geographical Location Estimation",
    ],
    "mssi": ["Dialogue Background Reasoning", "Dialogue Result Reasoning"],
    "msri": ["Speaker Role Recognition", "Social Role Recognition"],
    "mst": ["Dialogue Transcription"],
    "msia": ["Paralinguistic Interaction Analysis", "Social Interaction Analysis"],
    "mscr": ["Causal Attribution", "Motivation Reasoning"],
}


@pytest.fixture(scope="module")
def tax():
    return load_taxonomy()


def test_counts(tax):
    assert len(tax.tiers) == 4
    assert len(tax.capabilities) == 10
    assert len(tax.tasks) == 25 == sum(map(len, CAPABILITY_TASKS.values()))
    assert load_taxonomy() is tax  # cached


def test_tiers_and_capabilities_match_table2(tax):
    assert {t.id: t.name for t in tax.tiers} == TIERS
    assert {c.id: c.tier for c in tax.capabilities} == CAPABILITY_TIER
    assert {c.id: c.name for c in tax.capabilities} == CAPABILITY_NAME
    for tier in TIERS:
        caps = {c for c, t in CAPABILITY_TIER.items() if t == tier}
        assert {t.capability for t in tax.tasks_of_tier(tier)} == caps


def test_every_capability_has_the_table2_tasks(tax):
    for cap, names in CAPABILITY_TASKS.items():
        tasks = tax.tasks_of_capability(cap)
        assert [t.name for t in tasks] == names
        assert all(t.tier == CAPABILITY_TIER[cap] for t in tasks)


def test_task_ids_are_stable_and_well_formed(tax):
    ids = [t.id for t in tax.tasks]
    assert len(set(ids)) == 25
    for t in tax.tasks:
        assert t.id.startswith(f"t{t.tier[-1]}_{t.capability}_")
        assert t.answer_type in ANSWER_TYPES
        assert t.example_question and t.example_answer
    assert tax.task("t1_sr_speaker_counting").answer_type == "count"
    assert tax.task("t4_mst_dialogue_transcription").answer_type == "transcription"


def test_prompts(tax):
    transcription = tax.task("t4_mst_dialogue_transcription")
    for lang in ("en", "zh"):
        assert "{spk_1:" in transcription.inference_prompt(lang)
    assert tax.task("t1_sr_speaker_counting").prompt["en"] == "Answer with a single number."
    assert tax.task("t1_sr_speaker_recognition").prompt["en"].startswith("Quote the speaker's words exactly")
    for t in tax.tasks:
        assert set(t.prompt) == {"en", "zh"}
        if t.answer_type == "label" and t.labels:  # candidate labels are spelled out in English
            for labels in t.labels.values():
                assert all(label in t.prompt["en"] for label in labels), t.id


def test_label_sets(tax):
    assert tax.task("t1_sac_gender_recognition").labels == {"gender": ("male", "female")}
    assert tax.task("t1_sac_age_recognition").labels["age_group"] == (
        "child",
        "young adult",
        "adult",
        "middle-aged",
        "senior",
    )
    assert "calm" in tax.task("t1_spa_emotion_recognition").labels["emotion"]
    assert tax.task("t3_mssi_dialogue_result_reasoning").labels["outcome"] == ("consensus", "disagreement")
    assert tax.task("t3_mssi_dialogue_background_reasoning").labels["formality"] == ("formal", "semi-formal", "casual")


def test_examples_and_descriptions_are_verbatim(tax):
    paper = paper_text(MSU_TITLE)
    for t in tax.tasks:
        assert f"Q: {t.example_question} A: {t.example_answer}" in paper, t.id
    for c in tax.capabilities:
        assert c.description in paper and f"{c.name} ({c.id.upper()})" in paper, c.id


def test_unknown_task_suggests_close_ids(tax):
    with pytest.raises(KeyError, match="t1_sr_speaker_counting"):
        tax.task("t1_sr_speaker_count")
    with pytest.raises(KeyError):
        tax.tasks_of_capability("xyz")


def _broken(tmp_path, old, new, count=1):
    text = TAXONOMY_FILE.read_text(encoding="utf-8")
    assert text.count(old) >= count, old
    path = tmp_path / "taxonomy.yaml"
    path.write_text(text.replace(old, new, count), encoding="utf-8")
    return path


def _error(path):
    with pytest.raises(DataError) as info:
        load_taxonomy(path)
    assert str(path) in str(info.value)
    return info.value


def test_unknown_capability_is_an_error(tmp_path):
    path = _broken(tmp_path, "capability: msia\n", "capability: msiax\n")
    err = _error(path)
    assert err.field == "capability" and "'capability'" in str(err) and "msiax" in str(err)
    assert err.line is not None


def test_duplicate_task_id_is_an_error(tmp_path):
    path = _broken(tmp_path, "id: t1_sr_speaker_counting\n", "id: t1_sr_speaker_recognition\n")
    err = _error(path)
    assert err.field == "id" and "duplicate" in str(err) and "t1_sr_speaker_recognition" in str(err)
    text = path.read_text(encoding="utf-8").splitlines()
    assert "t1_sr_speaker_recognition" in text[err.line - 1]
    assert text[err.line].strip() == "name: Speaker Counting"  # the second (duplicate) entry


def test_missing_zh_prompt_is_an_error(tmp_path):
    line = next(
        x
        for x in TAXONOMY_FILE.read_text(encoding="utf-8").splitlines(keepends=True)
        if x.strip().startswith('zh: "请按格式')
    )
    err = _error(_broken(tmp_path, line, ""))
    assert err.field == "prompt.zh" and "t4_mst_dialogue_transcription" in str(err)


def test_id_prefix_must_match_tier_and_capability(tmp_path):
    err = _error(_broken(tmp_path, "id: t2_sda_emotion_evolution\n", "id: t1_sda_emotion_evolution\n"))
    assert err.field == "id" and "t2_sda_" in str(err)
    err = _error(
        _broken(tmp_path, "    capability: sr\n    answer_type: count", "    capability: sac\n    answer_type: count")
    )
    assert err.field == "id"


def test_unknown_tier_and_missing_field_are_errors(tmp_path):
    err = _error(_broken(tmp_path, "    tier: tier4\n    capability: mst", "    tier: tier9\n    capability: mst"))
    assert err.field == "tier"
    err = _error(_broken(tmp_path, "    answer_type: transcription\n", ""))
    assert err.field == "answer_type"
