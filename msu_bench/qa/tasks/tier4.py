"""Tier 4 of MSU-Bench, multi-speaker interaction: multi-speaker transcription (MST),
interaction analysis (MSIA) and contextual reasoning (MSCR)."""

from __future__ import annotations

from msu_bench.qa.facts import Facts
from msu_bench.qa.tasks.registry import Candidate, Wording, generator


@generator("t4_mst_dialogue_transcription")
def speaker_attributed_transcript(facts: Facts, wording: Wording) -> list[Candidate]:
    """The whole segment transcribed speaker by speaker (not asked when a speaker has no text)."""
    texts = facts.texts_by_speaker()
    if texts is None:
        return []
    speakers = [
        wording.part("speaker_turns", n=n, text=wording.join("turn_sep", turns)) for n, turns in enumerate(texts, 1)
    ]
    transcript = wording.join("speaker_sep", speakers)
    untranscribed = sum(not turn.text.strip() for turn in facts.turns)
    evidence = {
        "format": wording.text["evidence_format"],
        **({"untranscribed_turns": untranscribed} if untranscribed else {}),
    }
    return [Candidate(wording.question(), wording.answer(transcript=transcript), evidence)]


def _cause_links(facts: Facts):
    """The annotated (cause turn, effect turn, explanation) links across two speakers, both
    quoted, the effect with an emotion."""
    for link in facts.conv.meta.get("cause_links") or []:
        cause, effect = facts.turn(link["cause_turn"]), facts.turn(link["effect_turn"])
        if cause is None or effect is None or not effect.emotion or cause.speaker == effect.speaker:
            continue
        if cause.text.strip() and effect.text.strip():
            yield cause, effect, link["explanation"]


@generator("t4_msia_paralinguistic_interaction_analysis", "t4_mscr_causal_attribution")
def emotion_caused_by_another(facts: Facts, wording: Wording) -> list[Candidate]:
    """A speaker's emotion in a turn and the other speaker's words that caused it."""
    names, candidates = facts.names, []
    for cause, effect, explanation in _cause_links(facts):
        values = dict(
            spk=names[effect.speaker],
            other=names[cause.speaker],
            quote=facts.q(effect),
            emotion=facts.label("emotion", effect.emotion),
            explanation=explanation,
            cause=facts.q(cause),
        )
        candidates.append(
            Candidate(wording.question(**values), wording.answer(**values), {"cause": cause.id, "effect": effect.id})
        )
    return candidates


@generator("t4_msia_social_interaction_analysis")
def agreement_or_disagreement(facts: Facts, wording: Wording) -> list[Candidate]:
    """What a speaker said to agree or disagree (a turn annotated with that act)."""
    return [
        Candidate(
            wording.question(spk=facts.names[turn.speaker], stance=facts.label("stance", turn.act)),
            wording.answer(text=turn.text),
            {"turn": turn.id, "act": turn.act},
        )
        for turn in facts.turns
        if turn.act in ("agree", "disagree") and turn.text.strip()
    ]


@generator("t4_mscr_motivation_reasoning")
def motivation(facts: Facts, wording: Wording) -> list[Candidate]:
    """Why a speaker does what the annotation says they do in a turn."""
    candidates = []
    for entry in facts.conv.meta.get("motivations") or []:
        turn = facts.turn(entry["turn"])
        if turn is not None and turn.speaker in facts.names:
            question = wording.question(spk=facts.names[turn.speaker], action=entry["action"])
            candidates.append(Candidate(question, wording.answer(motivation=entry["motivation"]), {"turn": turn.id}))
    return candidates
