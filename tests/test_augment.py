import json

import numpy as np
import pytest
from scipy.signal import welch

from lalm_eval.audio.augment import (
    Augmentation,
    AugmentationConfig,
    apply_augmentation,
    make_noise,
    sample_augmentation,
    speed_perturb_spans,
)
from lalm_eval.errors import ConfigError

SR = 16000
ALL_ON = {"speed_prob": 1.0, "noise_prob": 1.0, "reverb_prob": 1.0}


def sine(seconds, freq=440.0, amp=0.1):
    t = np.arange(int(seconds * SR)) / SR
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def speech_like():
    """0.5 s silence, 1 s of two tones, 0.5 s silence (segments aligned to 10 ms frames)."""
    gap = np.zeros(SR // 2, np.float32)
    return np.concatenate([gap, sine(1.0, 300) + sine(1.0, 1250, 0.05), gap]), slice(SR // 2, SR // 2 + SR)


def peak_hz(x):
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)), n=8 * len(x)))
    return np.argmax(spectrum) * SR / (8 * len(x))


def decay_time(h):
    """RT60 estimated from the Schroeder curve between -10 and -30 dB (T20 x 3)."""
    edc = np.cumsum((h.astype(np.float64) ** 2)[::-1])[::-1]
    edc_db = 10 * np.log10(edc / edc[0] + 1e-30)
    t10, t30 = np.argmax(edc_db <= -10), np.argmax(edc_db <= -30)
    return 3 * (t30 - t10) / SR


