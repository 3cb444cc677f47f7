"""Readers of the corpora MSU-Bench is built from, each returning a
:class:`~msu_bench.types.ReadReport` of :class:`~msu_bench.types.Conversation` objects, and their
registry: ``READERS.get(kind)(corpus_dir, **options)`` (:func:`read_corpus`; other packages add
readers through the entry-point group ``msu_bench.corpus_readers``).

=================  ===========================  ===============================================
kind               reader                       corpus
=================  ===========================  ===============================================
``embedded``       :func:`read_embedded`        the packaged conversations (or a rendered copy)
``alimeeting``     ``prepare_alimeeting``       AliMeeting far/near TextGrids (zh meetings)
``chime6``         ``prepare_chime6``           CHiME-6 / CHiME-5 JSON transcriptions (en)
``magicdata``      ``prepare_magicdata``        MagicData conversational ``TXT/`` + ``WAV/``
``rttm``           ``prepare_rttm``             audio + RTTM + per-turn transcript (any corpus)
=================  ===========================  ===============================================

Shared rules (implemented once, here): a conversation's turns are sorted by
``(start, end, speaker, text)`` and numbered ``<conversation id>-t0001``, ...; times are rounded
to microseconds; ``speakers`` holds the speakers who have turns, by first appearance;
``duration`` and ``sampling_rate`` come from ``soundfile.info`` of the audio; when the audio is
missing, ``duration`` is the last turn end, ``audio`` is ``None`` and the skip
``Skip(annotation file, "audio missing")`` is counted (an undecodable file likewise, as
``(audio file, "audio unreadable (...)")``). A conversation left with no turns is a counted
skip; a missing corpus folder, or one with nothing usable, raises :class:`DataError` naming it.

Turns are checked here too, whatever the reader: a time that is not a finite number (``nan``,
``inf``), a negative start or start >= end is a counted skip of that turn (``file:line`` where the
reader knows it), and so is a turn repeating an earlier one (same speaker, times and text). A turn that starts at or after the end of the audio is dropped, one that runs
past it (by more than 10 ms) is cut at the end; each is a counted skip saying so, so the
transcript never describes speech the audio does not hold.

Text files are read by :func:`read_text`: a UTF-8 / UTF-16 / UTF-32 byte-order mark picks its
encoding and is dropped (never left in a text); otherwise UTF-8, and a file that is not valid
UTF-8 is decoded as ``encoding`` (the readers' option, default ``utf-8``: no fallback). A file
that does not decode is a counted skip naming the option that reads it (``--corpus-option
encoding=gbk`` for the GBK files Chinese corpora often ship). ``language`` must be one MSU's
templates exist in (``en``, ``zh``).
"""

from __future__ import annotations

import difflib
import math
import re
from pathlib import Path

import soundfile as sf

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import Skip, SkipLog, require_corpus_dir
from lalm_eval.hub.readers import read_corpus as _read_with
from lalm_eval.registry import Registry
from msu_bench.types import Conversation, ReadReport, SpeakerInfo, Turn

READERS = Registry("MSU-Bench corpus reader", entry_point_group="msu_bench.corpus_readers")
READERS.register("embedded", "msu_bench.corpora:read_embedded")
for _kind in ("alimeeting", "chime6", "magicdata", "rttm"):
    READERS.register(_kind, f"msu_bench.corpora.{_kind}:prepare_{_kind}")


def read_corpus(kind: str, corpus_dir: str | None = None, options: dict | None = None) -> ReadReport:
    """The conversations of reader ``kind`` (a :class:`~lalm_eval.errors.ConfigError` naming
    ``--corpus`` and the known kinds when it is not one)."""
    if kind not in READERS:
        names = READERS.names()
        close = difflib.get_close_matches(str(kind), names, n=1)
        hint = f"did you mean --corpus {close[0]}? " if close else ""
        raise ConfigError(f"--corpus {kind}: not an MSU-Bench corpus reader; {hint}Available: {', '.join(names)}")
    return _read_with(READERS, kind, corpus_dir, options)


