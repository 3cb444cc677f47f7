import numpy as np
import pytest

from lalm_eval.metrics.verification import equal_error_rate, pair_scores


def test_separable_scores_give_zero_eer():
    eer, th = equal_error_rate([0.9, 0.8, 0.85], [0.1, 0.3, 0.5])
    assert eer == 0.0 and 0.5 < th <= 0.8


def test_overlapping_scores_hand_computed():
    # same: 0.9 0.7 0.4 0.2 ; diff: 0.6 0.3 0.1 0.05
    # threshold 0.4: FRR = 1/4 (0.2 rejected), FAR = 1/4 (0.6 accepted)  -> EER 0.25
    eer, th = equal_error_rate([0.9, 0.7, 0.4, 0.2], [0.6, 0.3, 0.1, 0.05])
    assert eer == pytest.approx(0.25) and th == pytest.approx(0.4)


def test_inverted_scores_give_full_error():
    eer, _ = equal_error_rate([0.1, 0.2], [0.8, 0.9])
    assert eer >= 0.5


def test_pair_scores_split_by_label():
    emb = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    same, diff = pair_scores(emb, ["a", "a", "b"])
    assert same.tolist() == [1.0] and sorted(diff.tolist()) == [0.0, 0.0]


def test_eer_needs_both_kinds():
    with pytest.raises(ValueError):
        equal_error_rate([], [0.1])
