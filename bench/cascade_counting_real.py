"""Speaker counting by the cascade on real speech, side by side with the embedded corpus.

What is counted, with the cascade's own windows and resemblyzer embeddings:

- ``call``: the real 30 s two-person telephone call of the pyannote-audio wheel (2 speakers);
- ``real-1`` / ``real-2``: 30 s recordings assembled from real single-voice prompts of the
  Debian Asterisk packages (one voice; two voices alternating) — see ``bench/real_voices.py``;
- ``embedded``: the MSU-Bench ``t1_sr_speaker_counting`` questions of an embedded build.

First the adapter as configured (calibrated threshold + the gap statistic's one-or-two test,
``split_test=gap``), then the calibrated threshold alone and each threshold of ``--thresholds``
alone: how many recordings of each set get the right count. Then, per recording, the similarity
of the two centroids of its best two-cluster split — the figure that shows why no threshold serves
the call and real single voices at once: the call's two speakers are as close as two halves of
one real voice — and the gap test's margin ``Gap(2) - s - Gap(1)`` (two speakers when > 0).

    python bench/cascade_counting_real.py --enrollment palm-bench --msu msu-bench
"""

from __future__ import annotations

import argparse
import io
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.real_voices import asterisk_voices, pyannote_call  # noqa: E402

SR = 16_000
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "一": 1, "两": 2, "二": 2, "三": 3, "四": 4}


def assembled(voices: dict[str, list[np.ndarray]], names: tuple[str, ...], seconds: float = 30.0) -> np.ndarray:
    """Prompts of ``names`` in turn (0.3 s pauses) up to ``seconds``."""
    gap, parts, i = np.zeros(int(0.3 * SR), np.float32), [], 0
    while sum(len(p) for p in parts) < seconds * SR:
        name = names[i % len(names)]
        clips = voices[name]
        parts += [clips[(i // len(names)) % len(clips)], gap]
        i += 1
    return np.concatenate(parts)[: int(seconds * SR)]


def msu_counting(folder: str) -> list[tuple[str, np.ndarray, int]]:
    import datasets

    from lalm_eval.audio.io import read_audio
    from lalm_eval.hub.load import load_dataset_fresh

    ds = load_dataset_fresh(folder, "all", split="test").cast_column("audio", datasets.Audio(decode=False))
    out = []
    for row in ds:
        if row["task_id"] != "t1_sr_speaker_counting":
            continue
        word = row["answer"].strip(" .。").lower().split()[0] if row["answer"].strip() else ""
        n = WORDS.get(word) or next((WORDS[c] for c in row["answer"] if c in WORDS), None)
        if n is not None:
            out.append((row["segment_id"], read_audio(io.BytesIO(row["audio"]["bytes"]), SR)[0], n))
    return out


def centroid_similarity(embs: np.ndarray) -> float:
    from sklearn.cluster import AgglomerativeClustering

    if len(embs) < 2:
        return float("nan")
    lab = AgglomerativeClustering(n_clusters=2, metric="cosine", linkage="average").fit_predict(embs)
    a, b = embs[lab == 0].mean(axis=0), embs[lab == 1].mean(axis=0)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--enrollment", default="palm-bench", help="the cascade's enrollment (a PALM-Bench folder)")
    ap.add_argument("--msu", default="msu-bench", help="an MSU-Bench folder ('' to leave it out)")
    ap.add_argument("--thresholds", default="0.55,0.62,0.65,0.68,0.70")
    args = ap.parse_args(argv)

    from lalm_eval.models.cascade import CascadeAdapter
    from lalm_eval.models.cascade_parts.analysis import cluster

    adapter = CascadeAdapter(enrollment=args.enrollment)
    sets: dict[str, list[tuple[str, np.ndarray, int]]] = {"call": [], "real-1": [], "real-2": [], "embedded": []}
    found = pyannote_call()
    if found is not None:
        sets["call"].append(("pyannote sample call", found[0], 2))
    voices = asterisk_voices(min_s=1.5, max_per_folder=12)
    for name in sorted(voices):
        sets["real-1"].append((name, assembled(voices, (name,)), 1))
    for pair in itertools.combinations(sorted(voices), 2):
        sets["real-2"].append(("+".join(pair), assembled(voices, pair), 2))
    if args.msu:
        sets["embedded"] = msu_counting(args.msu)
    calibrated = adapter.cluster_threshold
    thresholds = [calibrated] + [float(t) for t in args.thresholds.split(",") if t]
    analyses = {k: [(name, adapter.analysis(a), n) for name, a, n in items] for k, items in sets.items()}
    test = adapter.split_test

    print(
        f"calibrated clustering threshold {calibrated:.3f} (EER {adapter.calibration['cluster_eer']:.3f}, "
        f"{adapter.calibration['conditions']}, {adapter.calibration['n_subjects']} enrolled subjects)"
    )
    print(
        f"split test: {test.to_dict() if test else 'off'}; on the enrollment: {adapter.calibration.get('split_test')}"
    )
    print("threshold        " + "  ".join(f"{k} ({len(v)})" for k, v in sets.items()))
    rows = ([(calibrated, test, "+ gap test")] if test else []) + [(t, None, "") for t in thresholds]
    counts = {}
    for t, with_test, label in rows:
        cells = []
        for k, items in analyses.items():
            got = [cluster(an, SR, t, adapter.min_speech_s, adapter.cfg.median, with_test) for _, an, _ in items]
            counts[(t, label, k)] = got
            cells.append(f"{sum(c.n_speakers == n for c, (_, _, n) in zip(got, items))}/{len(items)}")
        print(f"{t:5.3f} {label:10s} " + "  ".join(f"{c:>{len(k) + 4}}" for c, k in zip(cells, sets)))
    print("\nper recording: centroid similarity of the best two-cluster split (raw resemblyzer embeddings),")
    print("the count with the calibrated threshold alone / with the gap test, and the test's margin:")
    for k, items in analyses.items():
        for i, (name, an, n) in enumerate(items):
            alone = counts[(calibrated, "", k)][i].n_speakers
            tested = counts[(calibrated, "+ gap test", k)][i] if test else None
            extra = ""
            if tested is not None:
                fig = tested.split_test
                margin = f"{fig['gap2'] - fig['s2'] - fig['gap1']:+.3f}" if fig else "not run (>1 cluster)"
                extra = f"  with test {tested.n_speakers}  margin {margin}"
            print(
                f"  {k:9s} {name:28s} speakers {n}  {centroid_similarity(an.embeddings):.3f}  threshold alone {alone}{extra}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
