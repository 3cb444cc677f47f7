import numpy as np
import pytest

from lalm_eval.audio.io import audio_hash, read_audio, resample, write_audio
from lalm_eval.errors import AudioError
from tests.conftest import tone


@pytest.mark.parametrize("suffix,min_snr_db", [(".wav", 60), (".flac", 60), (".opus", 10)])
def test_write_read_roundtrip_keeps_length_and_signal(tmp_path, suffix, min_snr_db):
    x = tone(1.5)
    path = write_audio(tmp_path / f"x{suffix}", x, 16000)
    y, sr = read_audio(path)
    assert sr == 16000 and len(y) == len(x)
    snr_db = 10 * np.log10(np.sum(x**2) / np.sum((y - x) ** 2))
    assert snr_db > min_snr_db


def test_read_resamples_to_target_rate(tmp_path):
    path = write_audio(tmp_path / "x.wav", tone(2.0, sr=8000), 8000)
    y, sr = read_audio(path, target_sr=16000)
    assert sr == 16000 and len(y) == 32000
    z, sr_native = read_audio(path, target_sr=None)
    assert sr_native == 8000 and len(z) == 16000


def test_resample_preserves_frequency():
    x = tone(1.0, freq=440.0, sr=22050)
    y = resample(x, 22050, 16000)
    peak_hz = np.argmax(np.abs(np.fft.rfft(y))) * 16000 / len(y)
    assert abs(peak_hz - 440.0) < 2


def test_stereo_is_averaged(tmp_path):
    import soundfile as sf

    stereo = np.stack([tone(1.0), np.zeros(16000, np.float32)], axis=1)
    sf.write(tmp_path / "s.wav", stereo, 16000)
    y, _ = read_audio(tmp_path / "s.wav")
    assert y.ndim == 1 and np.allclose(y, stereo[:, 0] / 2, atol=1e-4)


def test_missing_file_error_names_the_file(tmp_path):
    with pytest.raises(AudioError, match="nope.wav: audio file not found"):
        read_audio(tmp_path / "nope.wav")


def test_corrupted_file_error_names_the_file(tmp_path):
    bad = tmp_path / "broken.opus"
    bad.write_bytes(b"OggS" + b"\x00garbage" * 50)
    with pytest.raises(AudioError, match="broken.opus: cannot decode audio"):
        read_audio(bad)


def test_unsupported_suffix_is_rejected(tmp_path):
    with pytest.raises(AudioError, match="unsupported audio suffix"):
        write_audio(tmp_path / "x.mp3", tone(), 16000)


def test_audio_hash_depends_on_samples_and_rate():
    x = tone()
    assert audio_hash(x, 16000) == audio_hash(x.copy(), 16000)
    y = x.copy()
    y[100] += 1e-3
    assert audio_hash(y, 16000) != audio_hash(x, 16000)
    assert audio_hash(x, 8000) != audio_hash(x, 16000)


@pytest.mark.parametrize("fmt", ["opus", "flac", "wav"])
def test_encoding_is_byte_reproducible(fmt):
    """libsndfile picks a random Ogg serial per file; encode_audio fixes it."""
    from lalm_eval.audio.io import encode_audio

    x = tone(2.0)
    first, second = encode_audio(x, fmt=fmt), encode_audio(x, fmt=fmt)
    assert first == second
    y, _ = read_audio(first)
    assert len(y) == len(x)


def test_ogg_checksums_are_valid_after_serial_fix(tmp_path):
    """A decoder that verifies page CRCs (libsndfile/libogg) still reads the rewritten file."""
    import soundfile as sf

    path = write_audio(tmp_path / "x.opus", tone(3.0), 16000)
    data = path.read_bytes()
    assert data[14:18] == (0x4C414C4D).to_bytes(4, "little")
    corrupted = bytearray(data)
    corrupted[40] ^= 0xFF  # flip a byte inside the first page: its CRC no longer matches
    (tmp_path / "bad.opus").write_bytes(bytes(corrupted))
    assert len(sf.read(path)[0]) == 48000
    with pytest.raises(sf.LibsndfileError):  # the CRC check refuses the page
        sf.read(tmp_path / "bad.opus")


