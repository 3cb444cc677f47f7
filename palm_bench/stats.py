"""Statistics of a built PALM-Bench, in the shape of the paper's Figure 2c.

Samples and hours per language, per speaker count, per task and per split (hours summed over
samples, as the paper counts them, and over unique composed clips), the recognition label and
negative-stratum balance, and the clip-level train/test disjointness.
"""

from __future__ import annotations

from collections import Counter, defaultdict

COLUMNS = [
    "audio_id",
    "task",
    "language",
    "n_speakers",
    "duration",
    "label",
    "negative_stratum",
    "source_clips",
    "queried",
    "present",
    "absent",
]


def collect(rows_by_split: dict) -> dict:
    """``rows_by_split``: ``{split: iterable of row dicts}`` with at least :data:`COLUMNS`."""
    table = defaultdict(lambda: {"samples": 0, "hours": 0.0})
    unique_audio = {}
    labels, strata = Counter(), Counter()
    names_present = names_absent = 0
    clips_by_split = defaultdict(set)
    for split, rows in rows_by_split.items():
        for row in rows:
            hours = row["duration"] / 3600
            for key in (
                ("split", split),
                ("language", row["language"]),
                ("task", row["task"]),
                ("n_speakers", row["n_speakers"]),
                ("split/task", f"{split}/{row['task']}"),
            ):
                table[key]["samples"] += 1
                table[key]["hours"] += hours
            unique_audio[row["audio_id"]] = hours
            clips_by_split[split].update(row["source_clips"])
            if row["task"] == "recognition":
                labels[row["label"]] += 1
                names_present += len(row["present"])
                names_absent += len(row["absent"])
                if row["negative_stratum"]:
                    strata[row["negative_stratum"]] += 1
    seen: dict[str, str] = {}
    shared = set()  # clips in more than one split (any two)
    for split in sorted(clips_by_split):
        for clip in clips_by_split[split]:
            if seen.setdefault(clip, split) != split:
                shared.add(clip)
    grouped = defaultdict(dict)
    for (dim, value), cell in sorted(table.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))):
        grouped[dim][str(value)] = {"samples": cell["samples"], "hours": round(cell["hours"], 3)}
    return {
        "by": dict(grouped),
        "total_samples": sum(c["samples"] for c in grouped.get("split", {}).values()),
        "total_sample_hours": round(sum(c["hours"] for c in grouped.get("split", {}).values()), 3),
        "unique_audios": len(unique_audio),
        "unique_audio_hours": round(sum(unique_audio.values()), 3),
        "recognition_labels": dict(sorted(labels.items())),
        "recognition_names": {"present": names_present, "absent": names_absent},
        "negative_strata": dict(sorted(strata.items())),
        "source_clips_in_both_splits": len(shared),
    }
