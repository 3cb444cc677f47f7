"""Segment selection: windows of a conversation that MSU-Bench questions are asked about.

The paper selects segments of 60-120 s with at least two speakers. A window starts and ends on
turn boundaries where nobody is talking across the cut (an interruption is never split), and
windows do not overlap. Times inside a segment are relative to its start; ``offset`` says where
it sits in the recording.

Bounds: inside a recording a window opens up to 0.5 s before its first turn and closes up to
0.3 s after its last, never past the middle of the silence around the cut (so neighbouring
windows cannot overlap). At the recording's edges the window may take in the lead-in and the
tail: a window holding the first turn may start at 0 s, one holding the last turn may end at
the recording's end, as far as ``max_s`` allows. A 30.0 s call whose turns span 3.1-26.9 s is
therefore one 30.0 s segment (the whole recording), not a 23.8 s one.
"""

from __future__ import annotations

import dataclasses
import logging

from msu_bench.types import Conversation

log = logging.getLogger(__name__)
LEAD_S, TAIL_S = 0.5, 0.3  # padding before the first and after the last turn of a window


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


def _fit(std: tuple[float, float], ext: tuple[float, float], rule: SegmentRule) -> tuple[float, float] | None:
    """Bounds between the padded turn span ``std`` and the widest allowed ``ext`` (recording
    edges) whose length lies in ``[min_s, max_s]``, as wide as ``max_s`` allows; else ``None``."""
    if std[1] - std[0] > rule.max_s + 1e-9:
        return None
    start = min(std[0], max(ext[0], std[1] - rule.max_s))
    end = max(std[1], min(ext[1], start + rule.max_s))
    return (start, end) if end - start >= rule.min_s - 1e-9 else None


def select_segments(conv: Conversation, rule: SegmentRule = SegmentRule()) -> tuple[list[Conversation], list[str]]:
    """Non-overlapping segments of ``conv`` satisfying ``rule``, and why windows were rejected.

    When no window qualifies, the reasons say so with the real span: the recording's length,
    the span of its turns and the longest window that fits under ``max_s``; a recording with
    fewer speakers than ``min_speakers`` says that instead."""
    turns = sorted(conv.turns, key=lambda t: (t.start, t.id))
    if not turns:
        return [], [f"{conv.id}: no turns"]
    n_speakers = len({t.speaker for t in turns})
    if n_speakers < rule.min_speakers:  # no window can have more speakers than the whole recording
        return [], [
            f"{conv.id}: {n_speakers} speaker(s) in the whole recording, fewer than "
            f"min_speakers={rule.min_speakers} (MSU-Bench asks about conversations of several speakers)"
        ]
    cuts = _cut_points(conv)
    ends = [0.0]  # ends[i]: the latest end among turns[:i]
    for t in turns:
        ends.append(max(ends[-1], t.end))
    duration = max(conv.duration, 0.0)

    def lead(i: int) -> tuple[float, float]:  # (std, ext) start of a window opening at turn i
        if i == 0:
            return turns[0].start - min(LEAD_S, turns[0].start), 0.0
        std = turns[i].start - min(LEAD_S, (turns[i].start - ends[i]) / 2)
        return std, std

    def tail(j: int) -> tuple[float, float]:  # (std, ext) end of a window closing before turn j
        if j == len(turns):
            limit = max(duration, ends[j]) if duration else ends[j] + TAIL_S
            return min(ends[j] + TAIL_S, limit), limit
        std = ends[j] + min(TAIL_S, (turns[j].start - ends[j]) / 2)
        return std, std

    segments, rejected, longest = [], [], 0.0
    a = 0
    while a < len(cuts) - 1:
        start_i = cuts[a]
        chosen = None
        for b in range(a + 1, len(cuts)):
            (s_std, s_ext), (e_std, e_ext) = lead(start_i), tail(cuts[b])
            if e_std - s_std > rule.max_s:
                break
            longest = max(longest, min(e_ext - s_ext, rule.max_s))
            bounds = _fit((s_std, e_std), (s_ext, e_ext), rule)
            if bounds is not None:
                chosen = (b, bounds)  # the longest window within the bounds
        if chosen is None:
            a += 1
            continue
        b, (start, end) = chosen
        part = turns[start_i : cuts[b]]
        n_speakers = len({t.speaker for t in part})
        if n_speakers < rule.min_speakers:
            rejected.append(
                f"{conv.id} {start:.1f}-{end:.1f} s: {n_speakers} speaker(s), "
                f"fewer than min_speakers={rule.min_speakers}"
            )
            a = b
            continue
        if duration:
            end = min(end, duration)
        segments.append(_sub(conv, part, start, end, len(segments)))
        a = b
    if not segments and not rejected:
        rejected.append(
            f"{conv.id}: no {rule.min_s:g}-{rule.max_s:g} s window: the recording is "
            f"{duration:.1f} s, its turns span {turns[0].start:.1f}-{ends[-1]:.1f} s, the longest "
            f"window on free turn boundaries is {longest:.1f} s (lower min_segment_s to use it)"
        )
    return segments, rejected


def _sub(conv: Conversation, turns, start: float, end: float, index: int) -> Conversation:
    whole = start <= 0.0 and end >= conv.duration - 1e-6
    shifted = [dataclasses.replace(t, start=round(t.start - start, 3), end=round(t.end - start, 3)) for t in turns]
    speakers = {k: v for k, v in conv.speakers.items() if any(t.speaker == k for t in turns)}
    seg_id = conv.id if whole else f"{conv.id}__seg{index:03d}_{start:.2f}-{end:.2f}"
    meta = (
        dict(conv.meta)
        if whole
        else {k: v for k, v in conv.meta.items() if k in ("venue", "background", "formality", "relationship")}
    )
    return dataclasses.replace(
        conv,
        id=seg_id,
        turns=shifted,
        speakers=speakers,
        duration=round(end - start, 3),
        offset=round(conv.offset + start, 3),
        meta=meta,
    )
