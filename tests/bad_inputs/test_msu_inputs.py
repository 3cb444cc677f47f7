"""Bad and odd inputs of MSU-Bench's corpus readers (RTTM, AliMeeting, CHiME-6, MagicData), its
``--set`` config, and the authors' public multiple-choice release, through the real ``msu-bench``
CLI (issue 20).

Reader outcomes go through ``msu-bench corpus-info --corpus <kind> --corpus-dir D --json`` (the
skip list it prints is what the build's ``build_info.json`` lists), the release through
``msu-bench build --mcq-dir D --out O`` (what it prints and writes), and ``msu-bench build
--corpus ...`` only where the build itself is the point (an error before planning, and one
shared build that must agree with corpus-info). Every input is written in its corpus's real
layout (tests/real_layouts.py, tests/test_msu_corpora.py, tests/msu_release_fixture.py): tiny
tone recordings of a few seconds, a 30 s two-person call for RTTM.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.bad_inputs.harness import Case, Result, run_case, run_cli
from tests.msu_release_fixture import make_release
from tests.real_layouts import CALL_TURNS, write_rttm_call
from tests.test_msu_corpora import textgrid, wav

BOM = b"\xef\xbb\xbf"


# --- helpers ----------------------------------------------------------------------------------


def info_argv(kind: str, root: Path, *options: str, sets=()) -> list:
    argv = ["corpus-info", "--corpus", kind, "--corpus-dir", root, "--json"]
    for option in options:
        argv += ["--corpus-option", option]
    for item in sets:
        argv += ["--set", item]
    return argv


def rows(result: Result) -> dict:
    return {r["id"]: r for r in result.json()["conversations"]}


def reasons(result: Result) -> list[str]:
    return [s["reason"] for s in result.json()["skipped"]]


def to_gbk(path: Path) -> Path:
    """Re-encode a UTF-8 text file as GBK (what many Chinese corpus copies hold)."""
    path.write_bytes(path.read_text(encoding="utf-8").encode("gbk"))
    return path


def add_bom(path: Path) -> Path:
    path.write_bytes(BOM + path.read_bytes())
    return path


# --- RTTM: audio + RTTM + per-turn transcript (tests/real_layouts.py) --------------------------


def rttm_make(edit=None, options=("language=en",), transcript="json", sets=("min_segment_s=10",)):
    """The 30 s call, its RTTM lines changed by ``edit(lines) -> lines``."""

    def make(tmp: Path) -> list:
        calls = write_rttm_call(tmp / "calls", transcript=transcript)
        if edit is not None:
            path = calls / "call.rttm"
            path.write_text("\n".join(edit(path.read_text().splitlines())) + "\n", encoding="utf-8")
        return info_argv("rttm", calls, *options, sets=sets)

    return make


def set_field(index: int, column: int, value: str):
    def edit(lines):
        fields = lines[index].split()
        fields[column] = value
        return lines[:index] + [" ".join(fields)] + lines[index + 1 :]

    return edit


def turns_are(n: int, span=None):
    def check(tmp, result):
        (row,) = result.json()["conversations"]
        assert row["turns"] == n, row
        if span is not None:
            assert row["turn_span"] == span, row

    return check


ZH_TURNS = [
    ("A", 1.0, 3.0, "你好，这里是酒店前台。"),
    ("B", 3.5, 5.5, "你好，我订了今晚的房间。"),
    ("A", 6.0, 8.0, "请问您贵姓？"),
    ("B", 8.5, 9.5, "我姓王。"),
]


def rttm_gbk_make(*options):
    def make(tmp: Path) -> list:
        calls = write_rttm_call(tmp / "calls", turns=ZH_TURNS, seconds=10.0, transcript="csv")
        to_gbk(calls / "call.csv")
        return info_argv("rttm", calls, "language=zh", *options, sets=("min_segment_s=5",))

    return make


def rttm_transcript_make(tmp: Path) -> list:
    calls = write_rttm_call(tmp / "calls", transcript="csv")
    path = calls / "call.csv"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[1] = 'nan,5.0,A,"' + CALL_TURNS[0][3] + '"'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return info_argv("rttm", calls, "language=en", sets=("min_segment_s=10",))


def rttm_bom_make(tmp: Path) -> list:
    calls = write_rttm_call(tmp / "calls")
    add_bom(calls / "call.rttm")
    add_bom(calls / "call.json")
    return info_argv("rttm", calls, "language=en", sets=("min_segment_s=10",))


def rttm_unknown_label_make(tmp: Path) -> list:
    calls = write_rttm_call(tmp / "calls")
    doc = json.loads((calls / "call.json").read_text(encoding="utf-8"))
    doc[2]["speaker"] = "C"
    (calls / "call.json").write_text(json.dumps(doc), encoding="utf-8")
    return info_argv("rttm", calls, "language=en", sets=("min_segment_s=10",))


def past_end(lines):
    last = lines[-1].split()
    last[3], last[4] = "28.50", "3.00"  # 28.5-31.5 s of a 30.0 s recording
    return lines[:-1] + [" ".join(last), "SPEAKER call 1 31.00 1.00 <NA> <NA> B <NA> <NA>"]


RTTM_CASES = [
    Case(
        "rttm-nan-start",
        "msu-bench",
        rttm_make(set_field(0, 3, "nan")),
        exit=0,
        skips={"start 'nan' is not a finite number": 1},
        check=turns_are(12, [5.3, 26.9]),
    ),
    Case(
        "rttm-inf-duration",
        "msu-bench",
        rttm_make(set_field(3, 4, "inf")),
        exit=0,
        skips={"duration 'inf' is not a finite number": 1},
        check=turns_are(12),
    ),
    Case(
        "rttm-negative-start",
        "msu-bench",
        rttm_make(set_field(0, 3, "-1.00")),
        exit=0,
        skips={"start -1.0 is negative": 1},
        check=turns_are(12),
    ),
    Case(
        "rttm-negative-duration",
        "msu-bench",
        rttm_make(set_field(1, 4, "-0.50")),
        exit=0,
        skips={"duration -0.5 <= 0": 1},
        check=turns_are(12),
    ),
    Case(
        "rttm-wrong-field-count",
        "msu-bench",
        rttm_make(lambda lines: lines + ["SPEAKER call 1 27.0 1.0"]),
        exit=0,
        skips={"5 fields, expected 10": 1},
        check=turns_are(13),
    ),
    Case(
        "rttm-duplicate-line",
        "msu-bench",
        rttm_make(lambda lines: lines + [lines[4]]),
        exit=0,
        skips={"duplicate of line 5": 1},
        check=turns_are(13),
    ),
    Case(
        "rttm-lines-of-another-recording",
        "msu-bench",
        rttm_make(lambda lines: lines + [ln.replace("SPEAKER call ", "SPEAKER other ") for ln in lines[:3]]),
        exit=0,
        skips={"line of recording 'other', but this RTTM is read as recording 'call'": 3},
        check=turns_are(13),
    ),
    Case(
        "rttm-turn-past-audio-end",
        "msu-bench",
        rttm_make(past_end),
        exit=0,
        skips={"runs past the end of the audio (call.wav, 30.000 s): cut at 30.000 s": 1, "starts after the end": 1},
        check=turns_are(13, [3.1, 30.0]),
    ),
    Case(
        "rttm-unknown-speaker-label",
        "msu-bench",
        rttm_unknown_label_make,
        exit=0,
        skips={"speaker 'C' is not an RTTM label": 1},
    ),
    Case("rttm-bom", "msu-bench", rttm_bom_make, exit=0, skips={"": 0}, check=turns_are(13)),
    Case(
        "rttm-transcript-nan-time",
        "msu-bench",
        rttm_transcript_make,
        exit=0,
        skips={"bad transcript row (ValueError: start 'nan' is not a finite number)": 1},
    ),
    Case(
        "rttm-gbk-transcript",
        "msu-bench",
        rttm_gbk_make(),
        exit=0,
        skips={"unreadable transcript: not utf-8 text": 1, "--corpus-option encoding=gbk": 1},
        check=lambda tmp, r: rows(r)["rttm-call"]["untranscribed"] == 4 or pytest.fail(str(rows(r))),
    ),
    Case(
        "rttm-gbk-transcript-with-encoding-option",
        "msu-bench",
        rttm_gbk_make("encoding=gbk"),
        exit=0,
        skips={"": 0},
        check=lambda tmp, r: rows(r)["rttm-call"]["untranscribed"] == 0 or pytest.fail(str(rows(r))),
    ),
    Case(
        "rttm-language-not-supported",
        "msu-bench",
        rttm_make(options=("language=fr",)),
        says=("--corpus-option language", "'fr'", "language=en"),
    ),
    Case("rttm-language-missing", "msu-bench", rttm_make(options=()), says=("--corpus-option language", "language=en")),
    Case(
        "rttm-speaker-map-missing",
        "msu-bench",
        rttm_make(options=("language=en", "speaker_map=nope.yaml")),
        says=("--corpus-option speaker_map", "nope.yaml", "speaker_map=overlap"),
    ),
    Case(
        "rttm-unknown-encoding",
        "msu-bench",
        rttm_make(options=("language=en", "encoding=klingon")),
        says=("--corpus-option encoding", "klingon"),
    ),
]


# --- AliMeeting: {Train,Eval,Test}_Ali_{far,near}/{audio_dir,textgrid_dir} ---------------------

GOOD_GRID = {"R0001_M0001_F_SPK0001": [(0.1, 1.0, "你好")], "M_SPK0002": [(1.2, 2.0, "好的")]}


def ali_make(sessions: dict, *options, missing_wav=(), gbk=(), seconds=3.0, sets=()):
    """Far-field sessions ``{session: tiers}`` under Train_Ali_far (wav = ``<session>_MS002.wav``)."""

    def make(tmp: Path) -> list:
        far = tmp / "ali" / "Train_Ali_far"
        for session, tiers in sessions.items():
            if session not in missing_wav:
                wav(far / "audio_dir" / f"{session}_MS002.wav", seconds=seconds, channels=2)
            grid = textgrid(far / "textgrid_dir" / f"{session}.TextGrid", tiers, xmax=seconds)
            if session in gbk:
                to_gbk(grid)
        return info_argv("alimeeting", tmp / "ali", *options, sets=sets)

    return make


def ali_near_make(tmp: Path) -> list:
    near = tmp / "ali" / "Train_Ali_near"
    for n, stem in enumerate(("R0003_M0046_F_SPK0093", "R0003_M0046_M_SPK0094")):
        if n == 0:  # SPK0094's headset file is missing
            wav(near / "audio_dir" / f"{stem}.wav")
        textgrid(near / "textgrid_dir" / f"{stem}.TextGrid", {stem: [(0.4 + n, 1.1 + n, "早上好")]})
    return info_argv("alimeeting", tmp / "ali", "mic=near")


def one_speaker_reason(conv_id: str):
    def check(tmp, result):
        why = rows(result)[conv_id]["no_segment_reasons"]
        assert rows(result)[conv_id]["segments"] == 0 and len(why) == 1, why
        assert "1 speaker(s) in the whole recording, fewer than min_speakers=2" in why[0], why

    return check


def speakers_of(conv_id: str, n: int, turns: int):
    def check(tmp, result):
        row = rows(result)[conv_id]
        assert (row["speakers"], row["turns"]) == (n, turns), row

    return check


ALIMEETING_CASES = [
    Case(
        "alimeeting-missing-far-audio",
        "msu-bench",
        ali_make({"R0001_M0001": GOOD_GRID}, missing_wav=("R0001_M0001",)),
        exit=0,
        skips={"audio missing": 1},
        check=lambda tmp, r: (
            rows(r)["alimeeting-R0001_M0001"]["no_segment_reasons"]
            == ["alimeeting-R0001_M0001: no readable audio, so no segment"]
            or pytest.fail(str(rows(r)))
        ),
    ),
    Case(
        "alimeeting-overlapping-intervals-in-a-tier",
        "msu-bench",
        ali_make({"R0001_M0001": {**GOOD_GRID, "M_SPK0002": [(1.2, 2.0, "好的"), (1.5, 2.5, "重叠")]}}),
        exit=0,
        skips={"interval 1.500-2.500 overlaps the previous interval (ends 2.000)": 1},
        check=speakers_of("alimeeting-R0001_M0001", 2, 2),
    ),
    Case(
        "alimeeting-session-with-one-speaker",
        "msu-bench",
        ali_make({"R0001_M0001": {"R0001_M0001_F_SPK0001": [(0.1, 1.0, "你好"), (1.2, 2.5, "大家好")]}}),
        exit=0,
        check=one_speaker_reason("alimeeting-R0001_M0001"),
    ),
    Case(
        "alimeeting-gbk-textgrid",
        "msu-bench",
        ali_make({"R0001_M0001": GOOD_GRID, "R0002_M0002": GOOD_GRID}, gbk=("R0002_M0002",)),
        exit=0,
        skips={"unreadable TextGrid: not utf-8 text": 1, "--corpus-option encoding=gbk": 1},
    ),
    Case(
        "alimeeting-gbk-textgrid-with-encoding-option",
        "msu-bench",
        ali_make({"R0001_M0001": GOOD_GRID, "R0002_M0002": GOOD_GRID}, "encoding=gbk", gbk=("R0002_M0002",)),
        exit=0,
        skips={"": 0},
        check=speakers_of("alimeeting-R0002_M0002", 2, 2),
    ),
    Case(
        "alimeeting-near-headset-audio-missing",
        "msu-bench",
        ali_near_make,
        exit=0,
        skips={"headset audio R0003_M0046_M_SPK0094.wav missing": 1},
        check=speakers_of("alimeeting-R0003_M0046", 2, 2),
    ),
    Case(
        "alimeeting-interval-past-audio-end",
        "msu-bench",
        ali_make({"R0001_M0001": {**GOOD_GRID, "M_SPK0002": [(1.2, 2.0, "好的"), (2.5, 4.0, "太晚了")]}}),
        exit=0,
        skips={"runs past the end of the audio": 1},
        check=lambda tmp, r: rows(r)["alimeeting-R0001_M0001"]["turn_span"] == [0.1, 3.0] or pytest.fail(str(rows(r))),
    ),
    Case(
        "alimeeting-unparsable-time",
        "msu-bench",
        ali_make({"R0001_M0001": GOOD_GRID, "R0002_M0002": {"F_SPK0003": [("abc", 1.0, "坏时间")]}}),
        exit=0,
        skips={"unreadable TextGrid": 1},
    ),
    Case(
        "alimeeting-only-empty-intervals",
        "msu-bench",
        ali_make({"R0001_M0001": GOOD_GRID, "R0002_M0002": {"F_SPK0003": [(0.0, 1.0, ""), (1.0, 3.0, " ")]}}),
        exit=0,
        skips={"no usable turns": 1},
    ),
    Case(
        "alimeeting-tier-without-speaker-id",
        "msu-bench",
        ali_make({"R0001_M0001": {"Speaker one": [(0.1, 1.0, "你好")], "Speaker two": [(1.2, 2.0, "好的")]}}),
        exit=0,
        skips={"": 0},
        check=speakers_of("alimeeting-R0001_M0001", 2, 2),
    ),
    Case(
        "alimeeting-language-not-supported",
        "msu-bench",
        ali_make({"R0001_M0001": GOOD_GRID}, "language=fr"),
        says=("--corpus-option language", "'fr'", "en, zh"),
    ),
    Case(
        "alimeeting-unknown-split",
        "msu-bench",
        ali_make({"R0001_M0001": GOOD_GRID}, "split=dev"),
        says=("--corpus-option split", "'dev'", "split=train"),
    ),
    Case(
        "alimeeting-split-folder-missing",
        "msu-bench",
        ali_make({"R0001_M0001": GOOD_GRID}, "split=test"),
        says=("Test_Ali_far", "split folder not found", "--corpus-dir"),
    ),
    Case(
        "alimeeting-nothing-usable",
        "msu-bench",
        ali_make({"R0002_M0002": GOOD_GRID}, gbk=("R0002_M0002",)),
        says=("{tmp}/ali", "no usable AliMeeting conversations", "encoding=gbk"),
    ),
]


# --- CHiME-6: transcriptions/<split>/S*.json + audio/<split>/S*_P*.wav / S*_U*.CH*.wav ---------


def seg(speaker, start, end, words, **extra):
    return {"speaker": speaker, "start_time": start, "end_time": end, "words": words, **extra}


GOOD_SEGMENTS = [seg("P05", "0:00:00.50", "0:00:01.20", "Hello there."), seg("P06", "0:00:01.30", "0:00:02.00", "Hi.")]
ALL_AUDIO = ("S02_P05", "S02_P06", "S02_U01.CH1")


def chime_make(segments=GOOD_SEGMENTS, *options, audio=ALL_AUDIO, bom=False, seconds=3.0):
    def make(tmp: Path) -> list:
        path = tmp / "chime" / "transcriptions" / "dev" / "S02.json"
        path.parent.mkdir(parents=True)
        path.write_bytes((BOM if bom else b"") + json.dumps(segments).encode("utf-8"))
        for name in audio:
            wav(tmp / "chime" / "audio" / "dev" / f"{name}.wav", seconds=seconds)
        return info_argv("chime6", tmp / "chime", *options)

    return make


CHIME6_CASES = [
    Case(
        "chime6-json-with-bom",
        "msu-bench",
        chime_make(bom=True),
        exit=0,
        skips={"": 0},
        check=speakers_of("chime6-S02", 2, 2),
    ),
    Case(
        "chime6-nan-time",
        "msu-bench",
        chime_make([*GOOD_SEGMENTS, seg("P05", "nan", "0:00:02.50", "when?")]),
        exit=0,
        skips={"segment 2: unreadable (ValueError: not a H:MM:SS.ss time: 'nan')": 1},
        check=speakers_of("chime6-S02", 2, 2),
    ),
    Case(
        "chime6-unparsable-time",
        "msu-bench",
        chime_make([*GOOD_SEGMENTS, seg("P06", "0:00:xx", "0:00:02.50", "what?")]),
        exit=0,
        skips={"segment 2: unreadable": 1},
    ),
    Case(
        "chime6-close-talk-file-missing",
        "msu-bench",
        chime_make(GOOD_SEGMENTS, "mic=close", audio=("S02_P05", "S02_U01.CH1")),
        exit=0,
        skips={"close-talk audio S02_P06.wav of speaker P06 missing": 1},
        check=speakers_of("chime6-S02", 2, 2),
    ),
    Case(
        "chime6-array-channel-1-missing",
        "msu-bench",
        chime_make(GOOD_SEGMENTS, "mic=array", audio=("S02_U01.CH2", "S02_U01.CH3")),
        exit=0,
        skips={"audio missing": 0},
        check=lambda tmp, r: (
            rows(r)["chime6-S02"]["no_segment_reasons"][0].find("no readable audio") < 0 or pytest.fail(str(rows(r)))
        ),
    ),
    Case(
        "chime6-session-with-one-speaker",
        "msu-bench",
        chime_make([GOOD_SEGMENTS[0], seg("P05", "0:00:01.30", "0:00:02.00", "Me again.")]),
        exit=0,
        check=one_speaker_reason("chime6-S02"),
    ),
    Case(
        "chime6-turn-past-audio-end",
        "msu-bench",
        chime_make([*GOOD_SEGMENTS, seg("P05", "0:00:02.50", "0:00:04.00", "Too late.")]),
        exit=0,
        skips={"runs past the end of the audio (S02_U01.CH1.wav, 3.000 s)": 1},
    ),
    Case(
        "chime6-duplicate-segment",
        "msu-bench",
        chime_make([*GOOD_SEGMENTS, GOOD_SEGMENTS[1]]),
        exit=0,
        skips={"duplicate turn: same speaker, times and text as": 1},
        check=speakers_of("chime6-S02", 2, 2),
    ),
    Case(
        "chime6-words-not-text",
        "msu-bench",
        chime_make([*GOOD_SEGMENTS, seg("P06", "0:00:02.10", "0:00:02.40", ["a", "list"])]),
        exit=0,
        skips={"words is a list, not text": 1},
    ),
    Case(
        "chime6-speaker-ids-unlike-the-audio-files",
        "msu-bench",
        chime_make(GOOD_SEGMENTS, "mic=close", audio=("S02_P07", "S02_P08")),
        exit=0,
        skips={"close-talk audio S02_P05.wav": 1, "close-talk audio S02_P06.wav": 1, "audio missing": 1},
    ),
    Case("chime6-unknown-mic", "msu-bench", chime_make(GOOD_SEGMENTS, "mic=headset"), says=("--corpus-option mic",)),
    Case(
        "chime6-split-folder-missing",
        "msu-bench",
        chime_make(GOOD_SEGMENTS, "split=eval"),
        says=("transcriptions/eval", "--corpus-dir"),
    ),
]


# --- MagicData-RAMC: TXT/<conv>.txt ([start,end] speaker field text) + WAV/<conv>.wav ---------

GOOD_LINES = ["[0.500,1.250]\tG00000140\t女,普通话\t你好呀", "[1.300,2.000]\tG00000141\t男,普通话\t你好"]


def magic_make(conversations: dict, *options, gbk=(), bom=(), missing_wav=(), spkinfo=None, seconds=3.0):
    """``{conversation: TXT lines}`` under MDT2021S003/TXT, a wav each under WAV/."""

    def make(tmp: Path) -> list:
        release = tmp / "magic" / "MDT2021S003"
        (release / "TXT").mkdir(parents=True)
        for name, lines in conversations.items():
            path = release / "TXT" / f"{name}.txt"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            if name in gbk:
                to_gbk(path)
            if name in bom:
                add_bom(path)
            if name not in missing_wav:
                wav(release / "WAV" / f"{name}.wav", seconds=seconds)
        if spkinfo is not None:
            (release / "SPKINFO.txt").write_text("\n".join(spkinfo) + "\n", encoding="utf-8")
        return info_argv("magicdata", tmp / "magic", *options)

    return make


MAGICDATA_CASES = [
    Case(
        "magicdata-gbk-transcript",
        "msu-bench",
        magic_make({"C1": GOOD_LINES, "C2": GOOD_LINES}, gbk=("C2",)),
        exit=0,
        skips={"unreadable transcript: not utf-8 text": 1, "--corpus-option encoding=gbk": 1},
    ),
    Case(
        "magicdata-gbk-transcript-with-encoding-option",
        "msu-bench",
        magic_make({"C1": GOOD_LINES, "C2": GOOD_LINES}, "encoding=gbk", gbk=("C2",)),
        exit=0,
        skips={"": 0},
        check=speakers_of("magicdata-C2", 2, 2),
    ),
    Case(
        "magicdata-wav-missing",
        "msu-bench",
        magic_make({"C1": GOOD_LINES}, missing_wav=("C1",)),
        exit=0,
        skips={"audio missing": 1},
    ),
    Case(
        "magicdata-unparsable-time-stamps",
        "msu-bench",
        magic_make({"C1": [*GOOD_LINES, "[2.0,abc]\tG00000140\t女\t坏", "[2.5,2.0]\tG00000141\t男\t倒序"]}),
        exit=0,
        skips={"expected [start,end]": 1, "start 2.500 >= end 2.000": 1},
    ),
    Case(
        "magicdata-duplicate-line",
        "msu-bench",
        magic_make({"C1": [*GOOD_LINES, GOOD_LINES[0]]}),
        exit=0,
        skips={"duplicate turn: same speaker, times and text as": 1},
        check=speakers_of("magicdata-C1", 2, 2),
    ),
    Case(
        "magicdata-one-speaker",
        "msu-bench",
        magic_make({"C1": [GOOD_LINES[0], "[1.300,2.000]\tG00000140\t女,普通话\t再见"]}),
        exit=0,
        check=one_speaker_reason("magicdata-C1"),
    ),
    Case(
        "magicdata-turn-past-audio-end",
        "msu-bench",
        magic_make({"C1": [*GOOD_LINES, "[2.500,5.000]\tG00000141\t男,普通话\t太晚了"]}),
        exit=0,
        skips={"runs past the end of the audio (C1.wav, 3.000 s)": 1},
    ),
    Case(
        "magicdata-spkinfo-bad-row",
        "msu-bench",
        magic_make(
            {"C1": GOOD_LINES},
            spkinfo=[
                "CHANNEL\tSPEAKER_ID\tGENDER\tAGE\tREGION,CITY\tDEVICE",
                "C0\tG00000140\tF\tadult\tSichuan\tphone",
                "C1",
            ],
        ),
        exit=0,
        skips={"expected CHANNEL<TAB>SPEAKER_ID<TAB>GENDER": 1},
    ),
    Case(
        "magicdata-spkinfo-ids-unlike-the-transcript",
        "msu-bench",
        magic_make({"C1": GOOD_LINES}, spkinfo=["CHANNEL\tSPEAKER_ID\tGENDER", "C0\tG99\tM", "C1\tG98\tF"]),
        exit=0,
        skips={"": 0},
        check=speakers_of("magicdata-C1", 2, 2),
    ),
    Case(
        "magicdata-transcript-with-bom",
        "msu-bench",
        magic_make({"C1": GOOD_LINES}, bom=("C1",)),
        exit=0,
        skips={"": 0},
        check=speakers_of("magicdata-C1", 2, 2),
    ),
    Case(
        "magicdata-language-not-supported",
        "msu-bench",
        magic_make({"C1": GOOD_LINES}, "language=fr"),
        says=("--corpus-option language", "'fr'"),
    ),
]


# --- the authors' public release (tests/msu_release_fixture.py: 23 questions, 16 kept) ---------

SV_ZH = "bench_cn/QA_cn/meeting/*/*/level1/说话人识别能力-说话人验证任务.json"


def release_make(edit=None):
    """``msu-bench build --mcq-dir`` of the fixture release after ``edit(root)``."""

    def make(tmp: Path) -> list:
        root = make_release(tmp / "release")
        if edit is not None:
            edit(root)
        return ["build", "--mcq-dir", root, "--out", tmp / "out"]

    return make


def edit_sv(change):
    def edit(root: Path):
        path = next(root.glob(SV_ZH))
        doc = json.loads(path.read_text(encoding="utf-8"))
        change(doc)
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")

    return edit


def imported(tmp: Path) -> dict:
    return json.loads((tmp / "out" / "build_info.json").read_text(encoding="utf-8"))["stats"]["mcq_import"]


def totals(kept: int, skipped: int, read: int, uncounted: int = 0, printed=(), reasons=()):
    """The import's counts add up (kept + skipped == read) in build_info, the card and the summary."""

    def check(tmp, result):
        imp = imported(tmp)
        assert (imp["questions_kept"], imp["questions_skipped"], imp["questions_read"]) == (kept, skipped, read), imp
        assert imp["questions_kept"] + imp["questions_skipped"] == imp["questions_read"]
        assert imp["files_uncounted"] == uncounted, imp
        assert f"{kept} questions kept" in result.out and f"{skipped} skipped" in result.out, result.out
        assert f"of {read} read" in result.out, result.out
        for text in printed:
            assert text in result.out, result.out
        for text in reasons:
            assert any(text in s["reason"] for s in imp["skips"]), imp["skips"]
        card = (tmp / "out" / "README.md").read_text(encoding="utf-8")
        assert f"of {read} questions read" in card

    return check


