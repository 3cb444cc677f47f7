"""Train/validation/test split of source clips: every speaker's clips are divided, none lands in
two splits.

Deterministic: each speaker's clips are shuffled by a generator seeded with (seed, speaker id),
so adding a speaker never moves another speaker's clips between splits. The test clips are the
first ``test_fraction`` of that order whether or not there is a validation split (turning it on
leaves the test clips as they were); the ``validation`` clips (PALM §5.2: "hyperparameters are
tuned on validation sets") are the next ``validation_fraction``, taken from what would otherwise
be train clips, so a validation clip is in no train and no test row. The split is planned when
the config asks for validation audios (:func:`planned_splits`).
"""

from __future__ import annotations

from lalm_eval.errors import DataError
from lalm_eval.seeding import rng_for
from palm_bench.corpus.types import Corpus, Utterance

SPLITS = ("train", "validation", "test")  # every split a build can have, in the order it is written


def planned_splits(cfg) -> tuple[str, ...]:
    """The splits a build of ``cfg`` plans: ``validation`` when ``validation_fraction`` > 0 and
    ``audios_per_subject`` asks for validation audios."""
    wanted = cfg.validation_fraction > 0 and cfg.audios_per_subject.get("validation", 0) > 0
    return tuple(s for s in SPLITS if s != "validation" or wanted)


def split_clips(
    corpus: Corpus, test_fraction: float, seed: int, min_clips: int = 2, validation_fraction: float = 0.0
) -> dict[str, dict[str, list[Utterance]]]:
    """``{split: {speaker_id: [clips]}}``; each speaker keeps at least one clip per split
    (``validation`` only with ``validation_fraction`` > 0).

    A speaker with too few clips to give each split one (``min_clips``, one more with a
    validation split) raises a :class:`DataError` naming it and its clip count.
    """
    validation = validation_fraction > 0
    min_clips = max(min_clips, 3 if validation else 2)
    by_speaker: dict[str, list[Utterance]] = {}
    for utt in corpus.utterances:
        by_speaker.setdefault(utt.speaker, []).append(utt)
    out = {split: {} for split in SPLITS if split != "validation" or validation}
    for speaker_id in sorted(by_speaker):
        clips = sorted(by_speaker[speaker_id], key=lambda u: u.id)
        if len(clips) < min_clips:
            fix = "add clips of this speaker or remove it"
            if validation:
                fix += ", or build without a validation split (--set validation_fraction=0)"
            raise DataError(
                corpus.root,
                f"speaker {speaker_id!r} has {len(clips)} clip(s), at least "
                f"{min_clips} are needed to put one in each split; {fix}",
                field="speaker",
            )
        order = rng_for(seed, "split", speaker_id).permutation(len(clips)).tolist()
        n_test = min(len(clips) - 1, max(1, int(round(test_fraction * len(clips)))))
        n_val = 0
        if validation:
            n_test = min(n_test, len(clips) - 2)
            n_val = min(len(clips) - n_test - 1, max(1, int(round(validation_fraction * len(clips)))))
        test_idx, val_idx = set(order[:n_test]), set(order[n_test : n_test + n_val])
        out["test"][speaker_id] = [c for i, c in enumerate(clips) if i in test_idx]
        if validation:
            out["validation"][speaker_id] = [c for i, c in enumerate(clips) if i in val_idx]
        out["train"][speaker_id] = [c for i, c in enumerate(clips) if i not in test_idx and i not in val_idx]
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
