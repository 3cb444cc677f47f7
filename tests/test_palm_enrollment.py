"""The ``enrollment`` config of a PALM-Bench build: subjects' train-split clips, no test leak."""

from __future__ import annotations

import hashlib
import io
import json

import datasets
import pytest
import soundfile as sf

from lalm_eval.errors import DataError
from lalm_eval.hub.build_once import build_once, jsonable
from palm_bench.corpus.embedded import load_corpus
from palm_bench.enrollment_builder import FEATURES, check_no_leak
from palm_bench.export import _enrollment_stats, build
from palm_bench.splits import split_clips
from tests.test_palm_builder import NEGATIVES, SUBJECTS, make_corpus_copy, tiny_config


def small_config(**changes):
    """Few audios and templates: the QA configs only need to exist for the leak check."""
    return tiny_config(
        audios_per_subject={"train": 2, "test": 2},
        reasoning_per_subject={"train": 1, "test": 1},
        templates_per_audio=2,
        **changes,
    )


def shared_build(tmp_path_factory, corpus):
    """``(out_dir, build_info, corpus_dir, work_dir)`` of one tiny build per test session (shared
    with tests/test_palm_enroll_tasks.py; lalm_eval's build_once locks and reuses it)."""
    root = tmp_path_factory.getbasetemp() / "palm_enroll_shared"
    corpus_dir, work, out = root / "corpus", root / "work", root / "out"
    cfg = small_config()

    def run_build(folder):
        if not corpus_dir.exists():
            make_corpus_copy(corpus_dir, corpus)
        build(folder, cfg, corpus="embedded", corpus_dir=str(corpus_dir), work_dir=work)

    built = build_once(out, jsonable(cfg.to_dict()), run_build)
    return built, json.loads((built / "build_info.json").read_text()), corpus_dir, work


@pytest.fixture(scope="module")
def shared(tmp_path_factory, corpus):
    return shared_build(tmp_path_factory, corpus)


@pytest.fixture(scope="module")
def corpus_dir(shared):
    return shared[2]


@pytest.fixture(scope="module")
def work(shared):
    return shared[3]


@pytest.fixture(scope="module")
def built(shared):
    return shared[0], shared[1]


@pytest.fixture(scope="module")
def enrollment(built):
    ds = datasets.load_dataset(str(built[0]), "enrollment", split="train")
    return ds.cast_column("audio", datasets.Audio(decode=False))


@pytest.fixture(scope="module")
def copy_corpus(corpus_dir):
    return load_corpus(corpus_dir / "data", corpus_dir / "source")


def test_config_loads_with_its_features_and_only_a_train_split(built, enrollment):
    out, info = built
    assert set(datasets.load_dataset(str(out), "enrollment")) == {"train"}
    assert datasets.load_dataset(str(out), "enrollment", split="train").features == FEATURES
    row = datasets.load_dataset(str(out), "enrollment", split="train")[0]
    samples = row["audio"].get_all_samples()
    assert samples.sample_rate == 16000
    assert samples.data.shape[-1] / 16000 == pytest.approx(row["duration"], abs=1e-3)
    assert info["stats"]["enrollment"] == {
        "clips": len(enrollment),
        "subjects": len(SUBJECTS),
        "hours": pytest.approx(sum(enrollment["duration"]) / 3600, abs=1e-3),
    }
    card = (out / "README.md").read_text()
    assert "config_name: enrollment" in card and "## Enrollment clips" in card


def test_all_is_the_qa_configs_only(built):
    out, info = built
    all_rows = datasets.load_dataset(str(out), "all")
    per_config = sum(
        len(datasets.load_dataset(str(out), c, split=s))
        for c in ("recognition", "captioning", "reasoning")
        for s in ("train", "test")
    )
    assert sum(len(all_rows[s]) for s in all_rows) == per_config == info["stats"]["total_samples"]
    assert "subject_id" not in all_rows["test"].features


