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
rows are ``key<TAB>id[<TAB>name[<TAB>gender]]``. A subject mapped without a name is called by its
subject id (``Speaker.name_from == "speaker map id"``, listed by ``corpus-info``); a map key that
matches no clip of the corpus is a counted skip. Mapped speakers are ``role="subject"``; all
others ``role="negative"`` (PALM draws subjects from recorded speech and negatives from the
collected pool) with id ``ncssd_{subset}_d{dialog}_s{spk}`` (subset in lower case: dialogue
numbers restart in each subset). Gender is ``"unknown"`` unless mapped; profiles are ``None``
(filled later). Language: the ``language`` argument, else the subset name (``*-ZH`` -> zh,
``*-EN`` -> en). Dialogue and turn numbers come from the file names. Utterance ids:
``ncssd_{subset}_d{dialog}_t{turn}``; ``voice`` is ``{}``.

Skips (logged, listed in the returned :class:`~palm_bench.corpus.types.Corpus`'s ``skips``): a wav with neither a ``.lab`` nor
a metadata entry, a metadata entry missing ``index``/``speaker``/``text`` (its clip is dropped
too), an entry with no wav, a ``.lab`` with no wav, a speaker disagreeing with the file name,
unreadable audio, another audio file in a dialogue folder (NCSSD's clips are ``.wav``), a
transcript that is not UTF-8 (``encoding`` option), an unreadable ``metadata.json`` (one skip;
its dialogue then falls back to the ``.lab`` files). Text files lose a leading byte-order mark.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import check_encoding, read_text, require_corpus_dir, unreadable_text
from palm_bench.corpus.folder import (
    SkipItem,
    SkipLog,
    build_corpus,
    looks_like_audio,
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
LAYOUT = "<subset>/<dialogue>/{turn}_{spk}_d{dialog}.wav with a .lab or a metadata.json entry each"


def prepare_ncssd(
    corpus_dir,
    subsets: list[str] | str | None = None,
    speaker_map: str | None = None,
    language: str | None = None,
    encoding: str = "utf-8",
) -> Corpus:
    """Read NCSSD subsets (all found when ``subsets`` is None) into a :class:`Corpus`."""
    from palm_bench.templates import LANGUAGES

    root = Path(require_corpus_dir("ncssd", corpus_dir)).resolve()
    if not root.is_dir():
        raise DataError(root, "NCSSD folder not found; check --corpus-dir")
    if language is not None and language not in LANGUAGES:
        raise ConfigError(
            f"--corpus-option language: {language!r} is not a language PALM-Bench builds; "
            f"give one of {', '.join(LANGUAGES)} (or leave it out: the subset name says it)"
        )
    encoding = check_encoding(encoding)
    mapping = load_speaker_map(speaker_map, encoding) if speaker_map is not None else {}
    skips, specs, utterances, used = SkipLog(logger), {}, [], set()
    for subset, subset_dir in _subset_dirs(root, [subsets] if isinstance(subsets, str) else subsets):
        lang = language or _subset_language(subset, subset_dir)
        for folder in _dialogue_dirs(subset_dir):
            for wav, (dialog, turn, spk), text, probe in _read_dialogue(folder, skips, encoding):
                spec, key = _speaker_spec(mapping, subset, dialog, spk, lang)
                used.add(key)
                if specs.setdefault(spec["id"], spec)["language"] != lang:
                    raise DataError(
                        speaker_map,
                        f"subject {spec['id']!r} is mapped in two languages ({specs[spec['id']]['language']} "
                        f"and {lang}); map it in one subset only",
                    )
                uid = f"ncssd_{subset.lower()}_d{dialog}_t{turn}"
                utterances.append(make_utterance(uid, spec, text, wav, probe))
    for key in sorted(set(mapping) - used, key=lambda k: (k[0] or "", k[1], k[2])):
        written = "/".join(str(p) for p in key if p is not None)
        skips.add(f"{speaker_map}:{written}", f"speaker map key {written!r} matches no clip of the corpus")
    return build_corpus(root, specs, utterances, skips, names_file=speaker_map, layout=LAYOUT)


def _subset_dirs(root: Path, subsets) -> list[tuple[str, Path]]:
    if subsets is None:
        found = [(s, root / s) for s in SUBSETS if (root / s).is_dir()]
        return found or [(root.name, root)]  # corpus_dir is itself one subset (or one dialogue)
    for name in subsets:
        if not (root / name).is_dir():
            raise DataError(
                root / name, f"subset folder not found; check --corpus-option subsets (known: {', '.join(SUBSETS)})"
            )
    return [(name, root / name) for name in subsets]


def _subset_language(subset: str, folder: Path) -> str:
    match = re.search(r"(?:^|[-_])(zh|en)$", subset, re.IGNORECASE)
    if not match:
        raise ConfigError(
            f"{folder}: cannot tell the language of subset {subset!r}; "
            f"name it one of {', '.join(SUBSETS)} or pass --corpus-option language=en (or zh)"
        )
    return match.group(1).lower()


def _dialogue_dirs(subset_dir: Path) -> list[Path]:
    hits = {p.parent for p in subset_dir.rglob("*") if p.suffix in (".wav", ".lab") or p.name == "metadata.json"}
    return sorted(hits, key=natural_key)


def _speaker_spec(mapping: dict, subset: str, dialog: int, spk: int, lang: str) -> tuple[dict, tuple]:
    """The speaker's fields and the map key that gave them (``None`` when unmapped)."""
    for key in ((subset, dialog, spk), (None, dialog, spk)):
        entry = mapping.get(key)
        if entry:
            return {
                "id": entry["id"],
                "role": "subject",
                "language": lang,
                "gender": entry.get("gender") or "unknown",
                "name": entry.get("name") or entry["id"],
                "name_from": None if entry.get("name") else "speaker map id",
            }, key
    spec = {"id": f"ncssd_{subset.lower()}_d{dialog}_s{spk}", "role": "negative", "language": lang, "gender": "unknown"}
    return spec, None


# ---- one dialogue ----------------------------------------------------------------------------


def _read_dialogue(folder: Path, skips: SkipLog, encoding: str = "utf-8") -> list[tuple]:
    """``(wav, (dialog, turn, spk), text, (duration, sr))`` per usable clip, in turn order."""
    meta = folder / "metadata.json"
    entries = _read_metadata(meta, skips, encoding) if meta.is_file() else {}
    clips = []
    for other in sorted(folder.iterdir(), key=natural_key):
        if other.is_file() and other.suffix != ".wav" and not other.name.startswith(".") and looks_like_audio(other):
            skips.add(other, "not read: NCSSD's clips are .wav files ({turn}_{spk}_d{dialog}.wav)")
        elif other.suffix == ".lab" and not other.with_suffix(".wav").is_file():
            skips.add(other, f"transcript without audio (no {other.stem}.wav beside it)")
    for wav in sorted(folder.glob("*.wav"), key=natural_key):
        try:
            ids, text = _clip(wav, entries, encoding)
            clips.append((wav, ids, text, probe_audio(wav)))
        except SkipItem as exc:
            skips.add(wav, str(exc))
    for turn, entry in entries.items():  # entries no wav claimed
        skips.add(meta, entry if isinstance(entry, str) else f"turn {turn}: no audio file for this entry")
    return clips


def _clip(wav: Path, entries: dict, encoding: str = "utf-8") -> tuple[tuple[int, int, int], str]:
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
        text = read_transcript(wav, (".lab",), encoding)
    else:
        text = str(entry["text"]).replace("\ufeff", "").strip()
        if not text:
            raise SkipItem("metadata.json gives an empty text")
    return (dialog, turn, spk), text


def _read_metadata(path: Path, skips: SkipLog, encoding: str = "utf-8") -> dict[int, dict | str]:
    """Entries by turn; a malformed entry maps to the reason it is unusable."""
    try:
        doc = json.loads(read_text(path, encoding))
        entries = doc.get("utterents", doc.get("utterances")) if isinstance(doc, dict) else None
        if not isinstance(entries, (dict, list)):
            raise ValueError("no 'utterents' (or 'utterances') mapping")
    except UnicodeDecodeError as exc:
        skips.add(path, unreadable_text("metadata", exc, encoding) + "; using the .lab files")
        return {}
    except (OSError, ValueError) as exc:
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


def load_speaker_map(path, encoding: str = "utf-8") -> dict[tuple[str | None, int, int], dict]:
    """``{(subset or None, dialogue, speaker): {"id", "name", "gender"}}`` from a map file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "speaker map not found; check --corpus-option speaker_map")
    subjects: dict[str, dict] = {}
    out = {}
    for key, value in _read_map_file(path, encoding).items():
        entry = {"id": str(value)} if isinstance(value, (str, int)) and not isinstance(value, bool) else value
        match = MAP_KEY.fullmatch(str(key))
        if not match:
            raise DataError(
                path, "key must be 'dialogue/speaker' or 'subset/dialogue/speaker'; write e.g. '12/0'", field=str(key)
            )
        if not isinstance(entry, dict) or not entry.get("id") or set(entry) - set(MAP_FIELDS):
            raise DataError(
                path,
                f"value must be a subject id or a mapping of {', '.join(MAP_FIELDS)} with an id; "
                "write e.g. '12/0': en_subj01 or '12/0': {id: en_subj01, name: Alice}",
                field=str(key),
            )
        for field in ("name", "gender"):
            value = entry.get(field)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise DataError(
                    path,
                    f"{field} must be a non-empty text, got {value!r}; quote it or leave it out",
                    field=f"{key}.{field}",
                )
        merged = subjects.setdefault(str(entry["id"]), {"id": str(entry["id"])})
        for field in ("name", "gender"):
            if entry.get(field) and merged.get(field) not in (None, entry[field]):
                raise DataError(
                    path,
                    f"subject {merged['id']!r} has two values of {field!r} ({merged[field]!r} and "
                    f"{entry[field]!r}); give one",
                    field=str(key),
                )
            merged[field] = entry.get(field) or merged.get(field)
        out[(match.group(1), int(match.group(2)), int(match.group(3)))] = merged
    return out


def _read_map_file(path: Path, encoding: str = "utf-8") -> dict:
    suffix = path.suffix.lower()
    if suffix not in (".json", ".yaml", ".yml", ".tsv"):
        raise DataError(path, "speaker map must be .json, .yaml/.yml or .tsv; rename or convert it")
    try:
        text = read_text(path, encoding)
        doc = None if suffix == ".tsv" else json.loads(text) if suffix == ".json" else (yaml.safe_load(text) or {})
    except UnicodeDecodeError as exc:
        raise DataError(path, unreadable_text("speaker map", exc, encoding)) from None
    except (OSError, ValueError, yaml.YAMLError) as exc:
        problem = str(getattr(exc, "problem", None) or exc).splitlines()[0].replace(";", ",")
        raise DataError(path, f"cannot read speaker map ({problem}); fix its syntax") from None
    if suffix == ".tsv":
        return _read_tsv(path, text)
    if not isinstance(doc, dict):
        raise DataError(
            path, "speaker map must map 'dialogue/speaker' keys to subject ids; write e.g. '12/0': en_subj01"
        )
    return doc


def _read_tsv(path: Path, text: str) -> dict:
    doc = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        cells = [c.strip() for c in line.split("\t")]
        if not line.strip() or line.startswith("#") or cells[0].lower() in ("key", "dialogue/speaker"):
            continue
        if not 2 <= len(cells) <= 4 or cells[0] in doc:
            what = f"key {cells[0]!r} given twice" if cells[0] in doc else f"{len(cells)} tab-separated cell(s)"
            raise DataError(path, f"{what}; write a new key<TAB>id[<TAB>name[<TAB>gender]] per line", line=lineno)
        doc[cells[0]] = {f: v for f, v in zip(MAP_FIELDS, cells[1:]) if v}
    return doc
