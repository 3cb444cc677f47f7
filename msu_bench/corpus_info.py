"""``msu-bench corpus-info``: what a reader makes of a corpus before anything is built.

Per conversation: language, recording length, the span of its turns, speakers, turns, turns
without text, and how many segments the build finds, with the reasons for every window it
does not use (``no_segment_reasons``); plus every skipped source item with its reason. The
segments are chosen by the build's own rule (:func:`msu_bench.plan.usable_segments`: the
language, the audio, the segment rule ``min_segment_s`` ..., the segment's audio decoding to
finite samples), so what corpus-info counts is what ``msu-bench build`` uses, and whatever the
build would refuse is flagged here first.
"""

from __future__ import annotations

from pathlib import Path

from lalm_eval.hub.readers import skip_records
from msu_bench.plan import MsuConfig, _relative, usable_segments
from msu_bench.types import ReadReport


def corpus_statistics(report: ReadReport, cfg: MsuConfig, corpus_dir: str | None = None) -> dict:
    rows = []
    for conv in sorted(report.conversations, key=lambda c: c.id):
        found, why = usable_segments(conv, cfg)
        turns = sorted(conv.turns, key=lambda t: t.start)
        rows.append(
            {
                "id": conv.id,
                "language": conv.language,
                "seconds": round(conv.duration, 2),
                "turn_span": [round(turns[0].start, 2), round(max(t.end for t in turns), 2)] if turns else [],
                "speakers": len(conv.speaker_order()),
                "turns": len(turns),
                "untranscribed": sum(not t.text.strip() for t in turns),
                "segments": len(found),
                "segment_seconds": [round(s.duration, 2) for s in found],
                "no_segment_reasons": why,
            }
        )
    return {
        "segment_rule": {
            "min_segment_s": cfg.min_segment_s,
            "max_segment_s": cfg.max_segment_s,
            "min_speakers": cfg.min_speakers,
        },
        "conversations": rows,
        "totals": {
            "conversations": len(rows),
            "hours": round(sum(r["seconds"] for r in rows) / 3600, 3),
            "turns": sum(r["turns"] for r in rows),
            "untranscribed": sum(r["untranscribed"] for r in rows),
            "segments": sum(r["segments"] for r in rows),
        },
        "skipped": skip_records(report.skips, lambda item: _relative(item, corpus_dir)),
    }


def format_table(stats: dict) -> str:
    head = ("conversation", "lang", "seconds", "turns from-to", "speakers", "turns", "no text", "segments")
    rows = [head] + [
        (
            r["id"],
            r["language"],
            f"{r['seconds']:.1f}",
            "-".join(f"{x:.1f}" for x in r["turn_span"]),
            r["speakers"],
            r["turns"],
            r["untranscribed"],
            r["segments"],
        )
        for r in stats["conversations"]
    ]
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(head))]
    lines = [
        "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    rule, t = stats["segment_rule"], stats["totals"]
    lines += [
        "",
        f"{t['segments']} segment(s) under min_segment_s={rule['min_segment_s']:g}, "
        f"max_segment_s={rule['max_segment_s']:g}, min_speakers={rule['min_speakers']}",
    ]
    for r in stats["conversations"]:
        lines += [f"  {reason}" for reason in r["no_segment_reasons"]]
    if stats["skipped"]:
        lines.append(f"skipped: {len(stats['skipped'])}")
        lines += [f"  {s['file']}: {s['reason']}" for s in stats["skipped"][:20]]
        if len(stats["skipped"]) > 20:
            lines.append(f"  ... {len(stats['skipped']) - 20} more (--json lists all)")
    return "\n".join(lines)


def corpus_info(corpus: str, corpus_dir: str | Path | None, options: dict, cfg: MsuConfig) -> dict:
    from msu_bench.plan import read_corpus

    return corpus_statistics(
        read_corpus(corpus, str(corpus_dir) if corpus_dir else None, options),
        cfg,
        str(corpus_dir) if corpus_dir else None,
    )
