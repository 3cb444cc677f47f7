"""The embedded speech corpus that ships inside the package.

Authored text lives in ``source/`` (``subjects_*.yaml`` with PALM Table 11 profiles,
``negatives.yaml``, ``voices.yaml``); ``tools/render_corpus.py`` renders it into ``data/``:
Ogg/Opus clips plus ``manifest.jsonl`` (one utterance a line) and ``render_info.json``.
Nothing here needs a TTS engine: the rendered files are part of the package.

``load_embedded_corpus()`` validates the manifest against the speakers and returns a
:class:`Corpus`; audio is decoded lazily (``Utterance.load_audio``), each error naming the file,
line and field.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import yaml

from lalm_eval.errors import DataError
from lalm_eval.hub.readers import read_text
from lalm_eval.jsonl import iter_jsonl
from palm_bench.corpus.types import Corpus, Speaker, Utterance

PACKAGE_DIR = Path(__file__).resolve().parent
SOURCE_DIR = PACKAGE_DIR / "source"
DATA_DIR = PACKAGE_DIR / "data"

MANIFEST_FIELDS = ("id", "speaker", "language", "text", "duration", "audio", "sampling_rate", "voice")
PROFILE_FIELDS = ("age", "occupation", "personality", "interests", "speaking_style", "intro")
INTEREST_FIELDS = ("movie", "music", "hobby", "food", "books", "pet", "sports", "academic", "tech")
ROLES = ("subject", "negative")


def _require(mapping: dict, fields, file, where: str, line: int | None = None) -> None:
    if not isinstance(mapping, dict):
        raise DataError(
            file,
            f"{where} must be a mapping, got {type(mapping).__name__}; give its fields ({', '.join(fields)})",
            line=line,
        )
    for field in fields:
        if field not in mapping or mapping[field] in (None, ""):
            raise DataError(file, f"{where}.{field} has no value; add it", field=field, line=line)


def load_speakers(source_dir: Path = SOURCE_DIR) -> dict[str, Speaker]:
    """Read ``subjects_*.yaml`` and ``negatives.yaml``, validating every required field."""
    speakers: dict[str, Speaker] = {}
    files = sorted(source_dir.glob("subjects_*.yaml")) + [source_dir / "negatives.yaml"]
    for file in files:
        if not file.is_file():
            raise DataError(
                file, "speaker file not found; an embedded layout needs source/subjects_*.yaml and negatives.yaml"
            )
        try:
            doc = yaml.safe_load(read_text(file)) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise DataError(file, f"cannot read speaker file ({type(exc).__name__}); fix or restore it") from None
        key, role = ("negatives", "negative") if file.name == "negatives.yaml" else ("subjects", "subject")
        if key not in doc:
            raise DataError(file, f"top-level list missing; start the file with `{key}:`", field=key)
        for i, entry in enumerate(doc[key]):
            where = f"{key}[{i}]"
            base = ("id", "language", "gender", "utterances")
            _require(entry, base + (("name", "profile") if role == "subject" else ("persona",)), file, where)
            if entry["id"] in speakers:
                raise DataError(
                    file, f"{where}: duplicate speaker id {entry['id']!r}; give each speaker its own id", field="id"
                )
            if role == "subject":
                _require(entry["profile"], PROFILE_FIELDS, file, f"{where}.profile")
                _require(entry["profile"]["interests"], INTEREST_FIELDS, file, f"{where}.profile.interests")
            speakers[entry["id"]] = Speaker(
                id=entry["id"],
                role=role,
                language=entry["language"],
                gender=entry["gender"],
                name=entry.get("name"),
                name_latin=entry.get("name_latin"),
                profile=entry.get("profile"),
                persona=entry.get("persona"),
                texts=tuple(entry["utterances"]),
            )
    return speakers


def read_manifest(path: Path, speakers: dict[str, Speaker]) -> list[Utterance]:
    """Parse ``manifest.jsonl``; audio paths are relative to the manifest's folder."""
    if not path.is_file():
        raise DataError(path, "manifest not found; render the corpus with tools/render_corpus.py")
    utterances, seen = [], set()
    for lineno, rec in iter_jsonl(path, MANIFEST_FIELDS):
        if rec["speaker"] not in speakers:
            raise DataError(
                path,
                f"unknown speaker id {rec['speaker']!r}; add it to source/ or fix the id",
                field="speaker",
                line=lineno,
            )
        if rec["id"] in seen:
            raise DataError(
                path, f"duplicate utterance id {rec['id']!r}; give each line its own id", field="id", line=lineno
            )
        seen.add(rec["id"])
        try:
            duration, sampling_rate = float(rec["duration"]), int(rec["sampling_rate"])
            if not (math.isfinite(duration) and duration > 0 and sampling_rate > 0):
                raise ValueError
        except (TypeError, ValueError):
            raise DataError(
                path,
                f"duration {rec['duration']!r} / sampling_rate {rec['sampling_rate']!r} must be positive numbers; "
                "render the corpus again with tools/render_corpus.py",
                field="duration",
                line=lineno,
            ) from None
        utterances.append(
            Utterance(
                id=rec["id"],
                speaker=rec["speaker"],
                language=rec["language"],
                text=str(rec["text"]).replace("\ufeff", ""),
                duration=duration,
                audio=path.parent / rec["audio"],
                sampling_rate=sampling_rate,
                voice=rec["voice"],
            )
        )
    return utterances


def load_corpus(data_dir: Path = DATA_DIR, source_dir: Path = SOURCE_DIR) -> Corpus:
    """Load a corpus rendered in the embedded layout (speakers from ``source_dir``)."""
    speakers = load_speakers(source_dir)
    utterances = read_manifest(Path(data_dir) / "manifest.jsonl", speakers)
    info_path = Path(data_dir) / "render_info.json"
    info = json.loads(read_text(info_path)) if info_path.is_file() else {}
    return Corpus(
        speakers=speakers,
        utterances=utterances,
        root=Path(data_dir),
        render_info=info,
        descriptions_dir=Path(source_dir),
        # the packaged clips were measured on their decoded audio by tools/render_corpus.py
        screened=Path(data_dir).resolve() == DATA_DIR.resolve(),
    )


@lru_cache(maxsize=1)
def load_embedded_corpus() -> Corpus:
    """The corpus shipped with the package (cached per process)."""
    return load_corpus(DATA_DIR, SOURCE_DIR)


def read_embedded(corpus_dir=None) -> Corpus:
    """The ``embedded`` reader: the packaged corpus, or a corpus rendered in its layout at
    ``corpus_dir`` (``data/`` + ``source/``)."""
    if corpus_dir:
        return load_corpus(Path(corpus_dir) / "data", Path(corpus_dir) / "source")
    return load_embedded_corpus()
