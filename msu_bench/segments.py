"""Segment selection: windows of a conversation that MSU-Bench questions are asked about.

The paper selects segments of 60-120 s with at least two speakers. A window starts and ends on
turn boundaries where nobody is talking across the cut (an interruption is never split), and
windows do not overlap. Times inside a segment are relative to its start; ``offset`` says where
it sits in the recording.
"""

from __future__ import annotations

import dataclasses
import logging

from msu_bench.types import Conversation

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class SegmentRule:
    min_s: float = 60.0
    max_s: float = 120.0
    min_speakers: int = 2


def _cut_points(conv: Conversation) -> list[int]:
    """Indices i such that a cut before turn i crosses no speech."""
    turns = sorted(conv.turns, key=lambda t: (t.start, t.id))
    cuts, latest_end = [0], 0.0
    for i, turn in enumerate(turns):
        if i and turn.start >= latest_end:
            cuts.append(i)
        latest_end = max(latest_end, turn.end)
    cuts.append(len(turns))
    return cuts


def select_segments(conv: Conversation, rule: SegmentRule = SegmentRule()) -> tuple[list[Conversation], list[str]]:
    """Non-overlapping segments of ``conv`` satisfying ``rule``, and the reasons windows failed."""
    turns = sorted(conv.turns, key=lambda t: (t.start, t.id))
    cuts = _cut_points(conv)
    segments, rejected = [], []
    a = 0
    while a < len(cuts) - 1:
        start_i = cuts[a]
        start = max(0.0, turns[start_i].start - min(0.5, turns[start_i].pause_before or 0.5))
        chosen = None
        for b in range(a + 1, len(cuts)):
            end = max(t.end for t in turns[start_i:cuts[b]]) + 0.3
            if end - start > rule.max_s:
                break
            if end - start >= rule.min_s:
                chosen = (b, end)  # the longest window within the bounds
        if chosen is None:
            a += 1
            continue
        b, end = chosen
        part = turns[start_i:cuts[b]]
        n_speakers = len({t.speaker for t in part})
        if n_speakers < rule.min_speakers:
            rejected.append(f"{conv.id} {start:.1f}-{end:.1f} s: {n_speakers} speaker(s)")
            a = b
            continue
        segments.append(_sub(conv, part, start, min(end, conv.duration), len(segments)))
        a = b
    return segments, rejected


def _sub(conv: Conversation, turns, start: float, end: float, index: int) -> Conversation:
    whole = start <= 0.0 and end >= conv.duration - 1e-6
    shifted = [dataclasses.replace(t, start=round(t.start - start, 3), end=round(t.end - start, 3)) for t in turns]
    speakers = {k: v for k, v in conv.speakers.items() if any(t.speaker == k for t in turns)}
    seg_id = conv.id if whole else f"{conv.id}__seg{index:03d}_{start:.2f}-{end:.2f}"
    meta = dict(conv.meta) if whole else {k: v for k, v in conv.meta.items() if k in ("venue", "background", "formality", "relationship")}
    return dataclasses.replace(conv, id=seg_id, turns=shifted, speakers=speakers, duration=round(end - start, 3),
                               offset=round(conv.offset + start, 3), meta=meta)
