"""The PALM-Bench builder end to end on a reduced copy of the embedded corpus."""

import json
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from lalm_eval.errors import AudioError, ConfigError, DataError
from palm_bench.config import BuildConfig, load_preset
from palm_bench.corpus import read_corpus
from palm_bench.corpus.embedded import SOURCE_DIR
from palm_bench.corpus.screen import screen_corpus
from palm_bench.export import build

SUBJECTS = [f"en_s0{i}" for i in range(1, 6)] + [f"zh_s0{i}" for i in range(1, 6)]
NEGATIVES = ["en_n01", "en_n02", "en_n07", "zh_n01", "zh_n05"]
CLIPS_PER_SPEAKER = 8


def make_corpus_copy(root: Path, corpus) -> Path:
    """The embedded layout (source/ + data/) with 10 subjects and 5 negatives, 8 clips each."""
    shutil.copytree(SOURCE_DIR, root / "source")
    lines = []
    for sid in SUBJECTS + NEGATIVES:
        for utt in corpus.utterances_of(sid)[:CLIPS_PER_SPEAKER]:
            rel = Path("audio") / sid / utt.audio.name
            (root / "data" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(utt.audio, root / "data" / rel)
            lines.append(
                {
                    "id": utt.id,
                    "speaker": sid,
                    "language": utt.language,
                    "text": utt.text,
                    "duration": utt.duration,
                    "audio": rel.as_posix(),
                    "sampling_rate": utt.sampling_rate,
                    "voice": utt.voice,
                }
            )
    (root / "data" / "manifest.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


def tiny_config(**changes) -> BuildConfig:
    base = dict(
        audios_per_subject={"train": 6, "test": 6},
        reasoning_per_subject={"train": 1, "test": 2},
        templates_per_audio=4,
        ad_max_seconds=3.0,
        augmentation={"speed_prob": 0.3, "noise_prob": 0.3, "reverb_prob": 0.2},
    )
    base.update(changes)
    return load_preset("small", base)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("palm_work")  # embeddings + acoustic descriptions, shared


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory, corpus):
    return make_corpus_copy(tmp_path_factory.mktemp("palm_corpus"), corpus)


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus_dir, work):
    out = tmp_path_factory.mktemp("palm_out")
    info = build(out, tiny_config(), corpus="embedded", corpus_dir=str(corpus_dir), work_dir=work)
    return out, info


@pytest.fixture(scope="module")
def rows(built):
    import datasets

    out, _ = built
    dd = datasets.load_dataset(str(out), "all").cast_column("audio", datasets.Audio(decode=False))
    return {split: list(dd[split]) for split in dd}


def test_every_config_loads_with_audio_decoded(built):
    import datasets

    out, info = built
    for config in ("recognition", "captioning", "reasoning", "all"):
        dd = datasets.load_dataset(str(out), config)
        assert set(dd) == {"train", "test"} and len(dd["test"]) > 0
    row = datasets.load_dataset(str(out), "recognition", split="test")[0]
    samples = row["audio"].get_all_samples()
    assert samples.sample_rate == 16000
    assert samples.data.shape[-1] / 16000 == pytest.approx(row["duration"], abs=0.01)
    assert info["bytes_per_sample"] > 0 and info["stats"]["total_samples"] == sum(
        len(datasets.load_dataset(str(out), c, split=s))
        for c in ("recognition", "captioning", "reasoning")
        for s in ("train", "test")
    )


def test_coverage_of_speakers_strata_languages_and_refusals(rows):
    all_rows = rows["train"] + rows["test"]
    rec = [r for r in all_rows if r["task"] == "recognition"]
    assert {r["n_speakers"] for r in rec} == {1, 2, 3, 4}
    assert {r["negative_stratum"] for r in rec} - {""} == {"hard", "semi-hard", "medium", "easy"}
    assert {r["language"] for r in all_rows} == {"en", "zh"}
    labels = Counter(r["label"] for r in rec)
    assert abs(labels["positive"] - labels["negative"]) <= 0.1 * max(labels["positive"], labels["negative"])
    refusals = [r for r in all_rows if r["task"] == "captioning" and r["label"] == "negative"]
    assert refusals and all(r["target"] not in [s["name"] for s in r["speakers"]] for r in refusals)


def test_no_source_clip_in_both_splits(rows, built):
    train = {c for r in rows["train"] for c in r["source_clips"]}
    test = {c for r in rows["test"] for c in r["source_clips"]}
    assert train and test and not train & test
    assert built[1]["stats"]["source_clips_in_both_splits"] == 0


