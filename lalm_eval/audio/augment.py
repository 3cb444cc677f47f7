"""Deterministic audio augmentation: speed perturbation, reverb / echo and additive noise.

``sample_augmentation`` draws the concrete :class:`Augmentation` for one sample from an
:class:`AugmentationConfig` (every random number is drawn in a fixed order whether or not its
effect fires, so changing one probability never reshuffles the others); the chosen values and
the seeds of the random signals live in the :class:`Augmentation`, which is stored per dataset
row, so ``apply_augmentation`` is a pure function of (audio, sr, augmentation).

Order: speed -> reverb/echo -> noise -> peak limit (scale down to 0.99 if above); float32 out.

- speed: Kaldi/lhotse-style (tempo and pitch together): the signal is read as if sampled at
  ``sr * factor`` and resampled to ``sr`` with soxr VHQ, so the output has ``len / factor``
  samples and a 440 Hz tone becomes ``440 * factor`` Hz.
- reverb ``rir``: unit direct path + Gaussian tail decaying 60 dB in ``rt60`` s, scaled to a fixed
  direct-to-reverberant ratio; ``echo``: direct path + one copy ``delay`` s later times ``decay``.
  The output keeps the input length (the tail after the last sample is cut).
- noise: white or pink (1/f power) at exactly ``snr_db`` against the mean power of the
  non-silent 10 ms frames of the (possibly reverberant) signal; all-silent input gets none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np
import soxr

from lalm_eval.errors import AudioError, ConfigError

NOISE_KINDS = ("white", "pink")
REVERB_KINDS = ("rir", "echo")
DIRECT_TO_REVERB_DB = 3.0  # energy of the direct path over that of the synthetic RIR tail
PEAK = 0.99
_SILENCE_DB = -40.0  # frames this far below the loudest frame do not count as speech
_SEED_HIGH = 2**31


def _pair(name: str, value, lo: float = -math.inf, hi: float = math.inf) -> tuple[float, float]:
    try:
        a, b = (float(v) for v in value)
    except (TypeError, ValueError):
        raise ConfigError(f"augmentation: {name!r} must be a [min, max] pair, got {value!r}") from None
    if not (lo <= a <= b <= hi):
        raise ConfigError(f"augmentation: {name!r} needs {lo} <= min <= max <= {hi}, got {value!r}")
    return a, b


def _kinds(name: str, value, allowed: tuple[str, ...]) -> tuple[str, ...]:
    kinds = (value,) if isinstance(value, str) else tuple(value) if isinstance(value, (list, tuple)) else ()
    if not kinds or any(k not in allowed for k in kinds):
        raise ConfigError(f"augmentation: {name!r} must be a non-empty subset of {list(allowed)}, got {value!r}")
    return kinds


def _prob(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(f"augmentation: {name!r} must be a probability in [0, 1], got {value!r}")
    return float(value)


def _factors(value) -> tuple[float, ...]:
    try:
        factors = tuple(float(f) for f in value)
    except (TypeError, ValueError):
        factors = ()
    if not factors or min(factors) <= 0:
        raise ConfigError(f"augmentation: 'speed_factors' must be positive numbers, got {value!r}")
    return factors


@dataclass(frozen=True)
class AugmentationConfig:
    """Per-effect probabilities and parameter ranges (ranges are ``[min, max]``, inclusive)."""

    speed_prob: float = 0.0
    speed_factors: tuple[float, ...] = (0.9, 1.1)
    noise_prob: float = 0.0
    snr_db_range: tuple[float, float] = (10.0, 20.0)
    noise_kinds: tuple[str, ...] = NOISE_KINDS
    reverb_prob: float = 0.0
    reverb_kinds: tuple[str, ...] = REVERB_KINDS
    rt60_range: tuple[float, float] = (0.2, 0.6)
    echo_delay_range: tuple[float, float] = (0.05, 0.25)
    echo_decay_range: tuple[float, float] = (0.2, 0.5)

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        for name in ("speed_prob", "noise_prob", "reverb_prob"):
            set_(name, _prob(name, getattr(self, name)))
        set_("speed_factors", _factors(self.speed_factors))
        set_("snr_db_range", _pair("snr_db_range", self.snr_db_range))
        set_("rt60_range", _pair("rt60_range", self.rt60_range, 1e-3, 10.0))
        set_("echo_delay_range", _pair("echo_delay_range", self.echo_delay_range, 1e-3, 5.0))
        set_("echo_decay_range", _pair("echo_decay_range", self.echo_decay_range, 0.0, 1.0))
        set_("noise_kinds", _kinds("noise_kinds", self.noise_kinds, NOISE_KINDS))
        set_("reverb_kinds", _kinds("reverb_kinds", self.reverb_kinds, REVERB_KINDS))

    @classmethod
    def from_dict(cls, data: dict | None) -> AugmentationConfig:
        data = dict(data or {})
        known = {f.name for f in fields(cls)}
        for key in data:
            if key not in known:
                raise ConfigError(f"augmentation: unknown key {key!r}; known keys: {sorted(known)}")
        return cls(**data)

    def to_dict(self) -> dict:
        return {f.name: (list(v) if isinstance(v := getattr(self, f.name), tuple) else v) for f in fields(self)}


@dataclass(frozen=True)
class Augmentation:
    """The concrete effects for one sample; ``None`` means the effect is off."""

    speed: float | None = None
    noise: dict | None = None  # {"kind", "snr_db", "seed"}
    reverb: dict | None = None  # {"kind": "rir", "rt60", "seed"} | {"kind": "echo", "delay", "decay", "seed"}

    @property
    def is_identity(self) -> bool:
        return self.speed in (None, 1.0) and self.noise is None and self.reverb is None

    def to_dict(self) -> dict:
        return {
            "speed": self.speed,
            "noise": dict(self.noise) if self.noise else None,
            "reverb": dict(self.reverb) if self.reverb else None,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Augmentation:
        unknown = set(data) - {"speed", "noise", "reverb"}
        if unknown:
            raise ConfigError(f"augmentation record: unknown key {sorted(unknown)[0]!r}")
        return cls(data.get("speed"), data.get("noise"), data.get("reverb"))

    def describe(self) -> str:
        parts = [f"speed={self.speed:g}"] if self.speed is not None else []
        if self.noise:
            parts.append(f"noise={self.noise['kind']}@{self.noise['snr_db']:g}dB")
        if self.reverb and self.reverb["kind"] == "rir":
            parts.append(f"reverb=rir(rt60={self.reverb['rt60']:g}s)")
        elif self.reverb:
            parts.append(f"reverb=echo({self.reverb['delay'] * 1000:g}ms,{self.reverb['decay']:g})")
        return ", ".join(parts) or "none"


def sample_augmentation(cfg: AugmentationConfig, rng: np.random.Generator) -> Augmentation:
    """Draw one sample's effects; always 11 draws in the same order, whichever effects fire."""
    speed_on, speed_idx = rng.random() < cfg.speed_prob, int(rng.integers(len(cfg.speed_factors)))
    noise_on, noise_idx = rng.random() < cfg.noise_prob, int(rng.integers(len(cfg.noise_kinds)))
    snr_db, noise_seed = round(float(rng.uniform(*cfg.snr_db_range)), 2), int(rng.integers(_SEED_HIGH))
    reverb_on, reverb_idx = rng.random() < cfg.reverb_prob, int(rng.integers(len(cfg.reverb_kinds)))
    rt60, delay, decay = (
        round(float(rng.uniform(*r)), 3) for r in (cfg.rt60_range, cfg.echo_delay_range, cfg.echo_decay_range)
    )
    reverb_seed = int(rng.integers(_SEED_HIGH))
    noise = {"kind": cfg.noise_kinds[noise_idx], "snr_db": snr_db, "seed": noise_seed}
    kind = cfg.reverb_kinds[reverb_idx]
    reverb = (
        {"kind": "rir", "rt60": rt60, "seed": reverb_seed}
        if kind == "rir"
        else {"kind": "echo", "delay": delay, "decay": decay, "seed": reverb_seed}
    )
    return Augmentation(
        speed=cfg.speed_factors[speed_idx] if speed_on else None,
        noise=noise if noise_on else None,
        reverb=reverb if reverb_on else None,
    )