def read_embedded(corpus_dir=None) -> ReadReport:
    """The ``embedded`` reader: the packaged conversations, or a rendered copy's
    ``manifest.jsonl`` in ``corpus_dir``."""
    from msu_bench.embedded import load_embedded_conversations, read_manifest

    return read_manifest(Path(corpus_dir) / "manifest.jsonl") if corpus_dir else load_embedded_conversations()


#: ``[noise]``, ``[laughs]``, ``[inaudible 0:00:42.15]``, ``[*]``, ``[+]``, ``[MUSIC]``, ...
TAG = re.compile(r"\[[^\]]*\]")
GENDERS = {"f": "female", "female": "female", "女": "female", "m": "male", "male": "male", "男": "male"}
LANGUAGES = ("en", "zh")  # the languages MSU's templates and inference prompts exist in
END_TOLERANCE_S = 0.01  # a turn may end this much past the audio (rounding of the annotation)


def strip_tags(text: str) -> str:
    """Remove bracketed event tags (and any stray byte-order mark) and collapse whitespace."""
    return " ".join(TAG.sub(" ", text.replace("\ufeff", "")).split())


def normalize_gender(value) -> str | None:
    """``F``/``female``/``女`` -> ``"female"``, ``M``/``male``/``男`` -> ``"male"``, else ``None``."""
    return GENDERS.get(str(value).strip().lower()) if value is not None else None


def check_language(language, corpus: str) -> str:
    """``language`` if MSU-Bench has templates for it (en, zh), else a :class:`ConfigError`."""
    if language not in LANGUAGES:
        raise ConfigError(
            f"--corpus-option language: the {corpus} reader got {language!r}, but MSU-Bench's templates and "
            f"inference prompts exist in {', '.join(LANGUAGES)} only; give --corpus-option language=en or language=zh"
        )
    return language


def require_dir(path, corpus: str) -> Path:
    root = Path(require_corpus_dir(corpus.lower(), path)).expanduser().resolve()
    if not root.is_dir():
        raise DataError(root, f"{corpus} folder not found; check --corpus-dir")
    return root


