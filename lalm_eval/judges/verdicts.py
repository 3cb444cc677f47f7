"""What a judge is asked (:class:`JudgeItem`) and what it answers (:class:`JudgeResult`): the
types the judges (:mod:`lalm_eval.judges.base`) and their cache (:mod:`lalm_eval.judges.cache`)
share, in a module of their own so that neither imports the other back.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class JudgeItem:
    """One response to judge. ``context`` carries what a judge's prompt needs beyond the texts
    (e.g. ``{"target": "Alice", "profile": "..."}`` or ``{"task_id": "t4_mscr_causal_attribution"}``)."""

    question: str
    reference: str
    response: str
    language: str | None = None
    context: dict = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeResult:
    """A verdict. ``score`` is ``None`` when the judge failed (``error`` says why) and, for
    classifying judges, always (the label is in ``detail``)."""

    score: float | None
    detail: dict
    error: str | None = None
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None
