"""The embedded MSU conversations (rendered by ``tools/render_conversations.py``) as
:class:`~msu_bench.types.Conversation` objects with their full annotation.

A rendered copy (``--corpus embedded --corpus-dir D``: ``D/manifest.jsonl``) is checked as it is
read: a malformed record is a :class:`DataError` naming the manifest line, and a record whose
audio file is missing is kept without audio and counted as a skip (``audio missing``).
"""

from __future__ import annotations

import dataclasses
import logging
from functools import lru_cache
from pathlib import Path

from lalm_eval.errors import DataError
from lalm_eval.hub.readers import SkipLog
from lalm_eval.jsonl import iter_jsonl
from msu_bench.render import CONVERSATIONS_DIR
from msu_bench.types import Conversation, ReadReport, SpeakerInfo, Turn

log = logging.getLogger(__name__)
DATA_DIR = CONVERSATIONS_DIR / "data"
REQUIRED = ("id", "language", "speakers", "turns", "audio", "duration")
SPEAKER_FIELDS = ("gender", "age_group", "accent", "role", "social_role", "region", "expression", "culture")


def _turn_id(conv_id: str, index: int) -> str:
    return f"{conv_id}-t{index:04d}"


def _conversation(rec: dict, root: Path, where: str) -> Conversation:
    cid = rec["id"]
    speakers = {}
    for key, info in rec["speakers"].items():
        change = info.get("opinion_change")
        if change:
            change = {**change, "turn": _turn_id(cid, int(change["turn"]))}
        language = "yue" if str(info.get("accent", "")).startswith("Cantonese") else rec["language"]
        speakers[key] = SpeakerInfo(
            id=key,
            language=language,
            voice=info.get("voice_description"),
            opinion_change=change,
            **{f: info.get(f) for f in SPEAKER_FIELDS},
        )
    turns, latest_end = [], 0.0
    for t in rec["turns"]:
        i = int(t["index"])
        if t["speaker"] not in speakers:
            raise DataError(where, f"{cid} turn {i}: unknown speaker {t['speaker']!r}", field="speaker")
        pw = t.get("pause_within")
        turns.append(
            Turn(
                id=_turn_id(cid, i),
                speaker=t["speaker"],
                text=t["text"],
                start=float(t["start"]),
                end=float(t["end"]),
                emotion=t.get("emotion"),
                voice_quality=t.get("voice_quality"),
                act=t.get("act"),
                interrupts=_turn_id(cid, i - 1) if t.get("interrupts") else None,
                pause_before=round(max(0.0, float(t["start"]) - latest_end), 3),
                pause_within=(pw[0], float(pw[1])) if pw else None,
            )
        )
        latest_end = max(latest_end, float(t["end"]))
    meta = {
        k: rec.get(k)
        for k in (
            "title",
            "venue",
            "background",
            "formality",
            "relationship",
            "dominant_speaker",
            "outcome",
            "outcome_summary",
        )
    }
    meta["cause_links"] = [
        {**c, "cause_turn": _turn_id(cid, int(c["cause_turn"])), "effect_turn": _turn_id(cid, int(c["effect_turn"]))}
        for c in rec.get("cause_links", [])
    ]
    meta["motivations"] = [{**m, "turn": _turn_id(cid, int(m["turn"]))} for m in rec.get("motivations", [])]
    return Conversation(
        id=cid,
        language=rec["language"],
        source="embedded",
        audio=root / rec["audio"],
        duration=float(rec["duration"]),
        speakers=speakers,
        turns=turns,
        meta=meta,
        sampling_rate=int(rec.get("sampling_rate", 16000)),
    )


def read_manifest(path: Path) -> ReadReport:
    if not path.is_file():
        raise DataError(
            path,
            "manifest not found; render one with tools/render_conversations.py, or leave out --corpus-dir "
            "to use the packaged conversations",
        )
    conversations, skips = [], SkipLog(log, logging.DEBUG)  # listed in the report, not logged
    for lineno, rec in iter_jsonl(path, REQUIRED):
        try:
            conv = _conversation(rec, path.parent, f"{path}:{lineno}")
        except DataError:
            raise
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            what = " ".join(f"{type(exc).__name__}: {exc}".replace(";", ",").split())
            raise DataError(
                path,
                f"malformed conversation record ({what}); re-render it with tools/render_conversations.py",
                line=lineno,
            ) from None
        if not conv.audio.is_file():
            skips.add(f"{path}:{lineno}", f"audio missing ({rec['audio']})")
            conv = dataclasses.replace(conv, audio=None)
        conversations.append(conv)
    return ReadReport(conversations, skips=skips.items)


@lru_cache(maxsize=1)
def load_embedded_conversations() -> ReadReport:
    return read_manifest(DATA_DIR / "manifest.jsonl")
