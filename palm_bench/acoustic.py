"""PALM-Bench's acoustic description (AD) of a speaker, measured from the signal.

The paper (Table 22) writes an AD like "Female voice with a fundamental frequency primarily
distributed between 190–250 Hz, averaging around 220 Hz. High-frequency harmonics in the
3000–5000 Hz range are well represented. … Speaking rate is approximately 200–220 characters per
minute." There an audio LLM wrote it; here every figure is *measured*:

:func:`measure_voice` takes a speaker's clips (float mono at ``sr``) and their transcripts and
returns :class:`VoiceMeasurements`; :func:`describe_voice` renders them through a Jinja2 template
(``templates/acoustic_description.<lang>.j2``). Numbers in the text come only from the
measurements; qualitative words ("bright", "fast", …) come from the thresholds in
``templates/acoustic_thresholds.yaml``, never from code.

How each figure is measured
---------------------------
Selection
    At most ``max_seconds`` (default 30 s) of audio, chosen deterministically: whole clips in the
    order given, while the running total stays within ``max_seconds``. The first clip is always
    taken; if it alone is longer than ``max_seconds``, pYIN and the spectrum see only its first
    ``max_seconds`` while the (cheap) activity, rate and loudness measures see all of it, so the
    speaking rate still matches its transcript.
F0
    ``librosa.pyin`` (fmin 50 Hz, fmax 500 Hz, 64 ms frames, 16 ms hop, 0.1-semitone grid), run
    per clip; only frames pYIN calls voiced count. Reported: mean, median, 10th and 90th
    percentile, standard deviation in Hz and in semitones (the standard deviation of
    ``12·log2(f0)``, i.e. pitch variability independent of the voice's register), and the upper
    excursion ``p90 − median`` ("pitch rises by about N Hz" on its highest tenth of frames).
Speech activity (energy-based)
    Frame RMS over 20 ms windows every 10 ms (centred). A frame is *active* when its RMS is within
    ``VAD_RELATIVE_DB`` (35 dB) of the **clip's** loudest frame and above ``VAD_FLOOR_DBFS``
    (−70 dBFS, so digital silence never counts). Inactive gaps shorter than ``VAD_BRIDGE_S``
    (0.2 s: stop closures, breaths between words) inside speech count as speech; leading and
    trailing silence and pauses of 0.2 s or more do not. Speech duration = active frames × 10 ms.
Speaking rate
    Words per minute of speech for English (tokens of letters/digits, apostrophes kept inside a
    word), Hanzi characters per minute of speech for Mandarin (CJK unified ideographs only;
    punctuation and Latin letters are not counted). Units per language are set in the
    thresholds YAML (``languages``).
Energy bands
    Share of spectral energy below 300 Hz, 300–1000, 1000–3000, 3000–5000 and above 5000 Hz, from
    the power spectrum (Hann, 64 ms, 16 ms hop — the pYIN frames) averaged over voiced frames of
    all clips. When no frame is voiced the speech-active frames are used instead; the field
    ``band_basis`` says which.
Loudness
    ``20·log10(RMS)`` relative to a full-scale value of 1.0 (so a full-scale sine reads −3 dBFS):
    the mean is the energy average over speech-active 20 ms frames, the peak the loudest 20 ms
    frame.
"""

from __future__ import annotations

import dataclasses
import math
import re
from functools import lru_cache
from pathlib import Path

import numpy as np
import yaml

from lalm_eval.errors import AudioError, ConfigError
from lalm_eval.templating import jinja_env

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"
THRESHOLDS_FILE = TEMPLATES_DIR / "acoustic_thresholds.yaml"

# pYIN
F0_MIN_HZ = 50.0
F0_MAX_HZ = 500.0
PYIN_FRAME_S = 0.064
PYIN_HOP_S = 0.016
# Pitch grid in semitones: librosa's default. A coarser grid decodes ~4x faster but shifts
# pYIN's voiced/unvoiced balance (each unvoiced state gets a larger share): at 0.25 a low, buzzy
# diphone voice (flite "kal") lost every voiced frame.
PYIN_RESOLUTION_ST = 0.1

# Energy-based speech activity
VAD_FRAME_S = 0.020
VAD_HOP_S = 0.010
VAD_RELATIVE_DB = 35.0  # active: within this many dB of the clip's loudest frame …
VAD_FLOOR_DBFS = -70.0  # … and above this absolute floor
VAD_BRIDGE_S = 0.20  # inactive gaps shorter than this inside speech count as speech

