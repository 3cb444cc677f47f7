"""Adversarial negatives graded by speaker-embedding similarity (PALM-Bench §4.1).

Each subject's *reference* embedding is the normalised mean of its train-split clips (its
enrollment speech). Every clip of another speaker of the same language is a negative candidate
for that subject, scored by cosine similarity to the reference, and falls into one of four
strata — hard, semi-hard, medium, easy — by three cut points: fixed cosine thresholds, or
quantiles of that subject's candidate scores (the default: portable across encoders whose
cosine scales differ, and every stratum is populated).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lalm_eval.audio.speaker import SpeakerEncoder
from lalm_eval.errors import ConfigError
from lalm_eval.hub.prefetch import map_ordered
from palm_bench.config import STRATA
from palm_bench.corpus.types import Corpus, Utterance


@dataclasses.dataclass(frozen=True)
class Candidate:
    clip: Utterance
    similarity: float
    stratum: str


class NegativePool:
    """Graded negative candidates of every subject, within one split."""

    def __init__(self, candidates: dict[str, list[Candidate]], cut_points: dict[str, list[float]]):
        self.candidates = candidates  # subject id -> candidates, most similar first
        self.cut_points = cut_points  # subject id -> the three cosine cut points used
        self.fallbacks = 0  # picks that had to leave the requested stratum

    def pick(self, subject_id: str, stratum: str, exclude_speakers: set[str], rng: np.random.Generator) -> Candidate:
        """A candidate of ``stratum`` whose speaker is not excluded; when that stratum has none
        left, the nearest stratum (counted in :attr:`fallbacks`)."""
        pool = [c for c in self.candidates[subject_id] if c.clip.speaker not in exclude_speakers]
        if not pool:
            raise ConfigError(
                f"subject {subject_id!r}: no negative candidate left outside speakers "
                f"{sorted(exclude_speakers)}; the scene mix needs more voices of its language "
                "(add voices, or lower speaker_count_weights with --set)"
            )
        want = STRATA.index(stratum)
        for distance in range(len(STRATA)):
            for idx in (want - distance, want + distance):
                if 0 <= idx < len(STRATA):
                    matching = [c for c in pool if c.stratum == STRATA[idx]]
                    if matching:
                        self.fallbacks += distance > 0
                        return matching[int(rng.integers(len(matching)))]
        raise AssertionError("unreachable: pool is non-empty")


def stratum_of(similarity: float, cuts: list[float]) -> str:
    """``cuts`` ascending: below cuts[0] easy, then medium, semi-hard, and hard from cuts[2]."""
    rank = int(np.searchsorted(np.asarray(cuts), similarity, side="right"))
    return STRATA[len(STRATA) - 1 - rank]


def reference_embeddings(
    subject_clips: dict[str, list[Utterance]], embeddings: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    refs = {}
    for subject_id, clips in subject_clips.items():
        mean = np.mean([embeddings[c.id] for c in clips], axis=0)
        refs[subject_id] = mean / np.linalg.norm(mean)
    return refs


def embed_clips(encoder: SpeakerEncoder, clips: list[Utterance]) -> dict[str, np.ndarray]:
    """Embeddings of ``clips`` by clip id (batched; the encoder's cache makes reruns free)."""
    ordered = sorted(clips, key=lambda c: c.id)
    audios = map_ordered(lambda c: c.load_audio(), ordered)  # decoding in a few threads
    embs = encoder.embed(audios, names=[str(c.audio) for c in ordered])
    return {c.id: e for c, e in zip(ordered, embs)}


def build_pool(
    corpus: Corpus,
    split_clips: dict[str, list[Utterance]],
    references: dict[str, np.ndarray],
    embeddings: dict[str, np.ndarray],
    strata_config: dict,
) -> NegativePool:
    """Grade every other-speaker clip of ``split_clips`` against each subject's reference."""
    candidates, cut_points = {}, {}
    for subject_id, ref in sorted(references.items()):
        language = corpus.speakers[subject_id].language
        clips = [
            c
            for speaker_id, cs in sorted(split_clips.items())
            for c in cs
            if speaker_id != subject_id and corpus.speakers[speaker_id].language == language
        ]
        if not clips:  # check_speaker_counts stops a build before this; a clear error all the same
            raise ConfigError(
                f"subject {subject_id!r} ({language}): no clip of another {language} speaker in "
                "this split, so no negative candidates; add voices of that language"
            )
        sims = np.array([float(embeddings[c.id] @ ref) for c in clips])
        if strata_config["method"] == "quantile":
            cuts = [float(q) for q in np.quantile(sims, strata_config["edges"])]
        else:
            cuts = [float(t) for t in strata_config["thresholds"]]
        graded = [Candidate(c, float(s), stratum_of(s, cuts)) for c, s in zip(clips, sims)]
        candidates[subject_id] = sorted(graded, key=lambda c: (-c.similarity, c.clip.id))
        cut_points[subject_id] = cuts
    return NegativePool(candidates, cut_points)
