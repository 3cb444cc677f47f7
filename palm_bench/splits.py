"""Train/test split of source clips: every speaker's clips are divided, none lands in both.

Deterministic: each speaker's clips are shuffled by a generator seeded with (seed, speaker id),
so adding a speaker never moves another speaker's clips between splits.
"""

from __future__ import annotations

from lalm_eval.errors import DataError
from lalm_eval.seeding import rng_for
from palm_bench.corpus.types import Corpus, Utterance

SPLITS = ("train", "test")


def split_clips(
    corpus: Corpus, test_fraction: float, seed: int, min_clips: int = 2
) -> dict[str, dict[str, list[Utterance]]]:
    """``{split: {speaker_id: [clips]}}``; each speaker keeps at least one clip per split.

    A speaker with fewer than ``min_clips`` clips cannot be split and raises a
    :class:`DataError` naming it and its clip count.
    """
    by_speaker: dict[str, list[Utterance]] = {}
    for utt in corpus.utterances:
        by_speaker.setdefault(utt.speaker, []).append(utt)
    out = {split: {} for split in SPLITS}
    for speaker_id in sorted(by_speaker):
        clips = sorted(by_speaker[speaker_id], key=lambda u: u.id)
        if len(clips) < min_clips:
            raise DataError(
                corpus.root,
                f"speaker {speaker_id!r} has {len(clips)} clip(s), at least "
                f"{min_clips} are needed to put one in each split; add clips of this speaker or remove it",
                field="speaker",
            )
        order = rng_for(seed, "split", speaker_id).permutation(len(clips))
        n_test = min(len(clips) - 1, max(1, int(round(test_fraction * len(clips)))))
        test_idx = set(order[:n_test].tolist())
        out["test"][speaker_id] = [c for i, c in enumerate(clips) if i in test_idx]
        out["train"][speaker_id] = [c for i, c in enumerate(clips) if i not in test_idx]
    check_disjoint(out)
    return out


def check_disjoint(splits: dict[str, dict[str, list[Utterance]]]) -> None:
    """Raise if any source clip id is in more than one split (the build-time leak check)."""
    seen: dict[str, str] = {}
    for split, speakers in splits.items():
        for clips in speakers.values():
            for clip in clips:
                if clip.id in seen and seen[clip.id] != split:
                    raise DataError(
                        clip.audio,
                        f"clip {clip.id!r} is in both {seen[clip.id]!r} and {split!r}; "
                        "report this (the split is a bug)",
                    )
                seen[clip.id] = split