def check_option(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ConfigError(
            f"--corpus-option {name}: {value!r} is not one of {', '.join(map(repr, allowed))}; "
            f"give e.g. --corpus-option {name}={allowed[0]}"
        )


def require_some(conversations: list, root: Path, corpus: str, what: str, skips: list[Skip] | None = None) -> None:
    """Raise :class:`DataError` when nothing was read, quoting the first skips (file: reason)."""
    if not conversations:
        why = " | ".join(f"{s.item}: {s.reason}" for s in (skips or [])[:3])
        more = f" (+{len(skips) - 3} more)" if skips and len(skips) > 3 else ""
        raise DataError(
            root,
            f"no usable {corpus} conversations found (expected {what}); "
            + (f"fix the skipped files, skipped: {why}{more}" if why else "put the corpus in that layout"),
        )


def _checked_turns(turns, annotation, skips: SkipLog) -> list[tuple]:
    """``(speaker, start, end, text, where)`` of the turns whose times are usable and that do not
    repeat an earlier turn (same speaker, times and text); the rest counted."""
    out, seen = [], {}
    for spk, s, e, text, *where in turns:
        item = where[0] if where else str(annotation)
        try:
            s, e = float(s), float(e)
        except (TypeError, ValueError):
            skips.add(item, f"turn of {spk}: time {s!r}-{e!r} is not a number")
            continue
        if not (math.isfinite(s) and math.isfinite(e)):
            skips.add(item, f"turn of {spk}: time {s}-{e} is not a finite number")
        elif s < 0:
            skips.add(item, f"turn of {spk}: start {s} is negative")
        elif s >= e:
            skips.add(item, f"turn of {spk}: start {s} >= end {e}")
        else:
            turn = (spk, round(s, 6), round(e, 6), text.replace("\ufeff", ""))
            if turn in seen:
                first = Path(seen[turn]).name  # "<file>:<line>", without the corpus's folders
                skips.add(item, f"duplicate turn: same speaker, times and text as {first}")
                continue
            seen[turn] = item
            out.append((*turn, item))
    return out


def _fit_to_audio(raw, duration: float, audio, skips: SkipLog) -> list[tuple]:
    """Drop the turns that start at or after the end of the audio, cut those that run past it."""
    name, out = Path(audio).name, []
    for spk, s, e, text, item in raw:
        if s >= duration - END_TOLERANCE_S:
            skips.add(
                item,
                f"turn of {spk} {s:.3f}-{e:.3f} s starts after the end of the audio ({name}, {duration:.3f} s)",
            )
        elif e > duration + END_TOLERANCE_S:
            skips.add(
                item,
                f"turn of {spk} {s:.3f}-{e:.3f} s runs past the end of the audio ({name}, {duration:.3f} s): "
                f"cut at {duration:.3f} s",
            )
            out.append((spk, s, round(duration, 6), text, item))
        else:
            out.append((spk, s, min(e, round(duration, 6)), text, item))
    return out


def make_conversation(
    cid: str,
    *,
    source: str,
    language: str,
    annotation,
    audio,
    turns,
    speakers: dict[str, SpeakerInfo],
    skips: SkipLog,
    meta: dict | None = None,
) -> Conversation | None:
    """Build one conversation from raw ``(speaker, start, end, text[, where])`` turns (``where``:
    the item a skip of that turn names, e.g. ``file:line``; default ``annotation``).

    ``annotation`` is the file skips are reported against; ``audio`` may be ``None`` or a path
    that does not exist (then the skip ``"audio missing"`` is counted). Returns ``None`` (and
    counts a skip) when no turn is left. Turns are checked and fitted to the audio (module doc).
    """
    raw = _checked_turns(turns, annotation, skips)
    duration, rate, path = (max(t[2] for t in raw) if raw else 0.0), 16_000, None
    if audio is not None and Path(audio).is_file():
        try:
            info = sf.info(str(audio))
            duration, rate, path = float(info.duration), int(info.samplerate), Path(audio).resolve()
        except (sf.LibsndfileError, RuntimeError) as exc:
            skips.add(str(audio), f"audio unreadable ({exc})")
    elif raw:
        skips.add(str(annotation), "audio missing")
    if path is not None:
        raw = _fit_to_audio(raw, duration, audio, skips)
    raw.sort(key=lambda t: (t[1], t[2], t[0], t[3]))
    if not raw:
        skips.add(str(annotation), "no usable turns")
        return None
    kept = [
        Turn(id=f"{cid}-t{i:04d}", speaker=spk, text=text, start=s, end=e)
        for i, (spk, s, e, text, _) in enumerate(raw, 1)
    ]
    order = list(dict.fromkeys(t.speaker for t in kept))
    infos = {spk: speakers.get(spk) or SpeakerInfo(id=spk, language=language) for spk in order}
    return Conversation(
        id=cid,
        language=language,
        source=source,
        audio=path,
        duration=duration,
        speakers=infos,
        turns=kept,
        meta=dict(meta or {}),
        sampling_rate=rate,
    )


# The readers import the helpers above, so they are imported after them.
from msu_bench.corpora.alimeeting import prepare_alimeeting  # noqa: E402
from msu_bench.corpora.chime6 import parse_clock, prepare_chime6  # noqa: E402
from msu_bench.corpora.magicdata import prepare_magicdata  # noqa: E402
from msu_bench.corpora.rttm import RttmReport, prepare_rttm  # noqa: E402

__all__ = [
    "READERS",
    "read_corpus",
    "read_embedded",
    "prepare_alimeeting",
    "prepare_chime6",
    "prepare_magicdata",
    "prepare_rttm",
    "parse_clock",
    "RttmReport",
    "Skip",
    "make_conversation",
    "strip_tags",
    "normalize_gender",
]