# -- ranged reads (read_audio_span): the raising mode (segments) and the clamping mode (release clips) --


def _ramp_wav(path, seconds, sr):
    """A mono 16-bit wav whose every sample differs from its neighbours (so slices can be told apart)."""
    import soundfile as sf

    n = int(seconds * sr)
    x = ((np.arange(n) % 2000) / 2000.0 - 0.5).astype(np.float32)
    sf.write(path, x, sr, subtype="PCM_16")
    return sf.read(path, dtype="float32")[0]  # as stored (16-bit)


def test_span_clamped_at_the_file_end(tmp_path):
    from lalm_eval.audio.io import read_audio_span

    x = _ramp_wav(tmp_path / "r.wav", 3.0, 16000)  # 48000 frames
    y, sr = read_audio_span(tmp_path / "r.wav", 2.5, 1.0, clamp=True)  # asks 2.5-3.5 s: 2.5-3.0 s is there
    assert sr == 16000 and len(y) == 8000 and np.array_equal(y, x[40000:48000])
    y, _ = read_audio_span(tmp_path / "r.wav", -0.5, 1.0, clamp=True)  # -0.5-0.5 s → 0-0.5 s
    assert len(y) == 8000 and np.array_equal(y, x[:8000])
    y, _ = read_audio_span(tmp_path / "r.wav", 1.0, 0.5, clamp=True)  # inside: unchanged
    assert np.array_equal(y, x[16000:24000])


def test_span_clamped_resamples_the_frames_left(tmp_path):
    from lalm_eval.audio.io import read_audio_span

    _ramp_wav(tmp_path / "r8.wav", 2.0, 8000)  # 16000 frames at 8 kHz
    y, sr = read_audio_span(tmp_path / "r8.wav", 1.5, 1.0, clamp=True)  # 1.5-2.0 s: 4000 frames → 8000 at 16 kHz
    assert sr == 16000 and len(y) == 8000


def test_span_with_nothing_in_the_file_is_an_error_in_both_modes(tmp_path):
    from lalm_eval.audio.io import read_audio_span

    _ramp_wav(tmp_path / "r.wav", 3.0, 16000)
    for clamp in (True, False):
        with pytest.raises(AudioError, match=r"r\.wav: span 3\.500\+1\.000 s lies outside the file \(3\.000 s long\)"):
            read_audio_span(tmp_path / "r.wav", 3.5, 1.0, clamp=clamp)


def test_span_past_the_end_raises_naming_the_file_and_its_real_span(tmp_path):
    from lalm_eval.audio.io import read_audio_span

    x = _ramp_wav(tmp_path / "r.wav", 3.0, 16000)
    with pytest.raises(AudioError, match=r"r\.wav: span 2\.500\+1\.000 s lies outside the file \(3\.000 s long\)"):
        read_audio_span(tmp_path / "r.wav", 2.5, 1.0)
    with pytest.raises(AudioError, match=r"span -0\.500\+1\.000 s lies outside the file \(3\.000 s long\)"):
        read_audio_span(tmp_path / "r.wav", -0.5, 1.0)
    y, _ = read_audio_span(tmp_path / "r.wav", 2.995, 0.01)  # 5 ms past the end: within the 10 ms tolerance, padded
    assert len(y) == 160 and np.array_equal(y[:80], x[47920:48000]) and not y[80:].any()


def test_release_clips_are_cut_clamped(tmp_path):
    """msu_bench's release clips go through the same ranged read, clamped (times past the end are cut)."""
    from msu_bench.mcq_builder import cut

    x = _ramp_wav(tmp_path / "r.wav", 3.0, 16000)
    assert np.array_equal(cut(tmp_path / "r.wav", 2.0, 3.4), x[32000:48000])
    with pytest.raises(AudioError, match=r"r\.wav: span"):
        cut(tmp_path / "r.wav", 3.2, 3.4)
