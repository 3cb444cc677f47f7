"""MSU-Bench built from a real-format 30.0 s two-person call: audio + RTTM + per-turn transcript
(tests/real_layouts.py), the way a new user brings their own recordings."""

import io
import json
import re

import pytest
import soundfile as sf

from lalm_eval.errors import ConfigError, DataError
from msu_bench.export import build
from msu_bench.plan import load_preset
from tests.real_layouts import CALL_TURNS, write_rttm_call


def build_call(tmp_path, calls, **overrides):
    cfg = load_preset("small", {"languages": ["en"], "min_segment_s": 30, **overrides})
    out = tmp_path / "out"
    info = build(out, cfg, corpus="rttm", corpus_dir=str(calls), corpus_options={"language": "en"})
    return out, info


def rows_of(out):
    import datasets

    # a cache of its own: datasets' default cache has served one fixture's rows for another's
    ds = datasets.load_dataset(str(out), "all", split="test", cache_dir=str(out.parent / "hf_cache"))
    return list(ds.cast_column("audio", datasets.Audio(decode=False)))


def test_default_60_s_minimum_is_a_clear_error_with_the_real_span(tmp_path):
    calls = write_rttm_call(tmp_path / "calls")
    with pytest.raises(ConfigError) as err:
        build(
            tmp_path / "out",
            load_preset("small", {"languages": ["en"]}),
            corpus="rttm",
            corpus_dir=str(calls),
            corpus_options={"language": "en"},
        )
    message = str(err.value)
    assert "card template" not in message and "rttm-call: no 60-120 s window" in message
    assert "recording is 30.0 s" in message and "span 3.1-26.9 s" in message and "min_segment_s" in message
    assert not (tmp_path / "out" / "README.md").exists()


def test_a_30_s_call_builds_with_the_whole_recording_and_non_empty_answers(tmp_path):
    out, info = build_call(tmp_path, write_rttm_call(tmp_path / "calls"))
    assert info["stats"]["segments"] == 1 and info["stats"]["segment_seconds"] == [30.0, 30.0]
    rows = rows_of(out)
    assert rows and {r["segment_id"] for r in rows} == {"rttm-call"}
    for r in rows:
        audio, sr = sf.read(io.BytesIO(r["audio"]["bytes"]))
        assert len(audio) / sr == pytest.approx(30.0, abs=0.01) and r["duration"] == pytest.approx(30.0)
        assert r["answer"].strip() and "“”" not in r["answer"] and "“”" not in r["question"]
    transcript = next(r["answer"] for r in rows if r["task_id"] == "t4_mst_dialogue_transcription")
    said_by_a = " ".join(text for spk, _, _, text in CALL_TURNS if spk == "A")
    assert transcript.startswith("{spk_1: " + said_by_a + "; spk_2: ")
    assert next(r["answer"] for r in rows if r["task_id"] == "t1_sr_speaker_counting") == "Two."


def test_untranscribed_turns_stay_out_of_text_answers_and_are_reported(tmp_path):
    calls = write_rttm_call(tmp_path / "calls", untranscribed=(1, 4))
    out, info = build_call(tmp_path, calls)
    assert info["plan"]["untranscribed_turns"] == 2
    rows = rows_of(out)
    for r in rows:
        assert r["answer"].strip() and "“”" not in r["answer"] and not re.search(r"(“\s*”|:\s*;|:\s*})", r["answer"])
    transcript = next(r["answer"] for r in rows if r["task_id"] == "t4_mst_dialogue_transcription")
    assert CALL_TURNS[1][3] not in transcript and CALL_TURNS[3][3] in transcript
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "2 turn(s) have no transcript text" in card


def test_reader_skips_are_listed_with_reasons_in_build_info_and_card(tmp_path):
    calls = write_rttm_call(tmp_path / "calls")
    with (calls / "call.rttm").open("a") as handle:
        handle.write("SPEAKER call 1 28.0 x <NA> <NA> B <NA> <NA>\n")
    write_rttm_call(tmp_path / "calls" / "other", name="noaudio", audio=False)
    out, info = build_call(tmp_path, calls)
    skipped = info["plan"]["skipped_source"]
    assert {"file": "call.rttm:14", "reason": "bad SPEAKER line (could not convert string to float: 'x')"} in skipped
    assert {"file": "other/noaudio.rttm", "reason": "audio missing"} in skipped
    assert info["plan"]["skipped_source_items"] == len(skipped) == 2
    saved = json.loads((out / "build_info.json").read_text(encoding="utf-8"))
    assert saved["plan"]["skipped_source"] == skipped
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "2 source item(s) skipped" in card and "`call.rttm:14`: bad SPEAKER line" in card
    assert "`other/noaudio.rttm`: audio missing" in card


