"""PALM-Bench judges: captioning and recognition (the paper's Tables 25 and 26, verbatim) and
personalized reasoning (our rubric, the same 0 / 0.5 / 1 scale as captioning).

Registered in the harness's ``JUDGES`` through the entry-point group ``lalm_eval.judges``
(pyproject.toml); their templates are ``prompts/*.j2`` beside this module
(:meth:`lalm_eval.judges.base.Judge.templates_dir`)."""

from __future__ import annotations

from lalm_eval.judges.base import Judge, JudgeItem, number, text

HALF_STEPS = (0.0, 0.5, 1.0)


class PalmCaptioningJudge(Judge):
    """Table 25: ``{"score": 0 | 0.5 | 1, "comment"}``."""

    name = "palm_captioning"
    prompt_version = "1"
    template = "palm_captioning.j2"

    def validate(self, reply: dict, item: JudgeItem) -> tuple[float, dict]:
        score = number(reply, "score", allowed=HALF_STEPS)
        return score, {"score": score, "comment": text(reply, "comment")}


class PalmRecognitionJudge(Judge):
    """Table 26: ``{"score": k / N in [0, 1], "comment"}`` (the paper's "0.6, 0.3" for N=3 are
    accepted like any other value in range)."""

    name = "palm_recognition"
    prompt_version = "1"
    template = "palm_recognition.j2"

    def validate(self, reply: dict, item: JudgeItem) -> tuple[float, dict]:
        score = number(reply, "score", lo=0.0, hi=1.0)
        return score, {"score": score, "comment": text(reply, "comment")}


class PalmReasoningJudge(Judge):
    """Our rubric: grounded in what the target said and the target's profile, no other speaker's
    content, the reference's conclusion. Needs ``context["target"]`` and ``context["profile"]``."""

    name = "palm_reasoning"
    prompt_version = "1"
    template = "palm_reasoning.j2"
    required_context = ("target", "profile")

    def validate(self, reply: dict, item: JudgeItem) -> tuple[float, dict]:
        score = number(reply, "score", allowed=HALF_STEPS)
        return score, {"score": score, "comment": text(reply, "comment")}