def test_rows_agree_with_their_audio_and_spans(rows):
    import io

    import soundfile as sf

    for r in rows["test"][:40]:
        audio, sr = sf.read(io.BytesIO(r["audio"]["bytes"]))
        assert len(audio) / sr == pytest.approx(r["duration"], abs=1e-3)
        spans = r["speakers"]
        assert len(spans) == r["n_speakers"] == len(r["source_clips"])
        assert all(a["end"] <= b["start"] for a, b in zip(spans, spans[1:]))
        assert spans[-1]["end"] <= r["duration"] + 1e-3
        if not r["augmentation"]:  # the 0.5 s gap is exact without speed perturbation
            assert all(b["start"] - a["end"] == pytest.approx(0.5, abs=1e-3) for a, b in zip(spans, spans[1:]))
        present_names = {s["name"] for s in spans}
        assert set(r["present"]) <= present_names and not set(r["absent"]) & present_names


def test_captioning_reference_is_the_targets_own_words(rows, corpus):
    texts = {u.id: u.text for u in corpus.utterances}
    positives = [r for r in rows["test"] if r["task"] == "captioning" and r["label"] == "positive"]
    assert positives
    for r in positives:
        own = [s["clip_id"] for s in r["speakers"] if s["speaker_id"] == r["target_id"]]
        others = [s["clip_id"] for s in r["speakers"] if s["speaker_id"] != r["target_id"]]
        assert len(own) == 1 and texts[own[0]] in r["answer"]
        assert not any(texts[c] in r["answer"] for c in others)


def test_reasoning_rows_carry_profile_evidence_and_descriptions(rows):
    reasoning = [r for r in rows["test"] if r["task"] == "reasoning"]
    assert reasoning
    for r in reasoning:
        assert r["target"] in r["question"] and r["profile"]
        assert r["evidence"] and all(e["value"] in r["answer"] for e in r["evidence"])
    subj = reasoning[0]["subjects"][0]
    assert subj["hd"] and "Hz" in subj["ad"]


def test_augmentation_is_recorded_and_only_on_positive_audio(rows):
    augmented = [r for r in rows["train"] + rows["test"] if r["augmentation"]]
    assert augmented
    for r in augmented:
        record = json.loads(r["augmentation"])
        assert set(record) == {"speed", "noise", "reverb"}
        assert r["target"] in [s["name"] for s in r["speakers"]] or r["task"] == "recognition" and r["present"]


def test_same_seed_gives_identical_shards(built, corpus_dir, work, tmp_path):
    again = build(tmp_path / "again", tiny_config(), corpus="embedded", corpus_dir=str(corpus_dir), work_dir=work)
    assert again["shards"] == built[1]["shards"]
    other = build(
        tmp_path / "seed1",
        tiny_config(seed=1),
        corpus="embedded",
        corpus_dir=str(corpus_dir),
        work_dir=work,
        tasks=("captioning",),
    )
    assert (
        other["shards"]["captioning/test-00000-of-00001.parquet"]
        != built[1]["shards"]["captioning/test-00000-of-00001.parquet"]
    )


def spy_pools(monkeypatch) -> list[int]:
    """The process counts of the pools datasets opens while generating splits."""
    import datasets.builder

    opened, real = [], datasets.builder.Pool

    def pool(n, *args, **kwargs):
        opened.append(n)
        return real(n, *args, **kwargs)

    monkeypatch.setattr(datasets.builder, "Pool", pool)
    return opened


def test_two_processes_give_the_same_shards_as_one(built, corpus_dir, work, tmp_path, monkeypatch):
    opened = spy_pools(monkeypatch)
    two = build(
        tmp_path / "np2", tiny_config(), corpus="embedded", corpus_dir=str(corpus_dir), work_dir=work, num_proc=2
    )
    # every config's every split was written by 2 processes (enrollment: one train split)
    assert opened == [2] * (2 * 3 + 1)
    assert two["shards"] == built[1]["shards"]  # byte-identical Parquet, so identical rows in order
    assert two["stats"] == built[1]["stats"]


