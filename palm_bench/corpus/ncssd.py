"""Reader for NCSSD (Liu et al., MM 2024; gated, CC-BY-NC-4.0): https://huggingface.co/datasets/walkerhyf/NCSSD

Four subsets: recorded R-ZH, R-EN and collected (TV shows) C-ZH, C-EN. Layout read here::

    corpus_dir/C-EN/<dialogue>/{turn}_{spk}_d{dialog}.wav   + .lab transcript beside each
                              /metadata.json  {"dialog": n, "utterents": {"i": {"index",
                                               "duration", "speaker", "text", "sample_rate"}}}

Verified against the collection pipeline (``walker-hyf/NCSSD`` ``pipeline/step-6.py``): for the
collected subsets, the dialogue folder, the file names, the ``.lab`` (a copy of ``text``), the
``utterents`` spelling (``utterances`` is accepted too) and ``index`` == turn == the entry's key.
**Unverified**: the recorded subsets (R-ZH, R-EN) are assumed to share this layout; the reader
is tolerant of it: ``metadata.json`` is optional (then the ``.lab`` files and file names alone
are used), dialogue folders are found at any depth, and ``corpus_dir`` may be one subset folder.

Speakers: ``speaker`` is 0/1 *within a dialogue*. ``speaker_map`` (.json, .yaml/.yml or .tsv)
maps ``"dialogue/speaker"`` (``"12/0"``; or ``"C-EN/12/0"`` when reading several subsets, whose
dialogue numbers overlap) to a global subject id, as a string or ``{id, name, gender}``; TSV
rows are ``key<TAB>id[<TAB>name[<TAB>gender]]``. Mapped speakers are ``role="subject"``; all
others ``role="negative"`` (PALM draws subjects from recorded speech and negatives from the
collected pool) with id ``ncssd_{subset}_d{dialog}_s{spk}`` (subset in lower case: dialogue
numbers restart in each subset). Gender is ``"unknown"`` unless mapped; profiles are ``None``
(filled later). Language: the ``language`` argument, else the subset name (``*-ZH`` -> zh,
``*-EN`` -> en). Dialogue and turn numbers come from the file names. Utterance ids:
``ncssd_{subset}_d{dialog}_t{turn}``; ``voice`` is ``{}``.

Skips (logged, listed in the returned :class:`~palm_bench.corpus.types.Corpus`'s ``skips``): a wav with neither a ``.lab`` nor
a metadata entry, a metadata entry missing ``index``/``speaker``/``text`` (its clip is dropped
too), an entry with no wav, a speaker disagreeing with the file name, unreadable audio, an
unreadable ``metadata.json`` (one skip; its dialogue then falls back to the ``.lab`` files).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import require_corpus_dir
from palm_bench.corpus.folder import (
    SkipItem,
    SkipLog,
    build_corpus,
    make_utterance,
    natural_key,
    probe_audio,
    read_transcript,
)
from palm_bench.corpus.types import Corpus

logger = logging.getLogger(__name__)

SUBSETS = ("R-ZH", "R-EN", "C-ZH", "C-EN")
WAV_STEM = re.compile(r"(\d+)_(\d+)_d(\d+)")
META_FIELDS = ("index", "speaker", "text")
MAP_FIELDS = ("id", "name", "gender")
MAP_KEY = re.compile(r"(?:([^/]+)/)?(\d+)/(\d+)")


def prepare_ncssd(corpus_dir, subsets=None, speaker_map=None, language: str | None = None) -> Corpus:
    """Read NCSSD subsets (all found when ``subsets`` is None) into a :class:`Corpus`."""
    root = Path(require_corpus_dir("ncssd", corpus_dir)).resolve()
    if not root.is_dir():
        raise DataError(root, "NCSSD folder not found")
    mapping = load_speaker_map(speaker_map) if speaker_map is not None else {}
    skips, specs, utterances = SkipLog(logger), {}, []
    for subset, subset_dir in _subset_dirs(root, subsets):
        lang = language or _subset_language(subset, subset_dir)
        for folder in _dialogue_dirs(subset_dir):
            for wav, (dialog, turn, spk), text, probe in _read_dialogue(folder, skips):
                spec = _speaker_spec(mapping, subset, dialog, spk, lang)
                if specs.setdefault(spec["id"], spec)["language"] != lang:
                    raise DataError(speaker_map, f"subject {spec['id']!r} is mapped in two languages")
                uid = f"ncssd_{subset.lower()}_d{dialog}_t{turn}"
                utterances.append(make_utterance(uid, spec, text, wav, probe))
    return build_corpus(root, specs, utterances, skips)


def _subset_dirs(root: Path, subsets) -> list[tuple[str, Path]]:
    if subsets is None:
        found = [(s, root / s) for s in SUBSETS if (root / s).is_dir()]
        return found or [(root.name, root)]  # corpus_dir is itself one subset (or one dialogue)
    for name in subsets:
        if not (root / name).is_dir():
            raise DataError(root / name, f"subset folder not found (known subsets: {', '.join(SUBSETS)})")
    return [(name, root / name) for name in subsets]


def _subset_language(subset: str, folder: Path) -> str:
    match = re.search(r"(?:^|[-_])(zh|en)$", subset, re.IGNORECASE)
    if not match:
        raise ConfigError(
            f"{folder}: cannot tell the language of subset {subset!r}; "
            f"name it one of {', '.join(SUBSETS)} or pass language='zh'/'en'"
        )
    return match.group(1).lower()


def _dialogue_dirs(subset_dir: Path) -> list[Path]:
    hits = {p.parent for p in subset_dir.rglob("*") if p.suffix == ".wav" or p.name == "metadata.json"}
    return sorted(hits, key=natural_key)


def _speaker_spec(mapping: dict, subset: str, dialog: int, spk: int, lang: str) -> dict:
    entry = mapping.get((subset, dialog, spk)) or mapping.get((None, dialog, spk))
    if entry:
        return {
            "id": entry["id"],
            "role": "subject",
            "language": lang,
            "gender": entry.get("gender") or "unknown",
            "name": entry.get("name"),
        }
    return {"id": f"ncssd_{subset.lower()}_d{dialog}_s{spk}", "role": "negative", "language": lang, "gender": "unknown"}


# ---- one dialogue ----------------------------------------------------------------------------


def _read_dialogue(folder: Path, skips: SkipLog) -> list[tuple]:
    """``(wav, (dialog, turn, spk), text, (duration, sr))`` per usable clip, in turn order."""
    meta = folder / "metadata.json"
    entries = _read_metadata(meta, skips) if meta.is_file() else {}
    clips = []
    for wav in sorted(folder.glob("*.wav"), key=natural_key):
        try:
            ids, text = _clip(wav, entries)
            clips.append((wav, ids, text, probe_audio(wav)))
        except SkipItem as exc:
            skips.add(wav, str(exc))
    for turn, entry in entries.items():  # entries no wav claimed
        skips.add(meta, entry if isinstance(entry, str) else f"turn {turn}: no audio file for this entry")
    return clips


def _clip(wav: Path, entries: dict) -> tuple[tuple[int, int, int], str]:
    match = WAV_STEM.fullmatch(wav.stem)
    if not match:
        raise SkipItem("file name is not {turn}_{spk}_d{dialog}.wav")
    turn, spk, dialog = map(int, match.groups())
    entry = entries.pop(turn, None)
    if isinstance(entry, str):
        raise SkipItem(entry)
    if entry is not None and entry["speaker"] != spk:
        raise SkipItem(f"metadata.json gives speaker {entry['speaker']}, the file name {spk}")
    if entry is None or wav.with_suffix(".lab").is_file():
        text = read_transcript(wav, (".lab",))
    else:
        text = str(entry["text"]).strip()
    return (dialog, turn, spk), text


def _read_metadata(path: Path, skips: SkipLog) -> dict[int, dict | str]:
    """Entries by turn; a malformed entry maps to the reason it is unusable."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        entries = doc.get("utterents", doc.get("utterances")) if isinstance(doc, dict) else None
        if not isinstance(entries, (dict, list)):
            raise ValueError("no 'utterents' (or 'utterances') mapping")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        skips.add(path, f"unreadable metadata ({exc}); using the .lab files")
        return {}
    items = entries.items() if isinstance(entries, dict) else enumerate(entries)
    out: dict[int, dict | str] = {}
    for key, entry in items:
        where = f"metadata.json utterents[{key!r}]"
        ref = entry.get("index", key) if isinstance(entry, dict) else key
        try:
            out[int(ref)] = _check_entry(entry, where)
        except (TypeError, ValueError):
            skips.add(path, f"{where}: field 'index' is not a number ({ref!r})")
    return out


