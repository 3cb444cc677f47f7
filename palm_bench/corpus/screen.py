"""What a PALM-Bench build refuses, checked in one place before any planning.

:func:`screen_corpus` decodes every clip of a corpus the way the build will (``read_audio``:
libsndfile, else FFmpeg) and asks the build's speaker encoder whether it can embed it
(``SpeakerEncoder.check_clip``: no samples, NaN or infinite samples, all zeros; for resemblyzer
also no speech left after its voice-activity trimming, which is what a 0.1 s or a silent clip
gives). Each refused clip becomes a counted skip (its file and the reason) instead of a failure
of the whole build half-way through embedding; then a speaker left with fewer than
:data:`MIN_CLIPS` clips (one per split, :mod:`palm_bench.splits`) is left out, a skip naming the
speaker.

``palm-bench corpus-info`` and ``palm-bench build`` both call it (``corpus_statistics``,
``make_plan``), so corpus-info lists every clip and speaker the build would refuse, with the same
reasons, and its counts are the ones the build uses. The embedded corpus is measured when it is
rendered (``Corpus.screened``) and passes through unchanged.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from lalm_eval.audio.speaker import DEFAULT_SPEAKER_ENCODER, SPEAKER_ENCODERS, SpeakerEncoder
from lalm_eval.errors import AudioError
from lalm_eval.hub.prefetch import map_ordered
from lalm_eval.hub.readers import SkipLog
from palm_bench.corpus.types import Corpus, Utterance

logger = logging.getLogger(__name__)

#: clips a speaker needs: one in each of the train and test splits
MIN_CLIPS = 2


#: verdicts of this process by (file, size, mtime, inode, encoder): a corpus read twice (corpus-info,
#: then a build; two builds) decodes each clip once; a changed file has another key
_VERDICTS: dict[tuple, str | None] = {}


def clip_problem(clip: Utterance, encoder_class: type[SpeakerEncoder]) -> str | None:
    """Why the build cannot use ``clip`` (decoding it, then the encoder's check), or ``None``."""
    try:
        st = Path(clip.audio).stat()
        key = (str(clip.audio), st.st_size, st.st_mtime_ns, st.st_ino, encoder_class.__qualname__)
    except OSError:
        key = None
    if key is not None and key in _VERDICTS:
        return _VERDICTS[key]
    try:
        problem = encoder_class.check_clip(clip.load_audio())
    except AudioError as exc:
        message = str(exc)
        prefix = f"{clip.audio}: "
        problem = message[len(prefix) :] if message.startswith(prefix) else message
    if key is not None:
        _VERDICTS[key] = problem
    return problem


def screen_corpus(corpus: Corpus, encoder: str = DEFAULT_SPEAKER_ENCODER) -> Corpus:
    """``corpus`` without the clips and speakers a build with ``encoder`` would refuse, each a
    skip added to ``corpus.skips`` (see the module docstring); ``screened`` is then True."""
    if corpus.screened:
        return corpus
    encoder_class = SPEAKER_ENCODERS.get(encoder)
    problems = map_ordered(lambda clip: clip_problem(clip, encoder_class), corpus.utterances)
    skips = SkipLog(logger)
    kept = []
    for clip, problem in zip(corpus.utterances, problems):
        if problem is None:
            kept.append(clip)
        else:
            skips.add(clip.audio, problem)
    counts: dict[str, int] = {}
    for clip in kept:
        counts[clip.speaker] = counts.get(clip.speaker, 0) + 1
    short = {sid for sid, n in counts.items() if n < MIN_CLIPS}
    for sid in sorted(short):
        reason = (
            f"speaker left out: {counts[sid]} usable clip, a speaker needs at least {MIN_CLIPS} "
            "(one for each of the train and test splits); add clips of this speaker"
        )
        skips.add(sid, reason)
    voiced = set(counts) - short
    return dataclasses.replace(
        corpus,
        speakers={sid: s for sid, s in corpus.speakers.items() if sid in voiced},
        utterances=[c for c in kept if c.speaker in voiced],
        skips=[*corpus.skips, *skips],
        screened=True,
    )
