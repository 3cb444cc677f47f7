"""Plan every composed audio of a split and the QA samples it carries (no audio is touched here).

An :class:`AudioPlan` is one composed clip — the source clips in playing order, an optional
augmentation — plus its questions: ``templates_per_audio`` templates for recognition and
captioning (one clip, several templates: the paper's default of 8), one question for reasoning.
Scenes are random non-overlapping concatenations (PALM-Bench §4.2): the clip order is shuffled,
every speaker contributes one clip, all in the target's language.
"""

from __future__ import annotations

import dataclasses
import re
from functools import cache

import numpy as np
import yaml

from lalm_eval.errors import ConfigError
from lalm_eval.seeding import rng_for
from palm_bench.config import STRATA, BuildConfig
from palm_bench.corpus.types import Corpus, Utterance
from palm_bench.negatives import NegativePool
from palm_bench.slots import Slot, reasoning_slots, recognition_captioning_slots
from palm_bench.templates import TEMPLATE_DIR, Template, load_templates, placeholders_in, render


@dataclasses.dataclass
class QA:
    template_id: str
    question: str
    answer: str
    queried: list[str]  # subject ids named in the question
    present: list[str]
    absent: list[str]
    #: captioning: how the reference was made (palm_bench.caption_references.ROW_KINDS); else ""
    reference: str = ""


@dataclasses.dataclass
class AudioPlan:
    key: str
    split: str
    task: str
    language: str
    target: str  # the subject the audio is about (first queried)
    clips: list[Utterance]  # in playing order
    augmentation: dict  # lalm_eval Augmentation.to_dict(); {} when none
    negatives: list[dict]  # distractors: {for_subject, speaker, clip, stratum, similarity}
    qas: list[QA]
    evidence: dict = dataclasses.field(default_factory=dict)  # reasoning: profile fields used

    @property
    def speakers(self) -> list[str]:
        return [c.speaker for c in self.clips]


@cache
def answer_data() -> dict:
    return yaml.safe_load((TEMPLATE_DIR / "answers.yaml").read_text(encoding="utf-8"))


@cache
def reasoning_evidence() -> dict:
    return yaml.safe_load((TEMPLATE_DIR / "reasoning_evidence.yaml").read_text(encoding="utf-8"))


def templates(kind: str, language: str, group: str | None = None) -> list[Template]:
    excluded = answer_data().get("excluded_templates", {})
    return [t for t in load_templates(kind, language) if t.id not in excluded and (group is None or t.group == group)]


def multi_groups(language: str) -> dict[int, list[tuple[str, bool]]]:
    out: dict[int, list[tuple[str, bool]]] = {}
    for t in templates("multi_speaker", language):
        cases = out.setdefault(t.n_speakers, [])
        if (t.group, bool(t.present)) not in cases:
            cases.append((t.group, bool(t.present)))
    return out


def profile_value(profile: dict, field: str) -> str:
    value = profile
    for part in field.split("."):
        value = value[part]
    return str(value).strip()


def _words(text: str, language: str) -> set[str]:
    if language == "zh":
        chars = re.findall(r"[\u4e00-\u9fff]", text)
        return {a + b for a, b in zip(chars, chars[1:])}
    return {w for w in re.findall(r"[a-z']+", text.lower()) if len(w) > 3}


