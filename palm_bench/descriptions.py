"""Human (HD) and acoustic (AD) descriptions of the subjects, as used by the HD/AD prompt
strategies (PALM-Bench §5.1, Table 22).

- HD comes from data: ``human_descriptions.yaml`` beside a corpus's speaker files (the embedded
  corpus ships one), keyed by subject id and language; for subjects without one, a text LLM
  writes it from measured acoustics when the build is given one, else the HD is ``""``.
- AD is measured from the subject's *train-split* clips (its reference speech) by
  :mod:`palm_bench.acoustic` and written as text, so every figure in it is measured. Measuring
  pitch is slow (librosa pyin), so results are cached on disk by the clips' content.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from palm_bench.corpus.types import Corpus, Utterance

AD_CACHE_VERSION = "1"


def load_human_descriptions(path: Path) -> dict[str, str]:
    """``{subject id: HD text}`` from a YAML of ``{id: {en|zh: text}}``; empty if absent. A file
    that is not that shape is a :class:`~lalm_eval.errors.DataError` naming it and the entry."""
    from lalm_eval.errors import DataError
    from lalm_eval.hub.readers import read_text

    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(read_text(path)) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = str(getattr(exc, "problem", None) or exc).splitlines()[0].replace(";", ",")
        raise DataError(path, f"cannot read human descriptions ({problem}); fix the YAML") from None
    if not isinstance(data, dict):
        raise DataError(
            path, "must map subject ids to {en: text} or {zh: text}; write e.g. `alice: {en: A calm voice.}`"
        )
    for sid, texts in data.items():
        if texts is not None and (
            not isinstance(texts, dict) or not all(isinstance(t, str) and t.strip() for t in texts.values())
        ):
            raise DataError(
                path,
                f"must be a mapping of language to a non-empty text, got {texts!r}; write e.g. `{sid}: {{en: A calm voice.}}`",
                field=str(sid),
            )
    return {str(sid): next(iter(texts.values())) for sid, texts in data.items() if texts}


def acoustic_descriptions(
    corpus: Corpus,
    reference_clips: dict[str, list[Utterance]],
    cache_dir: Path | None = None,
    max_seconds: float = 12.0,
) -> dict[str, str]:
    """``{subject id: AD text}`` measured on each subject's reference clips (cached)."""
    from palm_bench.acoustic import describe_voice, measure_voice

    out = {}
    for subject in sorted(s.id for s in corpus.subjects() if s.id in reference_clips):
        clips = reference_clips[subject]
        language = corpus.speakers[subject].language
        key = hashlib.sha256(
            json.dumps([AD_CACHE_VERSION, language, max_seconds] + [(c.id, c.text, c.duration) for c in clips]).encode()
        ).hexdigest()
        path = cache_dir / "acoustic_descriptions" / f"{key}.txt" if cache_dir else None
        if path is not None and path.is_file():
            out[subject] = path.read_text(encoding="utf-8")
            continue
        chosen, total = [], 0.0
        for clip in clips:  # deterministic: clips in split order until the budget is used
            if total >= max_seconds:
                break
            chosen.append(clip)
            total += clip.duration
        meas = measure_voice(
            [c.load_audio() for c in chosen], [c.text for c in chosen], language, max_seconds=max_seconds
        )
        out[subject] = describe_voice(meas, language)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(out[subject], encoding="utf-8")
    return out


def llm_human_descriptions(
    corpus: Corpus,
    reference_clips: dict[str, list[Utterance]],
    llm,
    subject_ids: list[str],
    cache_dir: Path | None = None,
    max_seconds: float = 12.0,
) -> dict[str, str]:
    """HD for subjects without one: an LLM writes it from measured acoustics (cached by clips
    and LLM settings), as :func:`palm_bench.profiles.generate_human_descriptions` does."""
    from palm_bench.acoustic import measure_voice
    from palm_bench.profiles import generate_human_descriptions

    if not subject_ids:
        return {}
    key = hashlib.sha256(
        json.dumps(
            [dict(llm.settings), max_seconds] + [(s, [c.id for c in reference_clips[s]]) for s in sorted(subject_ids)],
            sort_keys=True,
            default=str,
        ).encode()
    ).hexdigest()
    path = cache_dir / "human_descriptions" / f"{key}.json" if cache_dir else None
    if path is not None and path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    measurements = {}
    for sid in sorted(subject_ids):
        clips = reference_clips[sid]
        measurements[sid] = measure_voice(
            [c.load_audio() for c in clips],
            [c.text for c in clips],
            corpus.speakers[sid].language,
            max_seconds=max_seconds,
        )
    out = generate_human_descriptions(llm, [corpus.speakers[s] for s in sorted(subject_ids)], measurements)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, ensure_ascii=False, indent=1), encoding="utf-8")
    return out