def speed_perturb(audio: np.ndarray, sr: int, factor: float) -> np.ndarray:
    """Change tempo and pitch by ``factor``: read at ``sr * factor``, resample to ``sr``."""
    if factor == 1.0 or audio.size == 0:
        return audio
    return soxr.resample(audio, sr * factor, sr, quality="VHQ").astype(np.float64)


def synthetic_rir(sr: int, rt60: float, seed: int) -> np.ndarray:
    """Unit direct path + exponentially decaying Gaussian tail (-60 dB after ``rt60`` s)."""
    t = np.arange(1, max(2, int(math.ceil(rt60 * sr)))) / sr
    tail = np.random.default_rng(seed).standard_normal(t.size) * np.exp(-3 * math.log(10) * t / rt60)
    tail *= math.sqrt(10 ** (-DIRECT_TO_REVERB_DB / 10) / np.sum(tail**2))
    return np.concatenate([[1.0], tail])


def _reverberate(audio: np.ndarray, sr: int, reverb: dict) -> np.ndarray:
    if reverb["kind"] == "rir":
        rir = synthetic_rir(sr, float(reverb["rt60"]), int(reverb["seed"]))
    else:
        rir = np.zeros(max(1, int(round(float(reverb["delay"]) * sr))) + 1)
        rir[0], rir[-1] = 1.0, float(reverb["decay"])
    from scipy.signal import fftconvolve  # here: scipy.signal takes ~1 s to import, a config check needs none

    return fftconvolve(audio, rir)[: audio.size]