def _check_entry(entry, where: str) -> dict | str:
    """The entry with an int speaker, or why it is unusable."""
    missing = [f for f in META_FIELDS if not isinstance(entry, dict) or entry.get(f) in (None, "")]
    if missing:
        return f"{where}: missing field {missing[0]!r}"
    try:
        return {**entry, "speaker": int(entry["speaker"])}
    except (TypeError, ValueError):
        return f"{where}: field 'speaker' is not a number ({entry['speaker']!r})"


# ---- the speaker map -------------------------------------------------------------------------


def load_speaker_map(path) -> dict[tuple[str | None, int, int], dict]:
    """``{(subset or None, dialogue, speaker): {"id", "name", "gender"}}`` from a map file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "speaker map not found")
    subjects: dict[str, dict] = {}
    out = {}
    for key, value in _read_map_file(path).items():
        entry = {"id": str(value)} if isinstance(value, (str, int)) else value
        match = MAP_KEY.fullmatch(str(key))
        if not match:
            raise DataError(
                path, "key must be 'dialogue/speaker' or 'subset/dialogue/speaker', e.g. '12/0'", field=str(key)
            )
        if not isinstance(entry, dict) or not entry.get("id") or set(entry) - set(MAP_FIELDS):
            raise DataError(path, f"value must be a subject id or a mapping of {MAP_FIELDS} with an id", field=str(key))
        merged = subjects.setdefault(str(entry["id"]), {"id": str(entry["id"])})
        for field in ("name", "gender"):
            if entry.get(field) and merged.get(field) not in (None, entry[field]):
                raise DataError(path, f"subject {merged['id']!r} has two values of {field!r}", field=str(key))
            merged[field] = entry.get(field) or merged.get(field)
        out[(match.group(1), int(match.group(2)), int(match.group(3)))] = merged
    return out


def _read_map_file(path: Path) -> dict:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml", ".tsv"):
        raise DataError(path, "speaker map must be .json, .yaml/.yml or .tsv")
    try:
        text = path.read_text(encoding="utf-8")
        doc = None if suffix == ".tsv" else json.loads(text) if suffix == ".json" else (yaml.safe_load(text) or {})
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        raise DataError(path, f"cannot read speaker map ({exc})") from None
    if suffix == ".tsv":
        return _read_tsv(path, text)
    if not isinstance(doc, dict):
        raise DataError(path, "speaker map must map 'dialogue/speaker' keys to subject ids")
    return doc


def _read_tsv(path: Path, text: str) -> dict:
    doc = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        cells = [c.strip() for c in line.split("\t")]
        if not line.strip() or line.startswith("#") or cells[0].lower() in ("key", "dialogue/speaker"):
            continue
        if not 2 <= len(cells) <= 4 or cells[0] in doc:
            raise DataError(path, "expected a new key<TAB>id[<TAB>name[<TAB>gender]]", line=lineno)
        doc[cells[0]] = {f: v for f, v in zip(MAP_FIELDS, cells[1:]) if v}
    return doc