def duplicate(doc):
    doc["qa_result"].append(dict(doc["qa_result"][2]))  # qa_result[0] is the speaker_meta item


def duplicate_other_answer(doc):
    doc["qa_result"].append({**doc["qa_result"][2], "answer": "A"})


def unreadable_json(root: Path):
    next(root.glob(SV_ZH)).write_text("{ not json", encoding="utf-8")


def bom_json(root: Path):
    add_bom(next(root.glob(SV_ZH)))


def no_question_list(root: Path):
    path = next(root.glob(SV_ZH))
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["qa"] = doc.pop("qa_result")
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


def misplaced_json(root: Path):
    path = next(root.glob(SV_ZH))
    (path.parent.parent / path.name).write_bytes(path.read_bytes())  # beside level1/, not in it


def no_source_audio(root: Path):
    next(root.glob("bench_cn/source_audio/podcast/*.wav")).unlink()


def empty_release(root: Path):
    for path in root.rglob("*.json"):
        path.unlink()


def hub_layout(root: Path):
    import shutil

    shutil.rmtree(root / "bench_cn")
    shutil.rmtree(root / "bench_en")
    (root / "data").mkdir()
    (root / "data" / "test.jsonl").write_text('{"id": 1}\n')


RELEASE_CASES = [
    Case(
        "release-question-repeated-in-a-file",
        "msu-bench",
        release_make(edit_sv(duplicate)),
        exit=0,
        check=totals(16, 8, 24, printed=("duplicate question: 1",), reasons=("duplicate of zh/meeting/",)),
    ),
    Case(
        "release-repeat-with-another-answer",
        "msu-bench",
        release_make(edit_sv(duplicate_other_answer)),
        exit=0,
        check=totals(16, 8, 24, reasons=("(its answer A differs from B)",)),
    ),
    Case(
        "release-unreadable-json",
        "msu-bench",
        release_make(unreadable_json),
        exit=0,
        check=totals(
            13, 7, 20, uncounted=1, printed=("1 file skipped as unreadable JSON (its questions not counted)",)
        ),
    ),
    Case("release-json-with-bom", "msu-bench", release_make(bom_json), exit=0, check=totals(16, 7, 23)),
    Case(
        "release-json-without-a-question-list",
        "msu-bench",
        release_make(no_question_list),
        exit=0,
        check=totals(13, 7, 20, uncounted=1, printed=("1 file skipped as no questions (its questions not counted)",)),
    ),
    Case(
        "release-misplaced-json",
        "msu-bench",
        release_make(misplaced_json),
        exit=0,
        check=totals(16, 7, 23, uncounted=1, reasons=("misplaced: not at bench_{cn,en}/QA_{cn,en}",)),
    ),
    Case(
        "release-source-audio-missing",
        "msu-bench",
        release_make(no_source_audio),
        exit=0,
        check=totals(12, 11, 23, reasons=("no source audio: ep01__seg0001__0.00-3.00.wav",)),
    ),
    Case(
        "release-answer-not-a-letter",
        "msu-bench",
        release_make(edit_sv(lambda doc: doc["qa_result"][1].update(answer="Z"))),
        exit=0,
        check=totals(15, 8, 23, reasons=("bad answer: 'Z'",)),
    ),
    Case(
        "release-folder-missing",
        "msu-bench",
        lambda tmp: ["build", "--mcq-dir", tmp / "nowhere", "--out", tmp / "out"],
        says=("--mcq-dir", "not found", "bench_cn/"),
    ),
    Case(
        "release-without-task-json",
        "msu-bench",
        release_make(empty_release),
        says=("{tmp}/release", "no task JSON", "--mcq-dir"),
    ),
    Case("release-hub-layout", "msu-bench", release_make(hub_layout), says=("{tmp}/release", "Hub layout")),
]


