"""MSU-Bench built from the embedded conversations, checked against the rendered annotation."""

import io
import json
import re

import numpy as np
import pytest
import soundfile as sf

from lalm_eval.errors import ConfigError
from msu_bench.embedded import load_embedded_conversations
from msu_bench.export import build
from msu_bench.plan import load_preset
from msu_bench.taxonomy import load_taxonomy


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("msu")
    return out, build(out, load_preset("small"))


@pytest.fixture(scope="module")
def rows(built):
    import datasets

    ds = datasets.load_dataset(str(built[0]), "all", split="test")
    return list(ds.cast_column("audio", datasets.Audio(decode=False)))


@pytest.fixture(scope="module")
def conversations():
    return {c.id: c for c in load_embedded_conversations().conversations}


def test_all_tasks_tiers_and_languages(rows, built):
    taxonomy = load_taxonomy()
    assert {r["task_id"] for r in rows} == {t.id for t in taxonomy.tasks}
    assert {r["tier"] for r in rows} == {"tier1", "tier2", "tier3", "tier4"}
    assert {r["language"] for r in rows} == {"en", "zh"}
    assert built[1]["plan"]["tasks_without_questions"] == []
    per_segment = {}
    for r in rows:
        per_segment[r["segment_id"]] = per_segment.get(r["segment_id"], 0) + 1
    assert set(per_segment.values()) == {10}


def test_segments_are_60_to_120_s_with_two_or_more_speakers(rows):
    for r in rows:
        assert 60 <= r["duration"] <= 120 and r["n_speakers"] >= 2
        audio, sr = sf.read(io.BytesIO(r["audio"]["bytes"]))
        assert len(audio) / sr == pytest.approx(r["duration"], abs=0.01)


def test_each_tier_config_holds_only_its_tier(built):
    import datasets

    for tier in ("tier1", "tier2", "tier3", "tier4"):
        ds = datasets.load_dataset(str(built[0]), tier, split="test")
        assert set(ds["tier"]) == {tier} and len(ds) > 0


def test_transcription_answers_match_the_annotation(rows, conversations):
    for r in (r for r in rows if r["task_id"] == "t4_mst_dialogue_transcription"):
        conv = conversations[r["segment_id"]]
        m = re.fullmatch(r"\{(.*)\}", r["answer"])
        assert m and "{spk_1:" in r["inference_prompt"]
        parts = dict(p.split(": ", 1) for p in m.group(1).split("; spk_"))
        assert len(parts) == r["n_speakers"]
        joiner = " " if conv.language == "en" else ""
        for i, spk in enumerate(conv.speaker_order(), start=1):
            expected = joiner.join(t.text for t in conv.turns_of(spk))
            assert parts[f"spk_{i}" if i == 1 else str(i)] == expected


def test_interruption_questions_point_at_overlapping_audio(rows, conversations):
    asked = [
        r
        for r in rows
        if r["task_id"] == "t1_sr_silence_overlap_detection" and "interrupted_by" in json.loads(r["evidence"])
    ]
    assert asked, "no interruption question was generated"
    for r in asked:
        ev, conv = json.loads(r["evidence"]), conversations[r["segment_id"]]
        cut, by = conv.turn(ev["turn"]), conv.turn(ev["interrupted_by"])
        assert cut.start < by.start < cut.end and by.speaker != cut.speaker
        audio, sr = sf.read(io.BytesIO(r["audio"]["bytes"]))
        overlap = audio[int(by.start * sr) : int(cut.end * sr)]
        assert len(overlap) > 0.1 * sr and np.sqrt(np.mean(overlap**2)) > 0.01  # audible speech
        assert r["answer"].startswith("Yes") or r["answer"].startswith("是")


def test_quoted_turns_exist(rows, conversations):
    for r in rows[:80]:
        conv = conversations[r["segment_id"]]
        for quoted in re.findall(r"“([^”]+?)(?:…|……)?”", r["question"]):
            assert any(t.text.startswith(quoted.rstrip("…").rstrip()) for t in conv.turns), quoted


def test_two_processes_give_the_same_shards_as_one(built, tmp_path, monkeypatch):
    import datasets.builder

    opened, real = [], datasets.builder.Pool
    monkeypatch.setattr(datasets.builder, "Pool", lambda n, *a, **k: opened.append(n) or real(n, *a, **k))
    two = build(tmp_path / "np2", load_preset("small"), num_proc=2)
    assert opened and set(opened) == {2}  # each tier's split was written by 2 processes
    assert two["shards"] == built[1]["shards"]  # byte-identical Parquet
    assert two["stats"] == built[1]["stats"]


def test_unknown_preset_key_is_an_error():
    with pytest.raises(ConfigError, match="unknown key"):
        load_preset("small", {"questions_per_segment": 3})


def test_mcq_release_exports_as_its_own_config(tmp_path, monkeypatch):
    import datasets

    import msu_bench.mcq
    import msu_bench.mcq_builder
    from tests.test_msu_mcq import make_release

    release = make_release(tmp_path / "release")
    out = tmp_path / "out"
    reads, read = [], msu_bench.mcq.read_mcq_release
    spy = lambda *a: reads.append(a) or read(*a)  # noqa: E731
    monkeypatch.setattr(msu_bench.mcq, "read_mcq_release", spy)
    monkeypatch.setattr(msu_bench.mcq_builder, "read_mcq_release", spy)
    info = build(out, load_preset("small", {"languages": ["en"]}), mcq_dir=str(release))
    assert len(reads) == 1  # read once: its summary and the builder's rows come from that one report
    mcq = datasets.load_dataset(str(out), "mcq", split="test")
    assert len(mcq) == info["stats"]["mcq_questions"] > 0
    assert set(mcq["answer"]) <= {"A", "B", "C", "D"}
    assert all(len(r) == 4 and "ground truth" in r for r in mcq["rationale"])
    assert info["stats"]["mcq_import"]["skipped_by_reason"]["unknown task"] == 2  # counted in build_info.json
    assert "| unknown task | 2 |" in (out / "README.md").read_text(encoding="utf-8")  # and in the card
    assert set(datasets.load_dataset(str(out), "all", split="test")["tier"]) == {"tier1", "tier2", "tier3", "tier4"}
