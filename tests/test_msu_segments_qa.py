"""Segment selection and template QA on synthetic conversations (no audio needed)."""

import re

import numpy as np

from msu_bench.qa.generate import generate_segment_qa
from msu_bench.segments import SegmentRule, select_segments
from msu_bench.taxonomy import load_taxonomy
from msu_bench.types import Conversation, SpeakerInfo, Turn
from tests.real_layouts import CALL_TURNS


def conversation(n_turns=60, turn_s=4.0, gap=1.0, speakers=("A", "B"), interrupt_every=0):
    turns, t = [], 0.0
    for i in range(n_turns):
        spk = speakers[i % len(speakers)]
        start = t
        interrupts = None
        if interrupt_every and i and i % interrupt_every == 0:
            start = t - gap - 1.0  # overlaps the previous turn by one second
            interrupts = f"c-t{i - 1:04d}"
        turns.append(
            Turn(
                id=f"c-t{i:04d}",
                speaker=spk,
                text=f"sentence number {i} from {spk} here",
                start=start,
                end=start + turn_s,
                interrupts=interrupts,
                emotion="happy" if i % 3 else "sad",
            )
        )
        t = max(t, start + turn_s) + gap
    info = {s: SpeakerInfo(id=s, gender="female" if s == "A" else "male") for s in speakers}
    return Conversation(id="c", language="en", source="test", audio=None, duration=t, speakers=info, turns=turns)


def test_segments_are_60_to_120_s_on_free_boundaries():
    conv = conversation(n_turns=80, interrupt_every=7)
    segments, rejected = select_segments(conv, SegmentRule())
    assert len(segments) >= 2 and not rejected
    for seg in segments:
        assert 60 <= seg.duration <= 120
        assert all(0 <= t.start < t.end <= seg.duration + 1e-6 for t in seg.turns)
        ids = {t.id for t in seg.turns}
        # an interruption is never cut from the turn it interrupts
        assert all(t.interrupts in ids for t in seg.turns if t.interrupts)
    offsets = [s.offset for s in segments]
    assert offsets == sorted(offsets)
    assert all(a.offset + a.duration <= b.offset + 1e-6 for a, b in zip(segments, segments[1:]))


def test_single_speaker_window_is_skipped_and_reported():
    conv = conversation(n_turns=40, speakers=("A",))
    segments, rejected = select_segments(conv, SegmentRule())
    assert segments == [] and rejected and "1 speaker" in rejected[0]


def test_too_short_conversation_yields_nothing_and_says_the_real_span():
    segments, rejected = select_segments(conversation(n_turns=5), SegmentRule())
    assert segments == []
    assert rejected == [
        "c: no 60-120 s window: the recording is 25.0 s, its turns span 0.0-24.0 s, "
        "the longest window on free turn boundaries is 25.0 s (lower min_segment_s to use it)"
    ]


def call_conversation(duration=30.0):
    turns = [
        Turn(id=f"call-t{i:04d}", speaker=spk, text=text, start=s, end=e)
        for i, (spk, s, e, text) in enumerate(CALL_TURNS, 1)
    ]
    return Conversation(
        id="call",
        language="en",
        source="rttm",
        audio=None,
        duration=duration,
        speakers={s: SpeakerInfo(id=s) for s in "AB"},
        turns=turns,
    )


def test_a_30_s_call_is_one_segment_spanning_the_whole_recording():
    # turns span 3.1-26.9 s: a window on the turns alone would be 23.8 s (+0.8 s padding)
    (seg,), rejected = select_segments(call_conversation(), SegmentRule(min_s=30, max_s=120))
    assert not rejected and seg.id == "call" and seg.offset == 0.0 and seg.duration == 30.0
    assert [t.start for t in seg.turns][:2] == [3.1, 5.3]  # whole recording: times unchanged
    segments, (reason,) = select_segments(call_conversation(), SegmentRule())
    assert segments == [] and "recording is 30.0 s" in reason and "span 3.1-26.9 s" in reason


def test_edges_extend_only_as_far_as_max_s_allows():
    (seg,), _ = select_segments(call_conversation(duration=40.0), SegmentRule(min_s=20, max_s=35))
    assert seg.offset == 0.0 and seg.duration == 35.0  # lead-in kept, tail cut at max_s
    assert seg.turns[-1].end == 26.9


def test_windows_never_overlap_when_turn_gaps_are_shorter_than_the_padding():
    conv = conversation(n_turns=60, turn_s=3.0, gap=0.4)
    segments, _ = select_segments(conv, SegmentRule(min_s=20, max_s=40))
    assert len(segments) >= 3
    assert all(a.offset + a.duration <= b.offset + 1e-6 for a, b in zip(segments, segments[1:]))


def test_template_questions_use_only_present_facts():
    conv = conversation(n_turns=20, interrupt_every=5)
    (seg,), _ = select_segments(conv, SegmentRule())
    task_ids = [t.id for t in load_taxonomy().tasks]
    asked = {}
    items = generate_segment_qa(seg, task_ids, asked, np.random.default_rng(0), per_segment=25)
    got = {q.task_id for q in items}
    # facts present: speakers, genders, emotions, timing; absent: accents, venue, outcome, ...
    assert {
        "t1_sr_speaker_counting",
        "t1_sac_gender_recognition",
        "t1_spa_emotion_recognition",
        "t4_mst_dialogue_transcription",
        "t2_sda_emotion_evolution",
        "t1_sr_silence_overlap_detection",
    } <= got
    assert not got & {
        "t1_sac_accent_dialect_recognition",
        "t3_mssi_dialogue_background_reasoning",
        "t3_mssi_dialogue_result_reasoning",
        "t4_mscr_motivation_reasoning",
    }
    count = next(q for q in items if q.task_id == "t1_sr_speaker_counting")
    assert count.answer == "Two."
    transcript = next(q for q in items if q.task_id == "t4_mst_dialogue_transcription").answer
    assert re.fullmatch(r"\{spk_1: .+; spk_2: .+\}", transcript)
    assert sum(asked.values()) == len(items)


def test_least_asked_tasks_come_first():
    conv = conversation(n_turns=20)
    (seg,), _ = select_segments(conv, SegmentRule())
    task_ids = [t.id for t in load_taxonomy().tasks]
    asked = {t: 5 for t in task_ids}
    asked["t1_sac_gender_recognition"] = 0
    items = generate_segment_qa(seg, task_ids, asked, np.random.default_rng(1), per_segment=1)
    assert [q.task_id for q in items] == ["t1_sac_gender_recognition"]