# --- the build config (--set) -------------------------------------------------------------------


def set_make(*items, command="corpus-info"):
    def make(tmp: Path) -> list:
        calls = write_rttm_call(tmp / "calls")
        sets = [a for item in items for a in ("--set", item)]
        if command == "build":
            return ["build", "--corpus", "rttm", "--corpus-dir", calls, "--corpus-option", "language=en", *sets,
                    "--out", tmp / "out"]  # fmt: skip
        return info_argv("rttm", calls, "language=en") + sets

    return make


def preset_make(text: str):
    def make(tmp: Path) -> list:
        (tmp / "preset.yaml").write_text(text, encoding="utf-8")
        return ["corpus-info", "--preset", tmp / "preset.yaml"]

    return make


def nothing_written(tmp, result):
    assert not (tmp / "out").exists()


CONFIG_CASES = [
    Case("msu-set-seed-not-a-number", "msu-bench", set_make("seed=abc"), says=("--set seed", "'abc'", "seed=3")),
    Case(
        "msu-build-set-seed-not-a-number",
        "msu-bench",
        set_make("seed=abc", command="build"),
        says=("--set seed", "not a whole number"),
        check=nothing_written,
    ),
    Case("msu-set-unknown-key", "msu-bench", set_make("sed=3"), says=("--set sed", "did you mean 'seed'")),
    Case(
        "msu-set-language-without-templates",
        "msu-bench",
        set_make("languages=[fr]"),
        says=("--set languages", "en, zh"),
    ),
    Case(
        "msu-set-min-above-max",
        "msu-bench",
        set_make("min_segment_s=200"),
        says=("--set min_segment_s", "above max_segment_s=120"),
    ),
    Case("msu-set-per-segment-zero", "msu-bench", set_make("per_segment=0"), says=("--set per_segment", "below 1")),
    Case(
        "msu-set-min-speakers-not-a-number",
        "msu-bench",
        set_make("min_speakers=two"),
        says=("--set min_speakers", "'two'"),
    ),
]


