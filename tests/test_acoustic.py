"""Acoustic descriptions: measured figures on signals with known properties, and on the corpus."""

import math
import re

import numpy as np
import pytest

from lalm_eval.errors import ConfigError
from palm_bench.acoustic import (
    count_rate_units,
    describe_voice,
    description_context,
    likely_gender,
    load_thresholds,
    measure_voice,
    qualitative,
)

SR = 16000


def harmonic(f0, seconds=1.0, n_harmonics=8, vibrato_st=0.0, vibrato_hz=5.0, amp=0.5):
    """A harmonic complex (amplitudes 1/k) whose F0 may wobble by ±vibrato_st semitones."""
    t = np.arange(int(seconds * SR)) / SR
    inst = f0 * 2.0 ** (vibrato_st / 12.0 * np.sin(2 * np.pi * vibrato_hz * t))
    phase = 2 * np.pi * np.cumsum(inst) / SR
    x = sum(np.sin(k * phase) / k for k in range(1, n_harmonics + 1))
    return (amp * x / np.abs(x).max()).astype(np.float32)


def silence(seconds):
    return np.zeros(int(round(seconds * SR)), dtype=np.float32)


def round5(x):
    return int(math.floor(x / 5 + 0.5) * 5)


@pytest.mark.parametrize("f0, gender", [(120.0, "male"), (220.0, "female")])
def test_f0_of_a_harmonic_tone_and_gender_inference(f0, gender):
    m = measure_voice([harmonic(f0)], ["one two three"], "en")
    assert m.f0_mean_hz == pytest.approx(f0, abs=5)
    assert m.f0_p10_hz <= m.f0_median_hz <= m.f0_p90_hz
    assert m.voiced_seconds > 1.0
    g = likely_gender(m)
    assert g.label == gender and g.is_inference
    assert g.threshold_hz == load_thresholds()["gender"]["female_min_f0_hz"] == 165
    assert "likely" in str(g) and "inferred" in str(g)


def test_vibrato_raises_pitch_variability():
    steady = measure_voice([harmonic(220.0)], ["a"], "en")
    vibrato = measure_voice([harmonic(220.0, vibrato_st=1.0)], ["a"], "en")
    # ±1 semitone sine vibrato: standard deviation ≈ 1/√2 semitone
    assert steady.f0_std_semitones < 0.15
    assert 0.4 < vibrato.f0_std_semitones < 1.0
    assert vibrato.f0_std_hz > steady.f0_std_hz + 5
    assert vibrato.f0_upper_excursion_hz > steady.f0_upper_excursion_hz


def test_speaking_rate_from_known_speech_and_silence():
    # 0.2 s silence, 0.8 s tone, 0.5 s pause, 1.2 s tone, 0.5 s silence: 2.0 s of "speech"
    clip = np.concatenate([silence(0.2), harmonic(150, 0.8), silence(0.5), harmonic(150, 1.2), silence(0.5)])
    en = measure_voice([clip], ["I finally booked the train to Kyoto for April."], "en")
    assert en.rate_units == 9
    assert en.audio_seconds == pytest.approx(3.2)
    assert en.speech_seconds == pytest.approx(2.0, abs=0.04)
    assert en.rate_per_minute == pytest.approx(9 / 2.0 * 60, rel=0.02)  # 270 words per minute
    zh = measure_voice([clip], ["我终于订好了四月的火车票！"], "zh")  # 12 Hanzi, punctuation not counted
    assert zh.rate_unit == "hanzi" and zh.rate_units == 12
    assert zh.rate_per_minute == pytest.approx(12 / 2.0 * 60, rel=0.02)  # 360 characters per minute


def test_short_gaps_count_as_speech_and_rates_sum_over_clips():
    bridged = np.concatenate([harmonic(150, 0.6), silence(0.1), harmonic(150, 0.6)])
    m = measure_voice([bridged, harmonic(150, 0.5)], ["one two three four", "five six"], "en")
    assert m.n_clips == 2 and m.rate_units == 6
    assert m.speech_seconds == pytest.approx(1.8, abs=0.04)  # the 0.1 s gap is inside speech


def test_pure_4khz_tone_energy_sits_in_the_3000_5000_band():
    t = np.arange(SR) / SR
    m = measure_voice([(0.3 * np.sin(2 * np.pi * 4000 * t)).astype(np.float32)], ["tone"], "en")
    assert m.band_share(3000.0) > 0.95
    assert sum(b.share for b in m.bands) == pytest.approx(1.0)
    assert [b.low_hz for b in m.bands] == [0.0, 300.0, 1000.0, 3000.0, 5000.0]
    # loudness: a 0.3 sine has RMS 0.3/√2 → −13.5 dBFS
    assert m.rms_peak_dbfs == pytest.approx(20 * math.log10(0.3 / math.sqrt(2)), abs=0.2)
    assert m.rms_mean_dbfs == pytest.approx(m.rms_peak_dbfs, abs=0.5)


