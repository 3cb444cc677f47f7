"""Reader for CHiME-6 (Watanabe et al., 2020; https://chimechallenge.github.io/chime6/), English
dinner parties of four participants, and for the unsynchronised CHiME-5 transcriptions.
Layout (as lhotse's ``prepare_chime6`` reads it)::

    corpus_dir/transcriptions/{train,dev,eval}/S02.json
    corpus_dir/audio/{train,dev,eval}/S02_P05.wav        close-talk (binaural) per participant
                                     /S02_U01.CH1.wav    array U01..U06, channels CH1..CH4

A transcription is a list of segments ``{"speaker": "P05", "start_time": "0:00:40.60",
"end_time": "0:00:43.82", "words": "...", "ref": "U02", "location": "kitchen", ...}``; times
are ``H:MM:SS.ss`` strings, or (CHiME-5) dicts whose ``"original"`` entry is used. Bracketed tags
(``[noise]``, ``[laughs]``, ``[inaudible 0:00:42.15]``, ``[redacted]``) are stripped from
``words``; a segment left with no words is dropped uncounted (it is an event, not speech). A
segment with start >= end, a missing field, ``words`` that are not text, or a time that is
unparsable, negative or not a finite number (``nan``) is a counted skip. The JSON may start with
a byte-order mark (dropped); it is UTF-8 unless ``encoding`` says otherwise.

Audio (``mic``): a conversation points at one file holding every speaker.
``mic="array"``: channel 1 of the reference array (the most frequent ``ref`` of the session's
segments, in dev/eval) or else of the first array by name; when no array has a ``CH1`` file, the
lowest channel present (reference array first) is used and ``meta["array_channel"]`` names it.
``mic="close"``: the close-talk files are one per participant, so ``meta["close_talk"]`` maps
each speaker to theirs, and a speaker whose ``<session>_<speaker>.wav`` is missing is a counted
skip (their turns are kept); ``audio`` is that same array channel when one is present, else the
first speaker's close-talk file. Turns past the end of the audio are cut and counted
(:func:`msu_bench.corpora.make_conversation`).

Speaker ids are the corpus ids (``P05``; global across sessions); CHiME gives no gender.
Conversation ids are ``chime6-<session>``; ``meta`` holds split and mic.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections import Counter
from pathlib import Path

from lalm_eval.errors import DataError
from lalm_eval.hub.readers import SkipLog, check_encoding, read_text, unreadable_text
from msu_bench.corpora import (
    check_language,
    check_option,
    make_conversation,
    require_dir,
    require_some,
    strip_tags,
)
from msu_bench.types import ReadReport, SpeakerInfo

log = logging.getLogger(__name__)

SPLITS = ("train", "dev", "eval")
MICS = ("close", "array")
CLOCK_PART = re.compile(r"\d+(?:\.\d*)?|\.\d+")  # digits only: no sign, no nan / inf


def parse_clock(value) -> float:
    """``"1:02:03.50"`` -> 3723.5; also ``MM:SS.ss``, plain seconds, numbers, and CHiME-5
    ``{"original": "..."}`` dicts. Raises ``ValueError`` on anything else (negative times,
    ``nan`` and ``inf`` included)."""
    if isinstance(value, dict):
        if "original" not in value:
            raise ValueError(f"time dict without 'original': {value!r}")
        value = value["original"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"not a time: {value!r}")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"not a time: {value!r}")
    parts = value.strip().split(":")
    if len(parts) > 3 or not all(CLOCK_PART.fullmatch(p.strip()) for p in parts):
        raise ValueError(f"not a H:MM:SS.ss time: {value!r}")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + float(part)
    if not math.isfinite(seconds):
        raise ValueError(f"not a finite time: {value!r}")
    return seconds


def prepare_chime6(
    corpus_dir, split: str | None = None, mic: str = "close", language: str = "en", encoding: str = "utf-8"
) -> ReadReport:
    """Read CHiME-6 sessions of ``split`` (``train``/``dev``/``eval``; all found when None)."""
    check_option("mic", mic, MICS)
    if split is not None:
        check_option("split", split, SPLITS)
    check_language(language, "chime6")
    encoding = check_encoding(encoding)
    root = require_dir(corpus_dir, "CHiME-6")
    trans = root / "transcriptions"
    if split is not None and not (trans / split).is_dir():
        raise DataError(
            trans / split,
            "CHiME-6 transcription folder not found; check --corpus-dir, or leave out --corpus-option split "
            "to read every split found",
        )
    conversations, skips = [], SkipLog(log, logging.DEBUG)  # listed in the report, not logged
    for part in SPLITS if split is None else (split,):
        for path in sorted((trans / part).glob("*.json")):
            conv = _read_session(path, root / "audio" / part, part, mic, language, skips, encoding)
            if conv is not None:
                conversations.append(conv)
    require_some(conversations, root, "CHiME-6", "transcriptions/{train,dev,eval}/S*.json", skips=skips.items)
    return ReadReport(conversations, skips=skips.items)


def _read_session(
    path: Path, audio_dir: Path, part: str, mic: str, language: str, skips: SkipLog, encoding: str = "utf-8"
):
    session = path.stem
    try:
        segments = json.loads(read_text(path, encoding))
        if not isinstance(segments, list):
            raise ValueError(f"expected a JSON list of segments, found a {type(segments).__name__}")
    except (OSError, UnicodeError, ValueError) as exc:
        skips.add(str(path), unreadable_text("transcription", exc, encoding))
        return None
    turns, refs = [], Counter()
    for i, seg in enumerate(segments):
        where = f"{path}:segment {i}"
        try:
            speaker = str(seg["speaker"])
            start, end = parse_clock(seg["start_time"]), parse_clock(seg["end_time"])
            words = seg.get("words", "")
            if words is not None and not isinstance(words, str):
                raise TypeError(f"words is a {type(words).__name__}, not text")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            skips.add(str(path), f"segment {i}: unreadable ({type(exc).__name__}: {exc})")
            continue
        if start >= end:
            skips.add(str(path), f"segment {i}: start {start:.2f} >= end {end:.2f}")
            continue
        text = strip_tags(str(words or ""))
        if text:
            turns.append((speaker, start, end, text, where))
            if seg.get("ref"):
                refs[str(seg["ref"])] += 1
    speakers = {spk: SpeakerInfo(id=spk, language=language) for spk, *_ in turns}
    array, channel = _array_channel(audio_dir, session, refs)
    meta = {"split": part, "mic": mic, "session": session}
    if channel:
        meta["array_channel"] = channel
    audio = array
    if mic == "close":
        close = {spk: audio_dir / f"{session}_{spk}.wav" for spk in sorted(speakers)}
        meta["close_talk"] = {spk: str(p.resolve()) for spk, p in close.items() if p.is_file()}
        for spk, p in close.items():
            if spk not in meta["close_talk"]:
                skips.add(str(path), f"close-talk audio {p.name} of speaker {spk} missing (their turns are kept)")
        if audio is None and meta["close_talk"]:
            audio = Path(next(iter(meta["close_talk"].values())))
    return make_conversation(
        f"chime6-{session}",
        source="chime6",
        language=language,
        annotation=path,
        audio=audio,
        turns=turns,
        speakers=speakers,
        skips=skips,
        meta=meta,
    )


def _array_channel(audio_dir: Path, session: str, refs: Counter) -> tuple[Path | None, str | None]:
    """Channel 1 of the most frequent reference array, else of the first array present; with no
    ``CH1`` file at all, the lowest channel present (reference array first). Returns the file and,
    when it is not a ``CH1``, its ``U..CH..`` name."""
    preferred = [ref for ref, _ in sorted(refs.items(), key=lambda kv: (-kv[1], kv[0]))]
    found = sorted(audio_dir.glob(f"{session}_U*.CH1.wav"))
    for ref in preferred:
        path = audio_dir / f"{session}_{ref}.CH1.wav"
        if path.is_file():
            return path, None
    if found:
        return found[0], None
    channels = []
    for p in audio_dir.glob(f"{session}_U*.CH*.wav"):
        m = re.fullmatch(rf"{re.escape(session)}_(U\w+)\.CH(\d+)", p.stem)
        if m:
            array = m[1]
            channels.append(
                (array not in preferred, preferred.index(array) if array in preferred else 0, array, int(m[2]), p)
            )
    if not channels:
        return None, None
    *_, array, number, path = min(channels)
    return path, f"{array}.CH{number}"
