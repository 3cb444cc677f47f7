"""Reader for a generic speaker-per-folder corpus, and the pieces every real-corpus reader shares.

Layout read by :func:`prepare_folder`::

    corpus_dir/
      speakers.yaml            optional: speaker id -> name, gender, role, profile, ...
      <speaker id>/            one folder per speaker; its name is the speaker id
        <stem>.<audio>         any format libsndfile or FFmpeg decodes: wav, flac, ogg/opus, mp3,
                               m4a/aac, webm, mka, wma ... (any rate, mono or stereo: read as
                               16 kHz mono)
        <stem>.txt  (or <stem>.lab)   the transcript, UTF-8 (``encoding`` option otherwise)
        sub/folders/...        allowed; the utterance id then carries the relative path

``speakers.yaml`` maps each id to ``name``, ``name_latin``, ``gender``, ``role`` ("subject" or
"negative"), ``language`` (``en``/``zh``; the reader's ``language`` option is the default for
speakers without one), ``persona`` and ``profile`` (the fields of
:data:`palm_bench.corpus.embedded.PROFILE_FIELDS`, validated as for the embedded corpus). Quote
ids that look like numbers (YAML reads ``001`` as the integer 1).

Names: the questions address a subject by ``name``. A subject without one (no entry, no
``name:`` or ``name: null``) is called by its folder name, the speaker id, verbatim
(``Speaker.name_from == "folder"``; ``palm-bench corpus-info`` lists these speakers). A name that
is empty or not text (``name: ""``, ``name: 42``) and two subjects of one language with the same
name (a question about "Alice" would be ambiguous) are a :class:`~lalm_eval.errors.DataError`
naming the file and the field.

Languages: a ``language`` is a code such as ``en``; PALM-Bench builds ``en`` and ``zh``
(:data:`palm_bench.templates.LANGUAGES`). A speaker of another language in ``speakers.yaml`` is
read, and ``corpus-info`` and the build report it as left out; ``--corpus-option language=fr``
(every speaker's default) is a :class:`~lalm_eval.errors.ConfigError`.

Real corpora have no TTS recipe, so ``Utterance.voice`` is ``{}``; ``Utterance.audio`` is an
absolute path. Durations and sampling rates come from the file header (libsndfile), or from
decoding with FFmpeg for formats libsndfile does not read (:func:`lalm_eval.audio.io.audio_info`).
Text files lose a leading byte-order mark (:func:`lalm_eval.hub.readers.read_text`).

Skip policy (shared with :mod:`palm_bench.corpus.ncssd`): every file in a speaker folder is used
or listed: a clip without a transcript, with an empty or unreadable transcript (not UTF-8, e.g.
GBK or Latin-1: the reason names ``--corpus-option encoding``), or with audio neither decoder
reads; a transcript without audio; a second transcript of one clip (``.txt`` wins over ``.lab``;
suffixes match in any case, ``a.WAV`` + ``a.TXT``); any other file (``notes.csv``). Hidden files (``.DS_Store``)
are ignored, except ones that look like audio (macOS's ``._clip.wav`` copies), which are listed.
An empty speaker folder, a ``speakers.yaml`` entry with no folder and audio outside a speaker
folder are listed too. Each skip is logged (module logger, WARNING) and recorded on the returned
:class:`Corpus` (``skips``: item and reason each; ``n_skipped``). What the build refuses on the
audio itself (silent, too short, NaN) is screened by :mod:`palm_bench.corpus.screen`.
A missing folder, a malformed ``speakers.yaml``, a corpus with no usable clip, and a
``--corpus-dir`` one level above the corpus (the speakers file's ids, or a ``speakers.yaml``, found
in a sub-folder: each sub-folder would be read as one speaker) are a
:class:`~lalm_eval.errors.DataError`.
"""

from __future__ import annotations

import difflib
import logging
import mimetypes
import re
from pathlib import Path

import soundfile as sf
import yaml

