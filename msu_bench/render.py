"""Render an authored conversation (``conversations/<id>.yaml``) to audio and time-stamped turns.

Each turn is synthesised with its speaker's palette voice, shifted by the prosody rules of its
emotion and voice quality (``prosody.yaml``); a ``pause_after_words`` turn is synthesised in two
parts with silence between. Turns are laid on one timeline: ``pause_before`` seconds after the
latest end so far, or — for an interruption — ``overlap_s`` before the interrupted turn ends,
so both voices sound together. The mix is the sum of the turns (optionally over background
noise), peak-limited. Start/end times are measured from the rendered audio.
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache
from pathlib import Path

import numpy as np
import yaml

from lalm_eval.audio.io import TARGET_SR
from lalm_eval.audio.tts import VoiceRecipe, synthesize
from lalm_eval.errors import DataError

CONVERSATIONS_DIR = Path(__file__).resolve().parent / "conversations"
DEFAULT_PAUSE = 0.3
DEFAULT_OVERLAP = 0.8
DEFAULT_INNER_PAUSE = 0.8
LONG_PAUSE = 1.5  # seconds: what counts as a long pause in annotations and questions


@cache
def _yaml(name: str) -> dict:
    return yaml.safe_load((CONVERSATIONS_DIR / name).read_text(encoding="utf-8"))


def palette() -> dict:
    return _yaml("voices.yaml")


def prosody() -> dict:
    return _yaml("prosody.yaml")


def turn_recipe(
    voice_name: str, emotion: str | None, voice_quality: str | None, where: str
) -> tuple[VoiceRecipe, float]:
    """The speaker's recipe with the turn's emotion and voice quality applied, and a gain in dB."""
    if voice_name not in palette():
        raise DataError(where, f"unknown voice {voice_name!r}; palette: {sorted(palette())}", field="voice")
    base = VoiceRecipe.from_dict(palette()[voice_name]["recipe"], where=where)
    rules = prosody()
    emo = rules["emotion"].get(emotion or "neutral")
    if emo is None:
        raise DataError(where, f"unknown emotion {emotion!r}; known: {sorted(rules['emotion'])}", field="emotion")
    vq = rules["voice_quality"].get(voice_quality, {}) if voice_quality else {}
    if voice_quality and not vq:
        raise DataError(where, f"unknown voice_quality {voice_quality!r}", field="voice_quality")
    recipe = dataclasses.replace(
        base,
        tempo=round(base.tempo * emo["tempo"], 4),
        pitch_cents=base.pitch_cents + emo["pitch_cents"] + vq.get("pitch_cents", 0),
    )
    return recipe, float(emo["gain_db"] + vq.get("gain_db", 0))


def split_after(text: str, n: int, language: str) -> tuple[str, str]:
    """``text`` split after its ``n``-th word (English) or Hanzi character (Mandarin)."""
    if language == "zh":
        count = 0
        for i, ch in enumerate(text):
            count += bool(re.match(r"[\u4e00-\u9fff]", ch))
            if count == n:
                j = i + 1
                while j < len(text) and not re.match(r"[\u4e00-\u9fff]", text[j]):
                    j += 1  # keep punctuation with the first part
                return text[:j], text[j:]
        return text, ""
    words = text.split()
    return " ".join(words[:n]), " ".join(words[n:])


@dataclasses.dataclass
class RenderedTurn:
    index: int
    audio: np.ndarray
    start: float
    pause_within: tuple[str, float] | None


def render_turn_audio(turn: dict, speaker: dict, language: str, where: str) -> tuple[np.ndarray, tuple | None]:
    recipe, gain_db = turn_recipe(speaker["voice"], turn.get("emotion"), turn.get("voice_quality"), where)
    gain = 10 ** (gain_db / 20)
    if turn.get("pause_after_words"):
        first, rest = split_after(turn["text"], int(turn["pause_after_words"]), language)
        pause = float(turn.get("pause_s", DEFAULT_INNER_PAUSE))
        parts = [synthesize(first, recipe), np.zeros(int(pause * TARGET_SR), np.float32)]
        if rest.strip():
            parts.append(synthesize(rest, recipe))
        return np.concatenate(parts) * gain, (first, pause)
    return synthesize(turn["text"], recipe) * gain, None


def layout(durations: list[float], turns: list[dict], where: str) -> list[float]:
    """Start time of every turn (seconds)."""
    starts, latest_end = [], 0.0
    for i, (turn, dur) in enumerate(zip(turns, durations)):
        if turn.get("interrupts") and i > 0:
            prev_start, prev_end = starts[i - 1], starts[i - 1] + durations[i - 1]
            overlap = float(turn.get("overlap_s", DEFAULT_OVERLAP))
            start = max(prev_start + 0.3 * (prev_end - prev_start), prev_end - overlap)
            if start >= prev_end:
                raise DataError(
                    where,
                    f"turn {i + 1}: interruption cannot overlap a {prev_end - prev_start:.2f} s turn",
                    field="interrupts",
                )
        else:
            start = latest_end + float(turn.get("pause_before", DEFAULT_PAUSE if i else 0.2))
        starts.append(start)
        latest_end = max(latest_end, start + dur)
    return starts


def render_conversation(script: dict, where: str, seed: int = 0) -> tuple[np.ndarray, list[dict]]:
    """The mixed audio and the turns with measured ``start``/``end`` (and the rendered extras)."""
    speakers, language = script["speakers"], script["language"]
    audios, inner = [], []
    for i, turn in enumerate(script["turns"], start=1):
        if turn["speaker"] not in speakers:
            raise DataError(where, f"turn {i}: unknown speaker {turn['speaker']!r}", field="speaker")
        audio, pause_within = render_turn_audio(turn, speakers[turn["speaker"]], language, f"{where}: turn {i}")
        audios.append(audio.astype(np.float32))
        inner.append(pause_within)
    durations = [len(a) / TARGET_SR for a in audios]
    starts = layout(durations, script["turns"], where)
    total = int(np.ceil((max(s + d for s, d in zip(starts, durations)) + 0.3) * TARGET_SR))
    mix = np.zeros(total, np.float32)
    for start, audio in zip(starts, audios):
        offset = int(round(start * TARGET_SR))
        mix[offset : offset + len(audio)] += audio
    noise = script.get("background_noise")
    if noise:
        from lalm_eval.audio.augment import Augmentation, apply_augmentation

        mix = apply_augmentation(
            mix,
            TARGET_SR,
            Augmentation(noise={"kind": noise.get("kind", "pink"), "snr_db": float(noise["snr_db"]), "seed": seed}),
        )
    peak = float(np.abs(mix).max())
    if peak > 0.99:
        mix *= 0.99 / peak
    timed = []
    for i, (turn, start, dur, pw) in enumerate(zip(script["turns"], starts, durations, inner), start=1):
        timed.append(
            {
                **turn,
                "index": i,
                "start": round(start, 3),
                "end": round(start + dur, 3),
                "pause_within": list(pw) if pw else None,
            }
        )
    return mix, timed
