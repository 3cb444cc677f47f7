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
from functools import lru_cache
from pathlib import Path

import yaml

from lalm_eval.errors import DataError
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
        raise DataError(file, f"{where} must be a mapping, got {type(mapping).__name__}", line=line)
    for field in fields:
        if field not in mapping or mapping[field] in (None, ""):
            raise DataError(file, f"{where}: missing value", field=field, line=line)


def load_speakers(source_dir: Path = SOURCE_DIR) -> dict[str, Speaker]:
    """Read ``subjects_*.yaml`` and ``negatives.yaml``, validating every required field."""
    speakers: dict[str, Speaker] = {}
    files = sorted(source_dir.glob("subjects_*.yaml")) + [source_dir / "negatives.yaml"]
    for file in files:
        if not file.is_file():
            raise DataError(file, "speaker file not found")
        doc = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
        key, role = ("negatives", "negative") if file.name == "negatives.yaml" else ("subjects", "subject")
        if key not in doc:
            raise DataError(file, "top-level list missing", field=key)
        for i, entry in enumerate(doc[key]):
            where = f"{key}[{i}]"
            base = ("id", "language", "gender", "utterances")
            _require(entry, base + (("name", "profile") if role == "subject" else ("persona",)), file, where)
            if entry["id"] in speakers:
                raise DataError(file, f"{where}: duplicate speaker id {entry['id']!r}", field="id")
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
        raise DataError(path, "manifest not found (render the corpus with tools/render_corpus.py)")
    utterances, seen = [], set()
    for lineno, rec in iter_jsonl(path, MANIFEST_FIELDS):
        if rec["speaker"] not in speakers:
            raise DataError(path, f"unknown speaker id {rec['speaker']!r}", field="speaker", line=lineno)
        if rec["id"] in seen:
            raise DataError(path, f"duplicate utterance id {rec['id']!r}", field="id", line=lineno)
        seen.add(rec["id"])
        utterances.append(
            Utterance(
                id=rec["id"],
                speaker=rec["speaker"],
                language=rec["language"],
                text=rec["text"],
                duration=float(rec["duration"]),
                audio=path.parent / rec["audio"],
                sampling_rate=int(rec["sampling_rate"]),
                voice=rec["voice"],
            )
        )
    return utterances


def load_corpus(data_dir: Path = DATA_DIR, source_dir: Path = SOURCE_DIR) -> Corpus:
    """Load a corpus rendered in the embedded layout (speakers from ``source_dir``)."""
    speakers = load_speakers(source_dir)
    utterances = read_manifest(Path(data_dir) / "manifest.jsonl", speakers)
    info_path = Path(data_dir) / "render_info.json"
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
    return Corpus(
        speakers=speakers,
        utterances=utterances,
        root=Path(data_dir),
        render_info=info,
        descriptions_dir=Path(source_dir),
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
