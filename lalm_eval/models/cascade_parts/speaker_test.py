"""One speaker or more? The gap statistic's k = 1 against k = 2 decision on window embeddings.

Why: the clustering threshold is calibrated on the enrollment voices, and it can merge two real
people whose voices are closer under the encoder than any two enrollment voices (the real
telephone call of ``bench/cascade_counting_real.py``: its two speakers' centroids are 0.868
apart in cosine, inside the range of two halves of one real voice). A fixed distance cannot
tell those apart; a model-selection test on the recording's own windows can.

The test (Tibshirani, Walther & Hastie 2001, "Estimating the number of clusters in a data set
via the gap statistic", with a Gaussian reference as in SigClust, Liu et al. 2008):

1. the unit-norm window embeddings are centred and projected on their first ``dims`` principal
   components (the principal plane by default: a second voice shows as the leading direction of
   a recording's embeddings; the remaining directions carry the words and dilute the statistic);
2. ``W_k`` is the within-cluster sum of squares of the best ``k``-split (``W_1``: the total;
   ``W_2``: deterministic 2-means, Lloyd's iterations started from Ward's split and from the
   sign of the first component, the lower of the two);
3. the reference: ``n_ref`` samples of a Gaussian with the same covariance spectrum (one speaker
   whose windows vary as much as these do), seeded (``seed``), so the decision is deterministic;
4. ``Gap(k) = mean(log W_k*) - log W_k``; Tibshirani's rule keeps one speaker when
   ``Gap(1) >= Gap(2) - s``, else two. ``W_1*`` and ``W_2*`` come from the same reference
   sample, so ``s`` is the spread of the paired difference, ``sd(log W_2* - log W_1*) *
   sqrt(1 + 1/n_ref)`` (the paper's ``sd(log W_2*)`` also counts the reference's total-variance
   noise, which the comparison of the two gaps cancels).

No parameter is tuned on test data: ``dims`` = 2, the 1-s rule and ``n_ref`` = 100 are the
published defaults' shape; what the test does on the enrollment voices (one subject's windows,
two subjects' windows) goes into the calibration record (:func:`enrollment_check`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

MIN_WINDOWS = 6  # fewer windows than this: no test (one speaker)


@dataclasses.dataclass(frozen=True)
class GapTestConfig:
    dims: int = 2
    n_ref: int = 100
    seed: int = 0

    def to_dict(self) -> dict:
        return {"test": "gap statistic k=1 vs 2 (Gaussian PCA reference, 1-s rule)", **dataclasses.asdict(self)}


@dataclasses.dataclass(frozen=True)
class GapResult:
    gap1: float
    gap2: float
    s2: float
    two: bool  # the rule chose two speakers
    labels: np.ndarray  # the 2-split of the windows (0/1)

    def to_dict(self) -> dict:
        return {"gap1": round(self.gap1, 4), "gap2": round(self.gap2, 4), "s2": round(self.s2, 4), "two": self.two}


def _lloyd(x: np.ndarray, labels: np.ndarray, iters: int = 50) -> np.ndarray:
    for _ in range(iters):
        if labels.min() == labels.max():
            break
        centres = np.stack([x[labels == k].mean(axis=0) for k in (0, 1)])
        new = ((x[:, None, :] - centres[None]) ** 2).sum(-1).argmin(axis=1)
        if np.array_equal(new, labels):
            break
        labels = new
    return labels


def _within(x: np.ndarray, labels: np.ndarray) -> float:
    return float(
        sum(((x[labels == k] - x[labels == k].mean(axis=0)) ** 2).sum() for k in (0, 1) if (labels == k).any())
    )


def two_means(x: np.ndarray) -> tuple[float, np.ndarray]:
    """``(W_2, labels)`` of a deterministic 2-means split of the rows of ``x``."""
    from sklearn.cluster import AgglomerativeClustering

    ward = AgglomerativeClustering(n_clusters=2, linkage="ward").fit_predict(x)
    centred = x - x.mean(axis=0)
    first = np.linalg.svd(centred, full_matrices=False)[2][0]
    sign = (centred @ first > 0).astype(int)
    best = None
    for start in (ward, sign):
        labels = _lloyd(x, np.asarray(start, dtype=int))
        w = _within(x, labels)
        if best is None or w < best[0]:
            best = (w, labels)
    return best


def gap_test(embeddings: np.ndarray, cfg: GapTestConfig) -> GapResult | None:
    """The k = 1 / k = 2 decision on ``[windows, dim]`` embeddings; None with too few windows."""
    x = np.asarray(embeddings, dtype=np.float64)
    if len(x) < MIN_WINDOWS:
        return None
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    x = x - x.mean(axis=0)
    _, sv, vt = np.linalg.svd(x, full_matrices=False)
    dims = max(1, min(cfg.dims, len(sv)))
    proj = x @ vt[:dims].T
    spread = sv[:dims] / np.sqrt(len(x) - 1)  # per-component standard deviation
    w1 = float((proj**2).sum())
    w2, labels = two_means(proj)
    rng = np.random.default_rng(cfg.seed)
    ref1, ref21 = [], []
    for _ in range(cfg.n_ref):
        z = rng.standard_normal((len(x), dims)) * spread
        z = z - z.mean(axis=0)
        w1_ref = (z**2).sum()
        ref1.append(np.log(w1_ref))
        ref21.append(np.log(two_means(z)[0] / w1_ref))  # paired: log W_2* - log W_1* of one sample
    gap1 = float(np.mean(ref1) - np.log(max(w1, 1e-300)))
    gap2 = gap1 + float(np.mean(ref21) - np.log(max(w2, 1e-300) / max(w1, 1e-300)))
    s2 = float(np.std(ref21) * np.sqrt(1 + 1 / cfg.n_ref))
    return GapResult(gap1, gap2, s2, bool(gap1 < gap2 - s2), labels)


def enrollment_check(
    window_embs: np.ndarray, window_labels: np.ndarray, cfg: GapTestConfig, max_windows: int = 72
) -> dict:
    """What the test says on the enrollment voices: each subject's windows alone (one speaker) and
    each pair of consecutive subjects' windows together (two speakers) — for the calibration record."""
    subjects = sorted(int(k) for k in np.unique(window_labels) if k >= 0)

    def test(rows: np.ndarray) -> GapResult | None:  # evenly thinned to a minute's worth of windows
        return gap_test(window_embs[rows[:: max(1, -(-len(rows) // max_windows))]], cfg)

    one = [test(np.flatnonzero(window_labels == k)) for k in subjects]
    pairs = [test(np.flatnonzero((window_labels == a) | (window_labels == b))) for a, b in zip(subjects, subjects[1:])]
    one, pairs = [r for r in one if r is not None], [r for r in pairs if r is not None]
    return {
        **cfg.to_dict(),
        "enrollment_one_speaker_tests": len(one),
        "enrollment_one_speaker_split": sum(r.two for r in one),
        "enrollment_two_speaker_tests": len(pairs),
        "enrollment_two_speaker_split": sum(r.two for r in pairs),
    }
