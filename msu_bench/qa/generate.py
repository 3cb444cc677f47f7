"""Template QA generation for the 25 MSU tasks. ``generate_segment_qa`` asks ``per_segment``
questions of a segment (10 by default, as the paper), spreading them over the tasks that have
been asked least so far; a task's candidates come from its generator, registered by task id in
:mod:`msu_bench.qa.tasks`, which reads the segment's annotation through
:mod:`msu_bench.qa.facts` and words every question and answer from ``templates.yaml``.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import numpy as np
import yaml

from lalm_eval.errors import DataError
from msu_bench.qa.facts import Facts
from msu_bench.qa.tasks import Candidate, Wording, generator_for
from msu_bench.types import Conversation

TEMPLATES = Path(__file__).resolve().parent / "templates.yaml"


@dataclasses.dataclass(frozen=True)
class QAItem:
    task_id: str
    question: str
    answer: str
    evidence: dict  # turn ids and annotation fields the answer rests on


@cache
def templates() -> dict:
    return yaml.safe_load(TEMPLATES.read_text(encoding="utf-8"))


def task_wording(task_id: str, language: str) -> dict:
    """``templates.yaml`` ``tasks.<task_id>.<language>``; a :class:`DataError` naming the key when absent."""
    wording = templates()["tasks"].get(task_id, {}).get(language)
    if wording is None:
        raise DataError(
            TEMPLATES,
            f"no {language!r} wording for MSU task {task_id!r}; add it under tasks.{task_id}.{language}",
            field=f"tasks.{task_id}.{language}",
        )
    return wording


def task_candidates(facts: Facts, task_id: str, rng: np.random.Generator) -> list[Candidate]:
    """The (question, answer, evidence) candidates of ``task_id`` for the segment of ``facts``,
    from the task's registered generator (:mod:`msu_bench.qa.tasks`) and its wording."""
    make = generator_for(task_id)
    return make(facts, Wording(task_wording(task_id, facts.lang), rng))


def generate_segment_qa(
    conv: Conversation, task_ids: list[str], asked: dict[str, int], rng: np.random.Generator, per_segment: int = 10
) -> list[QAItem]:
    """Up to ``per_segment`` questions about ``conv``, one per task, least-asked tasks first.

    ``asked`` counts questions per task so far (updated in place) so a build covers all tasks.
    """
    tpl = templates()
    facts = Facts(conv, tpl["labels"], conv.language, tpl["speaker_label"][conv.language])
    order = sorted(task_ids, key=lambda t: (asked.get(t, 0), float(rng.random())))
    items = []
    for task in order:
        if len(items) >= per_segment:
            break
        candidates = [c for c in task_candidates(facts, task, rng) if c.answer.strip()]  # never an empty answer
        if not candidates:
            continue
        question, answer, evidence = candidates[int(rng.integers(len(candidates)))]
        items.append(QAItem(task, question, answer[:1].upper() + answer[1:], evidence))
        asked[task] = asked.get(task, 0) + 1
    return items
