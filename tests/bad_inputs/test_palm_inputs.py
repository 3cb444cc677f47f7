"""Bad and odd inputs of PALM-Bench's corpus readers (a speaker-per-folder corpus, NCSSD), its
``--corpus-option`` and ``--set`` values, through the real ``palm-bench`` CLI (issue 20).

Reader outcomes go through ``palm-bench corpus-info --corpus folder|ncssd --corpus-dir D --no-eer
--json`` (its ``skipped`` list is what the build's ``build_info.json`` lists: both screen the
corpus the same way, :mod:`palm_bench.corpus.screen`); ``--set`` errors through ``palm-bench
build`` (they stop before any planning); and one shared ``palm-bench build`` of an odd folder
corpus (mp3 and m4a clips, subjects without names, a BOM, silent / 0.1 s / NaN clips, stereo 48
kHz and 8 kHz clips) where the built rows themselves are the point. Inputs are written in the
readers' real layouts (tests/real_layouts.py's folder corpus; NCSSD's dialogue folders as in
tests/test_corpus_readers.py), with speech-like voiced tones (resemblyzer's voice-activity
detection drops pure sines, so tests/conftest.py's ``tone`` would be screened out as no speech).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from tests.bad_inputs.harness import Case, Result, run_case, run_cli
from tests.real_layouts import SR, voiced, write_folder_corpus

BOM = b"\xef\xbb\xbf"
TWO = {"alice": {"language": "en", "name": "Alice"}, "bob": {"language": "en", "role": "negative"}}


# --- helpers ----------------------------------------------------------------------------------


def folder(tmp: Path, speakers: dict | None = None, clips: int = 2, seconds: float = 0.6) -> Path:
    """tests/real_layouts.py's folder corpus: ``<speaker>/<nn>.wav`` + ``.txt`` and speakers.yaml."""
    return write_folder_corpus(tmp / "corpus", TWO if speakers is None else speakers, clips, seconds)


def info(root: Path, *options: str, kind: str = "folder", eer: bool = False) -> list:
    argv = ["corpus-info", "--corpus", kind, "--corpus-dir", root, "--json"] + ([] if eer else ["--no-eer"])
    for option in options:
        argv += ["--corpus-option", option]
    return argv


def clip(path: Path, audio: np.ndarray, sr: int = SR, text: str | None = None, **kwargs) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, audio, sr, **kwargs)
    path.with_suffix(".txt").write_text(text or f"Words of {path.parent.name}, clip {path.stem}.", encoding="utf-8")
    return path


def ffmpeg_clip(path: Path, audio: np.ndarray, sr: int = SR, text: str | None = None) -> Path:
    """A clip in a container only FFmpeg writes and reads (m4a, webm, mka), via torchcodec."""
    import torch
    from torchcodec.encoders import AudioEncoder

    path.parent.mkdir(parents=True, exist_ok=True)
    AudioEncoder(torch.from_numpy(np.ascontiguousarray(audio))[None], sample_rate=sr).to_file(str(path))
    path.with_suffix(".txt").write_text(text or f"Words of {path.parent.name}, clip {path.stem}.", encoding="utf-8")
    return path


def stats(result: Result) -> dict:
    return result.json()


def _expect(ok: bool, detail) -> None:
    assert ok, detail


def nothing_written(tmp: Path, result: Result) -> None:
    assert not (tmp / "out").exists()


def utterances(n: int, subjects: int | None = None):
    def check(tmp: Path, result: Result) -> None:
        got = stats(result)["totals"]
        assert got["utterances"] == n, got
        if subjects is not None:
            assert got["subjects"] == subjects, got

    return check


def with_corpus(edit, speakers: dict | None = None, clips: int = 2, options=(), kind_args=None):
    """``make``: the two-speaker folder corpus, changed by ``edit(root)``, read by corpus-info."""

    def make(tmp: Path) -> list:
        root = folder(tmp, speakers, clips)
        if edit is not None:
            edit(root)
        return info(root, *options)

    return make


def write_yaml(text: str):
    def edit(root: Path) -> None:
        (root / "speakers.yaml").write_text(text, encoding="utf-8")

    return edit


def names_from_folder(*ids: str):
    def check(tmp: Path, result: Result) -> None:
        assert stats(result)["names_from"] == {"folder": list(ids)}, stats(result).get("names_from")

    return check


# --- folder corpus: names ---------------------------------------------------------------------


