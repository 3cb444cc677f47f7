"""Audio read / write / resample, in one place.

Everything is float32 mono in [-1, 1]. Decoding goes through soundfile (libsndfile), which reads
WAV, FLAC and Ogg (Vorbis/Opus) without FFmpeg; resampling goes through soxr (VHQ). Errors name
the file.
"""

from __future__ import annotations

import hashlib
import io
import zlib
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


def read_audio_span(path, start_s: float, duration_s: float, target_sr: int | None = TARGET_SR) -> tuple[np.ndarray, int]:
    """``duration_s`` seconds of ``path`` from ``start_s``, float32 mono, decoding only those frames
    (``soundfile`` seek + read: a 2-minute segment of a multi-hour session costs 2 minutes).

    With ``target_sr`` the span is resampled and then trimmed or zero-padded to exactly
    ``round(duration_s * target_sr)`` samples. A span that runs past the end is an
    :class:`AudioError` naming the file, the span and the file's length.
    """
    name = str(path)
    if not Path(path).is_file():
        raise AudioError(f"{name}: audio file not found")
    try:
        with sf.SoundFile(name) as handle:
            sr, total = int(handle.samplerate), handle.frames
            first, count = int(round(start_s * sr)), int(round(duration_s * sr))
            if start_s < 0 or duration_s <= 0 or first >= total or first + count > total + round(0.01 * sr):
                raise AudioError(f"{name}: span {start_s:.3f}+{duration_s:.3f} s lies outside the file "
                                 f"({total / sr:.3f} s long)")
            handle.seek(first)
            audio = handle.read(min(count, total - first), dtype="float32", always_2d=False)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioError(f"{name}: cannot decode audio ({exc})") from exc
    audio = to_mono(audio)
    if not np.all(np.isfinite(audio)):
        raise AudioError(f"{name}: audio contains NaN or infinite samples")
    if target_sr is None:
        return audio, sr
    audio, want = resample(audio, sr, target_sr), int(round(duration_s * target_sr))
    audio = audio[:want] if len(audio) >= want else np.pad(audio, (0, want - len(audio)))
    return audio.astype(np.float32), int(target_sr)


# Output formats by file suffix: (soundfile format, subtype).
_FORMATS = {
    ".wav": ("WAV", "PCM_16"),
    ".flac": ("FLAC", "PCM_16"),
    ".opus": ("OGG", "OPUS"),
    ".ogg": ("OGG", "VORBIS"),
}


OGG_SERIAL = 0x4C414C4D  # fixed stream serial ("LALM") so that encoding is byte-reproducible
_BIT_REVERSED_BYTES = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def _ogg_crc(page: bytes) -> int:
    """Ogg's CRC-32 (polynomial 0x04C11DB7, MSB-first, zero init, no final xor).

    Computed with zlib's reflected CRC-32 on bit-reversed bytes (the same polynomial, mirrored),
    which runs in C instead of a Python loop.
    """
    reflected = zlib.crc32(page.translate(_BIT_REVERSED_BYTES), 0xFFFFFFFF) ^ 0xFFFFFFFF
    return int(f"{reflected:032b}"[::-1], 2)


def fix_ogg_serial(data: bytes, serial: int = OGG_SERIAL) -> bytes:
    """Rewrite the stream serial number of a single-stream Ogg file and re-checksum its pages.

    libsndfile picks a random serial for every Ogg file it writes, so the same audio encodes to
    different bytes each time; a fixed serial makes the encoding deterministic (decoding is
    unaffected: only the serial and the page checksums change).
    """
    out = bytearray(data)
    pos = 0
    while pos < len(out):
        if out[pos:pos + 4] != b"OggS":
            raise AudioError(f"not an Ogg page at byte {pos}")
        n_segments = out[pos + 26]
        header_len = 27 + n_segments
        page_len = header_len + sum(out[pos + 27:pos + header_len])
        out[pos + 14:pos + 18] = serial.to_bytes(4, "little")
        out[pos + 22:pos + 26] = b"\0\0\0\0"
        crc = _ogg_crc(bytes(out[pos:pos + page_len]))
        out[pos + 22:pos + 26] = crc.to_bytes(4, "little")
        pos += page_len
    return bytes(out)


def write_audio(path: str | Path, audio: np.ndarray, sr: int = TARGET_SR,
                compression_level: float | None = None) -> Path:
    """Write mono float audio; the format follows the suffix (.wav, .flac, .opus, .ogg).

    The bytes are a function of the samples alone (Ogg serials are fixed), so writing the same
    audio twice gives identical files.
    """
    path = Path(path)
    try:
        fmt, subtype = _FORMATS[path.suffix.lower()]
    except KeyError:
        raise AudioError(f"{path}: unsupported audio suffix; use one of {sorted(_FORMATS)}") from None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_audio(audio, sr, path.suffix.lower()[1:], compression_level=compression_level))
    return path


def encode_audio(audio: np.ndarray, sr: int = TARGET_SR, fmt: str = "flac",
                 compression_level: float | None = None) -> bytes:
    """Encode mono float audio to bytes, deterministically (``fmt``: wav, flac, opus, ogg)."""
    if "." + fmt not in _FORMATS:
        raise AudioError(f"unsupported audio format {fmt!r}; use one of {sorted(f[1:] for f in _FORMATS)}")
    fmt_name, subtype = _FORMATS["." + fmt]
    kwargs = {} if compression_level is None else {"compression_level": compression_level}
    buf = io.BytesIO()
    sf.write(buf, np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0), sr,
             format=fmt_name, subtype=subtype, **kwargs)
    data = buf.getvalue()
    return fix_ogg_serial(data) if fmt_name == "OGG" else data


def audio_hash(audio: np.ndarray, sr: int) -> str:
    """Content hash of decoded audio (sample values and rate): a stable cache key."""
    digest = hashlib.sha256()
    digest.update(str(int(sr)).encode())
    digest.update(np.ascontiguousarray(audio, dtype=np.float32).tobytes())
    return digest.hexdigest()