# (low, high) edges of the energy bands in Hz; None = open end
BANDS_HZ: tuple[tuple[float, float | None], ...] = (
    (0.0, 300.0),
    (300.0, 1000.0),
    (1000.0, 3000.0),
    (3000.0, 5000.0),
    (5000.0, None),
)

_HANZI = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


@dataclasses.dataclass(frozen=True)
class BandShare:
    low_hz: float
    high_hz: float | None  # None: up to the Nyquist frequency
    share: float  # fraction of the averaged spectral energy, 0..1


@dataclasses.dataclass(frozen=True)
class VoiceMeasurements:
    """Everything :func:`describe_voice` may say about a speaker, all measured."""

    language: str
    n_clips: int  # clips measured (after the max_seconds selection)
    audio_seconds: float  # audio those clips hold
    speech_seconds: float  # energy-based speech activity
    voiced_seconds: float  # frames pYIN calls voiced
    # F0 over voiced frames (None when no frame is voiced)
    f0_mean_hz: float | None
    f0_median_hz: float | None
    f0_p10_hz: float | None
    f0_p90_hz: float | None
    f0_std_hz: float | None
    f0_std_semitones: float | None
    f0_upper_excursion_hz: float | None  # p90 - median
    # speaking rate
    rate_unit: str  # "words" or "hanzi"
    rate_units: int  # words / Hanzi counted in the measured clips' transcripts
    rate_per_minute: float | None  # units per minute of speech (None without speech)
    # energy distribution (averaged power spectrum)
    bands: tuple[BandShare, ...]
    band_basis: str  # "voiced" frames, or "speech" frames when none was voiced
    # loudness
    rms_mean_dbfs: float | None
    rms_peak_dbfs: float | None

    def band_share(self, low_hz: float) -> float:
        """The share of the band starting at ``low_hz``."""
        for band in self.bands:
            if band.low_hz == low_hz:
                return band.share
        raise KeyError(f"no band starts at {low_hz} Hz; bands start at {[b.low_hz for b in self.bands]}")


@dataclasses.dataclass(frozen=True)
class GenderInference:
    """A gender *guess* from F0 — an inference, never ground truth."""

    label: str  # "female", "male" or "unknown"
    f0_median_hz: float | None
    threshold_hz: float
    is_inference: bool = True

    def __str__(self) -> str:
        if self.label == "unknown":
            return "gender unknown (no voiced frames to infer it from)"
        side = ">=" if self.label == "female" else "<"
        return (
            f"likely {self.label} (inferred from median F0 {self.f0_median_hz:.0f} Hz {side} {self.threshold_hz:g} Hz)"
        )


# --------------------------------------------------------------------------------------------
# thresholds (data)


@lru_cache(maxsize=4)
def _load_thresholds_cached(path: str) -> dict:
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"{file}: thresholds file not found")
    doc = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    for key in ("languages", "gender", "scales"):
        if key not in doc:
            raise ConfigError(f"{file}: field {key!r}: missing")
    for lang, spec in doc["languages"].items():
        for field in ("rate_unit", "joiner"):
            if not isinstance(spec, dict) or field not in spec:
                raise ConfigError(f"{file}: field 'languages.{lang}.{field}': missing")
    if "female_min_f0_hz" not in doc["gender"]:
        raise ConfigError(f"{file}: field 'gender.female_min_f0_hz': missing")
    for name, scale in doc["scales"].items():
        bins = scale.get("bins") if isinstance(scale, dict) else None
        if not bins:
            raise ConfigError(f"{file}: field 'scales.{name}.bins': missing or empty")
        bounds = [b.get("below") for b in bins[:-1]]
        if any(x is None for x in bounds) or bounds != sorted(bounds) or "below" in bins[-1]:
            raise ConfigError(
                f"{file}: field 'scales.{name}.bins': every bin but the last needs an "
                "increasing 'below' bound; the last bin has none"
            )
    return doc


def load_thresholds(path: str | Path = THRESHOLDS_FILE) -> dict:
    """The qualitative-word thresholds (validated; cached per path)."""
    return _load_thresholds_cached(str(Path(path).resolve()))


