"""The per-segment columns of an MSU-Bench row: speaker metadata and the speaker-attributed
transcript, with speakers labelled Speaker_N / spk_N by first appearance."""

from __future__ import annotations

from msu_bench.qa.facts import Facts
from msu_bench.qa.generate import templates


def segment_fields(seg) -> dict:
    tpl = templates()
    labels = Facts(seg, tpl["labels"], seg.language, tpl["speaker_label"][seg.language]).names
    speakers = [
        {
            "label": labels[s],
            "speaker_id": s,
            **{k: getattr(seg.speakers[s], k) or "" for k in ("gender", "age_group", "accent", "role")},
        }
        for s in labels
    ]
    transcript = [
        {"speaker": labels[t.speaker], "start": t.start, "end": t.end, "text": t.text}
        for t in sorted(seg.turns, key=lambda t: (t.start, t.id))
    ]
    return {
        "segment_id": seg.id,
        "source": seg.source,
        "language": seg.language,
        "duration": seg.duration,
        "n_speakers": len(labels),
        "speakers": speakers,
        "transcript": transcript,
    }