CONFIG_CASES += [
    Case(
        "msu-unknown-corpus-reader",
        "msu-bench",
        lambda tmp: ["corpus-info", "--corpus", "rtm", "--corpus-dir", tmp],
        says=("--corpus rtm", "did you mean --corpus rttm"),
    ),
    Case("msu-unknown-preset", "msu-bench", lambda tmp: ["corpus-info", "--preset", "huge"], says=("--preset huge",)),
    Case(
        "msu-preset-not-yaml",
        "msu-bench",
        preset_make("seed: [1\n"),
        says=("--preset {tmp}/preset.yaml", "not a readable YAML file"),
    ),
    Case(
        "msu-preset-not-a-mapping",
        "msu-bench",
        preset_make("- seed\n- 3\n"),
        says=("{tmp}/preset.yaml", "must be a YAML mapping"),
    ),
]


# --- a rendered copy of the embedded conversations (--corpus embedded --corpus-dir D) ------------


def embedded_copy_make(first_line=None):
    """``D/manifest.jsonl`` holding the packaged manifest's first record (its audio not copied),
    or ``first_line`` as written."""

    def make(tmp: Path) -> list:
        from msu_bench.embedded import DATA_DIR

        (tmp / "copy").mkdir()
        line = first_line or (DATA_DIR / "manifest.jsonl").read_text(encoding="utf-8").splitlines()[0]
        (tmp / "copy" / "manifest.jsonl").write_text(line + "\n", encoding="utf-8")
        return ["corpus-info", "--corpus", "embedded", "--corpus-dir", tmp / "copy", "--json"]

    return make


