"""Readers of the MSU source corpora, on tiny fixtures built in tmp_path in each real layout."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import Skip
from msu_bench.corpora import parse_clock, prepare_alimeeting, prepare_chime6, prepare_magicdata, prepare_rttm


def wav(path: Path, seconds: float = 3.0, channels: int = 1, sr: int = 16000) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * sr)) / sr
    tone = (0.1 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    sf.write(path, np.stack([tone] * channels, axis=1) if channels > 1 else tone, sr)
    return path


def textgrid(path: Path, tiers: dict, xmax: float = 3.0) -> Path:
    """A long-form Praat TextGrid, as AliMeeting ships them."""
    out = [
        'File type = "ooTextFile"',
        'Object class = "TextGrid"',
        "",
        "xmin = 0 ",
        f"xmax = {xmax} ",
        "tiers? <exists> ",
        f"size = {len(tiers)} ",
        "item []: ",
    ]
    for n, (name, intervals) in enumerate(tiers.items(), 1):
        out += [
            f"    item [{n}]:",
            '        class = "IntervalTier" ',
            f'        name = "{name}" ',
            "        xmin = 0 ",
            f"        xmax = {xmax} ",
            f"        intervals: size = {len(intervals)} ",
        ]
        for i, (start, end, text) in enumerate(intervals, 1):
            out += [
                f"        intervals [{i}]:",
                f"            xmin = {start} ",
                f"            xmax = {end} ",
                f'            text = "{text}" ',
            ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


# --- AliMeeting -------------------------------------------------------------------------------


@pytest.fixture
def alimeeting(tmp_path):
    far = tmp_path / "Train_Ali_far"
    wav(far / "audio_dir" / "R0015_M0151_MS002.wav", channels=2)
    textgrid(
        far / "textgrid_dir" / "R0015_M0151.TextGrid",
        {
            "R0015_M0151_F_SPK1953": [(0, 0.5, ""), (0.5, 1.2, "你好"), (1.0, 1.5, "重叠"), (1.5, 2.0, "大家好")],
            "M_SPK1954": [(0, 0.2, ""), (0.2, 0.9, "嗯"), (0.9, 3.0, "")],
        },
    )
    ev = tmp_path / "Eval_Ali" / "Eval_Ali_far"
    wav(ev / "audio_dir" / "R8001_M8004_MS801.wav", seconds=2.0)
    textgrid(ev / "textgrid_dir" / "R8001_M8004.TextGrid", {"R8001_M8004_M_SPK8002": [(0.1, 1.0, "开始")]})
    (ev / "textgrid_dir" / "R8002_M8005.TextGrid").write_text("this is not a TextGrid\n")
    near = tmp_path / "Train_Ali_near"
    for stem, text in (("R0003_M0046_F_SPK0093", "早上好"), ("R0003_M0046_M_SPK0094", "好的")):
        wav(near / "audio_dir" / f"{stem}.wav")
        textgrid(near / "textgrid_dir" / f"{stem}.TextGrid", {stem: [(0, 0.4, ""), (0.4, 1.1, text)]})
    return tmp_path


def test_alimeeting_far_reads_tiers_genders_and_counts_overlap(alimeeting):
    report = prepare_alimeeting(alimeeting, split="train")
    (conv,) = report.conversations
    assert conv.id == "alimeeting-R0015_M0151" and conv.source == "alimeeting" and conv.language == "zh"
    assert conv.audio == (alimeeting / "Train_Ali_far/audio_dir/R0015_M0151_MS002.wav").resolve()
    assert conv.audio.is_absolute() and conv.duration == pytest.approx(3.0)
    assert [(t.speaker, t.start, t.end, t.text) for t in conv.turns] == [
        ("SPK1954", 0.2, 0.9, "嗯"),
        ("SPK1953", 0.5, 1.2, "你好"),
        ("SPK1953", 1.5, 2.0, "大家好"),
    ]
    assert [t.id for t in conv.turns] == [f"alimeeting-R0015_M0151-t000{i}" for i in (1, 2, 3)]
    assert {s: i.gender for s, i in conv.speakers.items()} == {"SPK1954": "male", "SPK1953": "female"}
    assert conv.meta == {"split": "train", "mic": "far", "session": "R0015_M0151"}
    (skip,) = report.skips
    assert skip[0].endswith("R0015_M0151.TextGrid") and "overlaps" in skip[1] and "1.000-1.500" in skip[1]


def test_alimeeting_eval_nested_folder_and_unreadable_textgrid(alimeeting):
    report = prepare_alimeeting(alimeeting, split="eval")
    assert [c.id for c in report.conversations] == ["alimeeting-R8001_M8004"]
    assert report.conversations[0].speakers["SPK8002"].gender == "male"
    assert report.n_skipped == 1 and report.skips[0][0].endswith("R8002_M8005.TextGrid")
    assert "unreadable TextGrid" in report.skips[0][1]
    assert len(prepare_alimeeting(alimeeting).conversations) == 2  # every split found


def test_alimeeting_near_merges_speakers_of_a_session(alimeeting):
    report = prepare_alimeeting(alimeeting, mic="near")
    (conv,) = report.conversations
    assert conv.id == "alimeeting-R0003_M0046" and report.n_skipped == 0
    assert [(t.speaker, t.text) for t in conv.turns] == [("SPK0093", "早上好"), ("SPK0094", "好的")]
    assert {s: i.gender for s, i in conv.speakers.items()} == {"SPK0093": "female", "SPK0094": "male"}
    assert conv.audio.name == "R0003_M0046_F_SPK0093.wav"
    assert sorted(conv.meta["near_audio"]) == ["SPK0093", "SPK0094"]


def test_alimeeting_rejects_bad_options(alimeeting):
    with pytest.raises(ConfigError):
        prepare_alimeeting(alimeeting, mic="array")
    with pytest.raises(DataError, match="Test_Ali_far"):
        prepare_alimeeting(alimeeting, split="test")


# --- CHiME-6 ----------------------------------------------------------------------------------


@pytest.fixture
def chime6(tmp_path):
    def seg(spk, start, end, words, **extra):
        return {"speaker": spk, "start_time": start, "end_time": end, "words": words, **extra}

    dev = [
        seg("P05", "0:00:00.50", "0:00:01.20", "[noise] Hello there.", ref="U02", location="kitchen"),
        seg("P06", "0:00:01.00", "0:00:02.00", "Hi [laughs] how are you [inaudible 0:00:01.50]", ref="U02"),
        seg("P05", "0:00:02.50", "0:00:02.50", "empty"),
        seg("P07", "0:00:03.00", "0:00:02.00", "reversed"),
        seg("P06", "0:00:02.10", "0:00:02.40", "[laughs]"),
        seg("P05", "1:02:03.50", "1:02:04.00", "late", ref="U01"),
    ]
    train = [seg("P09", {"original": "0:00:01.00", "U01": "0:00:01.02"}, {"original": "0:00:02.00"}, "okay")]
    for split, session, segments in (("dev", "S02", dev), ("train", "S03", train)):
        path = tmp_path / "transcriptions" / split / f"{session}.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(segments))
    for name in ("S02_P05", "S02_P06", "S02_U01.CH1", "S02_U02.CH1", "S02_U02.CH2"):
        wav(tmp_path / "audio" / "dev" / f"{name}.wav")
    wav(tmp_path / "audio" / "train" / "S03_P09.wav", channels=2)
    return tmp_path


def test_parse_clock():
    assert parse_clock("1:02:03.50") == 3723.5
    assert parse_clock("0:00:40.60") == pytest.approx(40.6)
    assert parse_clock({"original": "0:01:00.00", "U01": "0:01:00.20"}) == 60.0
    assert parse_clock("05.25") == 5.25 and parse_clock(7) == 7.0
    for bad in ("", "1:2:3:4", "a:00:01", {"U01": "0:00:01"}, None):
        with pytest.raises(ValueError):
            parse_clock(bad)


def test_chime6_dev_session_times_tags_and_skips(chime6):
    report = prepare_chime6(chime6, split="dev", mic="array")
    (conv,) = report.conversations
    assert conv.id == "chime6-S02" and conv.language == "en" and conv.source == "chime6"
    assert [(t.speaker, t.start, t.end, t.text) for t in conv.turns] == [
        ("P05", 0.5, 1.2, "Hello there."),
        ("P06", 1.0, 2.0, "Hi how are you"),
    ]
    assert set(conv.speakers) == {"P05", "P06"} and conv.speakers["P05"].gender is None
    assert conv.audio.name == "S02_U02.CH1.wav"  # the most frequent reference array
    # 1:02:03.50 lies past the 3 s audio: dropped and counted, not kept as speech the audio lacks
    *bad_times, late = report.skips
    assert len(bad_times) == 2 and all("start" in s.reason and ">= end" in s.reason for s in bad_times)
    assert late[0].endswith("S02.json:segment 5") and "starts after the end of the audio" in late[1]
    assert all(f.startswith(str(chime6 / "transcriptions/dev/S02.json")) for f, *_ in report.skips)


def test_chime6_close_talk_and_chime5_times(chime6):
    report = prepare_chime6(chime6, mic="close")
    by_id = {c.id: c for c in report.conversations}
    assert sorted(by_id) == ["chime6-S02", "chime6-S03"]
    s02, s03 = by_id["chime6-S02"], by_id["chime6-S03"]
    assert sorted(s02.meta["close_talk"]) == ["P05", "P06"] and s02.audio.name == "S02_U02.CH1.wav"
    assert s03.audio.name == "S03_P09.wav"  # no array: the first speaker's close-talk file
    assert [(t.start, t.end, t.text) for t in s03.turns] == [(1.0, 2.0, "okay")]
    assert s03.meta["split"] == "train"


def test_chime6_missing_audio_uses_last_turn_end(chime6):
    report = prepare_chime6(chime6, split="train", mic="array")
    (conv,) = report.conversations
    assert conv.audio is None and conv.duration == 2.0
    assert report.skips == [Skip(str(chime6 / "transcriptions/train/S03.json"), "audio missing")]
    assert isinstance(report.skips[0], Skip) and report.n_skipped == 1


# --- MagicData --------------------------------------------------------------------------------


def test_magicdata_reads_turns_and_drops_noise_marks(tmp_path):
    release = tmp_path / "MDT2021S003"
    lines = [
        "[0.000,0.500]\tG00000000\t\t[*]",
        "[0.500,1.250]\tG00000140\t女,普通话\t你好[+]呀",
        "[1.300,2.000]\tG00000141\t男,普通话\t你好",
        "[2.000,2.100]\tG00000141\t男,普通话\t",
        "[2.200,2.900]\tG00000140\t女,普通话\t[LAUGHTER]",
        "[2.5,2.0]\tG00000141\t男,普通话\t倒序",
        "garbage line",
    ]
    (release / "TXT").mkdir(parents=True)
    (release / "TXT" / "CTS-CN-001.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (release / "SPKINFO.txt").write_text(
        "CHANNEL\tSPEAKER_ID\tGENDER\tAGE\tREGION,CITY\tDEVICE\nC0\tG00000140\tF\tadult\tSichuan\tMobile phone\n"
    )
    wav(release / "WAV" / "CTS-CN-001.wav", seconds=2.5)
    report = prepare_magicdata(tmp_path)
    (conv,) = report.conversations
    assert conv.id == "magicdata-CTS-CN-001" and conv.language == "zh" and conv.source == "magicdata"
    assert [(t.speaker, t.start, t.end, t.text) for t in conv.turns] == [
        ("G00000140", 0.5, 1.25, "你好 呀"),
        ("G00000141", 1.3, 2.0, "你好"),
    ]
    assert conv.speakers["G00000140"].gender == "female" and conv.speakers["G00000141"].gender == "male"
    assert conv.speakers["G00000140"].region == "Sichuan" and conv.speakers["G00000141"].accent == "普通话"
    assert conv.duration == pytest.approx(2.5)
    assert [f.rsplit(":", 1)[1] for f, *_ in report.skips] == ["6", "7"]  # noise lines not counted


# --- RTTM -------------------------------------------------------------------------------------


def test_rttm_matches_transcript_turns_by_speaker_and_overlap(tmp_path):
    rttm = [
        "SPEAKER clip 1 0.00 1.50 <NA> <NA> alice <NA> <NA>",
        "SPEAKER clip 1 2.60 1.00 <NA> <NA> alice <NA> <NA>",
        "SPEAKER clip 1 1.40 1.10 <NA> <NA> bob <NA> <NA>",
        "SPEAKER clip 1 3.70 0.20 <NA> <NA> bob <NA> <NA>",
        "SPEAKER clip 1 x 0.20 <NA> <NA> bob <NA> <NA>",
    ]
    (tmp_path / "clip.rttm").write_text("\n".join(rttm) + "\n")
    (tmp_path / "clip.json").write_text(
        json.dumps(
            [
                {"start": 0.7, "end": 1.5, "speaker": "alice", "text": "there"},
                {"start": 0.0, "end": 0.7, "speaker": "alice", "text": "Hello"},
                {"start": 1.5, "end": 2.4, "speaker": "bob", "text": "Hi alice"},
                {"start": 2.5, "end": 3.5, "speaker": "alice", "text": "Bye"},
                {"start": 5.0, "end": 5.5, "speaker": "bob", "text": "nobody"},
            ]
        )
    )
    wav(tmp_path / "clip.wav", seconds=4.0)
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "film2.rttm").write_text(
        "SPEAKER film2 1 0 1 <NA> <NA> A <NA> <NA>\nSPEAKER film2 1 1.5 1.5 <NA> <NA> A <NA> <NA>\n"
    )
    (sub / "film2.csv").write_text("start,end,speaker,text\n0.8,2.0,A,longest overlap wins\n")
    report = prepare_rttm(tmp_path, language="en", source="film")
    by_id = {c.id: c for c in report.conversations}
    clip, film2 = by_id["film-clip"], by_id["film-sub-film2"]
    assert [(t.speaker, t.start, t.end, t.text) for t in clip.turns] == [
        ("alice", 0.0, 1.5, "Hello there"),
        ("bob", 1.4, 2.5, "Hi alice"),
        ("alice", 2.6, 3.6, "Bye"),
        ("bob", 3.7, 3.9, ""),
    ]
    assert clip.source == "film" and clip.duration == pytest.approx(4.0) and clip.meta["untranscribed"] == 1
    assert [t.text for t in film2.turns] == ["", "longest overlap wins"] and film2.audio is None
    assert report.n_untranscribed == 2  # clip's bob 3.7-3.9 and film2's first A segment
    reasons = sorted(s.reason for s in report.skips)
    assert len(reasons) == 3 and reasons[0] == "audio missing"
    assert "bad SPEAKER line" in reasons[1] and "overlaps no RTTM segment" in reasons[2]


# --- shared -----------------------------------------------------------------------------------

READERS = {
    "alimeeting": prepare_alimeeting,
    "chime6": prepare_chime6,
    "magicdata": prepare_magicdata,
    "rttm": lambda d: prepare_rttm(d, language="en"),
}


@pytest.mark.parametrize("reader", READERS.values(), ids=READERS.keys())
def test_empty_or_missing_corpus_dir_is_a_data_error(reader, tmp_path):
    with pytest.raises(DataError, match=re.escape(str(tmp_path))):
        reader(tmp_path)
    with pytest.raises(DataError, match="not found"):
        reader(tmp_path / "absent")


# --- RTTM on a real-format call (tests/real_layouts.py) ---------------------------------------


def test_rttm_transcript_labels_that_match_no_rttm_label_skip_the_recording_with_both_label_sets(tmp_path):
    from tests.real_layouts import write_rttm_call

    write_rttm_call(tmp_path / "calls", transcript_names={"A": "Alice", "B": "Bob"})
    write_rttm_call(tmp_path / "calls", name="ok")
    report = prepare_rttm(tmp_path / "calls", language="en")
    assert [c.id for c in report.conversations] == ["rttm-ok"]
    (skip,) = report.skips
    assert skip[0].endswith("call.rttm")
    assert "transcript ['Alice', 'Bob'] vs RTTM ['A', 'B']" in skip[1] and "speaker_map" in skip[1]
    (tmp_path / "calls" / "ok.rttm").unlink()
    with pytest.raises(DataError, match=r"no usable RTTM.*skipped: .*call.rttm: speaker labels differ"):
        prepare_rttm(tmp_path / "calls", language="en")


@pytest.mark.parametrize("how", ["file", "overlap"])
def test_rttm_speaker_map_maps_transcript_labels(tmp_path, how):
    from tests.real_layouts import CALL_TURNS, write_rttm_call

    calls = write_rttm_call(tmp_path / "calls", transcript_names={"A": "Alice", "B": "Bob"})
    (tmp_path / "map.yaml").write_text("Alice: A\nBob: B\n")
    report = prepare_rttm(calls, language="en", speaker_map=str(tmp_path / "map.yaml") if how == "file" else how)
    (conv,) = report.conversations
    assert [(t.speaker, t.text) for t in conv.turns] == [(spk, text) for spk, _, _, text in CALL_TURNS]
    assert report.skips == [] and report.n_untranscribed == 0
    assert conv.meta["speaker_map"] == {"Alice": "A", "Bob": "B"}


def test_rttm_partial_label_mismatch_is_a_counted_skip_naming_the_label(tmp_path):
    from tests.real_layouts import CALL_TURNS, write_rttm_call

    calls = write_rttm_call(tmp_path / "calls", transcript_names={"B": "Bob"})
    report = prepare_rttm(calls, language="en")
    n_b = sum(spk == "B" for spk, *_ in CALL_TURNS)
    assert report.n_skipped == n_b and report.n_untranscribed == n_b
    assert all("speaker 'Bob' is not an RTTM label (A, B; see speaker_map)" in s.reason for s in report.skips)


def test_rttm_language_and_speaker_map_errors(tmp_path):
    from tests.real_layouts import write_rttm_call

    calls = write_rttm_call(tmp_path / "calls")
    with pytest.raises(ConfigError, match="language=en"):
        prepare_rttm(calls)
    with pytest.raises(ConfigError, match="speaker_map: no such file 'nope.yaml'"):
        prepare_rttm(calls, language="en", speaker_map="nope.yaml")
    (calls / "bad.yaml").write_text("- Alice\n- Bob\n")
    with pytest.raises(DataError, match="bad.yaml.*must map each transcript speaker label"):
        prepare_rttm(calls, language="en", speaker_map="bad.yaml")
