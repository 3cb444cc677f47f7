import json
import re

import numpy as np
import pytest

from lalm_eval.audio.io import audio_hash, read_audio
from lalm_eval.errors import AudioError, DataError
from palm_bench.corpus.embedded import INTEREST_FIELDS, PROFILE_FIELDS, load_corpus

HANZI = re.compile(r"[\u4e00-\u9fff]")


def test_corpus_meets_the_foundation_counts(corpus):
    assert len(corpus.subjects("en")) >= 12
    assert len(corpus.subjects("zh")) >= 6
    assert len(corpus.negatives()) >= 10
    for subject in corpus.subjects():
        clips = corpus.utterances_of(subject.id)
        assert len(clips) >= 24, subject.id
        assert all(3.0 <= c.duration <= 10.0 for c in clips), subject.id
    for negative in corpus.negatives():
        assert len(corpus.utterances_of(negative.id)) >= 10


def test_subjects_have_names_and_table11_profiles(corpus):
    names = [s.name for s in corpus.subjects()]
    assert len(set(names)) == len(names)
    for s in corpus.subjects():
        assert all(s.profile.get(f) for f in PROFILE_FIELDS), s.id
        assert all(s.profile["interests"].get(f) for f in INTEREST_FIELDS), s.id
        assert isinstance(s.profile["age"], int)


def test_mandarin_transcripts_are_hanzi(corpus):
    for u in corpus.utterances:
        if u.language == "zh":
            assert len(HANZI.findall(u.text)) >= 10, u.id
            assert not re.search(r"[A-Za-z0-9]", u.text), u.id


def test_derived_impostors_exist(corpus):
    derived = [
        n for n in corpus.negatives() if corpus.utterances_of(n.id)[0].voice.get("derived_from") in corpus.speakers
    ]
    assert {corpus.speakers[n.id].language for n in derived} == {"en", "zh"}


def test_manifest_durations_match_decoded_audio(corpus):
    for u in corpus.utterances[::50]:
        audio = u.load_audio(target_sr=None)
        assert len(audio) / u.sampling_rate == pytest.approx(u.duration, abs=1e-3)


def test_decoding_is_deterministic(corpus):
    u = corpus.utterances[0]
    assert audio_hash(u.load_audio(), 16000) == audio_hash(u.load_audio(), 16000)


def test_to_lhotse_matches_manifest(small_corpus_dir):
    c = load_corpus(small_corpus_dir / "data", small_corpus_dir / "source")
    recordings, supervisions = c.to_lhotse()
    assert len(recordings) == len(supervisions) == len(c.utterances) == 6
    sup = next(iter(supervisions))
    assert sup.speaker in c.speakers and sup.text


def _rewrite_first_line(corpus_dir, change):
    path = corpus_dir / "data" / "manifest.jsonl"
    lines = path.read_text().splitlines()
    rec = json.loads(lines[0])
    change(rec)
    lines[0] = json.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_missing_manifest_field_is_named(small_corpus_dir):
    _rewrite_first_line(small_corpus_dir, lambda r: r.pop("duration"))
    with pytest.raises(DataError, match=r"manifest.jsonl:1: field 'duration'"):
        load_corpus(small_corpus_dir / "data", small_corpus_dir / "source")


def test_unknown_speaker_is_named(small_corpus_dir):
    _rewrite_first_line(small_corpus_dir, lambda r: r.update(speaker="nobody"))
    with pytest.raises(DataError, match=r"manifest.jsonl:1: field 'speaker': unknown speaker id 'nobody'"):
        load_corpus(small_corpus_dir / "data", small_corpus_dir / "source")


def test_unknown_speaker_lookup_lists_known_ids(corpus):
    with pytest.raises(KeyError, match="unknown speaker id 'zz_s99'"):
        corpus.utterances_of("zz_s99")


def test_missing_and_corrupted_audio_name_the_file(small_corpus_dir):
    c = load_corpus(small_corpus_dir / "data", small_corpus_dir / "source")
    first, second = c.utterances[0], c.utterances[1]
    first.audio.unlink()
    with pytest.raises(AudioError, match=re.escape(str(first.audio))):
        first.load_audio()
    second.audio.write_bytes(b"not audio at all")
    with pytest.raises(AudioError, match=re.escape(str(second.audio)) + ": cannot decode"):
        second.load_audio()


def test_missing_profile_field_is_named(small_corpus_dir):
    path = small_corpus_dir / "source" / "subjects_en_1.yaml"
    text = path.read_text()
    path.write_text(text.replace("      occupation:", "      job:", 1))
    with pytest.raises(DataError, match=r"subjects_en_1.yaml: field 'occupation'"):
        load_corpus(small_corpus_dir / "data", small_corpus_dir / "source")


def test_invalid_json_line_is_named(small_corpus_dir):
    path = small_corpus_dir / "data" / "manifest.jsonl"
    path.write_text(path.read_text() + "{broken\n")
    with pytest.raises(DataError, match=r"manifest.jsonl:7: invalid JSON"):
        load_corpus(small_corpus_dir / "data", small_corpus_dir / "source")