EMBEDDED_CASES = [
    Case(
        "msu-embedded-copy-without-manifest",
        "msu-bench",
        lambda tmp: ["corpus-info", "--corpus", "embedded", "--corpus-dir", tmp],
        says=("{tmp}/manifest.jsonl", "manifest not found", "--corpus-dir"),
    ),
    Case(
        "msu-embedded-manifest-record-malformed",
        "msu-bench",
        embedded_copy_make(
            '{"id": "x", "language": "en", "speakers": {}, "turns": [{"speaker": "a"}], "audio": "a.opus", "duration": 3}'
        ),
        says=("{tmp}/copy/manifest.jsonl:1", "malformed conversation record", "KeyError: 'index'"),
    ),
    Case(
        "msu-embedded-copy-audio-missing",
        "msu-bench",
        embedded_copy_make(),
        exit=0,
        skips={"audio missing (audio/": 1},
        check=lambda tmp, r: all(c["segments"] == 0 for c in r.json()["conversations"]) or pytest.fail(r.out),
    ),
]


# --- build: refuses before work, and agrees with corpus-info --------------------------------------


def nan_audio_make(tmp: Path) -> list:
    calls = write_rttm_call(tmp / "calls", name="broken")
    audio, sr = sf.read(calls / "broken.wav", dtype="float32")
    audio[sr * 10] = np.nan
    sf.write(calls / "broken.wav", audio, sr, subtype="FLOAT")
    return ["build", "--corpus", "rttm", "--corpus-dir", calls, "--corpus-option", "language=en",
            "--set", "min_segment_s=10", "--out", tmp / "out"]  # fmt: skip


