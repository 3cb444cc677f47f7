"""Reader for AliMeeting (M2MeT, Yu et al., ICASSP 2022; https://www.openslr.org/119/), Mandarin
meetings of 2-4 speakers. Layout (as lhotse's ``prepare_ali_meeting`` reads it)::

    corpus_dir/{Train,Eval,Test}_Ali_{far,near}/audio_dir/*.wav
                                               /textgrid_dir/*.TextGrid

Eval and Test may sit one level deeper, in ``Eval_Ali/`` and ``Test_Ali/``; ``corpus_dir`` may
also be one ``*_Ali_{far,near}`` folder itself.

- far: one recording per session, ``R0015_M0151_MS002.wav`` (the 8-channel array; mixed down on
  load) with ``R0015_M0151.TextGrid`` holding one tier per speaker, named
  ``R0015_M0151_F_SPK1953`` or ``F_SPK1953`` (gender letter + speaker id). A tier whose name has
  no gender letter keeps its name as speaker id and no gender.
- near: one headset recording and TextGrid per speaker, ``R0003_M0046_F_SPK0093.{wav,TextGrid}``
  (speaker in the file name, every tier of that TextGrid is theirs). The TextGrids of a session
  are merged into one conversation; its ``audio`` is the headset file of the first speaker (by
  file name) and ``meta["near_audio"]`` maps each speaker whose file exists to it.

Speaker ids are the corpus ids (``SPK1953``), global across sessions; gender F/M ->
female/male. Conversation ids are ``alimeeting-<session>``; ``meta`` holds split, mic, session.

TextGrids are parsed with praatio (``praatio.utilities.textgrid_io.parseTextgridStr``: long,
short and JSON forms; UTF-8, UTF-16 or UTF-32 with a BOM, else the ``encoding`` option: real
AliMeeting TextGrids are UTF-8, but re-saved copies are often GBK, so ``encoding=gbk`` reads
those, and a file that does not decode is a counted skip naming that option). Its raw tier
entries are used, not praatio's validated ``Textgrid`` object, so that one bad interval costs
only itself: intervals with empty marks are dropped (silence, not a skip); within one tier an
interval whose times are not finite numbers, one with start >= end, or one that starts before
the previous kept interval ends, is skipped and counted. An unreadable TextGrid, or a near file
name without ``_<F|M>_<speaker>``, is a counted skip of that file; so is a near TextGrid whose
headset wav is missing (its speaker's turns are kept, without a ``near_audio`` entry). Turns past
the end of the audio are cut and counted (:func:`msu_bench.corpora.make_conversation`).
"""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from pathlib import Path

from praatio.utilities.constants import INTERVAL_TIER
from praatio.utilities.errors import PraatioException
from praatio.utilities.textgrid_io import parseTextgridStr

from lalm_eval.errors import DataError
from lalm_eval.hub.readers import SkipLog, check_encoding, read_text, unreadable_text
from msu_bench.corpora import (
    check_language,
    check_option,
    make_conversation,
    normalize_gender,
    require_dir,
    require_some,
)
from msu_bench.types import ReadReport, SpeakerInfo

log = logging.getLogger(__name__)

SPLITS = ("train", "eval", "test")
MICS = ("far", "near")
SPEAKER = re.compile(r"(?:^|_)(?P<gender>[FM])_(?P<speaker>SPK\w+)$")
NEAR_STEM = re.compile(r"^(?P<session>.+?)_(?P<gender>[FM])_(?P<speaker>SPK\w+)$")
PARSE_ERRORS = (OSError, UnicodeError, ValueError, IndexError, KeyError, TypeError, PraatioException)


def prepare_alimeeting(
    corpus_dir, split: str | None = None, mic: str = "far", language: str = "zh", encoding: str = "utf-8"
) -> ReadReport:
    """Read AliMeeting sessions of ``split`` (``train``/``eval``/``test``; all found when None)
    recorded by ``mic`` (``far`` or ``near``) into conversations."""
    check_option("mic", mic, MICS)
    if split is not None:
        split = str(split).lower()
        check_option("split", split, SPLITS)
    check_language(language, "alimeeting")
    encoding = check_encoding(encoding)
    root = require_dir(corpus_dir, "AliMeeting")
    conversations, skips = [], SkipLog(log, logging.DEBUG)  # listed in the report, not logged
    for part, folder in _split_dirs(root, split, mic):
        grids = sorted((folder / "textgrid_dir").rglob("*.TextGrid"))
        audio_dir = folder / "audio_dir"
        sessions = _far_sessions(grids) if mic == "far" else _near_sessions(grids, skips)
        for session, files in sessions.items():
            conv = _read_session(session, files, audio_dir, part, mic, language, skips, encoding)
            if conv is not None:
                conversations.append(conv)
    require_some(
        conversations, root, "AliMeeting", f"{{Train,Eval,Test}}_Ali_{mic}/textgrid_dir/*.TextGrid", skips=skips.items
    )
    return ReadReport(conversations, skips=skips.items)


