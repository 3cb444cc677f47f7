"""Generic reader: audio + RTTM speaker turns + a transcript per turn. MSU's film clips have no
public layout, so they (and any user corpus) are read in this form::

    corpus_dir/**/<name>.rttm   SPEAKER <file> <chan> <start> <dur> <NA> <NA> <speaker> <NA> <NA>
              /**/<name>.wav    (or .flac / .ogg / .opus) beside it
              /**/<name>.json   [{"start": s, "end": s, "speaker": "...", "text": "..."}, ...]
              /**/<name>.csv    or a CSV with a header row: start,end,speaker,text

RTTM lines of other types (``SPKR-INFO``, ...), comments and blank lines are ignored. One
recording per RTTM: the recording is the ``<file>`` id equal to the RTTM's name (else the first
one in it), and a SPEAKER line of another ``<file>`` id is a counted skip (a corpus-wide RTTM is
never merged into one conversation: split it per recording). A SPEAKER line with too few fields, a
start or duration that is not a finite number (``nan``, ``inf``), a negative start or a duration
<= 0 is a counted skip (file:line); so is a line repeating an earlier one (same speaker, start
and duration: "duplicate of line N"). A segment running past the end of the audio is cut there
and counted (:func:`msu_bench.corpora.make_conversation`). Transcript rows whose times are not
finite numbers with start < end are counted skips too.

Matching rule: the RTTM segments are the turns (their times and speaker labels are kept; the
transcript must use the same speaker labels). Each transcript turn goes to the RTTM segment of
the same speaker that overlaps it longest in time (ties: the earlier segment); several texts
landing in one segment are joined in time order (with a space; without one for ``zh``). A
transcript turn overlapping no segment of its speaker is a counted skip. A segment that gets
no text keeps ``text=""``: it is not a skip, it is listed in :attr:`RttmReport.untranscribed`
and counted per conversation in ``meta["untranscribed"]``. With no transcript file at all,
every segment is untranscribed.

Speaker labels: the transcript's labels are checked against the RTTM's, per recording. When
they share none (e.g. the RTTM says ``spk0``/``spk1`` and the transcript ``Alice``/``Bob``), the
recording is a counted skip whose reason lists both label sets; when only some differ, each
transcript turn of an unknown label is a counted skip naming it. ``speaker_map`` maps them:
a YAML file ``{transcript label: RTTM label}`` (applied to every recording), or ``overlap``:
each transcript label goes to the RTTM label it overlaps longest in time (one to one, largest
overlap first; the mapping used is kept in ``meta["speaker_map"]`` and
:attr:`RttmReport.speaker_maps`).

Conversation ids are ``<source>-<name>`` (``<name>`` is the path under ``corpus_dir`` without
suffix, ``/`` -> ``-``); ``language`` must be given (it cannot be known from these files).
Text files are UTF-8 unless ``encoding`` says otherwise (a byte-order mark always wins).
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import logging
import math
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import SkipLog, check_encoding, read_text, unreadable_text
from msu_bench.corpora import (
    LANGUAGES,
    check_language,
    make_conversation,
    require_dir,
    require_some,
)
from msu_bench.types import ReadReport

AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".opus")
log = logging.getLogger(__name__)


@dataclasses.dataclass
class RttmReport(ReadReport):
    """A :class:`ReadReport` that also lists the RTTM segments left without text (kept)."""

    untranscribed: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (file, segment)
    #: RTTM file -> {transcript label: RTTM label} applied (``speaker_map`` given)
    speaker_maps: dict[str, dict[str, str]] = dataclasses.field(default_factory=dict)

    @property
    def n_untranscribed(self) -> int:
        return len(self.untranscribed)


def prepare_rttm(
    corpus_dir,
    language: str | None = None,
    source: str = "rttm",
    speaker_map: str | None = None,
    encoding: str = "utf-8",
) -> RttmReport:
    """Read every ``<name>.rttm`` under ``corpus_dir`` with its audio and transcript."""
    root = require_dir(corpus_dir, "RTTM")
    if language is None:
        raise ConfigError(
            "--corpus-option language: the rttm reader needs the recordings' language, which these files "
            f"do not say; add --corpus-option language=en (or one of {', '.join(LANGUAGES)})"
        )
    check_language(language, "rttm")
    encoding = check_encoding(encoding)
    fixed = _load_speaker_map(speaker_map, root) if speaker_map not in (None, "overlap") else None
    report, skips = RttmReport([]), SkipLog(log, logging.DEBUG)  # listed in the report; a mismatch also logged
    for rttm in sorted(root.rglob("*.rttm")):
        name = rttm.relative_to(root).with_suffix("").as_posix().replace("/", "-")
        segments = _read_rttm(rttm, skips, encoding)
        transcript = _read_transcript(rttm, skips, encoding)
        mapping = _overlap_map(segments, transcript) if speaker_map == "overlap" else fixed
        if mapping:
            transcript = [(mapping.get(spk, spk), *rest) for spk, *rest in transcript]
            used = {k: v for k, v in mapping.items() if any(t[0] == v for t in transcript)}
            report.speaker_maps[str(rttm)] = used
        mismatch = _label_mismatch(rttm, segments, transcript)
        if mismatch:
            skips.add(rttm, mismatch, level=logging.WARNING)
            continue
        texts = _assign(segments, transcript, skips, language)
        turns, missing = [], 0
        for i, (speaker, start, end, where) in enumerate(segments):
            turns.append((speaker, start, end, texts.get(i, ""), where))
            if i not in texts:
                missing += 1
                report.untranscribed.append((str(rttm), f"{speaker} {start:.3f}-{end:.3f}"))
        audio = next(
            (p for p in (rttm.with_suffix(s) for s in AUDIO_SUFFIXES) if p.is_file()), rttm.with_suffix(".wav")
        )
        meta = {"untranscribed": missing, **({"speaker_map": report.speaker_maps[str(rttm)]} if mapping else {})}
        conv = make_conversation(
            f"{source}-{name}",
            source=source,
            language=language,
            annotation=rttm,
            audio=audio,
            turns=turns,
            speakers={},
            skips=skips,
            meta=meta,
        )
        if conv is not None:
            report.conversations.append(conv)
    report.skips = skips.items
    require_some(report.conversations, root, "RTTM", "<name>.rttm + <name>.wav + <name>.json|.csv", skips=skips.items)
    return report


def _load_speaker_map(value, root: Path) -> dict[str, str]:
    """``{transcript label: RTTM label}`` from a YAML file (relative paths: to ``corpus_dir`` first)."""
    path = Path(str(value)).expanduser()
    if not path.is_absolute() and not path.is_file() and (root / path).is_file():
        path = root / path
    if not path.is_file():
        raise ConfigError(
            f"--corpus-option speaker_map: no such file {str(value)!r}; give a YAML file of "
            "'transcript label: RTTM label' lines (a relative path is looked up in --corpus-dir first), "
            "or speaker_map=overlap"
        )
    try:
        doc = yaml.safe_load(read_text(path))
    except (OSError, UnicodeError, yaml.YAMLError) as exc:
        what = " ".join(str(exc).replace(";", ",").split())
        raise DataError(
            path, f"cannot read the speaker map ({what}); write it as UTF-8 YAML, e.g. 'Alice: spk0'"
        ) from None
    if not isinstance(doc, dict) or not doc or any(isinstance(v, (dict, list)) or v is None for v in doc.values()):
        raise DataError(
            path, "must map each transcript speaker label to an RTTM label; write lines such as 'Alice: spk0'"
        )
    return {str(k): str(v) for k, v in doc.items()}


def _overlap_map(segments, transcript) -> dict[str, str]:
    """Transcript label -> the RTTM label it overlaps longest (one to one, largest overlap first)."""
    overlap: dict[tuple[str, str], float] = {}
    for spk, start, end, _text, _where in transcript:
        for seg_spk, seg_start, seg_end, _line in segments:
            shared = min(end, seg_end) - max(start, seg_start)
            if shared > 0:
                overlap[spk, seg_spk] = overlap.get((spk, seg_spk), 0.0) + shared
    mapping, used = {}, set()
    for (spk, seg_spk), _ in sorted(overlap.items(), key=lambda kv: (-kv[1], kv[0])):
        if spk not in mapping and seg_spk not in used:
            mapping[spk] = seg_spk
            used.add(seg_spk)
    return mapping


def _label_mismatch(rttm: Path, segments, transcript) -> str | None:
    """The skip reason of a recording whose transcript labels share none of the RTTM's."""
    rttm_labels = sorted({s[0] for s in segments})
    text_labels = sorted({t[0] for t in transcript})
    if not segments or not transcript or set(text_labels) & set(rttm_labels):
        return None
    return (
        f"speaker labels differ: transcript {text_labels} vs RTTM {rttm_labels}, so no transcript turn "
        "can be matched; map them with --corpus-option speaker_map=FILE.yaml ('transcript label: RTTM "
        "label' lines) or speaker_map=overlap"
    )