@pytest.mark.parametrize("kind", ["white", "pink"])
@pytest.mark.parametrize("snr_db", [5.0, 15.0])
def test_noise_is_added_at_the_requested_snr(kind, snr_db):
    clean, active = speech_like()
    aug = Augmentation(noise={"kind": kind, "snr_db": snr_db, "seed": 7})
    out = apply_augmentation(clean, SR, aug)
    noise = out.astype(np.float64) - clean
    measured = 10 * np.log10(np.mean(clean[active].astype(np.float64) ** 2) / np.mean(noise**2))
    assert abs(measured - snr_db) < 0.5
    assert np.mean(noise[: SR // 2] ** 2) > 0  # noise also fills the silences


def test_pink_noise_falls_3_db_per_octave_and_white_is_flat():
    def octave_slopes(kind):
        f, psd = welch(make_noise(kind, 2**18, 3), fs=SR, nperseg=4096)
        bands = [np.mean(psd[(f >= lo) & (f < 2 * lo)]) for lo in (125, 250, 500, 1000, 2000, 4000)]
        return np.diff(10 * np.log10(bands))

    assert np.all(np.abs(octave_slopes("pink") + 3.0) < 1.0)
    assert np.all(np.abs(octave_slopes("white")) < 0.5)
    assert abs(np.mean(make_noise("pink", 50000, 1) ** 2) - 1.0) < 1e-9


@pytest.mark.parametrize("factor", [1.1, 0.9])
def test_speed_changes_length_and_pitch_together(factor):
    x = sine(1.0, 440.0)
    y = apply_augmentation(x, SR, Augmentation(speed=factor))
    assert abs(len(y) - len(x) / factor) <= 1.5
    assert abs(peak_hz(y) - 440.0 * factor) < 2.0


def test_speed_perturb_spans():
    spans = speed_perturb_spans([(1.1, 2.2), (0.0, 0.55)], 1.1)
    assert len(spans) == 2  # pytest >= 9 refuses nested data in approx: compare span by span
    assert spans[0] == pytest.approx((1.0, 2.0)) and spans[1] == pytest.approx((0.0, 0.5))
    assert speed_perturb_spans([(1, 2)], None) == [(1.0, 2.0)]
    with pytest.raises(ConfigError):
        speed_perturb_spans([(0, 1)], 0)


def test_reverb_adds_a_decaying_tail_matching_rt60():
    burst = np.concatenate([sine(0.3), np.zeros(SR, np.float32)])
    end = int(0.3 * SR) + 10
    tails = {}
    for rt60 in (0.2, 0.6):
        out = apply_augmentation(burst, SR, Augmentation(reverb={"kind": "rir", "rt60": rt60, "seed": 5}))
        assert len(out) == len(burst)
        tails[rt60] = np.sum(out[end:].astype(np.float64) ** 2)
    assert np.sum(burst[end:] ** 2) == 0 and tails[0.2] > 0
    assert tails[0.6] > 2 * tails[0.2]

    impulse = np.zeros(2 * SR, np.float32)
    impulse[0] = 0.5
    for rt60 in (0.3, 0.6):
        h = apply_augmentation(impulse, SR, Augmentation(reverb={"kind": "rir", "rt60": rt60, "seed": 11}))
        assert h[0] == pytest.approx(0.5, rel=1e-6)  # the direct path is kept
        assert 0.7 * rt60 < decay_time(h) < 1.4 * rt60


def test_echo_is_one_delayed_scaled_copy():
    impulse = np.zeros(SR, np.float32)
    impulse[10] = 0.5
    out = apply_augmentation(impulse, SR, Augmentation(reverb={"kind": "echo", "delay": 0.1, "decay": 0.4, "seed": 0}))
    nz = np.flatnonzero(np.abs(out) > 1e-6)
    assert list(nz) == [10, 10 + 1600]
    assert out[1610] == pytest.approx(0.2, rel=1e-6)


def test_output_is_float32_deterministic_and_peak_limited():
    loud = sine(1.0, 440.0, amp=0.98)
    aug = sample_augmentation(AugmentationConfig.from_dict(ALL_ON), np.random.default_rng(0))
    a, b = apply_augmentation(loud, SR, aug), apply_augmentation(loud, SR, aug)
    assert a.dtype == np.float32 and a.tobytes() == b.tobytes()
    assert np.max(np.abs(a)) <= 0.99 + 1e-6
    again = Augmentation.from_dict(json.loads(json.dumps(aug.to_dict())))
    assert apply_augmentation(loud, SR, again).tobytes() == a.tobytes()


def test_sampling_is_reproducible_and_draws_in_a_fixed_order():
    cfg = AugmentationConfig.from_dict(ALL_ON)
    first = [sample_augmentation(cfg, np.random.default_rng(42)) for _ in range(2)]
    assert first[0] == first[1] and first[0].speed in (0.9, 1.1)
    no_noise = AugmentationConfig.from_dict({**ALL_ON, "noise_prob": 0.0})
    other = sample_augmentation(no_noise, np.random.default_rng(42))
    assert other.noise is None and (other.speed, other.reverb) == (first[0].speed, first[0].reverb)
    half = AugmentationConfig(noise_prob=0.5)
    rng = np.random.default_rng(1)
    fired = sum(sample_augmentation(half, rng).noise is not None for _ in range(2000))
    assert 900 < fired < 1100


def test_probability_zero_is_identity():
    x, _ = speech_like()
    aug = sample_augmentation(AugmentationConfig(), np.random.default_rng(3))
    assert aug.is_identity and aug.describe() == "none"
    assert np.array_equal(apply_augmentation(x, SR, aug), x)


def test_silent_input_gets_no_noise():
    silent = np.zeros(SR, np.float32)
    out = apply_augmentation(silent, SR, Augmentation(noise={"kind": "white", "snr_db": 10.0, "seed": 1}))
    assert np.array_equal(out, silent)


def test_describe():
    aug = Augmentation(speed=1.1, noise={"kind": "white", "snr_db": 15.0, "seed": 1})
    assert aug.describe() == "speed=1.1, noise=white@15dB"
    echo = Augmentation(reverb={"kind": "echo", "delay": 0.12, "decay": 0.4, "seed": 1})
    assert echo.describe() == "reverb=echo(120ms,0.4)"
    assert "rt60=0.4s" in Augmentation(reverb={"kind": "rir", "rt60": 0.4, "seed": 1}).describe()


@pytest.mark.parametrize(
    "bad,needle",
    [
        ({"speed_probb": 0.5}, "speed_probb"),
        ({"noise_prob": 1.5}, "noise_prob"),
        ({"reverb_prob": -0.1}, "reverb_prob"),
        ({"snr_db_range": [20, 10]}, "snr_db_range"),
        ({"rt60_range": [0.6, 0.2]}, "rt60_range"),
        ({"echo_decay_range": [0.2, 1.5]}, "echo_decay_range"),
        ({"snr_db_range": [10]}, "snr_db_range"),
        ({"noise_kinds": ["brown"]}, "noise_kinds"),
        ({"speed_factors": [0.0, 1.1]}, "speed_factors"),
    ],
)
def test_config_errors_name_the_key(bad, needle):
    with pytest.raises(ConfigError, match=needle):
        AugmentationConfig.from_dict(bad)


def test_to_dict_json_round_trip():
    cfg = AugmentationConfig.from_dict({**ALL_ON, "speed_factors": [0.95, 1.05], "reverb_kinds": ["echo"]})
    assert AugmentationConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    aug = sample_augmentation(cfg, np.random.default_rng(9))
    record = json.loads(json.dumps(aug.to_dict()))
    assert Augmentation.from_dict(record) == aug and aug.reverb["kind"] == "echo"
    assert AugmentationConfig.from_dict(None) == AugmentationConfig()
