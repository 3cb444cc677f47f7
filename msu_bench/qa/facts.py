"""Facts of a conversation segment, one function per MSU task: each returns the candidate
(question values, answer values, evidence) triples that the segment's annotation supports.

A task whose facts are absent (e.g. no emotion labels in a real corpus) returns nothing; the
generator then asks another task, or the LLM pipeline does. Every answer is read off the
annotation or the measured timing, never invented.

Turns without text (an RTTM segment no transcript line matched) count for timing and speakers
only: they are never quoted, never an answer, and a transcription reference is built from the
turns with text (not asked when a speaker has none). The wording of questions and answers is not
here: it is in ``templates.yaml``, applied by the generators of :mod:`msu_bench.qa.tasks`.
"""

from __future__ import annotations

import re

from msu_bench.render import LONG_PAUSE
from msu_bench.types import Conversation, Turn

HANZI = re.compile(r"[\u4e00-\u9fff]")


def quote(text: str, language: str, n: int = 6) -> str:
    """The opening ``n`` words (English) or ``n + 2`` Hanzi (Mandarin) of ``text``."""
    if language == "zh":
        count, out = 0, []
        for ch in text:
            out.append(ch)
            count += bool(HANZI.match(ch))
            if count >= n + 2:
                break
        head = "".join(out).rstrip("，。？！、")
        return head + ("……" if len(head) < len(text.rstrip("。？！")) else "")
    words = text.split()
    head = " ".join(words[:n]).rstrip(",.?!")
    return head + ("…" if len(words) > n else "")


def words_before(turn: Turn, at: float, language: str) -> str:
    """The words of ``turn`` spoken before time ``at`` (estimated from its duration)."""
    frac = min(1.0, max(0.0, (at - turn.start) / max(turn.end - turn.start, 1e-6)))
    if language == "zh":
        chars = [c for c in turn.text if HANZI.match(c)]
        return quote(turn.text, language, n=max(2, round(frac * len(chars)) - 2))
    words = turn.text.split()
    return quote(turn.text, language, n=max(2, round(frac * len(words))))


class Facts:
    """Fact extraction for one segment; ``label(spk)`` gives Speaker_n names."""

    def __init__(self, conv: Conversation, labels: dict, language: str, speaker_label: str):
        self.conv, self.labels, self.lang = conv, labels, language
        order = conv.speaker_order()
        self.names = {s: speaker_label.format(n=i + 1) for i, s in enumerate(order)}
        self.turns = sorted(conv.turns, key=lambda t: (t.start, t.id))

    def label(self, kind: str, value):
        return self.labels.get(kind, {}).get(self.lang, {}).get(value, value)

    def q(self, turn: Turn) -> str:
        return quote(turn.text, self.lang)

    def speaker_facts(self, field: str):
        for spk, info in self.conv.speakers.items():
            value = getattr(info, field)
            if value and spk in self.names:
                yield spk, value

    def others(self, spk: str) -> list[str]:
        return [s for s in self.names if s != spk]

    def turn(self, turn_id: str) -> Turn | None:
        return next((t for t in self.turns if t.id == turn_id), None)

    def interruptions(self):
        """(interrupted turn, interrupting turn) pairs, from annotation or from overlapping times."""
        by_id = {t.id: t for t in self.turns}
        for i, t in enumerate(self.turns):
            if t.interrupts and t.interrupts in by_id:
                yield by_id[t.interrupts], t
            elif not t.interrupts and i and t.speaker != self.turns[i - 1].speaker:
                prev = self.turns[i - 1]
                if prev.start < t.start < prev.end - 0.2:  # real corpora: overlap seen in timing
                    yield prev, t

    def long_pauses(self):
        latest = None
        for t in self.turns:
            gap = t.pause_before if latest is None else t.start - latest
            if latest is not None and gap >= LONG_PAUSE:
                yield t, gap
            latest = t.end if latest is None else max(latest, t.end)

    def said(self, spk: str) -> list[Turn]:
        """The speaker's turns that have text."""
        return [t for t in self.conv.turns_of(spk) if t.text.strip()]

    def emotion_runs(self, spk: str) -> list[tuple[str, Turn]]:
        """The speaker's emotions in order, consecutive repeats collapsed."""
        runs = []
        for t in self.said(spk):
            if t.emotion and (not runs or runs[-1][0] != t.emotion):
                runs.append((t.emotion, t))
        return runs

    def voice_quality_runs(self, spk: str) -> list[tuple[str, Turn]]:
        runs = []
        for t in self.said(spk):
            vq = t.voice_quality or "normal"
            if not runs or runs[-1][0] != vq:
                runs.append((vq, t))
        return runs if any(vq != "normal" for vq, _ in runs) else []

    def texts_by_speaker(self) -> list[list[str]] | None:
        """Each speaker's turn texts (stripped), speakers in label order; ``None`` when a speaker
        has no text (a transcription reference is then not asked)."""
        texts = [[t.text.strip() for t in self.said(spk)] for spk in self.names]
        return texts if all(texts) else None
