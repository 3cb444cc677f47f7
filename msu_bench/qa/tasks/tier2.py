"""Tier 2 of MSU-Bench, single-speaker dynamic attributes: speaker dynamic analysis (SDA) and
speaker cultural identity integration (SCII)."""

from __future__ import annotations

from msu_bench.qa.facts import Facts
from msu_bench.qa.tasks.registry import Candidate, Wording, generator


def _evolution(facts: Facts, wording: Wording, label_kind: str, placeholder: str, runs) -> str:
    """The ``step`` wording of each (value, turn) run, joined by ``sep``."""
    steps = [
        wording.part("step", **{placeholder: facts.label(label_kind, value)}, quote=facts.q(turn))
        for value, turn in runs
    ]
    return wording.join("sep", steps)


def _evolution_candidates(
    facts: Facts, wording: Wording, runs_of, label_kind: str, placeholder: str
) -> list[Candidate]:
    """One candidate per speaker whose ``runs_of(spk)`` has at least two (value, turn) runs."""
    candidates = []
    for spk, name in facts.names.items():
        runs = runs_of(spk)
        if len(runs) >= 2:
            evolution = _evolution(facts, wording, label_kind, placeholder, runs)
            evidence = {"speaker": spk, "turns": [turn.id for _, turn in runs]}
            candidates.append(
                Candidate(wording.question(spk=name), wording.answer(spk=name, evolution=evolution), evidence)
            )
    return candidates


@generator("t2_sda_emotion_evolution")
def emotion_evolution(facts: Facts, wording: Wording) -> list[Candidate]:
    """A speaker's emotions in order, when they change at least once."""
    return _evolution_candidates(facts, wording, facts.emotion_runs, "emotion", "emotion")


@generator("t2_sda_voice_quality_evolution")
def voice_quality_evolution(facts: Facts, wording: Wording) -> list[Candidate]:
    """A speaker's voice qualities in order, when one of them is not the normal register."""
    return _evolution_candidates(facts, wording, facts.voice_quality_runs, "voice_quality", "quality")


@generator("t2_sda_opinion_change_recognition")
def opinion_change(facts: Facts, wording: Wording) -> list[Candidate]:
    """A speaker's annotated change of opinion, quoting the turn where it shows."""
    candidates = []
    for spk, change in facts.speaker_facts("opinion_change"):
        turn = facts.turn(change["turn"])
        if turn is None or not turn.text.strip():
            continue
        name = facts.names[spk]
        answer = wording.answer(spk=name, quote=facts.q(turn), **{"from": change["from"], "to": change["to"]})
        candidates.append(Candidate(wording.question(spk=name), answer, {"speaker": spk, "turn": turn.id}))
    return candidates


@generator("t2_scii_language_accent_cultural_reasoning")
def accent_and_culture(facts: Facts, wording: Wording) -> list[Candidate]:
    """A speaker's accent and the cultural note the annotation ties to it."""
    candidates = []
    for spk, culture in facts.speaker_facts("culture"):
        name, accent = facts.names[spk], facts.conv.speakers[spk].accent or ""
        answer = wording.answer(spk=name, accent=facts.label("accent", accent), culture=culture)
        candidates.append(Candidate(wording.question(spk=name), answer, {"speaker": spk}))
    return candidates


@generator("t2_scii_expression_preference_recognition")
def age_from_expression(facts: Facts, wording: Wording) -> list[Candidate]:
    """A speaker's age group and the way of speaking that shows it."""
    candidates = []
    for spk, expression in facts.speaker_facts("expression"):
        age = facts.conv.speakers[spk].age_group
        if age:
            answer = wording.answer(age_group=facts.label("age_group", age), expression=expression)
            candidates.append(Candidate(wording.question(spk=facts.names[spk]), answer, {"speaker": spk}))
    return candidates


@generator("t2_scii_geographical_location_estimation")
def speaker_region(facts: Facts, wording: Wording) -> list[Candidate]:
    """Where a speaker comes from, with their accent as the evidence."""
    candidates = []
    for spk, region in facts.speaker_facts("region"):
        name, accent = facts.names[spk], facts.conv.speakers[spk].accent or ""
        answer = wording.answer(spk=name, region=region, accent=facts.label("accent", accent))
        candidates.append(Candidate(wording.question(spk=name), answer, {"speaker": spk}))
    return candidates