def test_measures_at_most_max_seconds_of_first_clips():
    clips = [harmonic(150, 0.5) for _ in range(5)]
    m = measure_voice(clips, ["a b"] * 5, "en", max_seconds=1.2)
    assert (m.n_clips, m.audio_seconds, m.rate_units) == (2, 1.0, 4)
    long_first = measure_voice([harmonic(150, 3.0)] + clips, ["a b c"] + ["a b"] * 5, "en", max_seconds=0.5)
    assert long_first.n_clips == 1 and long_first.rate_units == 3
    assert long_first.audio_seconds == 3.0 and long_first.speech_seconds > 2.9  # activity: whole clip
    assert long_first.voiced_seconds <= 0.55  # pYIN: only the first max_seconds


def test_counting_words_and_hanzi():
    assert count_rate_units("I'll see 3 temples, OK?", "words") == 5
    assert count_rate_units("我终于订好了，四月！", "hanzi") == 8
    with pytest.raises(ConfigError):
        measure_voice([harmonic(150)], ["x"], "fr")
    with pytest.raises(ConfigError):
        measure_voice([harmonic(150)], ["x", "y"], "en")


def test_description_numbers_are_measured_and_words_come_from_thresholds():
    m = measure_voice([harmonic(220.0, vibrato_st=1.0)], ["one two three four five"], "en")
    for language in ("en", "zh"):
        text = describe_voice(m, language)
        ctx = description_context(m, language)
        assert f"{round5(m.f0_mean_hz)} Hz" in text
        assert ctx["pitch_variability"] == qualitative("pitch_variability", m.f0_std_semitones, language)
        for key in ("pitch_variability", "brightness", "rate_word", "pitch_level", "low_freq"):
            assert ctx[key] in text, (language, key)
        assert "\n" not in text and "{" not in text
    en = describe_voice(m, "en")
    assert "Likely female voice" in en
    assert "measured automatically from 1 clip / 1.0 seconds" in en
    assert "words per minute" in en
    assert "推测为女声" in describe_voice(m, "zh")
    # the words are data: bins of the YAML, tried in order
    scale = load_thresholds()["scales"]["speaking_rate_words"]["bins"]
    assert qualitative("speaking_rate_words", scale[0]["below"] - 1, "en") == scale[0]["en"]
    assert qualitative("speaking_rate_words", 10_000, "en") == scale[-1]["en"]


def test_silence_yields_no_figures_but_still_renders():
    m = measure_voice([silence(1.0)], ["nothing"], "zh")
    assert m.f0_mean_hz is None and m.rate_per_minute is None and m.rms_mean_dbfs is None
    assert likely_gender(m).label == "unknown"
    assert "no fundamental frequency" in describe_voice(m, "en")
    assert "未检测到浊音帧" in describe_voice(m, "zh")


# --- the shipped corpus ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_measurements(corpus):
    """Each subject measured on the first 1.5 s of its first clip (pYIN's share): quick, still telling."""
    out = {}
    for s in corpus.subjects():
        utts = corpus.utterances_of(s.id)[:1]
        out[s.id] = measure_voice([u.load_audio() for u in utts], [u.text for u in utts], s.language, max_seconds=1.5)
    return out


def test_corpus_female_voices_measure_higher_than_male_on_average(corpus, corpus_measurements):
    by_gender = {"female": [], "male": []}
    for s in corpus.subjects():
        by_gender[s.gender].append(corpus_measurements[s.id].f0_mean_hz)
    assert by_gender["female"] and by_gender["male"]
    assert np.mean(by_gender["female"]) > 1.2 * np.mean(by_gender["male"])
    for m in corpus_measurements.values():
        assert 50 <= m.f0_mean_hz <= 500 and m.rate_per_minute > 0


@pytest.mark.parametrize("language", ["en", "zh"])
def test_corpus_description_contains_measured_f0(corpus, corpus_measurements, language):
    subject = corpus.subjects(language)[0]
    m = corpus_measurements[subject.id]
    text = describe_voice(m, language)
    assert f"{round5(m.f0_mean_hz)} Hz" in text
    assert re.search(r"\d+ (words|Hanzi characters) per minute" if language == "en" else r"每分钟 \d+ 个汉字", text)