def make_noise(kind: str, n: int, seed: int) -> np.ndarray:
    """Unit-power white or pink (1/f power spectrum, no DC) noise of ``n`` samples."""
    noise = np.random.default_rng(seed).standard_normal(n)
    if kind == "pink":
        spectrum = np.fft.rfft(noise)
        f = np.arange(spectrum.size, dtype=np.float64)
        spectrum[1:] /= np.sqrt(f[1:])
        spectrum[0] = 0.0
        noise = np.fft.irfft(spectrum, n)
    elif kind != "white":
        raise ConfigError(f"augmentation: unknown noise kind {kind!r}; use one of {list(NOISE_KINDS)}")
    power = np.mean(noise**2)
    return noise / math.sqrt(power) if power > 0 else noise


def active_power(audio: np.ndarray, sr: int) -> float:
    """Mean power over the non-silent 10 ms frames (within 40 dB of the loudest); 0 for silence."""
    hop = max(1, sr // 100)
    n = math.ceil(audio.size / hop)
    sums = np.bincount(np.arange(audio.size) // hop, weights=audio**2, minlength=n)
    counts = np.full(n, hop, dtype=np.float64)
    counts[-1] = audio.size - (n - 1) * hop
    powers = sums / counts
    if powers.max() <= 0:
        return 0.0
    active = powers >= powers.max() * 10 ** (_SILENCE_DB / 10)
    return float(sums[active].sum() / counts[active].sum())


def apply_augmentation(audio: np.ndarray, sr: int, aug: Augmentation) -> np.ndarray:
    """Apply ``aug`` to mono audio (speed -> reverb -> noise -> peak limit); float32 out."""
    x = np.asarray(audio, dtype=np.float64)
    if x.ndim != 1:
        raise AudioError(f"augmentation: expected mono 1-D audio, got shape {x.shape}")
    if aug.is_identity or x.size == 0:
        return x.astype(np.float32)
    if aug.speed is not None:
        x = speed_perturb(x, sr, float(aug.speed))
    if aug.reverb is not None:
        x = _reverberate(x, sr, aug.reverb)
    if aug.noise is not None and x.size and (power := active_power(x, sr)) > 0:
        noise = make_noise(aug.noise["kind"], x.size, int(aug.noise["seed"]))
        x = x + noise * math.sqrt(power / 10 ** (float(aug.noise["snr_db"]) / 10))
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    return (x * (PEAK / peak) if peak > PEAK else x).astype(np.float32)


def speed_perturb_spans(spans, factor: float) -> list[tuple[float, float]]:
    """Rescale ``[(start, end)]`` times (s) for a speed factor: times shrink by ``1 / factor``."""
    if factor is None:
        return [(float(s), float(e)) for s, e in spans]
    if factor <= 0:
        raise ConfigError(f"augmentation: speed factor must be positive, got {factor!r}")
    return [(float(s) / factor, float(e) / factor) for s, e in spans]
