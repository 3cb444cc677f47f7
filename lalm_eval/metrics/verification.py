"""Speaker-verification metrics: equal error rate from same/different-speaker scores."""

from __future__ import annotations

import numpy as np


def equal_error_rate(same: np.ndarray, diff: np.ndarray) -> tuple[float, float]:
    """EER and its threshold for scores where higher means "same speaker".

    Sweeps every observed score as a threshold (accept when score >= threshold) and returns the
    point where the false-acceptance rate (different pairs accepted) and the false-rejection rate
    (same pairs rejected) are closest, as their mean.
    """
    same, diff = np.asarray(same, dtype=np.float64), np.asarray(diff, dtype=np.float64)
    if same.size == 0 or diff.size == 0:
        raise ValueError("EER needs at least one same-speaker and one different-speaker score")
    thresholds = np.unique(np.concatenate([same, diff]))
    same_sorted, diff_sorted = np.sort(same), np.sort(diff)
    frr = np.searchsorted(same_sorted, thresholds, side="left") / same.size  # same < t
    far = 1.0 - np.searchsorted(diff_sorted, thresholds, side="left") / diff.size  # diff >= t
    i = int(np.argmin(np.abs(far - frr)))
    return float((far[i] + frr[i]) / 2), float(thresholds[i])


def pair_scores(embeddings: np.ndarray, labels) -> tuple[np.ndarray, np.ndarray]:
    """Cosine scores of all unordered pairs, split into same-label and different-label pairs."""
    emb = np.asarray(embeddings, dtype=np.float64)
    emb = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    labels = np.asarray(labels)
    sims = emb @ emb.T
    iu = np.triu_indices(len(labels), k=1)
    same_mask = labels[iu[0]] == labels[iu[1]]
    scores = sims[iu]
    return scores[same_mask], scores[~same_mask]
