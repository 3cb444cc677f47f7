"""LLM QA generation for the tasks a corpus's annotation cannot answer by template.

Follows the paper's pipeline (QA Construction Pipeline, steps 4-5): a capability-specific
prompt generates a pair from the segment's speaker-attributed transcript and known speaker
facts (``prompts/generate.<lang>.j2``), then an LLM quality filter keeps or drops it
(``prompts/filter.<lang>.j2``). Both replies are strict JSON; an invalid reply is retried once
and then raises; a pair the generator declines ("no basis") or the filter rejects is dropped and
counted, never asked.
"""

from __future__ import annotations

from pathlib import Path

from lalm_eval.llm import TextLLM
from lalm_eval.llm.ask import ReplyInvalid, ask_json
from lalm_eval.templating import jinja_env
from msu_bench.qa.generate import QAItem
from msu_bench.taxonomy import load_taxonomy

PROMPTS = Path(__file__).resolve().parent / "prompts"


def _prompt(kind: str, language: str, **context):
    return jinja_env(PROMPTS).get_template(f"{kind}.{language}.j2").make_module(context)


def _validate_pair(obj) -> dict:
    if not isinstance(obj, dict) or not {"question", "answer"} <= set(obj):
        raise ReplyInvalid("need the keys 'question' and 'answer'", "question")
    if not all(isinstance(obj[k], str) for k in ("question", "answer")):
        raise ReplyInvalid("'question' and 'answer' must be strings", "answer")
    return {
        "question": obj["question"].strip(),
        "answer": obj["answer"].strip(),
        "evidence": str(obj.get("evidence", "")).strip(),
    }


def _validate_verdict(obj) -> dict:
    if not isinstance(obj, dict) or not isinstance(obj.get("keep"), bool):
        raise ReplyInvalid("need a boolean 'keep'", "keep")
    return {"keep": obj["keep"], "reason": str(obj.get("reason", ""))}


def llm_questions(llm: TextLLM, segment_fields: dict, task_ids: list[str], stats: dict) -> list[QAItem]:
    """Generate and filter one pair per task for a segment (``segment_fields`` as the builder's
    :func:`msu_bench.builder.segment_fields`); ``stats`` counts declined / rejected pairs."""
    taxonomy, lang = load_taxonomy(), segment_fields["language"]
    lang = lang if lang in ("en", "zh") else "en"
    transcript, speakers = segment_fields["transcript"], segment_fields["speakers"]
    prompts = {}
    for tid in task_ids:
        task = taxonomy.task(tid)
        prompts[tid] = _prompt(
            "generate",
            lang,
            task=task,
            capability=taxonomy.capability(task.capability),
            transcript=transcript,
            speakers=speakers,
        )
    pairs = ask_json(llm, prompts, _validate_pair, f"LLM QA for segment {segment_fields['segment_id']}, task")
    offered = {tid: p for tid, p in pairs.items() if p["question"] and p["answer"]}
    stats["llm_declined"] = stats.get("llm_declined", 0) + len(pairs) - len(offered)
    checks = {
        tid: _prompt(
            "filter", lang, task=taxonomy.task(tid), transcript=transcript, question=p["question"], answer=p["answer"]
        )
        for tid, p in offered.items()
    }
    verdicts = ask_json(llm, checks, _validate_verdict, f"QA filter for segment {segment_fields['segment_id']}, task")
    kept = [tid for tid in offered if verdicts[tid]["keep"]]
    stats["llm_rejected"] = stats.get("llm_rejected", 0) + len(offered) - len(kept)
    return [
        QAItem(
            tid,
            offered[tid]["question"],
            offered[tid]["answer"],
            {
                "generated_by": "llm",
                "evidence": offered[tid]["evidence"],
                "filter_reason": verdicts[tid]["reason"],
                "llm": dict(llm.settings),
            },
        )
        for tid in kept
    ]
