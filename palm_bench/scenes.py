"""Render an :class:`~palm_bench.samples.AudioPlan` to audio: concatenate, then augment.

Clips are joined with ``silence_s`` of digital silence between them (PALM-Bench §4.2: random
non-overlapping concatenation with a fixed 0.5 s gap); each speaker's time span in the mix is
measured in samples, then rescaled if speed perturbation changes the timeline. The result is a
pure function of the plan: the same plan gives the same samples.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lalm_eval.audio.io import TARGET_SR
from palm_bench.samples import AudioPlan


@dataclasses.dataclass(frozen=True)
class Span:
    speaker: str
    clip: str
    start: float
    end: float


def compose(
    plan: AudioPlan, silence_s: float, sr: int = TARGET_SR, load=lambda clip: clip.load_audio()
) -> tuple[np.ndarray, list[Span]]:
    """The plan's clips joined by silence, augmented; with each clip's span in seconds."""
    gap = np.zeros(int(round(silence_s * sr)), dtype=np.float32)
    pieces, spans, cursor = [], [], 0
    for i, clip in enumerate(plan.clips):
        if i:
            pieces.append(gap)
            cursor += len(gap)
        audio = load(clip)
        pieces.append(audio)
        spans.append(Span(clip.speaker, clip.id, cursor / sr, (cursor + len(audio)) / sr))
        cursor += len(audio)
    mix = np.concatenate(pieces).astype(np.float32)
    if plan.augmentation:
        from lalm_eval.audio.augment import Augmentation, apply_augmentation, speed_perturb_spans

        aug = Augmentation.from_dict(plan.augmentation)
        mix = apply_augmentation(mix, sr, aug)
        rescaled = speed_perturb_spans([(s.start, s.end) for s in spans], aug.speed)
        spans = [dataclasses.replace(s, start=a, end=b) for s, (a, b) in zip(spans, rescaled)]
    return mix, spans
