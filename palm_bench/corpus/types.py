"""The in-memory corpus: speakers, utterances and the :class:`Corpus` that holds them.

Every corpus reader (embedded, NCSSD, a generic folder; registered in
:data:`palm_bench.corpus.READERS`) returns a :class:`Corpus`, so the builder never cares where the
speech came from. A :class:`Corpus` is a :class:`~lalm_eval.hub.readers.ReaderResult`: it carries
the items its reader skipped (``skips``, each a :class:`~lalm_eval.hub.readers.Skip`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from lalm_eval.audio.io import TARGET_SR, read_audio
from lalm_eval.errors import UnknownNameError
from lalm_eval.hub.readers import ReaderResult


@dataclasses.dataclass(frozen=True)
class Speaker:
    id: str
    role: str  # "subject" or "negative"
    language: str  # "en" or "zh"
    gender: str
    name: str | None = None  # subjects only
    name_latin: str | None = None  # romanised name of a Mandarin subject
    profile: dict | None = None  # subjects only: PALM Table 11 fields
    persona: str | None = None  # negatives only: what their talk is about
    texts: tuple[str, ...] = ()  # authored utterances, in order
    #: where ``name`` came from when the corpus gave none: ``"folder"`` (the folder reader: the
    #: speaker folder's name) or ``"speaker map id"`` (NCSSD: the mapped subject id); None when
    #: the corpus named the speaker. ``corpus-info`` lists these speakers.
    name_from: str | None = None


@dataclasses.dataclass(frozen=True)
class Utterance:
    id: str
    speaker: str
    language: str
    text: str
    duration: float
    audio: Path  # absolute path of the clip
    sampling_rate: int
    voice: dict  # the voice recipe it was rendered with

    def load_audio(self, target_sr: int | None = TARGET_SR) -> np.ndarray:
        return read_audio(self.audio, target_sr=target_sr)[0]


@dataclasses.dataclass
class Corpus(ReaderResult):
    speakers: dict[str, Speaker]
    utterances: list[Utterance]
    root: Path
    render_info: dict = dataclasses.field(default_factory=dict)
    #: the folder holding the corpus's ``human_descriptions.yaml`` (if any)
    descriptions_dir: Path | None = None
    #: True when every clip is known to be usable (the embedded corpus, measured when rendered;
    #: or a corpus already through :func:`palm_bench.corpus.screen.screen_corpus`)
    screened: bool = False

    def subjects(self, language: str | None = None) -> list[Speaker]:
        return [
            s for s in self.speakers.values() if s.role == "subject" and (language is None or s.language == language)
        ]

    def negatives(self, language: str | None = None) -> list[Speaker]:
        return [
            s for s in self.speakers.values() if s.role == "negative" and (language is None or s.language == language)
        ]

    def utterances_of(self, speaker_id: str) -> list[Utterance]:
        if speaker_id not in self.speakers:
            raise UnknownNameError(f"unknown speaker id {speaker_id!r}; known: {', '.join(sorted(self.speakers))}")
        return [u for u in self.utterances if u.speaker == speaker_id]

    def languages(self) -> list[str]:
        return sorted({s.language for s in self.speakers.values()})

    def to_lhotse(self):
        """The corpus as lhotse ``(RecordingSet, SupervisionSet)`` manifests."""
        from lalm_eval.extras import require

        lhotse = require("lhotse", "Corpus.to_lhotse()")
        Recording, RecordingSet = lhotse.Recording, lhotse.RecordingSet
        SupervisionSegment, SupervisionSet = lhotse.SupervisionSegment, lhotse.SupervisionSet

        recordings, supervisions = [], []
        for u in self.utterances:
            recordings.append(Recording.from_file(u.audio, recording_id=u.id))
            supervisions.append(
                SupervisionSegment(
                    id=u.id,
                    recording_id=u.id,
                    start=0.0,
                    duration=recordings[-1].duration,
                    channel=0,
                    text=u.text,
                    language=u.language,
                    speaker=u.speaker,
                    gender=self.speakers[u.speaker].gender,
                    custom={"voice": u.voice},
                )
            )
        return RecordingSet.from_recordings(recordings), SupervisionSet.from_segments(supervisions)
