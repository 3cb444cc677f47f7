"""How many speakers per language a build's scene mix needs, checked before planning.

Every composed scene holds one clip per speaker, all in the target's language, and a
distractor is never a queried subject or a voice already in the scene. So, per language:

- a single-target scene of ``n`` speakers needs ``n`` voices when the target speaks and
  ``n + 1`` when it does not (the target is queried but absent; ``n`` other voices speak);
- a multi-speaker recognition scene of ``n`` speakers queries ``n`` subjects, and each queried
  subject that is absent is replaced by another voice: the case with none present (PALM's
  "none of them" templates) needs ``n`` subjects and ``2 n`` voices, so the default 2-4
  speaker mix needs 4 subjects and 8 voices (subjects and negatives together) per language
  once a build plans enough scenes to reach that case (presence cases are used in turn).

The check counts the scenes the build will actually plan (its slot allocation for the corpus's
subject count), so a small build that never reaches the rarest case is not refused.

:func:`check_speaker_counts` raises a :class:`ConfigError` that says what the mix needs, what
each language has, and what lowers it, instead of a failure half-way through planning.
"""

from __future__ import annotations

import dataclasses

from lalm_eval.errors import ConfigError
from palm_bench.config import BuildConfig
from palm_bench.corpus.types import Corpus


@dataclasses.dataclass(frozen=True)
class Needs:
    subjects: int  # subjects of one language
    speakers: int  # voices of one language, subjects and negatives together
    why: str  # the scene that sets ``speakers``


def _slot_need(slot, language: str) -> tuple[int, int, str]:
    """(subjects, voices, why) one planned scene needs (see the module docstring)."""
    from palm_bench.samples import templates

    n = slot.n_speakers
    if slot.task == "recognition" and slot.group is not None:
        present = templates("multi_speaker", language, slot.group)[0].n_present if slot.target_present else 0
        return (
            n,
            2 * n - present,
            (
                f"a {n}-speaker recognition scene querying {n} subjects, {n - present} of "
                "them absent and replaced by other voices"
            ),
        )
    if slot.target_present:
        return 1, n, f"a {n}-speaker scene with the target"
    return 1, n + 1, f"a {n}-speaker {slot.task} scene without the target ({n} other voices)"


def scene_needs(cfg: BuildConfig, language: str, n_subjects: int | None = None, n_profiles: int | None = None) -> Needs:
    """The fewest subjects and voices of ``language`` that every scene of ``cfg`` can be made from.

    With ``n_subjects`` (and ``n_profiles``, subjects with a profile; default all) the scenes are
    the ones a build of that many subjects plans (a small build may never reach the rarest
    presence case); without, every scene kind the mix allows (the worst case).
    """
    from palm_bench.samples import multi_groups
    from palm_bench.slots import reasoning_slots, recognition_captioning_slots
    from palm_bench.splits import planned_splits

    groups = multi_groups(language)
    slots = []
    for split in planned_splits(cfg):
        n_rc = cfg.audios_per_subject.get(split, 0) * n_subjects if n_subjects is not None else 10_000
        n_rs = (
            cfg.reasoning_per_subject.get(split, 0) * (n_profiles if n_profiles is not None else n_subjects)
            if n_subjects is not None
            else 10_000
        )
        slots += recognition_captioning_slots(n_rc, cfg, groups) + reasoning_slots(n_rs, cfg)
    needs = [_slot_need(slot, language) for slot in slots] or [(1, 1, "a one-speaker scene")]
    subjects = max(n[0] for n in needs)
    voices, why = max(((n[1], n[2]) for n in needs), key=lambda x: x[0])
    return Needs(subjects, voices, why)


