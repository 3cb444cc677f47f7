"""Percentile bootstrap confidence intervals over evaluation items (Efron & Tibshirani, 1993).

Items are resampled with replacement ``n_resamples`` times; the interval is the
``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` percentiles (numpy's linear interpolation)
of the statistic over the resamples. The resamples are one ``(n_resamples, n)`` index matrix
(drawn in row blocks to bound memory) from ``numpy.random.default_rng(seed)``, so a seed gives
the same interval every time.

Two entry points share that matrix:

- :func:`bootstrap_ci` ``(values)``: the mean of per-item scores (accuracy, token F1, BERTScore
  F1), fully vectorised; or, with ``statistic=``, any function of the resampled item indices.
- :func:`bootstrap_ci_indices` ``(n, statistic)``: the generic case, for corpus-level metrics that
  are recomputed from per-item statistics, e.g. corpus BLEU with
  :func:`lalm_eval.metrics.bleu.corpus_bleu_statistic`.

Both return None for fewer than 2 items (no spread to resample).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

from lalm_eval.errors import ConfigError

IndexStatistic = Callable[[np.ndarray], float]


_CHUNK_CELLS = 4_000_000  # index-matrix cells drawn at once (32 MB of int64), bounds memory


def _check(n_resamples: int, confidence: float) -> None:
    if n_resamples < 1:
        raise ConfigError(f"bootstrap n_resamples must be >= 1, got {n_resamples}")
    if not 0.0 < confidence < 1.0:
        raise ConfigError(f"bootstrap confidence must be in (0, 1), got {confidence}")


def _resample_indices(n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """The ``(n_resamples, n)`` resample index matrix, in row blocks of at most ``_CHUNK_CELLS``."""
    rng = np.random.default_rng(seed)
    rows = max(1, _CHUNK_CELLS // n)
    for start in range(0, n_resamples, rows):
        yield rng.integers(0, n, size=(min(rows, n_resamples - start), n))


def _percentiles(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(samples, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return float(low), float(high)


def bootstrap_ci_indices(
    n: int, statistic: IndexStatistic, *, n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile CI of ``statistic(indices)``, where ``indices`` is an int array of ``n``
    item positions drawn with replacement (one call per resample). None when ``n < 2``."""
    _check(n_resamples, confidence)
    if n < 2:
        return None
    samples = np.fromiter(
        (statistic(row) for block in _resample_indices(n, n_resamples, seed) for row in block),
        dtype=float,
        count=n_resamples,
    )
    return _percentiles(samples, confidence)


def bootstrap_ci(
    values: Sequence[float],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    statistic: IndexStatistic | None = None,
) -> tuple[float, float] | None:
    """Percentile CI of the mean of ``values`` (finite numbers, one per item).

    With ``statistic``, ``values`` only fixes the number of items and the CI is of
    ``statistic(indices)`` instead (same as :func:`bootstrap_ci_indices`; same seed, same
    resamples). None when there are fewer than 2 values.
    """
    n = len(values)
    if statistic is not None:
        return bootstrap_ci_indices(n, statistic, n_resamples=n_resamples, confidence=confidence, seed=seed)
    _check(n_resamples, confidence)
    if n < 2:
        return None
    data = np.asarray(values, dtype=float)
    means = np.concatenate([data[block].mean(axis=1) for block in _resample_indices(n, n_resamples, seed)])
    return _percentiles(means, confidence)
