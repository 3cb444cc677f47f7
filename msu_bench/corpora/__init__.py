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
"""

from __future__ import annotations

import re
from pathlib import Path

import soundfile as sf

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import Skip, require_corpus_dir
from lalm_eval.hub.readers import read_corpus as _read_with
from lalm_eval.registry import Registry
from msu_bench.types import Conversation, ReadReport, SpeakerInfo, Turn

READERS = Registry("MSU-Bench corpus reader", entry_point_group="msu_bench.corpus_readers")
READERS.register("embedded", "msu_bench.corpora:read_embedded")
for _kind in ("alimeeting", "chime6", "magicdata", "rttm"):
    READERS.register(_kind, f"msu_bench.corpora.{_kind}:prepare_{_kind}")


def read_corpus(kind: str, corpus_dir: str | None = None, options: dict | None = None) -> ReadReport:
    """The conversations of reader ``kind`` (a :class:`~lalm_eval.errors.ConfigError` names the
    known kinds when it is not one)."""
    return _read_with(READERS, kind, corpus_dir, options)


def read_embedded(corpus_dir=None) -> ReadReport:
    """The ``embedded`` reader: the packaged conversations, or a rendered copy's
    ``manifest.jsonl`` in ``corpus_dir``."""
    from msu_bench.embedded import load_embedded_conversations, read_manifest

    return read_manifest(Path(corpus_dir) / "manifest.jsonl") if corpus_dir else load_embedded_conversations()


#: ``[noise]``, ``[laughs]``, ``[inaudible 0:00:42.15]``, ``[*]``, ``[+]``, ``[MUSIC]``, ...
TAG = re.compile(r"\[[^\]]*\]")
GENDERS = {"f": "female", "female": "female", "女": "female", "m": "male", "male": "male", "男": "male"}


def strip_tags(text: str) -> str:
    """Remove bracketed event tags and collapse whitespace."""
    return " ".join(TAG.sub(" ", text).split())


def normalize_gender(value) -> str | None:
    """``F``/``female``/``女`` -> ``"female"``, ``M``/``male``/``男`` -> ``"male"``, else ``None``."""
    return GENDERS.get(str(value).strip().lower()) if value is not None else None


def require_dir(path, corpus: str) -> Path:
    root = Path(require_corpus_dir(corpus.lower(), path)).expanduser().resolve()
    if not root.is_dir():
        raise DataError(root, f"{corpus} folder not found")
    return root


def check_option(name: str, value, allowed) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r} is not one of {', '.join(map(repr, allowed))}")


def require_some(conversations: list, root: Path, corpus: str, what: str, skipped: list[Skip] | None = None) -> None:
    """Raise :class:`DataError` when nothing was read, quoting the first skips (file: reason)."""
    if not conversations:
        why = "; ".join(f"{f}: {r}" for f, r in (skipped or [])[:3])
        more = f" (+{len(skipped) - 3} more)" if skipped and len(skipped) > 3 else ""
        raise DataError(
            root,
            f"no usable {corpus} conversations found (expected {what})" + (f"; skipped: {why}{more}" if why else ""),
        )


def make_conversation(
    cid: str,
    *,
    source: str,
    language: str,
    annotation,
    audio,
    turns,
    speakers: dict[str, SpeakerInfo],
    skipped: list[Skip],
    meta: dict | None = None,
) -> Conversation | None:
    """Build one conversation from raw ``(speaker, start, end, text)`` turns.

    ``annotation`` is the file skips are reported against; ``audio`` may be ``None`` or a path
    that does not exist (then the skip ``"audio missing"`` is counted). Returns ``None`` (and
    counts a skip) when no turn is left.
    """
    raw = [(spk, round(float(s), 6), round(float(e), 6), text) for spk, s, e, text in turns]
    raw.sort(key=lambda t: (t[1], t[2], t[0], t[3]))
    if not raw:
        skipped.append(Skip(str(annotation), "no usable turns"))
        return None
    kept = [
        Turn(id=f"{cid}-t{i:04d}", speaker=spk, text=text, start=s, end=e) for i, (spk, s, e, text) in enumerate(raw, 1)
    ]
    order = list(dict.fromkeys(t.speaker for t in kept))
    infos = {spk: speakers.get(spk) or SpeakerInfo(id=spk, language=language) for spk in order}
    duration, rate, path = max(t.end for t in kept), 16_000, None
    if audio is not None and Path(audio).is_file():
        try:
            info = sf.info(str(audio))
            duration, rate, path = float(info.duration), int(info.samplerate), Path(audio).resolve()
        except (sf.LibsndfileError, RuntimeError) as exc:
            skipped.append(Skip(str(audio), f"audio unreadable ({exc})"))
    else:
        skipped.append(Skip(str(annotation), "audio missing"))
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
