import numpy as np
import pytest

from palm_bench.config import BuildConfig
from palm_bench.negatives import Candidate, NegativePool, stratum_of
from palm_bench.slots import largest_remainder, reasoning_slots, recognition_captioning_slots

GROUPS = {
    2: [("g2a", True), ("g2b", True), ("g2c", True), ("g2d", False)],
    3: [("g3a", True), ("g3b", True), ("g3c", True), ("g3d", False)],
    4: [("g4a", True), ("g4b", True), ("g4c", True), ("g4d", True), ("g4e", False)],
}


def test_largest_remainder_is_exact_and_proportional():
    assert largest_remainder(10, [("a", 7), ("b", 3)]) == [("a", 7), ("b", 3)]
    assert largest_remainder(7, [("a", 1), ("b", 1), ("c", 1)]) == [("a", 3), ("b", 2), ("c", 2)]
    assert sum(n for _, n in largest_remainder(101, [("a", 4), ("b", 6)])) == 101
    assert largest_remainder(0, [("a", 1)]) == [("a", 0)]


def test_slots_follow_the_paper_ratios():
    slots = recognition_captioning_slots(1000, BuildConfig(), GROUPS)
    assert len(slots) == 1000
    assert sum(s.task == "recognition" for s in slots) == 700  # 7:3
    single = [s for s in slots if s.n_speakers == 1]
    assert len(single) == 280 + 120  # 4:6 within each task
    assert sum(s.target_present for s in single) == len(single) // 2  # 1:1
    multi_rec = [s for s in slots if s.task == "recognition" and s.n_speakers > 1]
    for n in (2, 3, 4):  # every presence case of each size is used, cyclically
        groups = [s.group for s in multi_rec if s.n_speakers == n]
        counts = {g: groups.count(g) for g, _ in GROUPS[n]}
        assert max(counts.values()) - min(counts.values()) <= 1


def test_reasoning_slots_always_have_the_target():
    slots = reasoning_slots(50, BuildConfig())
    assert all(s.target_present and s.task == "reasoning" for s in slots)
    assert sum(s.n_speakers == 1 for s in slots) == 20


@pytest.mark.parametrize(
    "sim,stratum", [(0.1, "easy"), (0.5, "medium"), (0.65, "semi-hard"), (0.9, "hard"), (0.6, "semi-hard")]
)
def test_stratum_of_thresholds(sim, stratum):
    assert stratum_of(sim, [0.4, 0.6, 0.8]) == stratum


def test_pool_falls_back_to_the_nearest_stratum_and_counts_it():
    class Clip:
        def __init__(self, speaker):
            self.speaker, self.id = speaker, speaker

    pool = NegativePool({"s": [Candidate(Clip("a"), 0.9, "hard"), Candidate(Clip("b"), 0.3, "easy")]}, {})
    rng = np.random.default_rng(0)
    assert pool.pick("s", "hard", set(), rng).clip.speaker == "a" and pool.fallbacks == 0
    assert pool.pick("s", "semi-hard", set(), rng).clip.speaker == "a" and pool.fallbacks == 1
    assert pool.pick("s", "hard", {"a"}, rng).clip.speaker == "b"
    with pytest.raises(ValueError, match="no negative candidate left"):
        pool.pick("s", "hard", {"a", "b"}, rng)
