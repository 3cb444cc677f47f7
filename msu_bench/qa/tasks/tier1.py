"""Tier 1 of MSU-Bench, single-speaker static attributes: speaker recognition (SR), speaker
attribute comprehension (SAC) and speaker paralinguistic analysis (SPA)."""

from __future__ import annotations

from msu_bench.qa.facts import Facts, words_before
from msu_bench.qa.tasks.registry import Candidate, Wording, generator


@generator("t1_sr_speaker_recognition")
def speaker_utterances(facts: Facts, wording: Wording) -> list[Candidate]:
    """Everything one speaker says, each utterance quoted."""
    candidates = []
    for spk, name in facts.names.items():
        utterances = [wording.part("utterance", text=turn.text) for turn in facts.said(spk)]
        if utterances:
            answer = wording.answer(utterances=wording.join("sep", utterances))
            candidates.append(Candidate(wording.question(spk=name), answer, {"speaker": spk}))
    return candidates


@generator("t1_sr_speaker_counting")
def speaker_count(facts: Facts, wording: Wording) -> list[Candidate]:
    """How many speakers the segment has, in words while the language's number list lasts."""
    count, numbers = len(facts.names), wording.text["numbers"]
    count_word = numbers[count] if count < len(numbers) else str(count)
    return [Candidate(wording.question(), wording.answer(count_word=count_word), {"count": count})]


@generator("t1_sr_silence_overlap_detection")
def interruptions_and_long_pauses(facts: Facts, wording: Wording) -> list[Candidate]:
    """Who interrupted whom (``q``), then the long silences before a turn (``q_pause``)."""
    names, candidates = facts.names, []
    for cut, by in facts.interruptions():
        if not cut.text.strip():
            continue
        question = wording.question(spk=names[cut.speaker], quote=words_before(cut, by.start, facts.lang))
        answer = wording.answer("a_yes", spk=names[cut.speaker], other=names[by.speaker])
        candidates.append(
            Candidate(question, answer, {"turn": cut.id, "interrupted_by": by.id, "overlap_start": by.start})
        )
    for turn, gap in facts.long_pauses():
        if not turn.text.strip():
            continue
        question = wording.question("q_pause", spk=names[turn.speaker], quote=facts.q(turn))
        answer = wording.answer("a_pause", seconds=f"{gap:.1f}")
        candidates.append(Candidate(question, answer, {"turn": turn.id, "pause": round(gap, 2)}))
    return candidates


@generator("t1_sac_accent_dialect_recognition")
def speaker_accent(facts: Facts, wording: Wording) -> list[Candidate]:
    """A speaker's annotated accent, asked about their first turn with text."""
    candidates = []
    for spk, accent in facts.speaker_facts("accent"):
        said = facts.said(spk)
        if not said:
            continue
        name = facts.names[spk]
        question = wording.question(spk=name, quote=facts.q(said[0]))
        answer = wording.answer(spk=name, accent=facts.label("accent", accent))
        candidates.append(Candidate(question, answer, {"speaker": spk, "accent": accent}))
    return candidates


@generator("t1_sac_language_recognition")
def conversation_languages(facts: Facts, wording: Wording) -> list[Candidate]:
    """The speakers' languages (a speaker's own, else the conversation's), in code order."""
    speakers = facts.conv.speakers.items()
    languages = sorted({info.language or facts.conv.language for spk, info in speakers if spk in facts.names})
    names = wording.text["language_names"]
    answer = wording.answer(languages=wording.join("join", (names.get(code, code) for code in languages)))
    return [Candidate(wording.question(), answer, {"languages": languages})]


def speaker_attribute(field: str):
    """The generator asking each speaker's annotated ``field`` (a ``labels`` entry)."""

    def ask_attribute(facts: Facts, wording: Wording) -> list[Candidate]:
        return [
            Candidate(
                wording.question(spk=facts.names[spk]),
                wording.answer(**{field: facts.label(field, value)}),
                {"speaker": spk, field: value},
            )
            for spk, value in facts.speaker_facts(field)
        ]

    ask_attribute.__name__ = ask_attribute.__qualname__ = f"speaker_{field}"
    return ask_attribute


generator("t1_sac_gender_recognition")(speaker_attribute("gender"))
generator("t1_sac_age_recognition")(speaker_attribute("age_group"))


@generator("t1_spa_voice_quality_analysis")
def turn_voice_quality(facts: Facts, wording: Wording) -> list[Candidate]:
    """How a speaker's voice sounds in a turn annotated with a voice quality."""
    return [
        Candidate(
            wording.question(spk=facts.names[turn.speaker], quote=facts.q(turn)),
            wording.answer(quality=facts.label("voice_quality", turn.voice_quality)),
            {"turn": turn.id},
        )
        for turn in facts.turns
        if turn.voice_quality and turn.text.strip()
    ]


@generator("t1_spa_speech_flow_analysis")
def pause_within_turn(facts: Facts, wording: Wording) -> list[Candidate]:
    """A pause inside a turn: how long, and after which words."""
    candidates = []
    for turn in facts.turns:
        if not (turn.pause_within and turn.text.strip()):
            continue
        before, seconds = turn.pause_within
        name = facts.names[turn.speaker]
        answer = wording.answer("a_yes", spk=name, seconds=f"{seconds:.1f}", before=before.rstrip(wording.text["trim"]))
        candidates.append(
            Candidate(wording.question(spk=name, quote=facts.q(turn)), answer, {"turn": turn.id, "pause": seconds})
        )
    return candidates


@generator("t1_spa_emotion_recognition")
def turn_emotion(facts: Facts, wording: Wording) -> list[Candidate]:
    """A speaker's emotion in a turn annotated with one other than neutral."""
    return [
        Candidate(
            wording.question(spk=facts.names[turn.speaker], quote=facts.q(turn)),
            wording.answer(emotion=facts.label("emotion", turn.emotion)),
            {"turn": turn.id},
        )
        for turn in facts.turns
        if turn.emotion and turn.emotion != "neutral" and turn.text.strip()
    ]
