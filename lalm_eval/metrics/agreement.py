"""Agreement of two scorers' per-item scores (an LLM judge and a rule scorer it is checked against)."""

from __future__ import annotations

import math


def agreement(a: list[float], b: list[float]) -> dict:
    """Agreement of two scorers' per-item scores (e.g. a rule scorer vs an LLM judge).

    ``exact_agreement``: fraction of items whose scores are equal within 1e-9.
    ``cohen_kappa``: Cohen's kappa with each distinct score (rounded to 6 places) as a
    category; None when undefined (no items, or a single category in both lists).
    """
    if len(a) != len(b):
        raise ValueError(f"agreement needs equal lengths, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return {"n": 0, "exact_agreement": None, "cohen_kappa": None}
    exact = sum(1 for x, y in zip(a, b) if abs(float(x) - float(y)) <= 1e-9) / n
    labels_a = [f"{float(x):.6f}" for x in a]
    labels_b = [f"{float(y):.6f}" for y in b]
    kappa = None
    if len(set(labels_a) | set(labels_b)) > 1:
        from sklearn.metrics import cohen_kappa_score

        value = float(cohen_kappa_score(labels_a, labels_b))
        kappa = None if math.isnan(value) else value
    return {"n": n, "exact_agreement": exact, "cohen_kappa": kappa}