def _no_name_entries(root: Path) -> None:
    (root / "speakers.yaml").write_text(
        yaml.safe_dump({"alice": {"language": "en"}, "carol": {"language": "en"}, "bob": {"role": "negative"}}),
        encoding="utf-8",
    )
    for n in range(2):
        clip(root / "carol" / f"{n:02d}.wav", voiced(0.6, 170.0 + 3 * n))


def _two_alices(root: Path) -> None:
    _no_name_entries(root)
    (root / "speakers.yaml").write_text(
        "alice: {language: en, name: Alice}\ncarol: {language: en, name: alice}\nbob: {role: negative}\n"
    )


NAME_CASES = [
    Case(
        "palm-folder-no-name-entries",  # was: "Is None the one speaking?" in every question
        "palm-bench",
        with_corpus(_no_name_entries, options=("language=en",)),
        exit=0,
        check=names_from_folder("alice", "carol"),
    ),
    Case(
        "palm-folder-name-null",
        "palm-bench",
        with_corpus(write_yaml("alice: {language: en, name: null}\nbob: {language: en, role: negative}\n")),
        exit=0,
        check=names_from_folder("alice"),
    ),
    Case(
        "palm-folder-name-empty",
        "palm-bench",
        with_corpus(write_yaml("alice: {language: en, name: ''}\nbob: {language: en, role: negative}\n")),
        says=("speakers.yaml", "alice.name", "non-empty text"),
    ),
    Case(
        "palm-folder-name-number",
        "palm-bench",
        with_corpus(write_yaml("alice: {language: en, name: 42}\nbob: {language: en, role: negative}\n")),
        says=("speakers.yaml", "alice.name", "quote it"),
    ),
    Case(
        "palm-folder-duplicate-names",  # was: two "Alice"s, an ambiguous recognition question
        "palm-bench",
        with_corpus(_two_alices, options=("language=en",)),
        says=("speakers.yaml", "carol.name", "both called", "distinct name"),
    ),
]


# --- folder corpus: audio formats and what else lies in a speaker folder ----------------------


def _mp3_only(root: Path) -> None:
    for sid in ("alice", "bob"):
        for wav in (root / sid).glob("*.wav"):
            data, sr = sf.read(wav)
            sf.write(wav.with_suffix(".mp3"), data, sr, format="MP3")
            wav.unlink()


def _ffmpeg_formats(root: Path) -> None:
    for n, suffix in enumerate((".m4a", ".webm", ".mka")):
        ffmpeg_clip(root / "alice" / f"f{n}{suffix}", voiced(0.6, 140.0 + 5 * n))


