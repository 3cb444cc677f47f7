"""Enrolled subjects: where their clips come from, their centroids, and threshold calibration.

Sources (:func:`load_enrollment`):

- a folder of speaker folders, ``<dir>/<Name>/<clip>.<audio>`` (the folder name, without leading
  or trailing spaces, is the subject's name as questions spell it; the file stem is the clip id).
  Every format :func:`lalm_eval.audio.io.read_audio` decodes is read (WAV, FLAC, Ogg/Opus, MP3
  through libsndfile; M4A/AAC, WebM and the rest through FFmpeg). What cannot be used is listed,
  never dropped silently (:attr:`EnrollmentClips.skips`, item and reason each): a file that is
  not audio, audio neither decoder reads (or empty, or NaN), a sub-folder inside a speaker folder,
  a file beside the speaker folders, a speaker folder left with no clip. Two folders that name
  the same subject once stripped (``Karen`` and ``Karen ``) are an error;
- anything ``datasets.load_dataset(path, "enrollment", split="train")`` opens (a Hub id or a
  Hub-style folder with a ``configs:`` card), with columns ``name`` and ``audio`` (and, when
  present, ``clip_id``, ``language``).

A subject's centroid is the renormalised mean of its clips' unit-norm embeddings.
:func:`calibrate` sets the presence threshold from the enrollment data alone, leaving one clip
out: each clip is cut into the same windows as test audio; its windows are scored against its own
subject's centroid *without that clip* (same-speaker scores) and against every other subject's
centroid (different-speaker scores), median-smoothed like test windows; the threshold is the
equal-error-rate point of those scores. By default every clip also takes part as one augmented
copy (speed, echo/reverb, noise; multi-condition calibration): clean-only scores separate the
enrolled voices almost perfectly, and their EER point sits too high for degraded test audio. The window-to-window same/different EER point gives the
clustering threshold used for counting speakers. With a ``split_test`` (the gap statistic's
one-or-two test, :mod:`.speaker_test`), the record also says what that test decides on the
enrollment voices (clean clips): each subject's windows alone, and consecutive subjects' windows
together — a check, not a fit: the test has no parameter set from it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import mimetypes
import re
from pathlib import Path

import numpy as np

from lalm_eval.audio.augment import AugmentationConfig, apply_augmentation, sample_augmentation
from lalm_eval.audio.io import TARGET_SR, audio_hash, read_audio
from lalm_eval.errors import AudioError, ConfigError, LalmEvalError
from lalm_eval.metrics.verification import equal_error_rate, pair_scores
from lalm_eval.models.cascade_parts.segmentation import (
    SegmenterConfig,
    cut,
    embed_windows,
    make_windows,
    smooth_scores,
    speech_regions,
)
from lalm_eval.models.cascade_parts.speaker_test import GapTestConfig, enrollment_check
from lalm_eval.seeding import rng_for

log = logging.getLogger(__name__)

#: suffixes taken as audio beside what Python's mimetypes table calls audio or video (wav, flac,
#: mp3, m4a, aac, webm, mp4 ...) and what libsndfile reads by name
EXTRA_AUDIO_SUFFIXES = (".opus", ".oga", ".mka", ".weba", ".ogg", ".flac", ".wav")
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
MAX_PAIR_WINDOWS = 3000  # windows sampled (evenly) for the clustering threshold
#: multi-condition calibration: each effect on half the copies, lalm_eval's default ranges
CALIBRATION_AUGMENTATION = AugmentationConfig(speed_prob=0.5, noise_prob=0.5, reverb_prob=0.5)


@dataclasses.dataclass(frozen=True)
class EnrollmentClip:
    name: str
    clip_id: str
    audio: np.ndarray  # 16 kHz mono float32
    language: str = ""


class EnrollmentClips(list):
    """The clips of an enrollment (a list of :class:`EnrollmentClip`), with ``skips``: what the
    speaker folders hold that could not be used, ``{"item", "reason"}`` each (paths relative to
    the enrollment folder)."""

    def __init__(self, clips=(), skips=()):
        super().__init__(clips)
        self.skips: list[dict] = list(skips)


def looks_like_audio(path: Path) -> bool:
    """True when the file name says audio (or video, whose sound FFmpeg reads)."""
    import soundfile as sf

    kind = mimetypes.guess_type(path.name)[0] or ""
    suffix = path.suffix.lower()
    return (
        kind.split("/")[0] in ("audio", "video")
        or suffix in EXTRA_AUDIO_SUFFIXES
        or (len(suffix) > 1 and suffix[1:].upper() in sf.available_formats())
    )


def _visible(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def _speaker_folders(folder: Path) -> list[Path]:
    """The sub-folders of ``folder`` that hold a file named like audio (speaker folders)."""
    return [d for d in _visible(folder) if d.is_dir() and any(f.is_file() and looks_like_audio(f) for f in _visible(d))]


def load_enrollment(path: str | Path) -> EnrollmentClips:
    """The enrollment clips at ``path`` (speaker folders, or a ``datasets`` ``enrollment`` config)."""
    text = str(path)
    folder = Path(text).expanduser()
    if folder.is_dir():
        speakers = _speaker_folders(folder)
        if speakers:
            return _from_folders(folder, speakers)
        if not (folder / "README.md").is_file():  # neither layout: say what each needs
            shown = ", ".join(p.name + ("/" if p.is_dir() else "") for p in _visible(folder)[:4]) or "nothing"
            raise ConfigError(
                f"model arg enrollment={text}: no speaker folder holding audio files (<dir>/<Name>/<clip>.<audio>) "
                f"and no dataset card (README.md with an 'enrollment' config), it holds {shown}; give one folder "
                "of reference clips per speaker, or a built dataset folder with that config"
            )
    elif not _HUB_ID.match(text):
        raise ConfigError(f"enrollment {text!r}: no such folder (and not a Hub dataset id)")
    return EnrollmentClips(_from_dataset(text))


def _from_folders(root: Path, speakers: list[Path]) -> EnrollmentClips:
    clips, skips, names = [], [], {}

    def skip(path: Path, reason: str) -> None:
        skips.append({"item": path.relative_to(root).as_posix() + ("/" if path.is_dir() else ""), "reason": reason})

    for entry in _visible(root):
        if entry not in speakers:
            skip(
                entry,
                "a folder without audio files, not a speaker"
                if entry.is_dir()
                else "a file beside the speaker folders, not read (clips go in <dir>/<Name>/)",
            )
    for d in speakers:
        name = d.name.strip()
        if name in names:
            raise ConfigError(
                f"enrollment {str(root)!r}: folders {names[name]!r} and {d.name!r} both name subject {name!r} "
                "(names are taken without leading or trailing spaces); merge them or rename one"
            )
        names[name] = d.name
        before = len(clips)
        for f in _visible(d):
            if f.is_dir():
                skip(f, "a folder inside a speaker folder, not read (put the clips directly in the speaker folder)")
                continue
            if not looks_like_audio(f):
                skip(f, f"not an audio file ({mimetypes.guess_type(f.name)[0] or 'unknown type'})")
                continue
            if f.stat().st_size == 0:
                skip(f, "empty file (0 bytes); replace it with the clip or remove it")
                continue
            try:
                audio, _ = read_audio(f, TARGET_SR)
            except AudioError as exc:
                skip(f, " ".join(str(exc).split(": ", 1)[-1].split()))
                continue
            clips.append(EnrollmentClip(name, f"{name}/{f.stem}", audio))
        if len(clips) == before:
            skip(d, f"speaker folder with no usable clip: subject {name!r} is not enrolled")
    return EnrollmentClips(clips, skips)


def _from_dataset(path: str) -> list[EnrollmentClip]:
    import datasets

    from lalm_eval.hub.load import load_dataset_fresh

    try:
        ds = load_dataset_fresh(path, "enrollment", split="train")
    except LalmEvalError:  # the loader names the folder, what is missing there and the fix
        raise
    except Exception as exc:  # the message of datasets says what was missing
        raise ConfigError(
            f"model arg enrollment={path}: neither speaker folders <dir>/<Name>/<audio files> nor a "
            f"dataset with an 'enrollment' config and a 'train' split ({type(exc).__name__}: {exc}); "
            "give a built dataset folder with that config, or one folder of reference clips per speaker"
        ) from exc
    missing = {"name", "audio"} - set(ds.column_names)
    if missing:
        raise ConfigError(
            f"model arg enrollment={path}: config 'enrollment' lacks column(s) {sorted(missing)}; "
            "rebuild the dataset with the current builder"
        )
    ds = ds.cast_column("audio", datasets.Audio(decode=False))
    clips = []
    for i, row in enumerate(ds):
        cell = row["audio"] or {}
        source = cell.get("bytes") or cell.get("path")
        if not source:
            raise ConfigError(f"enrollment {path!r}: row {i} has no audio bytes or path")
        audio, _ = read_audio(source, TARGET_SR)
        clips.append(
            EnrollmentClip(
                str(row["name"]), str(row.get("clip_id") or f"{row['name']}/{i}"), audio, str(row.get("language") or "")
            )
        )
    return clips


@dataclasses.dataclass
class Enrollment:
    names: list[str]  # subjects, sorted
    centroids: np.ndarray  # [subjects, dim], unit norm
    clip_labels: np.ndarray  # [clips] index into names
    clip_embeddings: np.ndarray  # [clips, dim]
    fingerprint: str
    languages: dict[str, str]


def _normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def enroll(clips: list[EnrollmentClip], encoder, source: str = "") -> Enrollment:
    """Embed the clips and average them per subject."""
    names = sorted({c.name for c in clips})
    if len(names) < 2:
        raise ConfigError(f"enrollment {source!r}: needs at least 2 subjects to calibrate, found {names}")
    labels = np.array([names.index(c.name) for c in clips])
    try:
        embs = encoder.embed([c.audio for c in clips])
    except ValueError:  # name the clip the encoder rejects
        for c in clips:
            try:
                encoder.embed_one(c.audio)
            except ValueError as exc:
                raise ConfigError(f"enrollment {source!r}: clip {c.clip_id!r} of {c.name!r}: {exc}") from exc
        raise
    centroids = _normalise(np.stack([embs[labels == k].mean(axis=0) for k in range(len(names))]))
    h = hashlib.sha256()
    for c in sorted(clips, key=lambda c: (c.name, c.clip_id)):
        h.update(f"{c.name}\0{c.clip_id}\0{audio_hash(c.audio, TARGET_SR)}\n".encode())
    languages = {c.name: c.language for c in clips if c.language}
    return Enrollment(names, centroids.astype(np.float32), labels, embs, h.hexdigest(), languages)


def degraded_copies(clips: list[EnrollmentClip], augment: AugmentationConfig, seed: int = 0) -> list[np.ndarray]:
    """One augmented copy of every clip, seeded by its clip id (same clips → same copies)."""
    return [
        apply_augmentation(c.audio, TARGET_SR, sample_augmentation(augment, rng_for(seed, "cascade", c.clip_id)))
        for c in clips
    ]


def calibrate(
    enrollment: Enrollment,
    clips: list[EnrollmentClip],
    encoder,
    cfg: SegmenterConfig,
    augment: AugmentationConfig | None = None,
    seed: int = 0,
    split_test: GapTestConfig | None = None,
) -> dict:
    """Presence and clustering thresholds from the enrollment clips (leave one clip out).

    With ``augment`` (multi-condition calibration), every clip also takes part as one augmented
    copy (speed / reverb / noise drawn from ``augment``), and the scores of both are pooled, so
    the threshold also suits degraded test audio; the centroids stay those of the clean clips.
    """
    variants = [(i, c.audio) for i, c in enumerate(clips)]
    if augment is not None:
        variants += list(enumerate(degraded_copies(clips, augment, seed)))
    wins = [make_windows(speech_regions(a, TARGET_SR, cfg), TARGET_SR, cfg) for _, a in variants]
    window_embs, ok = embed_windows(encoder, [w for (_, a), ws in zip(variants, wins) for w in cut(a, ws)])
    labels, embs = enrollment.clip_labels, enrollment.clip_embeddings
    sums = np.stack([embs[labels == k].sum(axis=0) for k in range(len(enrollment.names))])
    counts = np.bincount(labels, minlength=len(enrollment.names))
    same, diff, window_labels = [], [], []
    pos = 0
    for (i, _), ws in zip(variants, wins):
        e, keep = window_embs[pos : pos + len(ws)], ok[pos : pos + len(ws)]  # rejected windows are left out
        pos += len(ws)
        k = labels[i]
        window_labels += [k if good else -1 for good in keep]
        e, ws = e[keep], [w for w, good in zip(ws, keep) if good]
        if not ws or counts[k] < 2:
            continue
        centroids = enrollment.centroids.copy()
        centroids[k] = _normalise(sums[k] - embs[i])  # leave this clip out of its own centroid
        scores = smooth_scores(e @ centroids.T, ws, cfg.median)
        same.extend(scores[:, k])
        diff.extend(np.delete(scores, k, axis=1).ravel())
    if not same:
        raise ConfigError("enrollment: calibration needs a subject with at least 2 clips holding speech")
    eer, threshold = equal_error_rate(np.array(same), np.array(diff))
    window_labels = np.array(window_labels)
    kept = np.flatnonzero(window_labels >= 0)
    kept = kept[:: max(1, len(kept) // MAX_PAIR_WINDOWS)]
    pair_same, pair_diff = pair_scores(window_embs[kept], window_labels[kept])
    cluster_eer, cluster_threshold = equal_error_rate(pair_same, pair_diff)
    # the one-or-two test on the clean clips' windows (the first len(clips) variants): pooled with
    # their augmented copies, one voice in two conditions is two clusters by design
    n_clean = sum(len(ws) for ws in wins[: len(clips)])
    split = None if split_test is None else enrollment_check(window_embs[:n_clean], window_labels[:n_clean], split_test)
    return {
        "threshold": round(threshold, 6),
        "eer": round(eer, 6),
        "n_same": len(same),
        "n_diff": len(diff),
        "cluster_threshold": round(cluster_threshold, 6),
        "cluster_eer": round(cluster_eer, 6),
        "n_windows": int((window_labels >= 0).sum()),
        "n_clips": len(clips),
        "n_subjects": len(enrollment.names),
        "conditions": "clean+augmented" if augment is not None else "clean",
        "split_test": split,
    }
