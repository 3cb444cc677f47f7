"""MSU-Bench judges: the open-ended answer judge (relevance, accuracy, causal soundness over
parallel / progressive sub-questions; our rubric after the paper's "Evaluation Protocols") and
the error-type classifier of the paper's error analysis (Table 4 / Table 7).

Scale: MSU-Bench reports scores in [0, 1] (Table 3: e.g. Gemini-2.5-Pro averages 0.59), so the
judge's ``overall`` — and :class:`MsuJudge`'s score — lies in [0, 1]. The three dimensions are
whole numbers 0–5 kept in ``detail``; ``overall`` starts from the mean sub-question score and may
only be lowered by the dimensions, which the parser checks.

Registered in the harness's ``JUDGES`` through the entry-point group ``lalm_eval.judges``
(pyproject.toml); their templates are ``prompts/*.j2`` beside this module.
"""

from __future__ import annotations

from lalm_eval.judges.base import Judge, JudgeItem, choice, number, text
from lalm_eval.llm.ask import ReplyInvalid

QUESTION_TYPES = ("single", "parallel", "progressive")
DIMENSIONS = ("relevance", "accuracy", "causal_soundness")
#: the paper's error types (Table 4 / Table 7), as label ids
ERROR_TYPES = ("perceptual", "reasoning", "lack_of_knowledge", "rejection", "answer_extraction")
_OVERALL_SLACK = 0.1  # how far overall may exceed the mean sub-question score (rounding)


class MsuJudge(Judge):
    """``{"question_type", "sub_questions": [{"question", "score"}], "relevance", "accuracy",
    "causal_question", "causal_soundness", "overall", "comment"}``; score = ``overall`` ∈ [0, 1].

    Optional context: ``task_id`` (selects the task-specific requirements), ``task_name``,
    ``capability``, ``answer_type`` (fallback requirements)."""

    name = "msu"
    prompt_version = "1"
    template = "msu.j2"

    def validate(self, reply: dict, item: JudgeItem) -> tuple[float, dict]:
        qtype = choice(reply, "question_type", QUESTION_TYPES)
        subs = reply.get("sub_questions")
        if not isinstance(subs, list) or not subs:
            raise ReplyInvalid("'sub_questions' must be a non-empty list", "sub_questions")
        if (qtype == "single") != (len(subs) == 1):
            raise ReplyInvalid(
                f"question_type {qtype!r} needs {'exactly one' if qtype == 'single' else 'two or more'}"
                f" entries in 'sub_questions', got {len(subs)}",
                "sub_questions",
            )
        parsed_subs = []
        for sub in subs:
            if not isinstance(sub, dict):
                raise ReplyInvalid('each sub-question must be an object {"question", "score"}', "sub_questions")
            parsed_subs.append(
                {"question": text(sub, "question"), "score": number(sub, "score", allowed=(0.0, 0.5, 1.0))}
            )
        dims = {d: number(reply, d, lo=0, hi=5, integer=True) for d in DIMENSIONS}
        causal = reply.get("causal_question")
        if not isinstance(causal, bool):
            raise ReplyInvalid(f"'causal_question' must be true or false, got {causal!r}", "causal_question")
        if not causal and dims["causal_soundness"] != 5:
            raise ReplyInvalid("causal_soundness must be 5 for a non-causal question", "causal_soundness")
        overall = number(reply, "overall", lo=0.0, hi=1.0)
        mean = sum(s["score"] for s in parsed_subs) / len(parsed_subs)
        if overall > mean + _OVERALL_SLACK:
            raise ReplyInvalid(f"overall {overall:g} must not exceed the mean sub-question score {mean:g}", "overall")
        detail = {
            "question_type": qtype,
            "sub_questions": parsed_subs,
            **dims,
            "causal_question": causal,
            "overall": overall,
            "comment": text(reply, "comment"),
        }
        return overall, detail


class MsuErrorTypeJudge(Judge):
    """Classifies a failed MSU item: ``{"error_type", "comment"}``. A classifier: its results have
    ``score=None``, ``error=None`` and ``detail["error_type"]`` in :data:`ERROR_TYPES`.

    Optional context: ``task_id`` / ``task_name``, ``score`` and ``judge_comment`` (the MSU
    judge's verdict of the response)."""

    name = "msu_error_type"
    prompt_version = "1"
    template = "msu_error_type.j2"
    numeric = False

    def validate(self, reply: dict, item: JudgeItem) -> tuple[None, dict]:
        return None, {"error_type": choice(reply, "error_type", ERROR_TYPES), "comment": text(reply, "comment")}