def test_bad_inputs_are_named(corpus_dir, work, tmp_path, corpus):
    with pytest.raises(ConfigError, match="unknown key"):
        tiny_config(templates_per_clip=3)
    with pytest.raises(ConfigError, match="unknown preset"):
        load_preset("huge")
    # a speaker with a single clip cannot be split: it is left out, a counted skip naming it (issue
    # 20: one short speaker no longer fails the whole build; corpus-info lists it the same way)
    one_clip = make_corpus_copy(tmp_path / "one", corpus)
    manifest = one_clip / "data" / "manifest.jsonl"
    lines = [
        line
        for line in manifest.read_text().splitlines()
        if json.loads(line)["speaker"] != "en_s03" or json.loads(line)["id"].endswith("u001")
    ]
    manifest.write_text("\n".join(lines) + "\n")
    screened = screen_corpus(read_corpus("embedded", str(one_clip)))
    assert "en_s03" not in screened.speakers and "en_s03" not in {u.speaker for u in screened.utterances}
    assert [s.reason for s in screened.skips if s.item == "en_s03"] == [
        "speaker left out: 1 usable clip, a speaker needs at least 2 (one for each of the train and test splits); "
        "add clips of this speaker"
    ]
    # unreadable audio: a counted skip naming the file (was: an AudioError stopping the build)
    broken = make_corpus_copy(tmp_path / "broken", corpus)
    victim = sorted((broken / "data" / "audio" / "en_s02").glob("*.opus"))[0]
    victim.write_bytes(b"not audio")
    screened = screen_corpus(read_corpus("embedded", str(broken)))
    (skip,) = [s for s in screened.skips if s.item.endswith(victim.name)]
    assert skip.reason.startswith("cannot decode audio") and victim.name not in {
        u.audio.name for u in screened.utterances
    }


def make_folder_corpus(root: Path, corpus, n_speakers=5, n_clips=6) -> Path:
    """A speaker-per-folder corpus (no profiles) from embedded English clips."""
    for sid in [f"en_s0{i}" for i in range(1, n_speakers + 1)]:
        (root / sid).mkdir(parents=True)
        for utt in corpus.utterances_of(sid)[:n_clips]:
            shutil.copy(utt.audio, root / sid / utt.audio.name)
            (root / sid / f"{utt.audio.stem}.txt").write_text(utt.text)
    return root


class CannedProfileLLM:
    """A TextLLM double that answers every profile request with the same valid profile."""

    settings = {"model": "canned", "temperature": 0.0}

    def __init__(self):
        self.calls = 0

    def complete(self, batch, **settings):
        self.calls += len(batch)
        if "description" in batch[0][0]["content"].lower() and "interests" not in batch[0][0]["content"]:
            return [json.dumps({"description": "A steady, clear synthetic voice."})] * len(batch)
        profile = {
            "age": 30,
            "occupation": "engineer",
            "personality": "calm",
            "speaking_style": "plain",
            "intro": "a person",
            "interests": {
                k: f"likes {k}"
                for k in ("movie", "music", "hobby", "food", "books", "pet", "sports", "academic", "tech")
            },
        }
        return [json.dumps(profile)] * len(batch)


def test_subjects_without_profiles_skip_reasoning_or_get_llm_profiles(tmp_path, work, corpus):
    from lalm_eval.llm import TextLLM

    folder = make_folder_corpus(tmp_path / "folder", corpus)
    cfg = tiny_config(languages=["en"], audios_per_subject={"train": 2, "test": 2})
    info = build(
        tmp_path / "plain",
        cfg,
        corpus="folder",
        corpus_dir=str(folder),
        corpus_options={"language": "en"},
        work_dir=work,
    )
    assert "reasoning" not in info["stats"]["by"]["task"]
    assert info["plan"]["skipped_reasoning_slots"] == {"train": 5, "test": 10}
    assert len(info["plan"]["subjects_without_profile"]) == 5

    llm = CannedProfileLLM()
    TextLLM.register(CannedProfileLLM)
    info = build(
        tmp_path / "llm",
        cfg,
        corpus="folder",
        corpus_dir=str(folder),
        corpus_options={"language": "en"},
        work_dir=work,
        llm=llm,
    )
    assert llm.calls == 10 and info["plan"]["generated_profiles"] == 5  # 5 profiles + 5 HDs
    assert info["plan"]["subjects_without_hd"] == []
    assert info["stats"]["by"]["task"]["reasoning"]["samples"] == 15
    build(
        tmp_path / "llm2",
        cfg,
        corpus="folder",
        corpus_dir=str(folder),
        corpus_options={"language": "en"},
        work_dir=work,
        llm=llm,
    )
    assert llm.calls == 10  # profiles and HDs served from the cache
