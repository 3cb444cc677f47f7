"""What the cascade learns about one test audio, computed once and reused by every question.

:func:`analyse`: speech regions → windows → one batched embedding call → cosine scores against
every enrolled centroid → median-smoothed → each window goes to the best-scoring enrolled subject,
or to ``UNKNOWN`` when that best score is below the calibrated threshold. Scoring against *all*
enrolled subjects (not only those the question names) keeps another enrolled speaker's speech
from being credited to the target. :func:`cluster` groups the windows into speakers without
enrollment (agglomerative, cosine, average linkage, distance threshold from calibration).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lalm_eval.models.cascade_parts.segmentation import (
    Segment,
    SegmenterConfig,
    Window,
    cut,
    embed_windows,
    make_windows,
    merge_segments,
    seconds_by_label,
    smooth_scores,
    speech_regions,
)
from lalm_eval.models.cascade_parts.speaker_test import GapTestConfig, gap_test

UNKNOWN = -1


@dataclasses.dataclass
class AudioAnalysis:
    windows: list[Window]  # the windows the encoder accepted
    embeddings: np.ndarray  # [windows, dim]
    scores: np.ndarray  # [windows, subjects], smoothed cosine scores
    labels: list[int]  # per window: subject index or UNKNOWN
    seconds: dict[int, float]  # speech seconds owned per label
    segments: list[Segment]  # consecutive windows of one label merged
    speech_s: float  # total seconds of the speech regions

    def present(self, subject: int, min_speech_s: float) -> bool:
        return self.seconds.get(subject, 0.0) >= min_speech_s


def analyse(
    audio: np.ndarray, sr: int, encoder, centroids: np.ndarray, threshold: float, cfg: SegmenterConfig
) -> AudioAnalysis:
    regions = speech_regions(audio, sr, cfg)
    windows = make_windows(regions, sr, cfg)
    if windows:
        embs, ok = embed_windows(encoder, cut(audio, windows))
        windows, embs = [w for w, good in zip(windows, ok) if good], embs[ok]
    else:
        embs = np.zeros((0, centroids.shape[1]), np.float32)
    scores = smooth_scores(embs @ centroids.T, windows, cfg.median) if windows else np.zeros((0, len(centroids)))
    best = scores.argmax(axis=1) if windows else np.zeros(0, int)
    labels = [int(k) if scores[i, k] >= threshold else UNKNOWN for i, k in enumerate(best)]
    return AudioAnalysis(
        windows,
        embs,
        scores,
        labels,
        seconds_by_label(windows, labels, sr),
        merge_segments(windows, labels),
        sum(b - a for a, b in regions) / sr,
    )


@dataclasses.dataclass
class Clustering:
    labels: list[int]  # per window: speaker number, 0, 1, … in order of first appearance
    n_speakers: int  # clusters with at least min_speech_s of speech
    segments: list[Segment]
    split_test: dict | None = None  # the one-or-two test's figures when it ran


def cluster(
    analysis: AudioAnalysis,
    sr: int,
    threshold: float,
    min_speech_s: float,
    median: int,
    split_test: GapTestConfig | None = None,
) -> Clustering:
    """Speakers of the audio by clustering its window embeddings (no enrollment involved).

    Clusters with less than ``min_speech_s`` of speech are folded into the nearest kept cluster.
    When one cluster is left and ``split_test`` is given, the gap test decides one or two
    speakers (two: its 2-means split, if both halves hold ``min_speech_s``). The windows are then
    reassigned to the kept clusters' centroids with the same median smoothing as presence
    decisions, and speakers are numbered in order of first appearance.
    """
    windows, embs = analysis.windows, analysis.embeddings
    if len(windows) == 0:
        return Clustering([], 0, [])
    if len(windows) == 1:
        raw = np.zeros(1, int)
    else:
        from sklearn.cluster import AgglomerativeClustering

        raw = AgglomerativeClustering(
            n_clusters=None, metric="cosine", linkage="average", distance_threshold=1.0 - threshold
        ).fit_predict(embs)
    seconds = seconds_by_label(windows, list(raw), sr)
    kept = [k for k in sorted(seconds) if seconds[k] >= min_speech_s] or [max(seconds, key=seconds.get)]
    tested = None
    if len(kept) == 1 and split_test is not None:
        result = gap_test(embs, split_test)
        if result is not None:
            tested = result.to_dict()
            halves = seconds_by_label(windows, [int(k) for k in result.labels], sr)
            if result.two and len(halves) == 2 and min(halves.values()) >= min_speech_s:
                raw, kept = np.asarray(result.labels), [0, 1]
            tested["kept"] = len(kept)
    centroids = np.stack([embs[raw == k].mean(axis=0) for k in kept])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    assigned = smooth_scores(embs @ centroids.T, windows, median).argmax(axis=1)
    order = list(dict.fromkeys(int(k) for k in assigned))  # first appearance
    labels = [order.index(int(k)) for k in assigned]
    return Clustering(labels, len(order), merge_segments(windows, labels), tested)
