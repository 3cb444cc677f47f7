"""Template QA generation for the 25 MSU tasks (questions from ``templates.yaml``, facts from
:mod:`msu_bench.qa.facts`). ``generate_segment_qa`` asks ``per_segment`` questions of a segment
(10 by default, as the paper), spreading them over the tasks that have been asked least so far.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

import numpy as np
import yaml

from lalm_eval.errors import UnknownNameError
from msu_bench.qa.facts import Facts, words_before
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


def _fmt(template: str, **values) -> str:
    return template.format(**values)


def _items(f: Facts, task: str, rng) -> list[tuple[str, str, dict]]:
    """(question, answer, evidence) candidates of ``task`` for segment ``f``."""
    T = templates()["tasks"][task][f.lang]
    pick = lambda qs: qs[int(rng.integers(len(qs)))]  # noqa: E731
    N, L = f.names, f.label
    out: list[tuple[str, str, dict]] = []
    if task == "t1_sr_speaker_recognition":
        for spk in N:
            utts = [t.text for t in f.said(spk)]
            if not utts:
                continue
            joined = " / ".join(f"“{u}”" for u in utts)
            out.append((_fmt(pick(T["q"]), spk=N[spk]), _fmt(T["a"], utterances=joined), {"speaker": spk}))
    elif task == "t1_sr_speaker_counting":
        n = len(N)
        word = templates()["numbers"][f.lang][n] if n < 7 else str(n)
        out.append((pick(T["q"]), _fmt(T["a"], count_word=word.capitalize() if f.lang == "en" else word), {"count": n}))
    elif task == "t1_sr_silence_overlap_detection":
        for cut, by in f.interruptions():
            if not cut.text.strip():
                continue
            q = words_before(cut, by.start, f.lang)
            out.append(
                (
                    _fmt(pick(T["q"]), spk=N[cut.speaker], quote=q),
                    _fmt(T["a_yes"], spk=N[cut.speaker], other=N[by.speaker]),
                    {"turn": cut.id, "interrupted_by": by.id, "overlap_start": by.start},
                )
            )
        for turn, gap in f.long_pauses():
            if not turn.text.strip():
                continue
            out.append(
                (
                    _fmt(pick(T["q_pause"]), spk=N[turn.speaker], quote=f.q(turn)),
                    _fmt(T["a_pause"], seconds=f"{gap:.1f}"),
                    {"turn": turn.id, "pause": round(gap, 2)},
                )
            )
    elif task == "t1_sac_accent_dialect_recognition":
        for spk, accent in f.speaker_facts("accent"):
            said = f.said(spk)
            if not said:
                continue
            turn = said[0]
            out.append(
                (
                    _fmt(pick(T["q"]), spk=N[spk], quote=f.q(turn)),
                    _fmt(T["a"], spk=N[spk], accent=L("accent", accent)),
                    {"speaker": spk, "accent": accent},
                )
            )
    elif task == "t1_sac_language_recognition":
        langs = sorted({info.language or f.conv.language for s, info in f.conv.speakers.items() if s in N})
        names = templates()["language_names"][f.lang]
        joined = (" and " if f.lang == "en" else "和").join(names.get(x, x) for x in langs)
        out.append((pick(T["q"]), _fmt(T["a"], languages=joined), {"languages": langs}))
    elif task in ("t1_sac_gender_recognition", "t1_sac_age_recognition"):
        field = "gender" if "gender" in task else "age_group"
        for spk, value in f.speaker_facts(field):
            out.append(
                (
                    _fmt(pick(T["q"]), spk=N[spk]),
                    _fmt(T["a"], **{field: L(field, value)}),
                    {"speaker": spk, field: value},
                )
            )
    elif task == "t1_spa_voice_quality_analysis":
        for t in f.turns:
            if t.voice_quality and t.text.strip():
                out.append(
                    (
                        _fmt(pick(T["q"]), spk=N[t.speaker], quote=f.q(t)),
                        _fmt(
                            T["a"],
                            quality=L("voice_quality", t.voice_quality).capitalize()
                            if f.lang == "en"
                            else L("voice_quality", t.voice_quality),
                        ),
                        {"turn": t.id},
                    )
                )
    elif task == "t1_spa_speech_flow_analysis":
        for t in f.turns:
            if t.pause_within and t.text.strip():
                before, secs = t.pause_within
                out.append(
                    (
                        _fmt(pick(T["q"]), spk=N[t.speaker], quote=f.q(t)),
                        _fmt(T["a_yes"], spk=N[t.speaker], seconds=f"{secs:.1f}", before=before.rstrip(",.，。")),
                        {"turn": t.id, "pause": secs},
                    )
                )
    elif task == "t1_spa_emotion_recognition":
        for t in f.turns:
            if t.emotion and t.emotion != "neutral" and t.text.strip():
                e = L("emotion", t.emotion)
                out.append(
                    (
                        _fmt(pick(T["q"]), spk=N[t.speaker], quote=f.q(t)),
                        _fmt(T["a"], emotion=e.capitalize() if f.lang == "en" else e),
                        {"turn": t.id},
                    )
                )
    elif task == "t2_sda_emotion_evolution":
        for spk in N:
            runs = f.emotion_runs(spk)
            if len(runs) >= 2:
                sep = ", then " if f.lang == "en" else "，然后"
                steps = [
                    (
                        f"{L('emotion', e)} when saying “{f.q(t)}”"
                        if f.lang == "en"
                        else f"说“{f.q(t)}”时{L('emotion', e)}"
                    )
                    for e, t in runs
                ]
                out.append(
                    (
                        _fmt(pick(T["q"]), spk=N[spk]),
                        _fmt(T["a"], spk=N[spk], evolution=sep.join(steps)),
                        {"speaker": spk, "turns": [t.id for _, t in runs]},
                    )
                )
    elif task == "t2_sda_voice_quality_evolution":
        for spk in N:
            runs = f.voice_quality_runs(spk)
            if len(runs) >= 2:
                sep = ", then " if f.lang == "en" else "，然后"
                steps = [
                    (
                        f"{L('voice_quality', v)} when saying “{f.q(t)}”"
                        if f.lang == "en"
                        else f"说“{f.q(t)}”时{L('voice_quality', v)}"
                    )
                    for v, t in runs
                ]
                out.append(
                    (
                        _fmt(pick(T["q"]), spk=N[spk]),
                        _fmt(
                            T["a"],
                            evolution=f"{N[spk]} " + sep.join(steps) if f.lang == "en" else N[spk] + sep.join(steps),
                        ),
                        {"speaker": spk, "turns": [t.id for _, t in runs]},
                    )
                )
    elif task == "t2_sda_opinion_change_recognition":
        for spk, change in f.speaker_facts("opinion_change"):
            turn = f.turn(change["turn"])
            if turn is not None and turn.text.strip():
                out.append(
                    (
                        _fmt(pick(T["q"]), spk=N[spk]),
                        _fmt(T["a"], spk=N[spk], quote=f.q(turn), **{"from": change["from"], "to": change["to"]}),
                        {"speaker": spk, "turn": turn.id},
                    )
                )
    elif task == "t2_scii_language_accent_cultural_reasoning":
        for spk, culture in f.speaker_facts("culture"):
            accent = f.conv.speakers[spk].accent or ""
            out.append(
                (
                    _fmt(pick(T["q"]), spk=N[spk]),
                    _fmt(T["a"], spk=N[spk], accent=L("accent", accent), culture=culture),
                    {"speaker": spk},
                )
            )
    elif task == "t2_scii_expression_preference_recognition":
        for spk, expression in f.speaker_facts("expression"):
            age = f.conv.speakers[spk].age_group
            if age:
                a = L("age_group", age)
                out.append(
                    (_fmt(pick(T["q"]), spk=N[spk]), _fmt(T["a"], age_group=a, expression=expression), {"speaker": spk})
                )
    elif task == "t2_scii_geographical_location_estimation":
        for spk, region in f.speaker_facts("region"):
            accent = f.conv.speakers[spk].accent or ""
            out.append(
                (
                    _fmt(pick(T["q"]), spk=N[spk]),
                    _fmt(T["a"], spk=N[spk], region=region, accent=L("accent", accent)),
                    {"speaker": spk},
                )
            )
    elif task == "t3_mssi_dialogue_background_reasoning":
        meta = f.conv.meta
        if meta.get("formality") and meta.get("venue"):
            out.append(
                (pick(T["q"]), _fmt(T["a"], formality=L("formality", meta["formality"]), venue=meta["venue"]), {})
            )
    elif task == "t3_mssi_dialogue_result_reasoning":
        meta = f.conv.meta
        if meta.get("outcome") and meta.get("outcome_summary"):
            out.append(
                (pick(T["q"]), _fmt(T["a"], outcome=L("outcome", meta["outcome"]), summary=meta["outcome_summary"]), {})
            )
    elif task == "t3_msri_speaker_role_recognition":
        dom = f.conv.meta.get("dominant_speaker")
        if dom in N:
            for spk in N:
                role = f.conv.speakers[spk].role or ""
                key = "a_yes" if spk == dom else "a_no"
                out.append(
                    (
                        _fmt(pick(T["q"]), spk=N[spk]),
                        _fmt(T[key], spk=N[spk], other=N[dom], role=role),
                        {"speaker": spk, "dominant": dom},
                    )
                )
    elif task == "t3_msri_social_role_recognition":
        rel = f.conv.meta.get("relationship")
        if rel:
            out.append((pick(T["q"]), _fmt(T["a"], relationship=rel), {}))
    elif task == "t4_mst_dialogue_transcription":
        transcript = f.transcript()
        if transcript is not None:
            untranscribed = sum(not t.text.strip() for t in f.turns)
            out.append(
                (
                    pick(T["q"]),
                    transcript,
                    {
                        "format": "{spk_1: ...; spk_2: ...}",
                        **({"untranscribed_turns": untranscribed} if untranscribed else {}),
                    },
                )
            )
    elif task in ("t4_msia_paralinguistic_interaction_analysis", "t4_mscr_causal_attribution"):
        for link in f.conv.meta.get("cause_links") or []:
            cause, effect = f.turn(link["cause_turn"]), f.turn(link["effect_turn"])
            if (
                cause is None
                or effect is None
                or not effect.emotion
                or cause.speaker == effect.speaker
                or not cause.text.strip()
                or not effect.text.strip()
            ):
                continue
            e = L("emotion", effect.emotion)
            values = dict(
                spk=N[effect.speaker],
                other=N[cause.speaker],
                quote=f.q(effect),
                emotion=e,
                explanation=link["explanation"],
                cause=f.q(cause),
            )
            out.append((_fmt(pick(T["q"]), **values), _fmt(T["a"], **values), {"cause": cause.id, "effect": effect.id}))
    elif task == "t4_msia_social_interaction_analysis":
        for t in f.turns:
            if t.act in ("agree", "disagree") and t.text.strip():
                out.append(
                    (
                        _fmt(pick(T["q"]), spk=N[t.speaker], stance=L("stance", t.act)),
                        _fmt(T["a"], text=t.text),
                        {"turn": t.id, "act": t.act},
                    )
                )
    elif task == "t4_mscr_motivation_reasoning":
        for m in f.conv.meta.get("motivations") or []:
            turn = f.turn(m["turn"])
            if turn is not None and turn.speaker in N:
                out.append(
                    (_fmt(pick(T["q"]), spk=N[turn.speaker], action=m["action"]), m["motivation"], {"turn": turn.id})
                )
    else:
        raise UnknownNameError(f"no QA generator for MSU task {task!r}")
    return out


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
        candidates = [c for c in _items(facts, task, rng) if c[1].strip()]  # never an empty answer
        if not candidates:
            continue
        q, a, ev = candidates[int(rng.integers(len(candidates)))]
        items.append(QAItem(task, q, a[:1].upper() + a[1:] if a else a, ev))
        asked[task] = asked.get(task, 0) + 1
    return items