def one_speaker_build_make(tmp: Path) -> list:
    argv = ali_make({"R0001_M0001": {"R0001_M0001_F_SPK0001": [(0.1, 1.0, "你好")]}})(tmp)
    return ["build", "--corpus", "alimeeting", "--corpus-dir", argv[argv.index("--corpus-dir") + 1],
            "--set", "min_segment_s=1", "--set", "max_segment_s=10", "--out", tmp / "out"]  # fmt: skip


BUILD_CASES = [
    Case(
        "msu-build-nan-audio-named-before-any-row",
        "msu-bench",
        nan_audio_make,
        says=("{tmp}/calls", "rttm-broken: audio refused", "broken.wav", "nan"),
        check=nothing_written,
    ),
    Case(
        "msu-build-one-speaker-corpus",
        "msu-bench",
        one_speaker_build_make,
        says=("{tmp}/ali", "no segment", "1 speaker(s) in the whole recording"),
        check=nothing_written,
    ),
    Case(
        "msu-corpus-info-flags-nan-audio",
        "msu-bench",
        lambda tmp: info_argv("rttm", Path(nan_audio_make(tmp)[4]), "language=en", sets=("min_segment_s=10",)),
        exit=0,
        check=lambda tmp, r: (
            (
                rows(r)["rttm-broken"]["segments"] == 0
                and "audio contains NaN" in rows(r)["rttm-broken"]["no_segment_reasons"][0]
            )
            or pytest.fail(str(rows(r)))
        ),
    ),
]