def _not_audio(root: Path) -> None:
    (root / "bob" / "README.md").write_text("# Bob's recordings\n")
    (root / "bob" / "notes.csv").write_text("clip,quality\n00,good\n")
    (root / "bob" / "fake.mp3").write_text("this is text, not MPEG audio")
    (root / "bob" / "fake.txt").write_text("The transcript of a file that is not audio.")
    (root / "bob" / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")  # hidden, not audio: ignored


def _appledouble(root: Path) -> None:
    (root / "alice" / "._00.wav").write_bytes(b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X")


def _orphan_transcript(root: Path) -> None:
    (root / "alice" / "lost.txt").write_text("A transcript whose audio went missing.")
    (root / "alice" / "lost.lab").write_text("Another one.")


def _stereo_and_rates(root: Path) -> None:
    one = voiced(0.6, 150.0)
    clip(root / "alice" / "st48k.flac", np.stack([one, one], axis=1), 48_000)
    clip(root / "alice" / "nb8k.wav", voiced(0.6, 155.0), 8_000)
    clip(root / "alice" / "cd44k.wav", voiced(0.6, 160.0), 44_100)


FORMAT_CASES = [
    Case(
        "palm-folder-mp3-only",  # was: "no usable utterances (0 skipped)"
        "palm-bench",
        with_corpus(_mp3_only),
        exit=0,
        skips={"": 0},
        check=utterances(4, subjects=1),
    ),
    Case(
        "palm-folder-ffmpeg-formats",  # m4a / webm / mka: decoded by FFmpeg through torchcodec
        "palm-bench",
        with_corpus(_ffmpeg_formats),
        exit=0,
        skips={"": 0},
        check=utterances(7),
    ),
    Case(
        "palm-folder-non-audio-files",  # was: silently ignored
        "palm-bench",
        with_corpus(_not_audio),
        exit=0,
        skips={"not an audio file": 2, "unreadable audio": 1, "transcript without audio": 0},
        check=utterances(4),
    ),
    Case(
        "palm-folder-hidden-appledouble",  # was: read as audio and skipped as "unreadable audio"
        "palm-bench",
        with_corpus(_appledouble),
        exit=0,
        skips={"hidden file": 1, "unreadable audio": 0},
        check=utterances(4),
    ),
    Case(
        "palm-folder-transcript-without-audio",  # was: silently ignored
        "palm-bench",
        with_corpus(_orphan_transcript),
        exit=0,
        skips={"transcript without audio": 2},
        check=utterances(4),
    ),
    Case(
        "palm-folder-stereo-48k-8k-44k",  # pins behaviour that was already right: resampled to 16 kHz mono
        "palm-bench",
        with_corpus(_stereo_and_rates),
        exit=0,
        skips={"": 0},
        check=utterances(7),
    ),
]


# --- folder corpus: clips the build refuses (screened in corpus-info and build alike) -----------


def _bad_clip(kind: str):
    def edit(root: Path) -> None:
        path = root / "bob" / f"{kind}.wav"
        if kind == "silent":
            clip(path, np.zeros(SR, dtype=np.float32))
        elif kind == "short":
            clip(path, voiced(0.1, 150.0))
        else:
            audio = voiced(0.6, 150.0)
            audio[100] = np.nan
            clip(path, audio, subtype="FLOAT")

    return edit


def _one_clip_speaker(root: Path) -> None:
    clip(root / "dave" / "00.wav", voiced(0.6, 210.0))
    (root / "speakers.yaml").write_text(yaml.safe_dump({**TWO, "dave": {"language": "en", "role": "negative"}}))


CLIP_CASES = [
    Case(
        "palm-folder-silent-clip",  # was: accepted by corpus-info, a traceback at build
        "palm-bench",
        with_corpus(_bad_clip("silent")),
        exit=0,
        skips={"silent": 1},
        check=utterances(4),
    ),
    Case(
        "palm-folder-0.1s-clip",  # was: accepted by corpus-info, "ValueError: clip holds no speech" at build
        "palm-bench",
        with_corpus(_bad_clip("short")),
        exit=0,
        skips={"no speech left after voice-activity trimming": 1},
        check=utterances(4),
    ),
    Case(
        "palm-folder-nan-clip",  # was: accepted by corpus-info, refused by build
        "palm-bench",
        with_corpus(_bad_clip("nan")),
        exit=0,
        skips={"NaN": 1},
        check=utterances(4),
    ),
    Case(
        "palm-folder-one-clip-speaker",  # was: accepted by corpus-info, the whole build failed at the split
        "palm-bench",
        with_corpus(_one_clip_speaker),
        exit=0,
        skips={"speaker left out: 1 usable clip": 1},
        check=utterances(4),
    ),
    Case(
        "palm-info-eer-silent-clip",  # was: a traceback from the EER's embedding
        "palm-bench",
        lambda tmp: info(
            _with(folder(tmp, {"a": {"language": "en"}, "b": {"language": "en"}}), _bad_clip_in("a")), eer=True
        ),
        exit=0,
        skips={"silent": 1},
        check=lambda tmp, r: _expect(stats(r)["eer"] is not None, stats(r)),
    ),
]


def _with(root: Path, edit) -> Path:
    edit(root)
    return root


def _bad_clip_in(sid: str):
    def edit(root: Path) -> None:
        clip(root / sid / "silent.wav", np.zeros(SR, dtype=np.float32))

    return edit


# --- folder corpus: layout and speakers.yaml ---------------------------------------------------


def _empty_speaker_folder(root: Path) -> None:
    (root / "erin").mkdir()


def _listed_without_folder(root: Path) -> None:
    (root / "speakers.yaml").write_text(yaml.safe_dump({**TWO, "zoe": {"language": "en", "name": "Zoe"}}))


def _numeric_id(root: Path) -> None:
    (root / "alice").rename(root / "001")
    (root / "speakers.yaml").write_text("001: {language: en, name: Alice}\nbob: {language: en, role: negative}\n")


def _transcript_encoding(encoding: str, text: str):
    def edit(root: Path) -> None:
        (root / "bob" / "00.txt").write_bytes(text.encode(encoding))

    return edit


def _uppercase_suffixes(root: Path) -> None:
    clip(root / "alice" / "LOUD.WAV", voiced(0.6, 150.0))
    (root / "alice" / "LOUD.txt").rename(root / "alice" / "LOUD.TXT")


def _two_transcripts(root: Path) -> None:
    (root / "alice" / "00.lab").write_text("The same clip, transcribed again.")


def _one_level_too_high(root: Path) -> None:
    (root / "data").mkdir()
    for sid in ("alice", "bob"):
        (root / sid).rename(root / "data" / sid)


def _nested_speakers_yaml(root: Path) -> None:
    _one_level_too_high(root)
    (root / "speakers.yaml").rename(root / "data" / "speakers.yaml")


LAYOUT_CASES = [
    Case(
        "palm-folder-empty-speaker-folder",  # was: silently nothing
        "palm-bench",
        with_corpus(_empty_speaker_folder),
        exit=0,
        skips={"speaker folder holds no file": 1},
    ),
    Case(
        "palm-folder-listed-speaker-without-folder",  # was: only a log line
        "palm-bench",
        with_corpus(_listed_without_folder),
        exit=0,
        skips={"is listed but has no folder": 1},
    ),
    Case(
        "palm-folder-unquoted-numeric-id",  # YAML reads 001 as 1: the entry names no folder
        "palm-bench",
        with_corpus(_numeric_id, options=("language=en",)),
        exit=0,
        skips={"quote ids that look like numbers": 1},
        check=names_from_folder("001"),
    ),
    Case(
        "palm-folder-gbk-transcript",  # the reason now names the encoding problem and the option
        "palm-bench",
        with_corpus(_transcript_encoding("gbk", "你好，我叫鲍勃。"), clips=3),
        exit=0,
        skips={"not utf-8 text": 1, "--corpus-option encoding=gbk": 1},
        check=utterances(5),
    ),
    Case(
        "palm-folder-gbk-transcript-read-as-gbk",  # was: TypeError (no such option)
        "palm-bench",
        with_corpus(_transcript_encoding("gbk", "你好，我叫鲍勃。"), clips=3, options=("encoding=gbk",)),
        exit=0,
        skips={"": 0},
        check=utterances(6),
    ),
    Case(
        "palm-folder-latin1-transcript",
        "palm-bench",
        with_corpus(_transcript_encoding("latin-1", "Café, señor, naïve."), clips=3),
        exit=0,
        skips={"not utf-8 text": 1},
        check=utterances(5),
    ),
    Case(
        "palm-folder-speakers-yaml-list",  # was: a message without the fix
        "palm-bench",
        with_corpus(write_yaml("- alice\n- bob\n")),
        says=("speakers.yaml", "is a list", "one entry per speaker folder"),
    ),
    Case(
        "palm-folder-speakers-yaml-typo-field",
        "palm-bench",
        with_corpus(write_yaml("alice: {language: en, nmae: Alice}\nbob: {language: en, role: negative}\n")),
        says=("speakers.yaml", "alice.nmae", "did you mean 'name'"),
    ),
    Case(
        "palm-folder-speakers-yaml-syntax",
        "palm-bench",
        with_corpus(write_yaml("alice: {language: en, name: Alice\nbob: [\n")),
        says=("speakers.yaml", "not valid yaml", "fix the syntax"),
    ),
    Case(
        "palm-folder-speakers-file-option-missing",  # was: silently read without speaker info
        "palm-bench",
        with_corpus(None, options=("speakers_file=people.yaml",)),
        says=("people.yaml", "speakers file not found", "--corpus-option speakers_file"),
    ),
    Case(
        "palm-folder-language-fr-in-speakers-yaml",  # was: silent in corpus-info (only the build said so)
        "palm-bench",
        with_corpus(
            write_yaml(
                "alice: {language: en, name: Alice}\nbob: {language: en, role: negative}\n"
                "jean: {language: fr, name: Jean}\nmarie: {language: fr, name: Marie}\n"
            ),
            speakers={**TWO, "jean": {"language": "fr"}, "marie": {"language": "fr"}},
        ),
        exit=0,
        skips={"language not in languages ['en', 'zh']": 1},
        check=lambda tmp, r: _expect(stats(r)["dropped_speakers"]["fr"]["speakers"] == ["jean", "marie"], stats(r)),
    ),
    Case(
        "palm-folder-language-not-a-code",
        "palm-bench",
        with_corpus(write_yaml("alice: {language: English, name: Alice}\nbob: {language: en, role: negative}\n")),
        says=("speakers.yaml", "alice.language", "not a language code"),
    ),
    Case(
        "palm-folder-uppercase-suffixes",  # was: a.WAV's a.TXT not found ("no transcript")
        "palm-bench",
        with_corpus(_uppercase_suffixes),
        exit=0,
        skips={"": 0},
        check=utterances(5),
    ),
    Case(
        "palm-folder-two-transcripts",  # was: the .lab silently unused
        "palm-bench",
        with_corpus(_two_transcripts),
        exit=0,
        skips={"a second transcript of 00.wav": 1},
        check=utterances(4),
    ),
    Case(
        "palm-folder-corpus-dir-one-level-too-high",  # was: one "speaker" data/ holding everyone's clips
        "palm-bench",
        with_corpus(_one_level_too_high),
        says=("corpus", "would be read as one speaker", "--corpus-dir"),
    ),
    Case(
        "palm-folder-speakers-yaml-one-level-down",
        "palm-bench",
        with_corpus(_nested_speakers_yaml, options=("language=en",)),
        says=("data/speakers.yaml exists", "--corpus-dir"),
    ),
    Case(
        "palm-folder-human-descriptions-malformed",  # was: AttributeError in the build, after embedding
        "palm-bench",
        with_corpus(lambda root: (root / "human_descriptions.yaml").write_text("- alice sounds calm\n")),
        says=("human_descriptions.yaml", "must map subject ids"),
    ),
    Case(
        "palm-folder-zero-byte-clip",
        "palm-bench",
        with_corpus(lambda root: clip(root / "bob" / "empty.wav", voiced(0.6, 150.0)).write_bytes(b"")),
        exit=0,
        skips={"empty file (0 bytes)": 1},
        check=utterances(4),
    ),
    Case(
        "palm-build-only-negatives",  # was: "no subject left in languages", as if a language were wrong
        "palm-bench",
        lambda tmp: [
            "build",
            "--corpus",
            "folder",
            "--corpus-dir",
            folder(tmp, {"n0": {"language": "en", "role": "negative"}, "n1": {"language": "en", "role": "negative"}}),
            "--out",
            tmp / "out",
            "--no-cache",
        ],
        says=("corpus", "has no subject", "role: subject"),
        check=nothing_written,
    ),
    Case(
        "palm-info-encoder-typo",  # was: a registry message without the flag
        "palm-bench",
        lambda tmp: info(folder(tmp)) + ["--encoder", "resemblizer"],
        says=("--encoder resemblizer", "did you mean 'resemblyzer'"),
    ),
    Case(
        "palm-folder-no-usable-clip",  # only transcripts: the error quotes the skips and says how to fix
        "palm-bench",
        lambda tmp: info(_with(tmp / "corpus", lambda r: (r / "ann").mkdir(parents=True) or None)),
        says=("corpus", "no usable utterances", "check the layout"),
    ),
]


# --- --corpus-option (read_corpus checks every reader's options, both benchmarks) -------------

OPTION_CASES = [
    Case(
        "palm-option-typo",  # was: TypeError: prepare_folder() got an unexpected keyword argument
        "palm-bench",
        with_corpus(None, options=("langauge=en",)),
        says=("--corpus-option langauge", "did you mean --corpus-option language", "speakers_file"),
    ),
    Case(
        "palm-option-list-for-text",
        "palm-bench",
        with_corpus(None, options=("language=[en]",)),
        says=("--corpus-option language", "wants text", "['en']"),
    ),
    Case(
        "palm-option-language-fr",  # was: accepted by corpus-info, every speaker later dropped
        "palm-bench",
        with_corpus(None, options=("language=fr",)),
        says=("--corpus-option language", "'fr'", "en or zh"),
    ),
    Case(
        "palm-option-role-unknown",
        "palm-bench",
        with_corpus(None, options=("role=judge",)),
        says=("--corpus-option role", "'judge'"),
    ),
    Case(
        "palm-option-encoding-unknown",
        "palm-bench",
        with_corpus(None, options=("encoding=klingon",)),
        says=("--corpus-option encoding", "'klingon'"),
    ),
]


# --- --set and --preset: checked before any planning ------------------------------------------


def build_argv(*sets: str, preset: str = "small"):
    """``palm-bench build`` of a folder corpus that is not there: a bad setting must stop it
    before the corpus is read (and a build that wrongly accepts it fails fast on the corpus)."""

    def make(tmp: Path) -> list:
        argv = ["build", "--corpus", "folder", "--corpus-dir", tmp / "none", "--out", tmp / "out", "--no-cache"]
        argv += ["--preset", preset]
        for item in sets:
            argv += ["--set", item]
        return argv

    return make


SET_CASES = [
    Case(
        "palm-set-seed-text",  # was: ValueError: unrecognized seed string
        "palm-bench",
        build_argv("seed=abc"),
        says=("--set seed", "whole number", "'abc'"),
        check=nothing_written,
    ),
    Case("palm-set-seed-negative", "palm-bench", build_argv("seed=-1"), says=("--set seed", ">= 0")),
    Case(
        "palm-set-unknown-key",
        "palm-bench",
        build_argv("templates_per_audi=4"),
        says=("--set templates_per_audi", "did you mean 'templates_per_audio'"),
    ),
    Case(
        "palm-set-languages-fr",  # was: "no subject left" after reading the whole corpus
        "palm-bench",
        build_argv("languages=[fr]"),
        says=("--set languages", "['fr']", "en, zh"),
    ),
    Case(
        "palm-set-test-fraction-text",
        "palm-bench",
        build_argv("test_fraction=quarter"),
        says=("--set test_fraction", "must be a number"),
    ),
    Case(
        "palm-set-negative-strata-not-a-mapping",  # was: AttributeError: 'int' object has no attribute 'get'
        "palm-bench",
        build_argv("negative_strata=5"),
        says=("--set negative_strata", "mapping"),
    ),
    Case(
        "palm-set-augmentation-typo",  # was: found only when the planner samples augmentation
        "palm-bench",
        build_argv("augmentation={sped_prob: 0.5}"),
        says=("--set augmentation", "'sped_prob'"),
    ),
    Case(
        "palm-set-encoder-typo",  # was: found only after the whole corpus was read
        "palm-bench",
        build_argv("encoder=resemblizer"),
        says=("--set encoder", "did you mean 'resemblyzer'"),
    ),
    Case(
        "palm-set-silence-nan",  # was: accepted (a NaN gap in every composed clip)
        "palm-bench",
        build_argv("silence_s=.nan"),
        says=("--set silence_s", "finite"),
    ),
    Case(
        "palm-preset-unknown",  # was: a message without the where
        "palm-bench",
        build_argv(preset="huge"),
        says=("--preset huge", "unknown preset", "small"),
    ),
    Case(
        "palm-preset-file-field",  # a preset file's bad value names the file and the field
        "palm-bench",
        lambda tmp: build_argv(preset=str(_write(tmp / "mine.yaml", "seed: one\n")))(tmp),
        says=("mine.yaml", "field 'seed'", "whole number"),
    ),
]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# --- NCSSD in its real layout: <subset>/<dialogue>/{turn}_{spk}_d{dialog}.wav + .lab + metadata.json


def dialogue(folder: Path, dialog: int, turns, meta: bool = True, lab: bool = True) -> Path:
    """One NCSSD dialogue folder (as tests/test_corpus_readers.py's ``write_dialogue``, with
    speech-like audio): ``turns`` = ``(spk, text)`` each, 0.6 s of voice per turn."""
    entries = {}
    for turn, (spk, text) in enumerate(turns):
        wav = folder / f"{turn}_{spk}_d{dialog}.wav"
        wav.parent.mkdir(parents=True, exist_ok=True)
        sf.write(wav, voiced(0.6, 120.0 + 40 * spk + 3 * turn + 7 * dialog), SR)
        if lab:
            wav.with_suffix(".lab").write_text(text, encoding="utf-8")
        entries[str(turn)] = {"index": turn, "duration": 0.6, "speaker": spk, "text": text, "sample_rate": SR}
    if meta:
        (folder / "metadata.json").write_text(json.dumps({"dialog": dialog, "utterents": entries}), encoding="utf-8")
    return folder


TURNS = [(0, "Hello there."), (1, "Hi, how are you?"), (0, "Fine, thanks."), (1, "Good to hear.")]


def ncssd(edit=None, *options: str, map_text: str | None = None, map_name: str = "map.yaml"):
    def make(tmp: Path) -> list:
        root = tmp / "NCSSD"
        dialogue(root / "C-EN" / "0", 0, TURNS)
        dialogue(root / "C-EN" / "1", 1, TURNS)
        if edit is not None:
            edit(root)
        opts = list(options)
        if map_text is not None:
            opts.append(f"speaker_map={_write(tmp / map_name, map_text)}")
        return info(root, *opts, kind="ncssd")

    return make


def _lab_without_wav(root: Path) -> None:
    (root / "C-EN" / "0" / "9_0_d0.lab").write_text("A transcript whose clip is missing.")


def _bom_metadata(root: Path) -> None:
    folder = root / "C-EN" / "1"
    (folder / "2_0_d1.lab").unlink()  # its text now comes from metadata.json alone
    path = folder / "metadata.json"
    path.write_bytes(BOM + path.read_bytes())


def _bom_lab(root: Path) -> None:
    path = root / "C-EN" / "0" / "0_0_d0.lab"
    path.write_bytes(BOM + path.read_bytes())


def _one_turn_speaker(root: Path) -> None:
    dialogue(root / "C-EN" / "2", 2, [(0, "I talk a lot."), (0, "Really a lot."), (1, "Bye.")])


def _missing_speaker_field(root: Path) -> None:
    path = root / "C-EN" / "1" / "metadata.json"
    doc = json.loads(path.read_text())
    del doc["utterents"]["3"]["speaker"]
    path.write_text(json.dumps(doc))


def _no_bom_in_texts(tmp: Path, result: Result) -> None:
    from palm_bench.corpus.ncssd import prepare_ncssd

    texts = [u.text for u in prepare_ncssd(tmp / "NCSSD").utterances]
    assert texts and not any("\ufeff" in t for t in texts), texts


NCSSD_CASES = [
    Case(
        "palm-ncssd-lab-without-wav",  # was: silently ignored
        "palm-bench",
        ncssd(_lab_without_wav),
        exit=0,
        skips={"transcript without audio": 1},
        check=utterances(8),
    ),
    Case(
        "palm-ncssd-bom-metadata",  # was: the whole metadata.json dropped as unreadable
        "palm-bench",
        ncssd(_bom_metadata),
        exit=0,
        skips={"unreadable metadata": 0, "": 0},
        check=utterances(8),
    ),
    Case(
        "palm-ncssd-bom-lab",  # was: '\ufeffHello there.' in the transcript
        "palm-bench",
        ncssd(_bom_lab),
        exit=0,
        check=_no_bom_in_texts,
    ),
    Case(
        "palm-ncssd-speaker-with-one-turn",  # was: the whole build failed at the split
        "palm-bench",
        ncssd(_one_turn_speaker),
        exit=0,
        skips={"speaker left out: 1 usable clip": 1},
        check=utterances(10),
    ),
    Case(
        "palm-ncssd-metadata-entry-without-speaker",  # pins behaviour that was already right
        "palm-bench",
        ncssd(_missing_speaker_field),
        exit=0,
        skips={"missing field 'speaker'": 1},
    ),
    Case(
        "palm-ncssd-map-key-matches-no-clip",  # was: silently unused
        "palm-bench",
        ncssd(None, map_text="'0/0': {id: en_subj01, name: Alice}\n'7/1': {id: en_subj02, name: Bea}\n"),
        exit=0,
        skips={"speaker map key '7/1' matches no clip": 1},
    ),
    Case(
        "palm-ncssd-mapped-subject-without-name",  # was: name None ("Is None the one speaking?")
        "palm-bench",
        ncssd(None, map_text="'0/0': en_subj01\n'1/1': {id: en_subj02, name: Bea}\n"),
        exit=0,
        check=lambda tmp, r: _expect(stats(r)["names_from"] == {"speaker map id": ["en_subj01"]}, stats(r)),
    ),
    Case(
        "palm-ncssd-map-name-not-text",
        "palm-bench",
        ncssd(None, map_text="'0/0': {id: en_subj01, name: 7}\n"),
        says=("map.yaml", "0/0.name", "non-empty text"),
    ),
    Case(
        "palm-ncssd-map-tsv-bad-line",  # was: a message without the fix
        "palm-bench",
        ncssd(None, map_text="key\tid\n0/0\ten_subj01\tAlice\tfemale\textra\n", map_name="map.tsv"),
        says=("map.tsv:2", "5 tab-separated cell(s)", "key<TAB>id"),
    ),
    Case(
        "palm-ncssd-subsets-as-text",  # was: read as the letters 'C', '-', 'E', 'N'
        "palm-bench",
        ncssd(None, "subsets=C-EN"),
        exit=0,
        check=utterances(8),
    ),
    Case(
        "palm-ncssd-option-typo",
        "palm-bench",
        ncssd(None, "speakermap=map.tsv"),
        says=("--corpus-option speakermap", "did you mean --corpus-option speaker_map"),
    ),
    Case(
        "palm-ncssd-language-fr",
        "palm-bench",
        ncssd(None, "language=fr"),
        says=("--corpus-option language", "'fr'"),
    ),
]

CASES = NAME_CASES + FORMAT_CASES + CLIP_CASES + LAYOUT_CASES + OPTION_CASES + SET_CASES + NCSSD_CASES


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


# --- one shared build of an odd folder corpus -------------------------------------------------

EXTRA_CASE_IDS = [
    "palm-build-names-from-folder",
    "palm-build-mp3-m4a-end-to-end",
    "palm-build-refused-clips-are-counted-skips",
    "palm-build-bom-stripped",
    "palm-encoder-error-names-the-file",
]


@pytest.fixture(scope="module")
def odd_build(tmp_path_factory):
    """alice (mp3 only, no name entry, a BOM transcript) and carol (m4a only, ``name: null``) as
    subjects; bob (wav, plus a silent, a 0.1 s and a NaN clip) and dave (stereo 48 kHz flac, 8 kHz
    and 44.1 kHz wav) as negatives; the smallest build the planner accepts."""
    tmp = tmp_path_factory.mktemp("palm_odd_build")
    root = tmp / "corpus"
    for n in range(3):
        clip(root / "alice" / f"{n}.mp3", voiced(1.0, 110.0 + 5 * n), format="MP3")
        ffmpeg_clip(root / "carol" / f"{n}.m4a", voiced(1.0, 160.0 + 5 * n), text=f"Carol says {n}.")
        clip(root / "bob" / f"{n}.wav", voiced(1.0, 200.0 + 5 * n))
    (root / "alice" / "0.txt").write_bytes(BOM + b"Hello with a byte-order mark.")
    _bad_clip("silent")(root)
    _bad_clip("short")(root)
    _bad_clip("nan")(root)
    one = voiced(1.0, 240.0)
    clip(root / "dave" / "0.flac", np.stack([one, one], axis=1), 48_000)
    clip(root / "dave" / "1.wav", voiced(1.0, 250.0), 8_000)
    clip(root / "dave" / "2.wav", voiced(1.0, 255.0), 44_100)
    (root / "speakers.yaml").write_text(
        "alice: {language: en}\ncarol: {language: en, name: null}\n"
        "bob: {language: en, role: negative}\ndave: {language: en, role: negative}\n"
    )
    out = tmp / "out"
    sets = [
        "speaker_count_weights={2: 1}",
        "audios_per_subject={train: 1, test: 1}",
        "reasoning_per_subject={train: 0, test: 0}",
        "enrollment=false",
        "templates_per_audio=2",
        "ad_max_seconds=1",
    ]
    argv = ["build", "--corpus", "folder", "--corpus-dir", root, "--out", out, "--no-cache"]
    argv += ["--tasks", "recognition,captioning"] + [a for s in sets for a in ("--set", s)]
    result = run_cli("palm-bench", argv)
    assert result.rc == 0, result.err[-3000:]
    import pyarrow.parquet as pq

    rows = [r for f in sorted(out.glob("*/*.parquet")) for r in pq.read_table(f).drop_columns(["audio"]).to_pylist()]
    return out, rows, json.loads((out / "build_info.json").read_text(encoding="utf-8"))


def test_build_names_subjects_by_their_folder_never_none(odd_build):
    _, rows, _ = odd_build
    assert rows
    for row in rows:
        assert "None" not in row["question"] + row["answer"], row
        assert row["queried"] and all(q in ("alice", "carol") for q in row["queried"]), row


def test_build_reads_mp3_and_m4a_clips_end_to_end(odd_build):
    _, rows, info = odd_build
    assert {r["target"] for r in rows} == {"alice", "carol"}  # alice: mp3 only, carol: m4a only
    assert info["plan"]["speakers_per_language"]["en"]["speakers"] == 4  # dave's 48k stereo / 8k / 44.1k too


def test_build_lists_the_clips_it_refuses_as_skips(odd_build):
    out, _, info = odd_build
    reasons = {s["file"]: s["reason"] for s in info["plan"]["skipped_source"]}
    assert set(reasons) == {"bob/silent.wav", "bob/short.wav", "bob/nan.wav"}, reasons
    assert "silent" in reasons["bob/silent.wav"] and "NaN" in reasons["bob/nan.wav"]
    assert "no speech left" in reasons["bob/short.wav"]
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "3 source clip(s) skipped" in card and "`bob/short.wav`" in card


def test_build_strips_the_byte_order_mark(odd_build):
    _, rows, _ = odd_build
    texts = [v for r in rows for v in r.values() if isinstance(v, str)]
    assert any("Hello with a byte-order mark." in t for t in texts)
    assert not any("\ufeff" in t for t in texts)


def test_encoder_error_names_the_file():
    from lalm_eval.audio.speaker import get_speaker_encoder
    from lalm_eval.errors import AudioError

    encoder = get_speaker_encoder("resemblyzer")
    with pytest.raises(AudioError, match=r"corpus/bob/short\.wav: the resemblyzer-ge2e speaker encoder cannot"):
        encoder.embed([voiced(1.0, 150.0), voiced(0.1, 150.0)], names=["a.wav", "corpus/bob/short.wav"])