def _lower(cfg: BuildConfig, language: str, have: Needs | None = None, counts: tuple = (None, None)) -> list[str]:
    """``--set`` overrides that lower the needs, with what each needs."""
    out = []
    sizes = sorted(n for n, w in cfg.speaker_count_weights.items() if w > 0)
    for k in range(len(sizes) - 1, 0, -1):
        weights = {n: cfg.speaker_count_weights[n] for n in sizes[:k]}
        need = scene_needs(dataclasses.replace(cfg, speaker_count_weights=weights), language, *counts)
        out.append((need, f"--set 'speaker_count_weights={{{', '.join(f'{n}: {w:g}' for n, w in weights.items())}}}'"))
    if cfg.single_multi_ratio[1] > 0:
        need = scene_needs(dataclasses.replace(cfg, single_multi_ratio=(1, 0)), language, *counts)
        out.append((need, "--set 'single_multi_ratio=[1, 0]' (single-speaker scenes only)"))
    fits = [o for o in out if have and o[0].speakers <= have.speakers and o[0].subjects <= have.subjects]
    return [f"{flag} (needs {n.speakers} voices, {n.subjects} subject(s))" for n, flag in (fits[:1] or out)]


def check_speaker_counts(corpus: Corpus, cfg: BuildConfig, keep: set[str] | None = None) -> dict[str, dict]:
    """Per language with subjects: what the scene mix needs and what the corpus has (only the
    speakers in ``keep``, if given); raises a :class:`ConfigError` naming every language that
    falls short and the options that lower it."""
    speakers = [s for s in corpus.speakers.values() if keep is None or s.id in keep]
    report, short = {}, []
    for language in sorted({s.language for s in speakers if s.role == "subject" and s.language in cfg.languages}):
        subjects = sum(s.role == "subject" and s.language == language for s in speakers)
        profiles = sum(s.role == "subject" and s.language == language and bool(s.profile) for s in speakers)
        voices = sum(s.language == language for s in speakers)
        need = scene_needs(cfg, language, subjects, profiles)
        report[language] = {
            "needs_subjects": need.subjects,
            "needs_speakers": need.speakers,
            "subjects": subjects,
            "speakers": voices,
        }
        if subjects < need.subjects or voices < need.speakers:
            short.append((language, need, subjects, voices, profiles))
    if short:
        lines, fixes = [], []
        for language, need, subjects, voices, profiles in short:
            lowered = " or ".join(_lower(cfg, language, Needs(subjects, voices, ""), (subjects, profiles)))
            lines.append(
                f"{language} has {voices} voice(s) ({subjects} subject(s), {voices - subjects} other), "
                f"the mix needs {need.speakers} voices and {need.subjects} subjects ({need.why})"
            )
            fixes.append(f"for {language} lower it with {lowered or 'fewer speakers per scene'}")
        raise ConfigError(
            f"{corpus.root}: the corpus has too few speakers per language for the scene mix (speaker_count_weights="
            f"{ {int(k): v for k, v in cfg.speaker_count_weights.items()} }, single_multi_ratio="
            f"{list(cfg.single_multi_ratio)}): "
            + " | ".join(lines)
            + "; "
            + ", ".join(fixes)
            + ", or add voices (role: negative in speakers.yaml)"
        )
    return report


def language_split(corpus: Corpus, cfg: BuildConfig) -> tuple[set[str], dict[str, list[str]]]:
    """The speakers with clips a build of ``cfg`` keeps (their language is one of
    ``cfg.languages``) and, per other language, the speakers it leaves out."""
    with_clips = {u.speaker for u in corpus.utterances}
    keep = {sid for sid, s in corpus.speakers.items() if s.language in cfg.languages and sid in with_clips}
    dropped: dict[str, list[str]] = {}
    for sid in sorted(with_clips - keep):
        dropped.setdefault(corpus.speakers[sid].language, []).append(sid)
    return keep, dict(sorted(dropped.items()))


def dropped_records(dropped: dict[str, list[str]], cfg: BuildConfig) -> dict[str, dict]:
    """``{language: {"speakers": [...], "reason": ...}}`` for ``build_info.json``, the card and
    ``corpus-info``."""
    return {
        lang: {"speakers": ids, "reason": f"language not in languages {list(cfg.languages)}"}
        for lang, ids in sorted(dropped.items())
    }
