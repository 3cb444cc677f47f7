"""Audio read / write / resample, in one place.

Everything is float32 mono in [-1, 1]. Decoding goes through soundfile (libsndfile), which reads
WAV, FLAC and Ogg (Vorbis/Opus) without FFmpeg; resampling goes through soxr (VHQ). Errors name
the file.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from lalm_eval.errors import AudioError

TARGET_SR = 16_000


def to_mono(audio: np.ndarray) -> np.ndarray:
    """Average the channels of a ``[frames, channels]`` array; 1-D input passes through."""
    audio = np.asarray(audio, dtype=np.float32)
    return audio.mean(axis=1, dtype=np.float32) if audio.ndim == 2 else audio


def resample(audio: np.ndarray, orig_sr: int, target_sr: int) -> np.ndarray:
    """Resample mono float audio; identity when the rates agree."""
    audio = np.asarray(audio, dtype=np.float32)
    if orig_sr == target_sr:
        return audio
    if orig_sr <= 0 or target_sr <= 0:
        raise ValueError(f"sampling rates must be positive, got {orig_sr} -> {target_sr}")
    return soxr.resample(audio, orig_sr, target_sr, quality="VHQ").astype(np.float32)


def read_audio(source, target_sr: int | None = TARGET_SR) -> tuple[np.ndarray, int]:
    """Read a file path, ``bytes`` or a binary file object into float32 mono.

    With ``target_sr`` (default 16 kHz) the audio is resampled to it; ``None`` keeps the file's
    rate. Raises :class:`AudioError` naming the file when it is missing, empty or undecodable.
    """
    name = str(source) if isinstance(source, (str, Path)) else "<in-memory audio>"
    if isinstance(source, (str, Path)) and not Path(source).is_file():
        raise AudioError(f"{name}: audio file not found")
    handle = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source
    try:
        audio, sr = sf.read(handle, dtype="float32", always_2d=False)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioError(f"{name}: cannot decode audio ({exc})") from exc
    audio = to_mono(audio)
    if audio.size == 0:
        raise AudioError(f"{name}: audio file holds no samples")
    if not np.all(np.isfinite(audio)):
        raise AudioError(f"{name}: audio contains NaN or infinite samples")
    if target_sr is not None:
        audio, sr = resample(audio, sr, target_sr), target_sr
    return audio, int(sr)


# Output formats by file suffix: (soundfile format, subtype).
_FORMATS = {
    ".wav": ("WAV", "PCM_16"),
    ".flac": ("FLAC", "PCM_16"),
    ".opus": ("OGG", "OPUS"),
    ".ogg": ("OGG", "VORBIS"),
}


def write_audio(path: str | Path, audio: np.ndarray, sr: int = TARGET_SR,
                bitrate_mode: str | None = None, compression_level: float | None = None) -> Path:
    """Write mono float audio; the format follows the suffix (.wav, .flac, .opus, .ogg)."""
    path = Path(path)
    try:
        fmt, subtype = _FORMATS[path.suffix.lower()]
    except KeyError:
        raise AudioError(f"{path}: unsupported audio suffix; use one of {sorted(_FORMATS)}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    audio = np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)
    kwargs = {}
    if bitrate_mode is not None:
        kwargs["bitrate_mode"] = bitrate_mode
    if compression_level is not None:
        kwargs["compression_level"] = compression_level
    sf.write(path, audio, sr, format=fmt, subtype=subtype, **kwargs)
    return path


def encode_audio(audio: np.ndarray, sr: int = TARGET_SR, fmt: str = "flac") -> bytes:
    """Encode mono float audio to in-memory bytes (FLAC by default: lossless, compact)."""
    fmt_name, subtype = _FORMATS["." + fmt]
    buf = io.BytesIO()
    sf.write(buf, np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0), sr,
             format=fmt_name, subtype=subtype)
    return buf.getvalue()


def audio_hash(audio: np.ndarray, sr: int) -> str:
    """Content hash of decoded audio (sample values and rate): a stable cache key."""
    digest = hashlib.sha256()
    digest.update(str(int(sr)).encode())
    digest.update(np.ascontiguousarray(audio, dtype=np.float32).tobytes())
    return digest.hexdigest()
