"""Audio read / write / resample, in one place.

Everything is float32 mono in [-1, 1]. Decoding goes through soundfile (libsndfile), which reads
WAV, FLAC, Ogg (Vorbis/Opus) and MP3 without FFmpeg; a file libsndfile cannot read (M4A/AAC,
WebM, Matroska, WMA ...) is decoded by FFmpeg through torchcodec (:func:`decode_ffmpeg`), so
every format FFmpeg decodes reads the same way. :func:`audio_info` gives a file's duration and
rate the same two ways. Resampling goes through soxr (VHQ). Errors name the file.
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
        audio = to_mono(audio)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        if not isinstance(source, (str, Path, bytes, bytearray)):
            raise AudioError(f"{name}: cannot decode audio ({exc})") from exc
        try:  # a format libsndfile does not read (m4a, webm, ...): FFmpeg
            audio, sr = decode_ffmpeg(source)
        except AudioError as ffmpeg_exc:
            raise AudioError(
                f"{name}: cannot decode audio (libsndfile: {exc} | FFmpeg: {ffmpeg_exc.args[0]}); "
                "check the file, or convert it to WAV or FLAC"
            ) from exc
    if audio.size == 0:
        raise AudioError(f"{name}: audio file holds no samples; replace or remove the file")
    if not np.all(np.isfinite(audio)):
        raise AudioError(f"{name}: audio contains NaN or infinite samples; replace or remove the file")
    if target_sr is not None:
        audio, sr = resample(audio, sr, target_sr), target_sr
    return audio, int(sr)


def decode_ffmpeg(source) -> tuple[np.ndarray, int]:
    """A whole file (path or bytes) decoded by FFmpeg through torchcodec: float32 mono at the
    file's rate. Raises :class:`AudioError` with FFmpeg's reason (or why torchcodec cannot run)."""
    try:
        from torchcodec.decoders import AudioDecoder
    except Exception as exc:  # noqa: BLE001 - ImportError, or OSError when FFmpeg's libraries are missing
        raise AudioError(f"torchcodec cannot load ({type(exc).__name__}: {exc})") from None
    try:
        samples = AudioDecoder(str(source) if isinstance(source, Path) else source).get_all_samples()
    except Exception as exc:  # noqa: BLE001 - torchcodec raises RuntimeError/ValueError with FFmpeg's reason
        reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
        raise AudioError(reason.rsplit(", ", 1)[-1]) from None
    data = samples.data.numpy().astype(np.float32, copy=False)  # [channels, frames]
    return (data.mean(axis=0, dtype=np.float32) if data.ndim == 2 else data), int(samples.sample_rate)


def audio_info(path) -> tuple[float, int]:
    """``(duration in seconds, sampling rate)`` of an audio file: from the header when libsndfile
    reads the format, else by decoding it with FFmpeg (:func:`decode_ffmpeg`, exact for formats
    whose headers give no exact length). Raises :class:`AudioError` naming the file."""
    name = str(path)
    if not Path(path).is_file():
        raise AudioError(f"{name}: audio file not found")
    try:
        info = sf.info(name)
        frames, sr = info.frames, info.samplerate
    except (sf.LibsndfileError, RuntimeError, TypeError, OSError) as exc:
        try:
            audio, sr = decode_ffmpeg(Path(path))
        except AudioError as ffmpeg_exc:
            raise AudioError(
                f"{name}: cannot decode audio (libsndfile: {exc} | FFmpeg: {ffmpeg_exc.args[0]}); "
                "check the file, or convert it to WAV or FLAC"
            ) from None
        frames = len(audio)
    if frames <= 0 or sr <= 0:
        raise AudioError(f"{name}: audio file holds no samples; replace or remove the file")
    return frames / sr, int(sr)


def read_audio_span(
    path, start_s: float, duration_s: float, target_sr: int | None = TARGET_SR, *, clamp: bool = False
) -> tuple[np.ndarray, int]:
    """``duration_s`` seconds of ``path`` from ``start_s``, float32 mono, decoding only those frames
    (``soundfile`` seek + read: a 2-minute segment of a multi-hour session costs 2 minutes).

    ``clamp=False`` (segments that must lie in the recording): a span that runs past the end (by
    more than 10 ms), starts before 0 or is empty is an :class:`AudioError` naming the file, the
    span and the file's length; with ``target_sr`` the span is resampled and then trimmed or
    zero-padded to exactly ``round(duration_s * target_sr)`` samples.
    ``clamp=True`` (times written by others, e.g. a release's clip times): the span is cut to the
    file, ``[max(0, start), min(start + duration, length)]``, and resampled to
    ``round(frames * target_sr / sr)`` samples of those frames; only a span with no frame left in
    the file is an :class:`AudioError` (naming the file, the span and the file's length).
    """
    name = str(path)
    if not Path(path).is_file():
        raise AudioError(f"{name}: audio file not found")
    try:
        with sf.SoundFile(name) as handle:
            sr, total = int(handle.samplerate), handle.frames
            first, count = int(round(start_s * sr)), int(round(duration_s * sr))
            if clamp:
                last = min(int(round((start_s + duration_s) * sr)), total)
                first = max(0, first)
                count = last - first
                bad = count <= 0
            else:
                bad = start_s < 0 or duration_s <= 0 or first >= total or first + count > total + round(0.01 * sr)
            if bad:
                raise AudioError(
                    f"{name}: span {start_s:.3f}+{duration_s:.3f} s lies outside the file ({total / sr:.3f} s long)"
                )
            handle.seek(first)
            audio = handle.read(min(count, total - first), dtype="float32", always_2d=False)
    except (sf.LibsndfileError, RuntimeError, TypeError) as exc:
        raise AudioError(f"{name}: cannot decode audio ({exc})") from exc
    audio = to_mono(audio)
    if not np.all(np.isfinite(audio)):
        raise AudioError(f"{name}: audio contains NaN or infinite samples")
    if target_sr is None:
        return audio, sr
    want = int(round((count / sr if clamp else duration_s) * target_sr))
    audio = resample(audio, sr, target_sr)
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
        if out[pos : pos + 4] != b"OggS":
            raise AudioError(f"not an Ogg page at byte {pos}")
        n_segments = out[pos + 26]
        header_len = 27 + n_segments
        page_len = header_len + sum(out[pos + 27 : pos + header_len])
        out[pos + 14 : pos + 18] = serial.to_bytes(4, "little")
        out[pos + 22 : pos + 26] = b"\0\0\0\0"
        crc = _ogg_crc(bytes(out[pos : pos + page_len]))
        out[pos + 22 : pos + 26] = crc.to_bytes(4, "little")
        pos += page_len
    return bytes(out)


def write_audio(
    path: str | Path, audio: np.ndarray, sr: int = TARGET_SR, compression_level: float | None = None
) -> Path:
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


def encode_audio(
    audio: np.ndarray, sr: int = TARGET_SR, fmt: str = "flac", compression_level: float | None = None
) -> bytes:
    """Encode mono float audio to bytes, deterministically (``fmt``: wav, flac, opus, ogg)."""
    if "." + fmt not in _FORMATS:
        raise AudioError(f"unsupported audio format {fmt!r}; use one of {sorted(f[1:] for f in _FORMATS)}")
    fmt_name, subtype = _FORMATS["." + fmt]
    kwargs = {} if compression_level is None else {"compression_level": compression_level}
    buf = io.BytesIO()
    sf.write(
        buf, np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0), sr, format=fmt_name, subtype=subtype, **kwargs
    )
    data = buf.getvalue()
    return fix_ogg_serial(data) if fmt_name == "OGG" else data


def audio_hash(audio: np.ndarray, sr: int) -> str:
    """Content hash of decoded audio (sample values and rate): a stable cache key."""
    digest = hashlib.sha256()
    digest.update(str(int(sr)).encode())
    digest.update(np.ascontiguousarray(audio, dtype=np.float32).tobytes())
    return digest.hexdigest()


# --- torchcodec / FFmpeg: what datasets' Audio feature needs ------------------------------------
# ``datasets`` 5 encodes and decodes its ``Audio`` feature through torchcodec, which loads FFmpeg's
# shared libraries. When it cannot load, datasets raises a bare OSError from deep inside a build
# (``libnvrtc.so.13: cannot open shared object file``). :func:`require_codec` runs one cached
# round trip first and turns a failure into an AudioError that names the cause and the fix.

# The torchcodec release built for each torch minor (torchcodec 0.N pairs with torch 2.N here);
# PyPI's torchcodec 0.14+ are CUDA builds that cannot load beside a CPU torch.
TORCHCODEC_FOR_TORCH = {"2.13": "0.13.0"}
FFMPEG_DEBIAN_PACKAGES = (
    "libavutil57",
    "libavcodec59",
    "libavformat59",
    "libavdevice59",
    "libavfilter8",
    "libswscale6",
    "libswresample4",
)
FFMPEG_FIX = (
    "install FFmpeg's shared libraries: apt-get install --no-install-recommends "
    + " ".join(FFMPEG_DEBIAN_PACKAGES)
    + " (or: apt-get install ffmpeg)"
)
_CUDA_MARKERS = ("libnvrtc", "libcudart", "libcuda.so", "libc10_cuda", "libcublas", "libnvidia", "libnpp")


def _torch_info() -> tuple[str, bool]:
    """(torch version, True when it is a CPU-only build); ("?", True) when torch is absent."""
    try:
        import torch
    except Exception:  # noqa: BLE001 - reported as part of the codec diagnosis
        return "?", True
    return str(torch.__version__), getattr(torch.version, "cuda", None) is None


def torchcodec_pin(torch_version: str) -> str:
    """The pip requirement of the torchcodec that pairs with ``torch_version``."""
    minor = ".".join(torch_version.split("+")[0].split(".")[:2])
    known = TORCHCODEC_FOR_TORCH.get(minor)
    if known:
        return f"torchcodec=={known}"
    return f"the torchcodec release built for torch {minor} (torchcodec's README lists the pairs)"


def _quoted(pin: str) -> str:
    return f"'{pin}'" if pin.startswith("torchcodec") else pin


def _round_trip() -> str:
    """Encode one second of a 440 Hz tone to WAV with torchcodec and decode it back, as datasets
    does; returns torchcodec's version. Raises whatever torchcodec raises."""
    import torch
    import torchcodec
    from torchcodec.decoders import AudioDecoder
    from torchcodec.encoders import AudioEncoder

    tone = torch.sin(torch.arange(TARGET_SR, dtype=torch.float32) * (2 * np.pi * 440 / TARGET_SR))[None] * 0.5
    buf = io.BytesIO()
    AudioEncoder(tone, sample_rate=TARGET_SR).to_file_like(buf, format="wav")
    back = AudioDecoder(buf.getvalue()).get_all_samples()
    if int(back.sample_rate) != TARGET_SR or back.data.shape[-1] != TARGET_SR:
        raise RuntimeError(
            f"round trip gave {back.data.shape[-1]} samples at {back.sample_rate} Hz, "
            f"expected {TARGET_SR} at {TARGET_SR} Hz"
        )
    if float((back.data - tone).abs().max()) > 1e-3:
        raise RuntimeError("round trip changed the samples")
    return str(getattr(torchcodec, "__version__", "?"))


def _installed_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def diagnose_codec_failure(
    exc: BaseException,
    torch_version: str,
    torch_cpu: bool,
    torchcodec_version: str | None,
    ffmpeg_found: bool | None = None,
) -> str:
    """The cause and the fix of a torchcodec failure, as one message for the user."""
    chain, e = [], exc
    while e is not None and len(chain) < 8:
        chain.append(f"{type(e).__name__}: {e}")
        e = e.__cause__ or e.__context__
    text = " | ".join(chain)
    pin = torchcodec_pin(torch_version)
    tc = f"torchcodec {torchcodec_version}" if torchcodec_version else "torchcodec"
    build = "CPU" if torch_cpu else "CUDA"
    if isinstance(exc, ImportError) and not torchcodec_version:
        cause = "torchcodec is not installed"
        fix = f"pip install {_quoted(pin)}"
    elif torch_cpu and any(m in text for m in _CUDA_MARKERS):
        cause = (
            f"{tc} is a CUDA build and cannot load beside the CPU torch {torch_version} "
            "(PyPI's torchcodec 0.14+ need CUDA libraries)"
        )
        fix = f"pip install {_quoted(pin)}"
    elif "libav" in text or "FFmpeg" in text or ffmpeg_found is False:
        cause = f"{tc} cannot load FFmpeg's shared libraries (libavutil, libavcodec, ...)"
        fix = FFMPEG_FIX
    elif "undefined symbol" in text:
        cause = f"{tc} was built for another torch than the installed {build} torch {torch_version}"
        fix = f"pip install {_quoted(pin)}"
    else:
        cause = f"{tc} fails beside the {build} torch {torch_version}"
        fix = f"pip install {_quoted(pin)}; if that does not help, {FFMPEG_FIX}"
    return (
        f"audio decoding through torchcodec (datasets' Audio feature) does not work: {cause}. "
        f"Fix: {fix}. `lalm-eval doctor` checks the whole stack. Underlying error: {chain[0]}"
        + (f" (caused by {chain[-1]})" if len(chain) > 1 else "")
    )


def _ffmpeg_found() -> bool:
    import ctypes.util

    return all(ctypes.util.find_library(lib) for lib in ("avutil", "avcodec", "avformat"))


_CODEC_STATE: dict = {}


def codec_status(refresh: bool = False) -> tuple[bool, str]:
    """``(True, "torchcodec X: 1 s round trip ok")`` or ``(False, message with cause and fix)``;
    probed once per process (``refresh`` probes again)."""
    if refresh or "status" not in _CODEC_STATE:
        try:
            version = _round_trip()
            _CODEC_STATE["status"] = (True, f"torchcodec {version}: 1 s WAV encode/decode round trip ok")
        except Exception as exc:  # noqa: BLE001 - OSError, RuntimeError, ImportError: all diagnosed
            torch_version, torch_cpu = _torch_info()
            _CODEC_STATE["status"] = (
                False,
                diagnose_codec_failure(
                    exc, torch_version, torch_cpu, _installed_version("torchcodec"), _ffmpeg_found()
                ),
            )
    return _CODEC_STATE["status"]


def require_codec() -> None:
    """Raise :class:`AudioError` (cause + fix) unless torchcodec can encode and decode audio; call it
    before anything that makes ``datasets`` encode or decode an ``Audio`` feature."""
    ok, message = codec_status()
    if not ok:
        raise AudioError(message)