def _language_spec(language: str, thresholds: dict) -> dict:
    try:
        return thresholds["languages"][language]
    except KeyError:
        raise ConfigError(
            f"unsupported language {language!r}; the thresholds file knows {sorted(thresholds['languages'])}"
        ) from None


def qualitative(scale: str, value: float | None, language: str, thresholds: dict | None = None) -> str | None:
    """The word for ``value`` on ``scale`` in ``language`` (None when the value is None)."""
    thresholds = thresholds or load_thresholds()
    if value is None:
        return None
    try:
        bins = thresholds["scales"][scale]["bins"]
    except KeyError:
        raise ConfigError(f"{THRESHOLDS_FILE}: field 'scales.{scale}': missing") from None
    for b in bins:
        if "below" not in b or value < b["below"]:
            try:
                return b[language]
            except KeyError:
                raise ConfigError(f"{THRESHOLDS_FILE}: field 'scales.{scale}.bins': no {language!r} word") from None
    raise AssertionError("unreachable: the last bin is open")


# --------------------------------------------------------------------------------------------
# measuring


def count_rate_units(text: str, unit: str) -> int:
    """Words (``"words"``) or Hanzi characters (``"hanzi"``) in ``text``."""
    if unit == "words":
        return len(_WORD.findall(_HANZI.sub(" ", text)))
    if unit == "hanzi":
        return len(_HANZI.findall(text))
    raise ConfigError(f"unknown speaking-rate unit {unit!r}; use 'words' or 'hanzi'")


def _frame_rms(audio: np.ndarray, frame: int, hop: int) -> np.ndarray:
    import librosa

    return librosa.feature.rms(y=audio, frame_length=frame, hop_length=hop, center=True)[0]


def _db(x):
    return 20.0 * np.log10(np.maximum(x, 1e-10))


def speech_activity(audio: np.ndarray, sr: int) -> tuple[np.ndarray, np.ndarray]:
    """Energy-based speech activity: ``(active mask, frame RMS)`` on a 10 ms grid.

    See the module docstring for the rule (35 dB below the clip's peak frame, −70 dBFS floor,
    gaps under 0.2 s bridged).
    """
    frame, hop = int(round(VAD_FRAME_S * sr)), int(round(VAD_HOP_S * sr))
    rms = _frame_rms(audio, frame, hop)
    level = _db(rms)
    active = (level >= level.max() - VAD_RELATIVE_DB) & (level > VAD_FLOOR_DBFS)
    idx = np.flatnonzero(active)
    if idx.size:
        max_gap = int(round(VAD_BRIDGE_S / VAD_HOP_S))
        for a, b in zip(idx[:-1], idx[1:]):
            if 1 < b - a <= max_gap:  # b - a - 1 inactive frames between them
                active[a + 1 : b] = True
    return active, rms


def _select(clips, texts, sr, max_seconds):
    chosen, total = [], 0.0
    for clip, text in zip(clips, texts):
        seconds = len(clip) / sr
        if chosen and total + seconds > max_seconds:
            break
        chosen.append((clip, text))
        total += seconds
    return chosen


