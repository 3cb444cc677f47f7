"""How many audios of each kind a split gets: exact ratios, not random draws.

Counts follow the build config's ratios by largest-remainder allocation (recognition :
captioning, single : multi speaker, positive : negative, speaker count), and multi-speaker
recognition cycles through every presence case of its speaker count (PALM Tables 14-20), so
present and absent queried names balance exactly over each cycle.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from palm_bench.config import BuildConfig

MultiGroups = dict[int, list[tuple[str, bool]]]  # n_speakers -> [(group, any queried present)]


@dataclasses.dataclass(frozen=True)
class Slot:
    """One composed audio to make: its task, speaker count and whether the target is present.

    ``group`` is the multi-speaker recognition template group (presence case), else ``None``.
    """

    task: str
    n_speakers: int
    target_present: bool
    group: str | None = None


def largest_remainder(total: int, weights: list[tuple[object, float]]) -> list[tuple[object, int]]:
    """Split ``total`` into integer counts proportional to ``weights`` (ties: earlier first)."""
    weight_sum = float(sum(w for _, w in weights))
    if total <= 0 or weight_sum <= 0:
        return [(key, 0) for key, _ in weights]
    exact = [total * w / weight_sum for _, w in weights]
    counts = [int(np.floor(x)) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return [(key, n) for (key, _), n in zip(weights, counts)]


def _polarities(n: int, cfg: BuildConfig) -> list[bool]:
    (_, n_pos), (_, n_neg) = largest_remainder(
        n, [(True, cfg.positive_negative_ratio[0]), (False, cfg.positive_negative_ratio[1])]
    )
    # interleave so that any prefix is balanced too
    out = []
    for i in range(max(n_pos, n_neg)):
        out += ([True] if i < n_pos else []) + ([False] if i < n_neg else [])
    return out


def recognition_captioning_slots(total: int, cfg: BuildConfig, multi_groups: MultiGroups) -> list[Slot]:
    """The (unshuffled) slots of ``total`` recognition/captioning audios; ``multi_groups`` are
    the presence cases of each candidate-set size (from the multi-speaker templates)."""
    slots: list[Slot] = []
    tasks = largest_remainder(
        total,
        [("recognition", cfg.recognition_captioning_ratio[0]), ("captioning", cfg.recognition_captioning_ratio[1])],
    )
    for task, n_task in tasks:
        (_, n_single), (_, n_multi) = largest_remainder(
            n_task, [("single", cfg.single_multi_ratio[0]), ("multi", cfg.single_multi_ratio[1])]
        )
        slots += [Slot(task, 1, present) for present in _polarities(n_single, cfg)]
        weights = sorted(cfg.speaker_count_weights.items())
        for n_speakers, count in largest_remainder(n_multi, weights):
            if task == "recognition":
                cases = multi_groups[n_speakers]
                slots += [
                    Slot(task, n_speakers, cases[i % len(cases)][1], cases[i % len(cases)][0]) for i in range(count)
                ]
            else:
                slots += [Slot(task, n_speakers, present) for present in _polarities(count, cfg)]
    return slots


def reasoning_slots(total: int, cfg: BuildConfig) -> list[Slot]:
    """Reasoning audios: the target is always present; single/multi and speaker counts by ratio."""
    (_, n_single), (_, n_multi) = largest_remainder(
        total, [("single", cfg.single_multi_ratio[0]), ("multi", cfg.single_multi_ratio[1])]
    )
    slots = [Slot("reasoning", 1, True) for _ in range(n_single)]
    for n_speakers, count in largest_remainder(n_multi, sorted(cfg.speaker_count_weights.items())):
        slots += [Slot("reasoning", n_speakers, True) for _ in range(count)]
    return slots