from lalm_eval.audio.io import audio_info
from lalm_eval.errors import AudioError, ConfigError, DataError
from lalm_eval.hub.readers import Skip, SkipLog, check_encoding, read_text, require_corpus_dir, unreadable_text
from palm_bench.corpus.embedded import INTEREST_FIELDS, PROFILE_FIELDS, ROLES, _require
from palm_bench.corpus.types import Corpus, Speaker, Utterance

logger = logging.getLogger(__name__)

TRANSCRIPT_SUFFIXES = (".txt", ".lab")
SPEAKER_FIELDS = ("name", "name_latin", "gender", "role", "language", "persona", "profile")
TEXT_FIELDS = ("name", "name_latin", "gender", "language", "persona")
#: what a language value looks like: an ISO 639 code, optionally with a region (``en``, ``zh-CN``)
LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(?:[-_][a-z0-9]{2,8})*")
#: audio suffixes Python's mimetypes table does not know (it knows wav, flac, mp3, m4a, aac, ...)
EXTRA_AUDIO_SUFFIXES = (".mka", ".opus", ".oga", ".weba")


# ---- shared by the real-corpus readers -------------------------------------------------------

__all__ = [
    "Skip",
    "SkipLog",
    "SkipItem",
    "build_corpus",
    "looks_like_audio",
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


def looks_like_audio(path: Path) -> bool:
    """True when the file name says audio (or video, which FFmpeg reads the sound of)."""
    kind = mimetypes.guess_type(path.name)[0] or ""
    suffix = path.suffix.lower()
    return (
        kind.split("/")[0] in ("audio", "video")
        or suffix in EXTRA_AUDIO_SUFFIXES
        or suffix[1:].upper() in sf.available_formats()
    )


def transcript_of(audio: Path, suffixes=TRANSCRIPT_SUFFIXES) -> list[Path]:
    """The transcript files beside ``audio``, in ``suffixes`` order, the suffix in any case
    (``a.wav`` + ``a.TXT``)."""
    out = []
    for suffix in suffixes:
        for variant in dict.fromkeys((suffix, suffix.upper(), suffix.capitalize())):
            path = audio.with_suffix(variant)
            if path.is_file() and path not in out:
                out.append(path)
    return out


def read_transcript(audio: Path, suffixes=TRANSCRIPT_SUFFIXES, encoding: str = "utf-8") -> str:
    """The text of the first ``<stem><suffix>`` beside ``audio`` (byte-order mark dropped);
    :class:`SkipItem` if none, empty or not decodable."""
    for path in transcript_of(audio, suffixes)[:1]:
        if path.is_file():
            try:
                text = read_text(path, encoding).strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise SkipItem(unreadable_text(f"transcript {path.name}", exc, encoding)) from None
            if not text:
                raise SkipItem(f"empty transcript {path.name}")
            return text
    raise SkipItem("no transcript (" + " or ".join(audio.stem + s for s in suffixes) + ")")


def probe_audio(path: Path) -> tuple[float, int]:
    """``(duration in seconds, sampling rate)`` (header, or FFmpeg); :class:`SkipItem` if the
    file is not audio either decoder reads."""
    try:
        if path.stat().st_size == 0:
            raise SkipItem("empty file (0 bytes)")
        return audio_info(path)
    except AudioError as exc:  # before OSError: an AudioError is one
        message = str(exc).removeprefix(f"{path}: ").removeprefix("cannot decode audio ")
        if "holds no samples" in message:
            raise SkipItem("audio holds no samples") from None
        if not looks_like_audio(path):
            raise SkipItem(f"not an audio file {message}") from None
        raise SkipItem(f"unreadable audio {message}") from None
    except OSError as exc:
        raise SkipItem(f"unreadable file ({exc.strerror or exc})") from None


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


FOLDER_LAYOUT = "one folder per speaker holding audio + transcript pairs"


def build_corpus(
    root: Path,
    specs: dict[str, dict],
    utterances: list[Utterance],
    skips: SkipLog,
    names_file=None,
    layout: str = FOLDER_LAYOUT,
) -> Corpus:
    """Speakers (those with at least one utterance, texts in order) + utterances + skips; the
    corpus folder is where its ``human_descriptions.yaml`` is looked for. Subjects' names are
    checked (:func:`check_names`; errors name ``names_file``, the file that gives them)."""
    if not utterances:
        first = " | ".join(f"{s.item}: {s.reason}" for s in skips.items[:3]).replace(";", ",")
        raise DataError(
            root,
            f"no usable utterances ({len(skips.items)} skipped"
            + (f", e.g. {first})" if first else ")")
            + f"; check the layout ({layout})",
        )
    texts: dict[str, list[str]] = {}
    for u in utterances:
        texts.setdefault(u.speaker, []).append(u.text)
    speakers = {sid: Speaker(**specs[sid], texts=tuple(t)) for sid, t in texts.items()}
    check_names(names_file or root, speakers)
    logger.info("%s: %d utterances of %d speakers, %d skipped", root, len(utterances), len(speakers), len(skips.items))
    return Corpus(speakers=speakers, utterances=utterances, root=root, descriptions_dir=root, skips=list(skips.items))


def check_names(file, speakers: dict[str, Speaker]) -> None:
    """Every subject has a non-empty name, and no two subjects of one language share one
    (compared case-insensitively); else a :class:`DataError` naming ``file`` and the field."""
    seen: dict[tuple[str, str], str] = {}
    for sid, speaker in speakers.items():
        if speaker.role != "subject":
            continue
        if not isinstance(speaker.name, str) or not speaker.name.strip():
            raise DataError(
                file, f"subject {sid!r} has no name; give it a 'name' (the questions ask about it)", field=f"{sid}.name"
            )
        key = (speaker.language, speaker.name.strip().casefold())
        if key in seen:
            raise DataError(
                file,
                f"subjects {seen[key]!r} and {sid!r} are both called {speaker.name!r}, so a question "
                f"about {speaker.name!r} would be ambiguous; give each subject a distinct name",
                field=f"{sid}.name",
            )
        seen[key] = sid


# ---- the generic folder reader ---------------------------------------------------------------


def _yaml_problem(exc: yaml.YAMLError) -> tuple[str, int | None]:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return str(problem).replace(";", ","), (mark.line + 1 if mark is not None else None)


def load_speaker_info(path: Path, encoding: str = "utf-8") -> dict[str, dict]:
    """``speakers.yaml`` as ``{speaker id: fields}`` (validated); ``{}`` when the file is absent."""
    if not path.is_file():
        return {}
    try:
        doc = yaml.safe_load(read_text(path, encoding))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(path, unreadable_text("speaker file", exc, encoding)) from None
    except yaml.YAMLError as exc:
        problem, line = _yaml_problem(exc)
        raise DataError(path, f"not valid YAML ({problem}); fix the syntax", line=line) from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise DataError(
            path,
            f"is a {type(doc).__name__}, not a mapping of speaker ids to their fields; "
            "write one entry per speaker folder, e.g. `alice: {name: Alice, language: en}`",
        )
    out = {}
    for sid, entry in doc.items():
        if entry is None:
            entry = {}
        if not isinstance(entry, dict):
            raise DataError(
                path,
                f"must be a mapping of speaker fields, got {entry!r}; write e.g. `{sid}: {{name: Alice}}`",
                field=str(sid),
            )
        for field in entry:
            if field not in SPEAKER_FIELDS:
                close = difflib.get_close_matches(str(field), SPEAKER_FIELDS, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise DataError(
                    path,
                    f"unknown field {field!r}; {hint}allowed: {', '.join(SPEAKER_FIELDS)}",
                    field=f"{sid}.{field}",
                )
        for field in TEXT_FIELDS:
            value = entry.get(field)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                got = "an empty text" if isinstance(value, str) else f"{type(value).__name__} {value!r}"
                raise DataError(
                    path,
                    f'must be a non-empty text, got {got}; quote it (e.g. {field}: "{value}") or drop the field'
                    + (" (without a name a subject is called by its folder name)" if field == "name" else ""),
                    field=f"{sid}.{field}",
                )
        if entry.get("role", ROLES[0]) not in ROLES:
            raise DataError(
                path,
                f"role must be one of {', '.join(ROLES)}, got {entry['role']!r}; fix the value",
                field=f"{sid}.role",
            )
        if entry.get("language") is not None:
            entry = {**entry, "language": _language(entry["language"], path, f"{sid}.language")}
        if entry.get("profile") is not None:
            _require(entry["profile"], PROFILE_FIELDS, path, f"{sid}.profile")
            _require(entry["profile"]["interests"], INTEREST_FIELDS, path, f"{sid}.profile.interests")
        out[str(sid)] = {**entry, "_key": sid}
    return out


def _language(value: str, path, field: str) -> str:
    code = value.strip().lower()
    if not LANGUAGE_CODE.fullmatch(code):
        raise DataError(path, f"{value!r} is not a language code; write a code such as en or zh", field=field)
    return code


def _check_language_option(language) -> str | None:
    from palm_bench.templates import LANGUAGES

    if language is None:
        return None
    code = str(language).strip().lower()
    if code not in LANGUAGES:
        raise ConfigError(
            f"--corpus-option language: {language!r} is not a language PALM-Bench builds (its templates exist in "
            f"{', '.join(LANGUAGES)} only); give --corpus-option language=en or zh (a speaker of another language "
            "can be listed with its 'language' in speakers.yaml: it is reported and left out of a build)"
        )
    return code


def _speaker_spec(sid: str, info: dict, language: str | None, role: str) -> dict:
    role = info.get("role", role)
    name = info.get("name")
    name_from = None
    if role == "subject" and name is None:
        name, name_from = sid, "folder"
    return {
        "id": sid,
        "role": role,
        "language": info.get("language", language),
        "gender": info.get("gender", "unknown"),
        "name": name.strip() if isinstance(name, str) else name,
        "name_latin": info.get("name_latin"),
        "profile": info.get("profile"),
        "persona": info.get("persona"),
        "name_from": name_from,
    }


def _read_speaker(folder: Path, spec: dict, skips: SkipLog, encoding: str) -> list[Utterance]:
    files = sorted((p for p in folder.rglob("*") if p.is_file()), key=natural_key)
    hidden = [p for p in files if any(part.startswith(".") for part in p.relative_to(folder).parts)]
    for path in hidden:
        if looks_like_audio(path):  # e.g. macOS's ._clip.wav resource-fork copies
            skips.add(path, "hidden file (name starts with '.'), not read; rename it if it is a clip")
    files = [p for p in files if p not in frozenset(hidden)]
    if not files:
        skips.add(folder, "speaker folder holds no file; put the speaker's clips and transcripts in it, or remove it")
        return []
    transcripts = [p for p in files if p.suffix.lower() in TRANSCRIPT_SUFFIXES]
    stems = {p.with_suffix("") for p in files if p.suffix.lower() not in TRANSCRIPT_SUFFIXES}
    for path in transcripts:
        if path.with_suffix("") not in stems:
            skips.add(path, f"transcript without audio (no {path.stem}.<audio> beside it)")
    utterances, seen = [], set()
    for audio in (p for p in files if p.suffix.lower() not in TRANSCRIPT_SUFFIXES):
        for extra in transcript_of(audio)[1:]:
            skips.add(extra, f"a second transcript of {audio.name}, not read ({transcript_of(audio)[0].name} is)")
        uid = spec["id"] + "-" + audio.relative_to(folder).with_suffix("").as_posix().replace("/", "-")
        try:
            if not looks_like_audio(audio) and (mimetypes.guess_type(audio.name)[0] or "").startswith(
                ("text/", "application/")
            ):
                raise SkipItem(f"not an audio file ({mimetypes.guess_type(audio.name)[0]})")
            probe = probe_audio(audio)
            if uid in seen:
                raise SkipItem(f"another audio file already gave utterance id {uid!r}")
            text = read_transcript(audio, encoding=encoding)
            utterances.append(make_utterance(uid, spec, text, audio, probe))
            seen.add(uid)
        except SkipItem as exc:
            skips.add(audio, str(exc))
    return utterances


def _check_depth(root: Path, info: dict, folders: set[str], speakers_path: Path) -> None:
    """Stop when the speakers file lists no folder of ``root`` but its ids are found one level
    down: ``--corpus-dir`` points above the corpus (one "speaker" would hold everyone's clips)."""
    nested = sorted(p.parent.name for p in root.glob(f"*/{speakers_path.name}"))
    if not speakers_path.is_file() and nested:
        raise DataError(
            root,
            f"no {speakers_path.name} here, but {nested[0]}/{speakers_path.name} exists, so {nested[0]} "
            f"would be read as one speaker; pass --corpus-dir {root / nested[0]}",
        )
    if not info or set(info) & folders:
        return
    below = sorted({p.parent.name for sid in info for p in root.glob(f"*/{sid}") if p.is_dir()})
    if below:
        raise DataError(
            root,
            f"the speakers of {speakers_path.name} are in {', '.join(below)}/, not here, so each of "
            f"{', '.join(below)} would be read as one speaker; pass --corpus-dir {root / below[0]}",
        )


def prepare_folder(
    corpus_dir,
    language: str | None = None,
    role: str = "subject",
    speakers_file: str | None = None,
    encoding: str = "utf-8",
) -> Corpus:
    """Read a speaker-per-folder corpus (see the module docstring) into a :class:`Corpus`.

    ``language`` and ``role`` apply to every speaker that the speakers file does not override;
    without ``language`` every speaker needs a ``language`` in it (else a :class:`DataError`
    names the speakers and both ways to give it). ``speakers_file`` (default ``speakers.yaml``,
    optional) must exist when given; ``encoding`` reads the transcripts and the speakers file.
    """
    root = Path(require_corpus_dir("folder", corpus_dir)).resolve()
    if not root.is_dir():
        raise DataError(root, "corpus folder not found; check --corpus-dir")
    if role not in ROLES:
        raise ConfigError(f"--corpus-option role: must be one of {', '.join(ROLES)}, got {role!r}; fix the value")
    language = _check_language_option(language)
    encoding = check_encoding(encoding)
    if speakers_file is not None and not (root / speakers_file).is_file():
        raise DataError(
            root / speakers_file,
            "speakers file not found; check --corpus-option speakers_file (relative to the corpus)",
        )
    speakers_path = root / (speakers_file or "speakers.yaml")
    info = load_speaker_info(speakers_path, encoding)
    skips = SkipLog(logger)
    for stray in sorted((p for p in root.iterdir() if p.is_file() and not p.name.startswith(".")), key=natural_key):
        if looks_like_audio(stray):
            skips.add(stray, "audio outside a speaker folder; move it into its speaker's folder")
    specs, utterances = {}, []
    folders = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")]
    _check_depth(root, info, {p.name for p in folders}, speakers_path)
    for folder in sorted(folders, key=natural_key):
        specs[folder.name] = _speaker_spec(folder.name, info.get(folder.name, {}), language, role)
        utterances += _read_speaker(folder, specs[folder.name], skips, encoding)
    for sid in sorted(set(info) - set(specs)):
        key = info[sid]["_key"]
        hint = (
            f" (YAML read this id as the number {key!r}: quote ids that look like numbers, e.g. '001')"
            if not isinstance(key, str)
            else ""
        )
        skips.add(f"{speakers_path}:{sid}", f"speaker {sid!r} is listed but has no folder {sid}/{hint}")
    voiced = {u.speaker for u in utterances}
    unknown = [sid for sid, spec in specs.items() if not spec["language"] and sid in voiced]
    if unknown:
        raise DataError(
            speakers_path,
            f"no language for speaker(s) {unknown}; give each a "
            "'language: en' (or zh) entry in this file, or pass --corpus-option language=en "
            "for every speaker it does not list",
            field=f"{unknown[0]}.language",
        )
    return build_corpus(root, specs, utterances, skips, names_file=speakers_path)
