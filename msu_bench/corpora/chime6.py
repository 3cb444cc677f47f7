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
segment with start >= end, a missing field or an unparsable time is a counted skip.

Audio (``mic``): a conversation points at one file holding every speaker.
``mic="array"``: channel 1 of the reference array (the most frequent ``ref`` of the session's
segments, in dev/eval) or else of the first array by name. ``mic="close"``: the close-talk files
are one per participant, so ``meta["close_talk"]`` maps each speaker to theirs and ``audio``
is that same array channel when one is present, else the first speaker's close-talk file.

Speaker ids are the corpus ids (``P05``; global across sessions); CHiME gives no gender.
Conversation ids are ``chime6-<session>``; ``meta`` holds split and mic.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from lalm_eval.errors import DataError
from lalm_eval.hub.readers import Skip
from msu_bench.corpora import check_option, make_conversation, require_dir, require_some, strip_tags
from msu_bench.types import ReadReport, SpeakerInfo

SPLITS = ("train", "dev", "eval")
MICS = ("close", "array")


def parse_clock(value) -> float:
    """``"1:02:03.50"`` -> 3723.5; also ``MM:SS.ss``, plain seconds, numbers, and CHiME-5
    ``{"original": "..."}`` dicts. Raises ``ValueError`` on anything else."""
    if isinstance(value, dict):
        if "original" not in value:
            raise ValueError(f"time dict without 'original': {value!r}")
        value = value["original"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"not a time: {value!r}")
    parts = value.strip().split(":")
    if len(parts) > 3 or any(not p.strip() for p in parts):
        raise ValueError(f"not a H:MM:SS.ss time: {value!r}")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + float(part)
    return seconds


def prepare_chime6(corpus_dir, split: str | None = None, mic: str = "close", language: str = "en") -> ReadReport:
    """Read CHiME-6 sessions of ``split`` (``train``/``dev``/``eval``; all found when None)."""
    check_option("mic", mic, MICS)
    if split is not None:
        check_option("split", split, SPLITS)
    root = require_dir(corpus_dir, "CHiME-6")
    trans = root / "transcriptions"
    if split is not None and not (trans / split).is_dir():
        raise DataError(trans / split, "CHiME-6 transcription folder not found")
    conversations, skipped = [], []
    for part in SPLITS if split is None else (split,):
        for path in sorted((trans / part).glob("*.json")):
            conv = _read_session(path, root / "audio" / part, part, mic, language, skipped)
            if conv is not None:
                conversations.append(conv)
    require_some(conversations, root, "CHiME-6", "transcriptions/{train,dev,eval}/S*.json")
    return ReadReport(conversations, skips=skipped)


def _read_session(path: Path, audio_dir: Path, part: str, mic: str, language: str, skipped: list):
    session = path.stem
    try:
        segments = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(segments, list):
            raise ValueError("expected a list of segments")
    except (OSError, UnicodeError, ValueError) as exc:
        skipped.append(Skip(str(path), f"unreadable transcription ({exc})"))
        return None
    turns, refs = [], Counter()
    for i, seg in enumerate(segments):
        try:
            speaker = str(seg["speaker"])
            start, end = parse_clock(seg["start_time"]), parse_clock(seg["end_time"])
            words = seg.get("words", "")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            skipped.append(Skip(str(path), f"segment {i}: unreadable ({type(exc).__name__}: {exc})"))
            continue
        if start >= end:
            skipped.append(Skip(str(path), f"segment {i}: start {start:.2f} >= end {end:.2f}"))
            continue
        text = strip_tags(str(words or ""))
        if text:
            turns.append((speaker, start, end, text))
            if seg.get("ref"):
                refs[str(seg["ref"])] += 1
    speakers = {spk: SpeakerInfo(id=spk, language=language) for spk, *_ in turns}
    array = _array_channel(audio_dir, session, refs)
    meta = {"split": part, "mic": mic, "session": session}
    audio = array
    if mic == "close":
        close = {spk: audio_dir / f"{session}_{spk}.wav" for spk in sorted(speakers)}
        meta["close_talk"] = {spk: str(p.resolve()) for spk, p in close.items() if p.is_file()}
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
        skipped=skipped,
        meta=meta,
    )


def _array_channel(audio_dir: Path, session: str, refs: Counter) -> Path | None:
    """Channel 1 of the most frequent reference array, else of the first array present."""
    preferred = [ref for ref, _ in sorted(refs.items(), key=lambda kv: (-kv[1], kv[0]))]
    found = sorted(audio_dir.glob(f"{session}_U*.CH1.wav"))
    for ref in preferred:
        path = audio_dir / f"{session}_{ref}.CH1.wav"
        if path.is_file():
            return path
    return found[0] if found else None