def measure_voice(
    clips: list[np.ndarray], texts: list[str], language: str, sr: int = 16000, max_seconds: float = 30.0
) -> VoiceMeasurements:
    """Measure a speaker's voice over (at most ``max_seconds`` of) their clips.

    ``clips`` are float mono arrays at ``sr``; ``texts`` their transcripts, in the same order;
    ``language`` selects how speaking rate is counted (``en``: words, ``zh``: Hanzi).
    """
    import librosa

    thresholds = load_thresholds()
    unit = _language_spec(language, thresholds)["rate_unit"]
    if len(clips) != len(texts):
        raise ConfigError(f"measure_voice: {len(clips)} clips but {len(texts)} transcripts")
    if not clips:
        raise AudioError("measure_voice: no clips given")
    if max_seconds <= 0:
        raise ConfigError(f"measure_voice: max_seconds must be positive, got {max_seconds}")
    clips = [np.asarray(c, dtype=np.float32) for c in clips]
    for i, c in enumerate(clips):
        if c.ndim != 1 or c.size == 0 or not np.all(np.isfinite(c)):
            raise AudioError(f"measure_voice: clip {i} must be non-empty, finite, 1-D (mono) audio")

    chosen = _select(clips, texts, sr, max_seconds)
    frame, hop = int(round(PYIN_FRAME_S * sr)), int(round(PYIN_HOP_S * sr))
    pyin_budget = int(round(max_seconds * sr))

    f0_all, speech_seconds, voiced_frames = [], 0.0, 0
    power_voiced = np.zeros(frame // 2 + 1)
    power_speech = np.zeros(frame // 2 + 1)
    n_voiced_spec = n_speech_spec = 0
    speech_power, peak_rms = [], 0.0
    for clip, _ in chosen:
        active, rms = speech_activity(clip, sr)
        speech_seconds += float(active.sum()) * VAD_HOP_S
        speech_power.append(rms[active] ** 2)
        peak_rms = max(peak_rms, float(rms.max()))

        y = clip[:pyin_budget]
        pyin_budget -= len(y)
        if len(y) < frame // 2:
            continue
        f0, voiced, _ = librosa.pyin(
            y,
            fmin=F0_MIN_HZ,
            fmax=F0_MAX_HZ,
            sr=sr,
            frame_length=frame,
            hop_length=hop,
            resolution=PYIN_RESOLUTION_ST,
            center=True,
        )
        voiced = voiced & np.isfinite(f0)
        f0_all.append(f0[voiced])
        voiced_frames += int(voiced.sum())
        spec = np.abs(librosa.stft(y, n_fft=frame, hop_length=hop, window="hann", center=True)) ** 2
        n = min(spec.shape[1], len(voiced))
        power_voiced += spec[:, :n][:, voiced[:n]].sum(axis=1)
        n_voiced_spec += int(voiced[:n].sum())
        # speech-active pYIN frames (fallback basis): the VAD state at each frame's centre
        centres = np.minimum((np.arange(spec.shape[1]) * hop / sr / VAD_HOP_S).round().astype(int), len(active) - 1)
        power_speech += spec[:, active[centres]].sum(axis=1)
        n_speech_spec += int(active[centres].sum())

    f0 = np.concatenate(f0_all) if f0_all else np.zeros(0)
    if f0.size:
        semitones = 12.0 * np.log2(f0)
        p10, median, p90 = (float(x) for x in np.percentile(f0, [10, 50, 90]))
        f0_stats = dict(
            f0_mean_hz=float(f0.mean()),
            f0_median_hz=median,
            f0_p10_hz=p10,
            f0_p90_hz=p90,
            f0_std_hz=float(f0.std()),
            f0_std_semitones=float(semitones.std()),
            f0_upper_excursion_hz=p90 - median,
        )
    else:
        f0_stats = dict.fromkeys(
            (
                "f0_mean_hz",
                "f0_median_hz",
                "f0_p10_hz",
                "f0_p90_hz",
                "f0_std_hz",
                "f0_std_semitones",
                "f0_upper_excursion_hz",
            )
        )

    if n_voiced_spec:
        power, basis = power_voiced, "voiced"
    else:
        power, basis = power_speech, "speech"
    freqs = np.fft.rfftfreq(frame, d=1.0 / sr)
    total = float(power.sum())
    bands = []
    for low, high in BANDS_HZ:
        mask = (freqs >= low) & (freqs < (high if high is not None else np.inf))
        bands.append(BandShare(low, high, float(power[mask].sum()) / total if total > 0 else 0.0))

    units = sum(count_rate_units(text, unit) for _, text in chosen)
    speech_p = np.concatenate(speech_power)
    return VoiceMeasurements(
        language=language,
        n_clips=len(chosen),
        audio_seconds=sum(len(c) for c, _ in chosen) / sr,
        speech_seconds=speech_seconds,
        voiced_seconds=voiced_frames * hop / sr,
        **f0_stats,
        rate_unit=unit,
        rate_units=units,
        rate_per_minute=units / (speech_seconds / 60.0) if speech_seconds > 0 else None,
        bands=tuple(bands),
        band_basis=basis,
        rms_mean_dbfs=float(_db(math.sqrt(speech_p.mean()))) if speech_p.size else None,
        rms_peak_dbfs=float(_db(peak_rms)) if peak_rms > 0 else None,
    )


def likely_gender(meas: VoiceMeasurements, thresholds: dict | None = None) -> GenderInference:
    """Guess gender from the median F0 (threshold ``gender.female_min_f0_hz``, ≈165 Hz).

    Adult male voices typically sit around 85–155 Hz and female ones around 165–255 Hz; the
    threshold splits the two. This is an *inference* (a high male or low female voice lands on
    the other side) and is labelled so everywhere it is shown.
    """
    thresholds = thresholds or load_thresholds()
    threshold = float(thresholds["gender"]["female_min_f0_hz"])
    if meas.f0_median_hz is None:
        return GenderInference("unknown", None, threshold)
    label = "female" if meas.f0_median_hz >= threshold else "male"
    return GenderInference(label, meas.f0_median_hz, threshold)


# --------------------------------------------------------------------------------------------
# describing


def round_to(value: float, step: float) -> float:
    """Round half up to a multiple of ``step`` (Python's ``round`` rounds half to even)."""
    return math.floor(value / step + 0.5) * step


def _num(value: float, step: float) -> str:
    """``value`` rounded to ``step``, printed without spurious decimals."""
    r = round_to(value, step)
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{r:.{decimals}f}"


def _pct(share: float) -> str:
    """A share as a percentage: whole per cents, one decimal under 1 %, "<0.1" for traces."""
    pct = 100.0 * share
    if 0.0 < pct < 0.05:
        return "<0.1"
    return _num(pct, 0.1) if pct < 0.95 else _num(pct, 1)


def description_context(meas: VoiceMeasurements, language: str, thresholds: dict | None = None) -> dict:
    """The values a description template receives: rounded figures and qualitative words."""
    thresholds = thresholds or load_thresholds()
    _language_spec(language, thresholds)
    gender = likely_gender(meas, thresholds)
    has_f0 = meas.f0_mean_hz is not None
    word = lambda scale, value: qualitative(scale, value, language, thresholds)  # noqa: E731
    rate_scale = f"speaking_rate_{meas.rate_unit}"
    return {
        "gender": gender.label,
        "gender_threshold": _num(gender.threshold_hz, 1),
        "has_f0": has_f0,
        "f0_mean": _num(meas.f0_mean_hz, 5) if has_f0 else None,
        "f0_median": _num(meas.f0_median_hz, 5) if has_f0 else None,
        "f0_low": _num(meas.f0_p10_hz, 5) if has_f0 else None,
        "f0_high": _num(meas.f0_p90_hz, 5) if has_f0 else None,
        "f0_std_hz": _num(meas.f0_std_hz, 1) if has_f0 else None,
        "f0_std_st": _num(meas.f0_std_semitones, 0.1) if has_f0 else None,
        "f0_excursion": _num(meas.f0_upper_excursion_hz, 5) if has_f0 else None,
        "pitch_level": word("pitch_level", meas.f0_median_hz),
        "pitch_variability": word("pitch_variability", meas.f0_std_semitones),
        "bands": [
            {"low": _num(b.low_hz, 1), "high": None if b.high_hz is None else _num(b.high_hz, 1), "pct": _pct(b.share)}
            for b in meas.bands
        ],
        "band_basis": meas.band_basis,
        "low_freq": word("low_frequency", meas.band_share(0.0)),
        "brightness": word("brightness", meas.band_share(3000.0)),
        "rate": _num(meas.rate_per_minute, 5) if meas.rate_per_minute is not None else None,
        "rate_unit": meas.rate_unit,
        "rate_word": word(rate_scale, meas.rate_per_minute),
        "loud_mean": _num(meas.rms_mean_dbfs, 1) if meas.rms_mean_dbfs is not None else None,
        "loud_peak": _num(meas.rms_peak_dbfs, 1) if meas.rms_peak_dbfs is not None else None,
        "n_clips": meas.n_clips,
        "audio_seconds": _num(meas.audio_seconds, 0.1),
        "speech_seconds": _num(meas.speech_seconds, 0.1),
    }


def describe_voice(meas: VoiceMeasurements, language: str) -> str:
    """The acoustic description in ``language`` (``en`` or ``zh``), one paragraph.

    The template writes one sentence a line; the lines are joined with the language's joiner
    (a space for English, nothing for Mandarin) from the thresholds file.
    """
    import jinja2

    thresholds = load_thresholds()
    joiner = _language_spec(language, thresholds)["joiner"]
    name = f"acoustic_description.{language}.j2"
    try:
        template = jinja_env(TEMPLATES_DIR).get_template(name)
    except jinja2.TemplateNotFound:
        raise ConfigError(f"{TEMPLATES_DIR / name}: template not found") from None
    text = template.render(**description_context(meas, language, thresholds))
    return joiner.join(line.strip() for line in text.splitlines() if line.strip())