def read_textgrid(path, encoding: str = "utf-8") -> list[tuple[str, list[tuple[float, float, str]]]]:
    """``(tier name, [(start, end, mark), ...])`` per interval tier, empty marks dropped.

    Raises praatio's or Python's parse errors (see ``PARSE_ERRORS``) on an unreadable file.
    """
    grid = parseTextgridStr(read_text(path, encoding), includeEmptyIntervals=False)
    return [
        (tier["name"], [(float(s), float(e), str(m).strip()) for s, e, m in tier["entries"] if str(m).strip()])
        for tier in grid["tiers"]
        if tier["class"] == INTERVAL_TIER
    ]


def _split_dirs(root: Path, split: str | None, mic: str) -> list[tuple[str, Path]]:
    if (root / "textgrid_dir").is_dir():  # corpus_dir is one *_Ali_{far,near} folder
        return [(root.name.split("_")[0].lower(), root)]
    found = []
    for name in SPLITS if split is None else (split,):
        part = name.capitalize()
        candidates = [root / f"{part}_Ali" / f"{part}_Ali_{mic}", root / f"{part}_Ali_{mic}"]
        folder = next((c for c in candidates if c.is_dir()), None)
        if folder is not None:
            found.append((name, folder))
        elif split is not None:
            raise DataError(
                candidates[-1],
                f"AliMeeting split folder not found (nor {candidates[0]}); "
                "check --corpus-dir, or leave out --corpus-option split to read every split found",
            )
    return found


def _far_sessions(grids: list[Path]) -> dict[str, list[tuple[Path, str | None, str | None]]]:
    return {grid.stem: [(grid, None, None)] for grid in grids}


def _near_sessions(grids: list[Path], skips: SkipLog) -> dict[str, list]:
    sessions = defaultdict(list)
    for grid in grids:
        match = NEAR_STEM.match(grid.stem)
        if match is None:
            skips.add(str(grid), "near file name has no _<F|M>_SPK<id> speaker part")
            continue
        sessions[match["session"]].append((grid, match["speaker"], match["gender"]))
    return dict(sessions)


def _read_session(
    session: str, files, audio_dir: Path, part: str, mic: str, language: str, skips: SkipLog, encoding: str = "utf-8"
):
    turns, speakers, near_audio, readable = [], {}, {}, 0
    for grid, file_speaker, file_gender in files:
        try:
            tiers = read_textgrid(grid, encoding)
        except PARSE_ERRORS as exc:
            skips.add(str(grid), unreadable_text("TextGrid", exc, encoding))
            continue
        readable += 1
        if file_speaker is not None:
            if (audio_dir / f"{grid.stem}.wav").is_file():
                near_audio[file_speaker] = audio_dir / f"{grid.stem}.wav"
            else:
                skips.add(
                    str(grid),
                    f"headset audio {grid.stem}.wav missing from audio_dir: speaker {file_speaker} has no "
                    "near_audio entry (their turns are kept)",
                )
        for name, intervals in tiers:
            speaker, gender = file_speaker, file_gender
            if speaker is None:
                match = SPEAKER.search(name)
                speaker, gender = (match["speaker"], match["gender"]) if match else (name, None)
            speakers.setdefault(speaker, SpeakerInfo(id=speaker, gender=normalize_gender(gender), language=language))
            turns += [
                (speaker, s, e, mark, f"{grid} tier {name!r}")
                for s, e, mark in _clean_tier(grid, name, intervals, skips)
            ]
    if not readable:
        return None  # every TextGrid of the session was unreadable: already counted
    meta = {"split": part, "mic": mic, "session": session}
    if mic == "far":
        audio = next(
            (
                p
                for p in sorted(audio_dir.glob(f"{session}*.wav"))
                if p.stem == session or p.stem.startswith(session + "_")
            ),
            None,
        )
    else:
        meta["near_audio"] = {spk: str(p.resolve()) for spk, p in sorted(near_audio.items())}
        audio = next(iter(near_audio.values()), None)
    return make_conversation(
        f"alimeeting-{session}",
        source="alimeeting",
        language=language,
        annotation=files[0][0],
        audio=audio,
        turns=turns,
        speakers=speakers,
        skips=skips,
        meta=meta,
    )


def _clean_tier(grid: Path, name: str, intervals, skips: SkipLog) -> list[tuple[float, float, str]]:
    """Drop (and count) intervals with times that are not finite numbers, start >= end, or
    overlapping the previous kept one."""
    kept, last_end = [], float("-inf")
    for start, end, _mark in intervals:
        if not (math.isfinite(start) and math.isfinite(end)):
            skips.add(str(grid), f"tier {name!r}: interval {start}-{end} has a time that is not a number")
    finite = [iv for iv in intervals if math.isfinite(iv[0]) and math.isfinite(iv[1])]
    for start, end, mark in sorted(finite):
        if end <= start:
            skips.add(str(grid), f"tier {name!r}: interval {start:.3f}-{end:.3f} has start >= end")
        elif start < last_end:
            skips.add(
                str(grid),
                f"tier {name!r}: interval {start:.3f}-{end:.3f} overlaps the previous interval (ends {last_end:.3f})",
            )
        else:
            kept.append((start, end, mark))
            last_end = end
    return kept
