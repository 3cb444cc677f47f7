"""Tier 3 of MSU-Bench, multi-speaker background: multi-speaker scene inference (MSSI) and
multi-speaker relationship inference (MSRI), from the conversation's annotation."""

from __future__ import annotations

from msu_bench.qa.facts import Facts
from msu_bench.qa.tasks.registry import Candidate, Wording, generator


@generator("t3_mssi_dialogue_background_reasoning")
def formality_and_venue(facts: Facts, wording: Wording) -> list[Candidate]:
    """How formal the conversation is and where it takes place."""
    meta = facts.conv.meta
    if not (meta.get("formality") and meta.get("venue")):
        return []
    answer = wording.answer(formality=facts.label("formality", meta["formality"]), venue=meta["venue"])
    return [Candidate(wording.question(), answer, {})]


@generator("t3_mssi_dialogue_result_reasoning")
def conversation_outcome(facts: Facts, wording: Wording) -> list[Candidate]:
    """Whether the conversation ends in consensus or disagreement, and how."""
    meta = facts.conv.meta
    if not (meta.get("outcome") and meta.get("outcome_summary")):
        return []
    answer = wording.answer(outcome=facts.label("outcome", meta["outcome"]), summary=meta["outcome_summary"])
    return [Candidate(wording.question(), answer, {})]


@generator("t3_msri_speaker_role_recognition")
def dominant_speaker(facts: Facts, wording: Wording) -> list[Candidate]:
    """For each speaker, whether they are the annotated dominant one, with their role."""
    dominant = facts.conv.meta.get("dominant_speaker")
    if dominant not in facts.names:
        return []
    names, candidates = facts.names, []
    for spk, name in names.items():
        role = facts.conv.speakers[spk].role or ""
        answer = wording.answer("a_yes" if spk == dominant else "a_no", spk=name, other=names[dominant], role=role)
        candidates.append(Candidate(wording.question(spk=name), answer, {"speaker": spk, "dominant": dominant}))
    return candidates


@generator("t3_msri_social_role_recognition")
def speakers_relationship(facts: Facts, wording: Wording) -> list[Candidate]:
    """The speakers' annotated relationship."""
    relationship = facts.conv.meta.get("relationship")
    return [Candidate(wording.question(), wording.answer(relationship=relationship), {})] if relationship else []