CASES = (
    RTTM_CASES
    + ALIMEETING_CASES
    + CHIME6_CASES
    + MAGICDATA_CASES
    + RELEASE_CASES
    + CONFIG_CASES
    + EMBEDDED_CASES
    + BUILD_CASES
)
EXTRA_CASE_IDS = ["msu-build-agrees-with-corpus-info"]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


@pytest.fixture(scope="module")
def odd_corpus(tmp_path_factory):
    """An RTTM corpus with every odd thing at once: a good call with a NaN line, a duplicate line
    and a turn past the audio end; a one-speaker call; a call whose audio holds a NaN sample."""
    root = tmp_path_factory.mktemp("odd") / "calls"
    write_rttm_call(root)
    path = root / "call.rttm"
    path.write_text("\n".join(past_end(set_field(0, 3, "nan")(path.read_text().splitlines()))) + "\n")
    with path.open("a") as handle:
        handle.write(path.read_text().splitlines()[3] + "\n")
    write_rttm_call(root, name="solo", turns=[t for t in CALL_TURNS if t[0] == "A"])
    nan_audio_make(root.parent / "broken")  # writes broken/calls/broken.{wav,rttm,json}
    for name in ("broken.wav", "broken.rttm", "broken.json"):
        (root.parent / "broken" / "calls" / name).rename(root / name)
    return root