def test_rows_are_exactly_the_subjects_train_clips(enrollment, copy_corpus, corpus_dir):
    cfg = small_config()
    train = split_clips(copy_corpus, cfg.test_fraction, cfg.seed)["train"]
    expected = [(sid, u.id) for sid in sorted(SUBJECTS) for u in sorted(train[sid], key=lambda u: u.id)]
    assert list(zip(enrollment["subject_id"], enrollment["clip_id"])) == expected  # ordered, no negatives
    assert not set(enrollment["subject_id"]) & set(NEGATIVES)
    utts = {u.id: u for u in copy_corpus.utterances}
    for r in enrollment:
        speaker = copy_corpus.speakers[r["subject_id"]]
        assert speaker.role == "subject" and r["name"] == speaker.name and r["name"]
        assert r["language"] == speaker.language and r["transcript"] == utts[r["clip_id"]].text
        audio, sr = sf.read(io.BytesIO(r["audio"]["bytes"]))
        assert sr == 16000 and len(audio) / sr == pytest.approx(r["duration"], abs=1e-3)
        assert r["duration"] == pytest.approx(utts[r["clip_id"]].duration, abs=0.01)


def test_names_match_the_qa_rows_subjects(built, enrollment):
    names = dict(zip(enrollment["subject_id"], enrollment["name"]))
    qa = datasets.load_dataset(str(built[0]), "recognition", split="test")
    pairs = {(i, n) for ids, ns in zip(qa["queried_ids"], qa["queried"]) for i, n in zip(ids, ns)}
    assert pairs and all(names[i] == n for i, n in pairs)


def test_no_enrollment_clip_is_in_a_test_row(built, enrollment):
    enrolled = set(enrollment["clip_id"])
    test = datasets.load_dataset(str(built[0]), "all", split="test")
    train = datasets.load_dataset(str(built[0]), "all", split="train")
    assert not enrolled & {c for clips in test["source_clips"] for c in clips}
    subjects_train_clips = {s["clip_id"] for spans in train["speakers"] for s in spans if s["speaker_id"] in SUBJECTS}
    assert subjects_train_clips and subjects_train_clips <= enrolled  # same split as the QA train rows


def test_leak_check_names_the_leaked_clips(tmp_path):
    check_no_leak(["a", "b"], [["c"], ["d", "e"]], tmp_path)
    with pytest.raises(DataError, match=r"1 enrollment clip\(s\) are also in test rows: b"):
        check_no_leak(["a", "b"], [["c"], ["b", "e"]], tmp_path)
    enroll = datasets.Dataset.from_dict({"clip_id": ["x1"], "subject_id": ["s"], "duration": [1.0]})
    qa = {"recognition": datasets.DatasetDict({"test": datasets.Dataset.from_dict({"source_clips": [["x1", "y"]]})})}
    with pytest.raises(DataError, match="x1"):
        _enrollment_stats(enroll, qa, tmp_path)


def test_same_config_gives_the_same_enrollment_bytes(built, corpus_dir, work, tmp_path):
    again = build(
        tmp_path / "again",
        small_config(),
        corpus="embedded",
        corpus_dir=str(corpus_dir),
        work_dir=work,
        tasks=("captioning",),
    )
    shard = "enrollment/train-00000-of-00001.parquet"
    assert again["shards"][shard] == built[1]["shards"][shard]
    off = build(
        tmp_path / "off",
        small_config(enrollment=False),
        corpus="embedded",
        corpus_dir=str(corpus_dir),
        work_dir=work,
        tasks=("captioning",),
    )
    assert not any(s.startswith("enrollment/") for s in off["shards"])
    assert "config_name: enrollment" not in (tmp_path / "off" / "README.md").read_text()
    digest = hashlib.sha256((built[0] / shard).read_bytes()).hexdigest()
    assert digest == built[1]["shards"][shard]