def _number(text: str, name: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{name} {text!r} is not a finite number")
    return value


def _read_rttm(path: Path, skips: SkipLog, encoding: str = "utf-8") -> list[tuple[str, float, float, str]]:
    """``(speaker, start, end, "file:line")`` of every usable SPEAKER line (module doc)."""
    try:
        lines = read_text(path, encoding).splitlines()
    except (OSError, UnicodeError) as exc:
        skips.add(str(path), unreadable_text("RTTM", exc, encoding))
        return []
    segments, seen = [], {}
    ids = [f[1] for f in (line.split() for line in lines) if len(f) > 1 and f[0] == "SPEAKER"]
    recording = path.stem if path.stem in ids else (ids[0] if ids else path.stem)
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields or fields[0] != "SPEAKER":
            continue
        if len(fields) > 1 and fields[1] != recording:
            skips.add(
                f"{path}:{number}",
                f"line of recording {fields[1]!r}, but this RTTM is read as recording {recording!r} "
                f"(one recording per .rttm file, beside its audio): split the RTTM per recording",
            )
            continue
        try:
            if len(fields) < 8:
                raise ValueError(f"{len(fields)} fields, expected 10")
            start, duration = _number(fields[3], "start"), _number(fields[4], "duration")
            if start < 0:
                raise ValueError(f"start {start} is negative")
            if duration <= 0:
                raise ValueError(f"duration {duration} <= 0")
        except ValueError as exc:
            skips.add(f"{path}:{number}", f"bad SPEAKER line ({exc})")
            continue
        key = (fields[7], start, duration)
        if key in seen:
            skips.add(f"{path}:{number}", f"duplicate of line {seen[key]} ({fields[7]} {start} {duration})")
            continue
        seen[key] = number
        segments.append((fields[7], start, start + duration, f"{path}:{number}"))
    return sorted(segments, key=lambda s: (s[1], s[2], s[0]))


def _read_transcript(rttm: Path, skips: SkipLog, encoding: str = "utf-8") -> list[tuple[str, float, float, str, str]]:
    """``(speaker, start, end, text, where)`` rows of ``<name>.json`` or ``<name>.csv`` (none: [])."""
    path = next((p for p in (rttm.with_suffix(".json"), rttm.with_suffix(".csv")) if p.is_file()), None)
    if path is None:
        return []
    try:
        text = read_text(path, encoding)
        if path.suffix == ".json":
            doc = json.loads(text)
            if not isinstance(doc, list):
                raise ValueError(f"expected a JSON list of turns, found a {type(doc).__name__}")
            rows = [(f"{path}:entry {i}", r) for i, r in enumerate(doc, 1)]
        else:
            reader = csv.DictReader(io.StringIO(text, newline=""))
            rows = [(f"{path}:{reader.line_num}", r) for r in reader]
    except (OSError, UnicodeError, ValueError, TypeError, csv.Error) as exc:
        skips.add(str(path), unreadable_text("transcript", exc, encoding))
        return []
    turns = []
    for where, row in rows:
        try:
            turn = (
                str(row["speaker"]).strip(),
                _number(row["start"], "start"),
                _number(row["end"], "end"),
                str(row.get("text") or "").strip(),
                where,
            )
            if turn[1] >= turn[2]:
                raise ValueError(f"start {turn[1]} >= end {turn[2]}")
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            skips.add(where, f"bad transcript row ({type(exc).__name__}: {exc})")
            continue
        if turn[3]:
            turns.append(turn)
    return turns


def _assign(segments, transcript, skips: SkipLog, language: str) -> dict[int, str]:
    """Segment index -> joined text of the transcript turns matched to it (see module doc)."""
    matched: dict[int, list] = {}
    for speaker, start, end, text, where in sorted(transcript, key=lambda t: (t[1], t[2], t[0])):
        best, best_overlap = None, 0.0
        for i, (seg_speaker, seg_start, seg_end, _line) in enumerate(segments):
            overlap = min(end, seg_end) - max(start, seg_start)
            if seg_speaker == speaker and overlap > best_overlap:
                best, best_overlap = i, overlap
        if best is None:
            labels = sorted({s[0] for s in segments})
            why = (
                f"speaker {speaker!r} is not an RTTM label ({', '.join(labels)}; see speaker_map)"
                if speaker not in labels
                else "overlaps no RTTM segment of its speaker"
            )
            skips.add(where, f"transcript turn {start:.3f}-{end:.3f} {text[:30]!r} {why}")
            continue
        matched.setdefault(best, []).append(text)
    glue = "" if language == "zh" else " "
    return {i: glue.join(texts) for i, texts in matched.items()}
