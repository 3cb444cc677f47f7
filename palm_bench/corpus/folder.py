"""Reader for a generic speaker-per-folder corpus, and the pieces every real-corpus reader shares.

Layout read by :func:`prepare_folder`::

    corpus_dir/
      speakers.yaml            optional: speaker id -> name, gender, role, profile, ...
      <speaker id>/            one folder per speaker; its name is the speaker id
        <stem>.wav|.flac|.opus|.ogg
        <stem>.txt  (or <stem>.lab)   the transcript, UTF-8
        sub/folders/...        allowed; the utterance id then carries the relative path

``speakers.yaml`` maps each id to ``name``, ``name_latin``, ``gender``, ``role`` ("subject" or
"negative"), ``language`` (``en``/``zh``; the reader's ``language`` option is the default for
speakers without one), ``persona`` and ``profile`` (the fields of
:data:`palm_bench.corpus.embedded.PROFILE_FIELDS`, validated as for the embedded corpus). Quote
ids that look like numbers (YAML reads ``001`` as the integer 1).

Real corpora have no TTS recipe, so ``Utterance.voice`` is ``{}``; ``Utterance.audio`` is an
absolute path. Durations and sampling rates are read from the file header (``soundfile.info``).

Skip policy (shared with :mod:`palm_bench.corpus.ncssd`): a clip without a transcript, with an
empty or unreadable transcript, or with unreadable audio is skipped; each skip is logged (module
logger, WARNING) and recorded on the returned :class:`Corpus` (``skips``: item and reason each;
``n_skipped``).
A missing folder, a malformed ``speakers.yaml`` or a corpus with no usable clip is a
:class:`~lalm_eval.errors.DataError`.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import soundfile as sf
import yaml

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import Skip, SkipLog, require_corpus_dir
from palm_bench.corpus.embedded import INTEREST_FIELDS, PROFILE_FIELDS, ROLES, _require
from palm_bench.corpus.types import Corpus, Speaker, Utterance

logger = logging.getLogger(__name__)

AUDIO_SUFFIXES = (".wav", ".flac", ".opus", ".ogg")
TRANSCRIPT_SUFFIXES = (".txt", ".lab")
SPEAKER_FIELDS = ("name", "name_latin", "gender", "role", "language", "persona", "profile")


# ---- shared by the real-corpus readers -------------------------------------------------------

__all__ = [
    "Skip",
    "SkipLog",
    "SkipItem",
    "build_corpus",
    "make_utterance",
    "natural_key",
    "prepare_folder",
    "probe_audio",
    "read_transcript",
]


class SkipItem(Exception):
    """Raised by the helpers below: this clip is unusable, for the reason given."""


def natural_key(path: Path) -> list:
    """Sort key that puts ``2_0_d1`` before ``10_0_d1`` (digit runs compare as numbers)."""
    parts = re.split(r"(\d+)", path.as_posix())
    return [int(p) if i % 2 else p for i, p in enumerate(parts)]


def read_transcript(audio: Path, suffixes=TRANSCRIPT_SUFFIXES) -> str:
    """The text of the first ``<stem><suffix>`` beside ``audio``; :class:`SkipItem` if none."""
    for suffix in suffixes:
        path = audio.with_suffix(suffix)
        if path.is_file():
            try:
                text = path.read_text(encoding="utf-8").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise SkipItem(f"unreadable transcript {path.name} ({exc})") from None
            if not text:
                raise SkipItem(f"empty transcript {path.name}")
            return text
    raise SkipItem("no transcript (" + " or ".join(audio.stem + s for s in suffixes) + ")")


def probe_audio(path: Path) -> tuple[float, int]:
    """``(duration in seconds, sampling rate)`` from the header; :class:`SkipItem` if unreadable."""
    try:
        info = sf.info(str(path))
    except (RuntimeError, OSError, TypeError) as exc:  # sf.LibsndfileError is a RuntimeError
        raise SkipItem(f"unreadable audio ({exc})") from None
    if info.frames <= 0 or info.samplerate <= 0:
        raise SkipItem("audio holds no samples")
    return info.frames / info.samplerate, int(info.samplerate)


def make_utterance(uid: str, spec: dict, text: str, audio: Path, probe: tuple[float, int]) -> Utterance:
    return Utterance(
        id=uid,
        speaker=spec["id"],
        language=spec["language"],
        text=text,
        duration=probe[0],
        audio=audio,
        sampling_rate=probe[1],
        voice={},
    )


def build_corpus(root: Path, specs: dict[str, dict], utterances: list[Utterance], skips: SkipLog) -> Corpus:
    """Speakers (those with at least one utterance, texts in order) + utterances + skips; the
    corpus folder is where its ``human_descriptions.yaml`` is looked for."""
    if not utterances:
        first = "; ".join(f"{s.item}: {s.reason}" for s in skips.items[:3])
        raise DataError(
            root, f"no usable utterances ({len(skips.items)} skipped" + (f", e.g. {first})" if first else ")")
        )
    texts: dict[str, list[str]] = {}
    for u in utterances:
        texts.setdefault(u.speaker, []).append(u.text)
    speakers = {sid: Speaker(**specs[sid], texts=tuple(t)) for sid, t in texts.items()}
    logger.info("%s: %d utterances of %d speakers, %d skipped", root, len(utterances), len(speakers), len(skips.items))
    return Corpus(speakers=speakers, utterances=utterances, root=root, descriptions_dir=root, skips=list(skips.items))


# ---- the generic folder reader ---------------------------------------------------------------


def load_speaker_info(path: Path) -> dict[str, dict]:
    """``speakers.yaml`` as ``{speaker id: fields}``; ``{}`` when the file is absent."""
    if not path.is_file():
        return {}
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise DataError(path, f"cannot read speaker file ({exc})") from None
    if not isinstance(doc, dict):
        raise DataError(path, "must map speaker ids to {name, gender, role, profile, ...}")
    for sid, entry in doc.items():
        if not isinstance(entry, dict):
            raise DataError(path, "must be a mapping of speaker fields", field=str(sid))
        unknown = sorted(set(entry) - set(SPEAKER_FIELDS))
        if unknown:
            raise DataError(path, f"unknown field(s) {unknown}; allowed: {', '.join(SPEAKER_FIELDS)}", field=str(sid))
        if entry.get("role", ROLES[0]) not in ROLES:
            raise DataError(path, f"role must be one of {ROLES}", field=f"{sid}.role")
        if entry.get("profile") is not None:
            _require(entry["profile"], PROFILE_FIELDS, path, f"{sid}.profile")
            _require(entry["profile"]["interests"], INTEREST_FIELDS, path, f"{sid}.profile.interests")
    return {str(sid): entry for sid, entry in doc.items()}


def _speaker_spec(sid: str, info: dict, language: str, role: str) -> dict:
    return {
        "id": sid,
        "role": info.get("role", role),
        "language": info.get("language", language),
        "gender": info.get("gender", "unknown"),
        "name": info.get("name"),
        "name_latin": info.get("name_latin"),
        "profile": info.get("profile"),
        "persona": info.get("persona"),
    }


def _read_speaker(folder: Path, spec: dict, skips: SkipLog) -> list[Utterance]:
    utterances, seen = [], set()
    clips = [p for p in folder.rglob("*") if p.suffix.lower() in AUDIO_SUFFIXES and p.is_file()]
    for audio in sorted(clips, key=natural_key):
        uid = spec["id"] + "-" + audio.relative_to(folder).with_suffix("").as_posix().replace("/", "-")
        try:
            if uid in seen:
                raise SkipItem(f"another audio file already gave utterance id {uid!r}")
            text = read_transcript(audio)
            utterances.append(make_utterance(uid, spec, text, audio, probe_audio(audio)))
            seen.add(uid)
        except SkipItem as exc:
            skips.add(audio, str(exc))
    return utterances


def prepare_folder(
    corpus_dir, language: str | None = None, role: str = "subject", speakers_file: str = "speakers.yaml"
) -> Corpus:
    """Read a speaker-per-folder corpus (see the module docstring) into a :class:`Corpus`.

    ``language`` and ``role`` apply to every speaker that ``speakers_file`` does not override;
    without ``language`` every speaker needs a ``language`` in ``speakers_file`` (else a
    :class:`DataError` names the speakers and both ways to give it).
    """
    root = Path(require_corpus_dir("folder", corpus_dir)).resolve()
    if not root.is_dir():
        raise DataError(root, "corpus folder not found")
    if role not in ROLES:
        raise ConfigError(f"role must be one of {ROLES}, got {role!r}")
    info = load_speaker_info(root / speakers_file)
    skips = SkipLog(logger)
    for stray in sorted(p for p in root.iterdir() if p.suffix.lower() in AUDIO_SUFFIXES):
        skips.add(stray, "audio outside a speaker folder")
    specs, utterances = {}, []
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    for folder in sorted(folders, key=natural_key):
        specs[folder.name] = _speaker_spec(folder.name, info.get(folder.name, {}), language, role)
        utterances += _read_speaker(folder, specs[folder.name], skips)
    for sid in sorted(set(info) - set(specs)):
        logger.warning("%s: speaker %r has no folder under %s", root / speakers_file, sid, root)
    voiced = {u.speaker for u in utterances}
    unknown = [sid for sid, spec in specs.items() if not spec["language"] and sid in voiced]
    if unknown:
        raise DataError(
            root / speakers_file,
            f"no language for speaker(s) {unknown}: give each a "
            "'language: en' (or zh) entry in this file, or pass --corpus-option language=en "
            "for every speaker it does not list",
            field=f"{unknown[0]}.language",
        )
    return build_corpus(root, specs, utterances, skips)
