"""The PALM-Bench ``validation`` split (PALM §5.2: hyperparameters tuned on validation sets): drawn
from each speaker's training clips, sharing no clip with train, test or enrollment."""

from __future__ import annotations

import datasets
import pytest

from lalm_eval.errors import ConfigError, DataError
from palm_bench.config import load_preset
from palm_bench.corpus import read_corpus
from palm_bench.splits import planned_splits, split_clips
from palm_bench.stats import collect
from tests.test_palm_builder import CLIPS_PER_SPEAKER, NEGATIVES, SUBJECTS
from tests.test_palm_paper_preset import paper_build


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus):
    return paper_build(tmp_path_factory, corpus)  # one build per session, shared with the paper-preset tests


@pytest.fixture(scope="module")
def rows(built):
    out, _ = built
    dd = datasets.load_dataset(str(out), "all").select_columns(["source_clips", "target_id", "task", "id"])
    return {split: list(dd[split]) for split in dd}


def test_validation_loads_for_every_config_and_the_card_declares_it(built):
    out, info = built
    for config in ("recognition", "captioning", "reasoning", "all"):
        ds = datasets.load_dataset(str(out), config, split="validation")
        assert len(ds) > 0 and set(ds["task"]) <= {"recognition", "captioning", "reasoning"}
    row = datasets.load_dataset(str(out), "recognition", split="validation")[0]
    assert row["audio"].get_all_samples().sample_rate == 16000
    assert info["stats"]["by"]["split"]["validation"]["samples"] > 0
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "`train` / `validation` / `test`" in card and "split: validation" in card
    assert set(datasets.load_dataset(str(out), "enrollment")) == {"train"}


def test_validation_rows_share_no_clip_with_train_test_or_enrollment(built, rows):
    out, info = built
    clips = {split: {c for r in rs for c in r["source_clips"]} for split, rs in rows.items()}
    assert set(clips) == {"train", "validation", "test"} and all(clips.values())
    assert not clips["validation"] & clips["test"]
    assert not clips["validation"] & clips["train"]
    assert not clips["train"] & clips["test"]
    enrolled = set(datasets.load_dataset(str(out), "enrollment", split="train")["clip_id"])
    assert enrolled and not enrolled & clips["validation"] and not enrolled & clips["test"]
    assert info["stats"]["source_clips_in_both_splits"] == 0
    # build_info.json records the clip split: every English clip of the corpus copy in one split
    per_split = info["plan"]["clips_per_split"]
    english = [s for s in SUBJECTS + NEGATIVES if s.startswith("en_")]
    assert list(per_split) == ["train", "validation", "test"]
    assert sum(per_split.values()) == len(english) * CLIPS_PER_SPEAKER
    assert per_split["validation"] >= len(english) and len(clips["validation"]) <= per_split["validation"]


def test_validation_asks_about_the_training_subjects(rows):
    train_subjects = {r["target_id"] for r in rows["train"]}
    assert {r["target_id"] for r in rows["validation"]} <= train_subjects


def test_validation_comes_from_the_train_side_and_leaves_test_as_it_was(corpus):
    without = split_clips(corpus, 0.25, 0)
    with_val = split_clips(corpus, 0.25, 0, validation_fraction=0.1)
    ids = lambda split: {sid: {c.id for c in clips} for sid, clips in split.items()}  # noqa: E731
    assert ids(with_val["test"]) == ids(without["test"])
    for sid, val in ids(with_val["validation"]).items():
        assert val and val <= ids(without["train"])[sid]  # held out of that speaker's training clips
        assert not val & ids(with_val["train"])[sid]
    assert set(without) == {"train", "test"}


def test_too_few_clips_for_three_splits_names_the_fix(small_corpus_dir):
    corpus = read_corpus("embedded", str(small_corpus_dir), {})  # 2 clips per speaker
    assert split_clips(corpus, 0.25, 0)  # train + test are fine
    with pytest.raises(DataError, match=r"at least 3 are needed.*--set validation_fraction=0"):
        split_clips(corpus, 0.25, 0, validation_fraction=0.1)


def test_the_split_is_planned_only_when_asked_for():
    assert planned_splits(load_preset("small")) == ("train", "validation", "test")
    assert planned_splits(load_preset("small", {"validation_fraction": 0})) == ("train", "test")
    assert planned_splits(load_preset("small", {"audios_per_subject": {"train": 2, "test": 2}})) == ("train", "test")
    with pytest.raises(ConfigError, match=r"--set validation_fraction: must be in \[0, 1\) with test_fraction"):
        load_preset("small", {"validation_fraction": 0.8})
    with pytest.raises(ConfigError, match=r"--set audios_per_subject: needs whole"):
        load_preset("small", {"audios_per_subject": {"train": 2, "dev": 1, "test": 2}})


def test_a_clip_in_any_two_splits_is_counted_as_shared():
    def row(clip):
        return {
            "duration": 1.0,
            "language": "en",
            "task": "recognition",
            "n_speakers": 1,
            "audio_id": clip,
            "source_clips": [clip],
            "label": "positive",
            "present": [],
            "absent": [],
            "negative_stratum": "",
        }

    stats = collect({"train": [row("a"), row("b")], "validation": [row("b")], "test": [row("c")]})
    assert stats["source_clips_in_both_splits"] == 1  # b: train and validation, not test
