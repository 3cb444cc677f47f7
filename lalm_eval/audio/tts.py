"""Offline speech synthesis with Debian's TTS engines, described by a :class:`VoiceRecipe`.

A voice recipe is data (engine, voice, engine parameters, sox post-processing) so that a corpus
manifest can record exactly how each clip was made and the render can be repeated. Rendering
needs the Debian packages ``espeak-ng``, ``flite``, ``festival`` (+ voices) and ``sox``; nothing
at install or test time needs them, because the rendered corpora ship with the package.

Engines (how distinct their voices are is measured by ``palm-bench corpus-info``, the speaker EER):

- ``espeak-ng``: ``voice`` is an espeak voice with optional variant (``en-us+f3``,
  ``cmn-latn-pinyin+m3``); ``speed`` (words per minute) and ``pitch`` (0-99) are passed through.
  Mandarin text is given in Hanzi: ``cmn-latn-pinyin`` reads Hanzi correctly, plain ``cmn`` does
  not.
- ``flite``: ``voice`` is one of flite's built-in voices (``kal``, ``awb``, ``rms``, ``slt``).
- ``festival``: ``voice`` is a festival voice function without the ``voice_`` prefix
  (``kal_diphone``, ``ked_diphone``, ``cmu_us_slt_arctic_hts``).

Post-processing with sox (no dither, so renders are bit-exact), in this order: ``pitch_cents`` (pitch shift, tempo kept),
``tempo`` (speed change, pitch kept), resample to 16 kHz mono, peak-normalise to -1 dBFS.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from lalm_eval.audio.io import TARGET_SR, read_audio
from lalm_eval.errors import ConfigError

ENGINES = ("espeak-ng", "flite", "festival")


@dataclasses.dataclass(frozen=True)
class VoiceRecipe:
    """How to synthesise one voice. Frozen and hashable so it can key caches."""

    engine: str
    voice: str
    speed: int | None = None  # espeak-ng only: words per minute
    pitch: int | None = None  # espeak-ng only: base pitch 0-99
    pitch_cents: int = 0  # sox pitch shift
    tempo: float = 1.0  # sox tempo factor

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ConfigError(f"unknown TTS engine {self.engine!r}; expected one of {ENGINES}")
        if self.engine != "espeak-ng" and (self.speed is not None or self.pitch is not None):
            raise ConfigError(f"'speed'/'pitch' are espeak-ng options, not {self.engine!r} ones")

    @classmethod
    def from_dict(cls, data: dict, where: str = "voice recipe") -> VoiceRecipe:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        for required in ("engine", "voice"):
            if required not in data:
                raise ConfigError(f"{where}: missing field {required!r}")
        return cls(**data)

    def to_dict(self) -> dict:
        """The recipe without default-valued fields (compact in manifests)."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("engine", "voice") or value != f.default:
                out[f.name] = value
        return out

    def describe(self) -> str:
        parts = [f"{self.engine}:{self.voice}"]
        for key, value in self.to_dict().items():
            if key not in ("engine", "voice"):
                parts.append(f"{key}={value}")
        return " ".join(parts)


def _engine_command(recipe: VoiceRecipe, text: str, wav: Path) -> tuple[list[str], str | None]:
    """The engine's command line and the text to send on stdin (None: text is an argument)."""
    if recipe.engine == "espeak-ng":
        cmd = ["espeak-ng", "-v", recipe.voice, "-w", str(wav)]
        if recipe.speed is not None:
            cmd += ["-s", str(recipe.speed)]
        if recipe.pitch is not None:
            cmd += ["-p", str(recipe.pitch)]
        return cmd + ["--stdin"], text
    if recipe.engine == "flite":
        return ["flite", "-voice", recipe.voice, "-t", text, "-o", str(wav)], None
    return ["text2wave", "-eval", f"(voice_{recipe.voice})", "-o", str(wav)], text


def _require(tool: str) -> None:
    if shutil.which(tool) is None:
        raise ConfigError(
            f"{tool!r} is not installed; rendering needs Debian's espeak-ng, flite, festival and "
            "sox (see tools/render_corpus.py). Using the shipped corpus needs none of them."
        )


def synthesize(text: str, recipe: VoiceRecipe) -> np.ndarray:
    """Render ``text`` with ``recipe``; returns float32 mono audio at 16 kHz."""
    if not text.strip():
        raise ValueError("cannot synthesise empty text")
    engine_tool = "text2wave" if recipe.engine == "festival" else recipe.engine
    _require(engine_tool)
    _require("sox")
    with tempfile.TemporaryDirectory(prefix="lalm_tts_") as tmp:
        raw, out = Path(tmp) / "raw.wav", Path(tmp) / "out.wav"
        cmd, stdin = _engine_command(recipe, text, raw)
        subprocess.run(cmd, input=stdin, text=True, check=True, capture_output=True)
        effects: list[str] = []
        if recipe.pitch_cents:
            effects += ["pitch", str(recipe.pitch_cents)]
        if recipe.tempo != 1.0:
            effects += ["tempo", "-s", f"{recipe.tempo:g}"]
        effects += ["rate", "-v", str(TARGET_SR), "norm", "-1"]
        sox = ["sox", "-q", "-D", str(raw), "-c", "1", "-b", "16", str(out)] + effects
        subprocess.run(sox, check=True, capture_output=True)
        audio, _ = read_audio(out, target_sr=TARGET_SR)
    return audio


def engine_versions() -> dict[str, str]:
    """Versions of the installed engines (recorded by render scripts for reproducibility)."""
    versions = {}
    probes = {
        "espeak-ng": ["espeak-ng", "--version"],
        "flite": ["flite", "--version"],
        "festival": ["festival", "--version"],
        "sox": ["sox", "--version"],
    }
    for name, cmd in probes.items():
        if shutil.which(cmd[0]) is None:
            versions[name] = "not installed"
            continue
        res = subprocess.run(cmd, capture_output=True, text=True)
        versions[name] = (res.stdout or res.stderr).strip().splitlines()[0] if (res.stdout or res.stderr) else "unknown"
    return versions