class SplitPlanner:
    """Plans one split: ``plan()`` returns its :class:`AudioPlan` list in a fixed order."""

    def __init__(
        self, corpus: Corpus, cfg: BuildConfig, split: str, clips: dict[str, list[Utterance]], pool: NegativePool
    ):
        self.corpus, self.cfg, self.split, self.clips, self.pool = corpus, cfg, split, clips, pool
        self.subjects = sorted(s.id for s in corpus.subjects() if s.language in cfg.languages and s.id in clips)
        self._stratum_turn = 0  # cycles hard → easy over every graded distractor of the split
        self._labels = {"positive": 0, "negative": 0}  # recognition rows so far (balancing)
        self.skipped_reasoning = 0  # reasoning slots of subjects without a profile

    def plan(self) -> list[AudioPlan]:
        rng = rng_for(self.cfg.seed, "plan", self.split)
        slots = self._slots(rng)
        plans = []
        for i, (slot, subject) in enumerate(slots):
            key = f"{self.split}-{i:06d}"
            plan_rng = rng_for(self.cfg.seed, "audio", key)
            plans.append(self._plan_one(key, slot, subject, plan_rng))
        return plans

    def _slots(self, rng) -> list[tuple[Slot, str]]:
        out = []
        by_language: dict[str, list[str]] = {}
        for s in self.subjects:
            by_language.setdefault(self.corpus.speakers[s].language, []).append(s)
        for language, subjects in sorted(by_language.items()):
            with_profile = [s for s in subjects if self.corpus.speakers[s].profile]
            n_reasoning = self.cfg.reasoning_per_subject.get(self.split, 0)
            self.skipped_reasoning += n_reasoning * (len(subjects) - len(with_profile))
            n_rc = self.cfg.audios_per_subject.get(self.split, 0) * len(subjects)
            n_rs = n_reasoning * len(with_profile)
            for slots, eligible in (
                (recognition_captioning_slots(n_rc, self.cfg, multi_groups(language)), subjects),
                (reasoning_slots(n_rs, self.cfg), with_profile),
            ):
                order = rng.permutation(len(slots))
                targets = [eligible[j] for j in rng.permutation(len(eligible))]
                out += [(slots[j], targets[k % len(targets)]) for k, j in enumerate(order)]
        return out

    # -- scene composition -------------------------------------------------------------------

    def _next_stratum(self) -> str:
        stratum = STRATA[self._stratum_turn % len(STRATA)]
        self._stratum_turn += 1
        return stratum

    def _distractor(self, for_subject: str, exclude: set[str], rng) -> tuple[Utterance, dict]:
        cand = self.pool.pick(for_subject, self._next_stratum(), exclude, rng)
        return cand.clip, {
            "for_subject": for_subject,
            "speaker": cand.clip.speaker,
            "clip": cand.clip.id,
            "stratum": cand.stratum,
            "similarity": round(cand.similarity, 4),
        }

    def _own_clip(self, subject: str, rng) -> Utterance:
        clips = self.clips[subject]
        return clips[int(rng.integers(len(clips)))]

    def _others(self, target: str, k: int, rng) -> list[str]:
        language = self.corpus.speakers[target].language
        pool = [s for s in self.subjects if s != target and self.corpus.speakers[s].language == language]
        if len(pool) < k:
            raise ConfigError(
                f"{language}: a {k + 1}-subject query needs {k + 1} subjects, the corpus has "
                f"{len(pool) + 1}; lower the scene sizes (--set 'speaker_count_weights={{...}}') or add "
                f"subjects"
            )
        return [pool[j] for j in rng.permutation(len(pool))[:k]]

    def _plan_one(self, key: str, slot: Slot, target: str, rng) -> AudioPlan:
        language = self.corpus.speakers[target].language
        if slot.task == "recognition" and slot.group is not None:
            return self._plan_multi_recognition(key, slot, target, language, rng)
        question_id = str(rng.choice(sorted(reasoning_evidence()))) if slot.task == "reasoning" else None
        clips, negatives, exclude = [], [], {target}
        if slot.target_present:
            clip = self._reasoning_clip(target, question_id, rng) if question_id else self._own_clip(target, rng)
            clips.append(clip)
        while len(clips) < slot.n_speakers:
            clip, record = self._distractor(target, exclude | {c.speaker for c in clips}, rng)
            clips.append(clip)
            negatives.append(record)
        order = rng.permutation(len(clips))
        plan = AudioPlan(
            key,
            self.split,
            slot.task,
            language,
            target,
            [clips[j] for j in order],
            self._augmentation(slot.target_present, rng),
            negatives,
            [],
        )
        plan.qas = self._reasoning_question(plan, question_id) if question_id else self._questions(plan, slot, rng)
        return plan

    def _plan_multi_recognition(self, key, slot, target, language, rng) -> AudioPlan:
        group_templates = templates("multi_speaker", language, slot.group)
        present_roles, absent_roles = group_templates[0].present, group_templates[0].absent
        queried = [target] + self._others(target, slot.n_speakers - 1, rng)
        present = queried[: len(present_roles)] if slot.target_present else []
        absent = [s for s in queried if s not in present]
        clips = [self._own_clip(s, rng) for s in present]
        negatives = []
        for subject in absent:
            clip, record = self._distractor(subject, set(queried) | {c.speaker for c in clips}, rng)
            clips.append(clip)
            negatives.append(record)
        order = rng.permutation(len(clips))
        plan = AudioPlan(
            key,
            self.split,
            slot.task,
            language,
            target,
            [clips[j] for j in order],
            self._augmentation(bool(present), rng),
            negatives,
            [],
        )
        names = {s: self.corpus.speakers[s].name for s in queried}
        candidates = [queried[j] for j in rng.permutation(len(queried))]
        # {A}..{D}: the candidate set in random order; the case's present/absent roles ({A}/{B}
        # in two-speaker cases, P*/UP* in mixed ones) then bind to the present/absent subjects
        binding = dict(zip(("A", "B", "C", "D"), candidates))
        binding.update(zip(present_roles, present))
        binding.update(zip(absent_roles, absent))
        for t in self._choose_balanced(group_templates, binding, present, rng):
            qa = render(t, **{ph: names[s] for ph, s in binding.items()})
            asked = self._asked(t, binding, queried)
            plan.qas.append(
                QA(
                    t.id,
                    qa.question,
                    qa.answer,
                    asked,
                    [s for s in asked if s in present],
                    [s for s in asked if s not in present],
                )
            )
        return plan

    @staticmethod
    def _asked(t: Template, binding: dict, queried: list[str]) -> list[str]:
        """The subjects a question names (a template may ask about part of the candidate set)."""
        return list(dict.fromkeys(binding[ph] for ph in placeholders_in(t.question))) or queried

    def _choose_balanced(self, pool: list[Template], binding: dict, present: list[str], rng) -> list[Template]:
        """``templates_per_audio`` templates in random order, each pick preferring the row label
        (positive: every asked subject present; negative: none) that the split's recognition rows
        have fewer of, so that labels balance although templates ask about subsets."""

        def label(t):
            asked = self._asked(t, binding, [])
            hits = sum(s in present for s in asked)
            return "positive" if hits == len(asked) else "negative" if hits == 0 else "mixed"

        order = [pool[int(i)] for i in rng.permutation(len(pool))]
        chosen = []
        for _ in range(self.cfg.templates_per_audio):
            unused = [t for t in order if t not in chosen] or order
            short = min(self._labels, key=lambda k: (self._labels[k], k))
            rank = {short: 0, "mixed": 1}
            pick = min(unused, key=lambda t: rank.get(label(t), 2))  # min is stable: keeps order
            chosen.append(pick)
            if label(pick) in self._labels:
                self._labels[label(pick)] += 1
        return chosen

    def _reasoning_clip(self, target: str, question_id: str, rng) -> Utterance:
        """The target's clip that shares most words with the question's profile evidence."""
        profile = self.corpus.speakers[target].profile or {}
        fields = reasoning_evidence()[question_id]
        words = (
            set().union(
                *(_words(profile_value(profile, f), self.corpus.speakers[target].language) for f in fields if profile)
            )
            if profile
            else set()
        )
        clips = self.clips[target]
        scores = np.array([len(words & _words(c.text, c.language)) for c in clips], dtype=float)
        best = np.flatnonzero(scores == scores.max())
        return clips[int(best[int(rng.integers(len(best)))])]

    def _augmentation(self, target_present: bool, rng) -> dict:
        """Augment positive audios only (paper §4.1), with the configured probabilities."""
        if not self.cfg.augmentation:
            return {}
        from lalm_eval.audio.augment import AugmentationConfig, sample_augmentation

        aug = sample_augmentation(AugmentationConfig.from_dict(self.cfg.augmentation), rng)
        return aug.to_dict() if target_present and not aug.is_identity else {}

    def _choose(self, pool: list[Template], rng) -> list[Template]:
        k = self.cfg.templates_per_audio
        idx = [int(i) for i in rng.permutation(len(pool))]
        return [pool[idx[i % len(idx)]] for i in range(k)]

    def _reasoning_question(self, plan: AudioPlan, question_id: str) -> list[QA]:
        spk = self.corpus.speakers[plan.target]
        question = next(t for t in templates("reasoning", plan.language) if t.id == question_id)
        profile = spk.profile or {}
        fields = reasoning_evidence()[question_id]
        plan.evidence = {f: profile_value(profile, f) for f in fields} if profile else {}
        evidence = "; ".join(f"{f.split('.')[-1]}: {v}" for f, v in plan.evidence.items())
        text = next(c.text for c in plan.clips if c.speaker == plan.target)
        data = answer_data()
        q = data["reasoning_question"][plan.language].format(spk=spk.name, question=question.question)
        a = data["reasoning_answer"][plan.language].format(spk=spk.name, text=text, evidence=evidence)
        return [QA(question_id, q, a, [plan.target], [plan.target], [])]

    def _questions(self, plan: AudioPlan, slot: Slot, rng) -> list[QA]:
        name, lang = self.corpus.speakers[plan.target].name, plan.language
        present = slot.target_present
        qa_list = []
        if slot.task == "recognition":
            pool = templates("recognition", lang, "rec_pos" if present else "rec_neg")
        else:
            pool = templates("captioning", lang, "cap_pos" if present else "cap_neg")
        if slot.task == "recognition":
            self._labels["positive" if present else "negative"] += self.cfg.templates_per_audio
        for t in self._choose(pool, rng):
            qa = render(t, spk=name)
            answer = qa.answer
            if answer is None:  # captioning with the target present: the transcript is the reference
                text = next(c.text for c in plan.clips if c.speaker == plan.target)
                answer = answer_data()["caption_positive"][lang].format(spk=name, text=text)
            qa_list.append(
                QA(
                    t.id,
                    qa.question,
                    answer,
                    [plan.target],
                    [plan.target] if present else [],
                    [] if present else [plan.target],
                    reference=("transcript" if present else "refusal") if slot.task == "captioning" else "",
                )
            )
        return qa_list
