"""The in-memory conversation: speaker-attributed, time-stamped turns plus whatever annotation a
corpus offers. Every reader (embedded conversations, AliMeeting, CHiME-6, MagicData, RTTM)
returns :class:`Conversation` objects, so segment selection and QA generation never care where
a conversation came from. Times are seconds from the start of ``audio``.

Fields a corpus cannot supply stay ``None`` (or empty); QA generation only asks the questions
whose facts are present and leaves the rest to the LLM pipeline.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lalm_eval.hub.readers import ReaderResult


@dataclasses.dataclass(frozen=True)
class Turn:
    id: str
    speaker: str  # key into Conversation.speakers
    text: str
    start: float
    end: float
    emotion: str | None = None  # neutral, happy, sad, angry, surprised, fearful, disgusted
    voice_quality: str | None = None  # e.g. "soft", "loud", "shrill" as rendered / annotated
    act: str | None = None  # agree, disagree, question, request, ... (social interaction)
    interrupts: str | None = None  # id of the turn this one cuts into (overlapping speech)
    pause_before: float = 0.0  # silence before the turn (long pauses are annotated > 1.5 s)
    pause_within: tuple[str, float] | None = None  # (words spoken before a pause, pause seconds)


@dataclasses.dataclass(frozen=True)
class SpeakerInfo:
    id: str
    gender: str | None = None  # female | male
    age_group: str | None = None  # child | young adult | middle-aged | senior
    accent: str | None = None  # e.g. "Scottish English", "standard Mandarin"
    language: str | None = None  # en | zh
    role: str | None = None  # role in this conversation (host, customer, ...)
    social_role: str | None = None  # e.g. manager, student
    region: str | None = None  # where they are likely from (geographical estimation)
    expression: str | None = None  # expression preference (slang, formal idioms, ...)
    culture: str | None = None  # how accent/language relates to their viewpoint
    voice: str | None = None  # perceptual voice description (timbre)
    opinion_change: dict | None = None  # {"from": ..., "to": ..., "turn": turn id}


@dataclasses.dataclass
class Conversation:
    id: str
    language: str  # dominant language: en | zh
    source: str  # corpus name: embedded, alimeeting, chime6, magicdata, rttm
    audio: Path | None  # the recording (mono or multi-channel: mixed down on load)
    duration: float
    speakers: dict[str, SpeakerInfo]
    turns: list[Turn]  # sorted by start
    #: conversation-level annotation: venue, background, formality, relationship,
    #: dominant_speaker, outcome, outcome_summary, cause_links [{cause_turn, effect_turn,
    #: explanation}], motivations [{turn, speaker, action, motivation}]
    meta: dict = dataclasses.field(default_factory=dict)
    sampling_rate: int = 16_000
    offset: float = 0.0  # where this (segment of a) conversation starts in ``audio``, seconds

    def speaker_order(self) -> list[str]:
        """Speakers by first appearance: index 0 is ``spk_1`` in questions and answers."""
        seen: dict[str, None] = {}
        for turn in sorted(self.turns, key=lambda t: (t.start, t.id)):
            seen.setdefault(turn.speaker, None)
        return list(seen)

    def turns_of(self, speaker: str) -> list[Turn]:
        return [t for t in self.turns if t.speaker == speaker]

    def turn(self, turn_id: str) -> Turn:
        for t in self.turns:
            if t.id == turn_id:
                return t
        raise KeyError(f"{self.id}: no turn {turn_id!r}")


@dataclasses.dataclass
class ReadReport(ReaderResult):
    """What a reader kept (``conversations``) and what it skipped (``skips``: each a
    :class:`~lalm_eval.hub.readers.Skip` with its file and reason; ``n_skipped``)."""

    conversations: list[Conversation]