def test_transcript_speaker_names_unlike_the_rttm_labels_fail_clearly_or_map(tmp_path):
    calls = write_rttm_call(tmp_path / "calls", transcript_names={"A": "Alice", "B": "Bob"})
    with pytest.raises(DataError, match=r"speaker labels differ: transcript \['Alice', 'Bob'\] vs RTTM \['A', 'B'\]"):
        build_call(tmp_path, calls)
    cfg = load_preset("small", {"languages": ["en"], "min_segment_s": 30})
    info = build(
        tmp_path / "out",
        cfg,
        corpus="rttm",
        corpus_dir=str(calls),
        corpus_options={"language": "en", "speaker_map": "overlap"},
    )
    rows = rows_of(tmp_path / "out")
    assert info["plan"]["untranscribed_turns"] == 0 and all(r["answer"].strip() for r in rows)
    transcript = next(r["answer"] for r in rows if r["task_id"] == "t4_mst_dialogue_transcription")
    assert CALL_TURNS[0][3] in transcript and CALL_TURNS[1][3] in transcript


def test_segment_audio_decodes_only_its_span_of_a_long_session(tmp_path, monkeypatch):
    import numpy as np

    from lalm_eval.audio import io as audio_io
    from lalm_eval.audio.io import read_audio
    from msu_bench.builder import segment_audio
    from msu_bench.types import Conversation
    from tests.real_layouts import call_audio

    path = tmp_path / "session.flac"  # a 10-minute two-channel telephone session at 8 kHz
    sf.write(path, call_audio(CALL_TURNS * 1, seconds=600.0, sr=8000, channels=2), 8000)
    whole, _ = read_audio(path)  # 16 kHz mono, the old way: decode everything
    seg = Conversation(
        id="s", language="en", source="rttm", audio=path, duration=30.0, speakers={}, turns=[], offset=2.0
    )
    read_frames = []
    real_read = sf.SoundFile.read

    def spy(self, frames=-1, *args, **kwargs):
        read_frames.append(frames)
        return real_read(self, frames, *args, **kwargs)

    monkeypatch.setattr(sf.SoundFile, "read", spy)
    monkeypatch.setattr(audio_io.sf, "read", lambda *a, **k: pytest.fail("decoded the whole session"))
    part = segment_audio(seg)
    assert read_frames == [30 * 8000] and len(part) == 30 * 16000
    reference = whole[2 * 16000 : 32 * 16000]
    assert np.corrcoef(part[1000:-1000], reference[1000:-1000])[0, 1] > 0.99
    late = Conversation(
        id="s", language="en", source="rttm", audio=path, duration=30.0, speakers={}, turns=[], offset=590.0
    )
    with pytest.raises(OSError, match=r"span 590.000\+30.000 s lies outside the file \(600.000 s long\)"):
        segment_audio(late)


def test_a_conversation_without_audio_is_a_reported_skip(tmp_path):
    calls = write_rttm_call(tmp_path / "calls")
    write_rttm_call(tmp_path / "calls", name="silent", audio=False, seconds=30.0)
    out, info = build_call(tmp_path, calls, min_segment_s=20)
    assert info["stats"]["segments"] == 1
    assert "rttm-silent: no readable audio, so no segment" in info["plan"]["skipped_segments"]
    assert {"file": "silent.rttm", "reason": "audio missing"} in info["plan"]["skipped_source"]


def test_msu_corpus_info_shows_spans_segments_and_skips(tmp_path, capsys):
    from msu_bench.cli import main

    calls = write_rttm_call(tmp_path / "calls", untranscribed=(2,))
    write_rttm_call(tmp_path / "calls", name="named", transcript_names={"A": "Alice", "B": "Bob"})
    args = ["corpus-info", "--corpus", "rttm", "--corpus-dir", str(calls), "--corpus-option", "language=en"]
    assert main(args + ["--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    (conv,) = stats["conversations"]
    assert conv == {
        "id": "rttm-call",
        "language": "en",
        "seconds": 30.0,
        "turn_span": [3.1, 26.9],
        "speakers": 2,
        "turns": 13,
        "untranscribed": 1,
        "segments": 0,
        "segment_seconds": [],
        "no_segment_reasons": [conv["no_segment_reasons"][0]],
    }
    assert "no 60-120 s window" in conv["no_segment_reasons"][0]
    assert [s["file"] for s in stats["skipped"]] == ["named.rttm"] and "speaker labels differ" in stats["skipped"][0][
        "reason"
    ]
    assert main(args + ["--set", "min_segment_s=30"]) == 0
    table = capsys.readouterr().out
    assert "1 segment(s) under min_segment_s=30" in table and "named.rttm: speaker labels differ" in table