def test_msu_build_agrees_with_corpus_info(odd_corpus, tmp_path):
    """What corpus-info counts is what the build uses: the same segments, the same skips, and every
    window corpus-info says is not used is in the build's skipped segments (one build, shared)."""
    common = ["--corpus", "rttm", "--corpus-dir", odd_corpus, "--corpus-option", "language=en"]
    sets = ["--set", "min_segment_s=10", "--set", "languages=[en]"]
    info = run_cli("msu-bench", ["corpus-info", *common, *sets, "--json"])
    assert info.rc == 0, info.err
    stats = info.json()
    built = run_cli("msu-bench", ["build", *common, *sets, "--out", tmp_path / "out"])
    assert built.rc == 0 and "Traceback" not in built.err, built.err[-3000:]
    saved = json.loads((tmp_path / "out" / "build_info.json").read_text(encoding="utf-8"))
    assert saved["stats"]["segments"] == stats["totals"]["segments"] == 1
    # the build's stages on the console: each config generated, then the export (issue 23)
    assert re.search(r"msu-bench build: config 1/\d+ '\w+': rendering", built.err), built.err[-3000:]
    assert "msu-bench build: exporting" in built.err
    assert saved["plan"]["skipped_source"] == stats["skipped"]
    refused = [reason for row in stats["conversations"] for reason in row["no_segment_reasons"]]
    assert refused and set(refused) <= set(saved["plan"]["skipped_segments"])
    assert any("1 speaker(s) in the whole recording" in r for r in refused)
    assert any("audio contains NaN" in r for r in refused)
    kinds = " | ".join(s["reason"] for s in stats["skipped"])
    assert "not a finite number" in kinds and "duplicate of line" in kinds and "runs past the end" in kinds
