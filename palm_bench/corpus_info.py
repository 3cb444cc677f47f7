"""Statistics of a PALM corpus: counts, minutes, shipped size, and speaker-verification EER.

The EER is computed over all pairs of subject utterances (same subject vs different subjects)
with cosine scores of the chosen speaker encoder: a low EER says the subjects are distinct voices
that an audio model can, in principle, tell apart.

The corpus is screened first as the build screens it (:func:`palm_bench.corpus.screen.screen_corpus`:
clips the encoder cannot embed, speakers with too few clips), so every count is one the build
uses and ``skipped`` lists everything the build would refuse. Also reported: subjects the corpus
gave no name (``names_from``: called by their folder name or mapped id) and, with a scene
config, the speakers a build leaves out for their language (``dropped_speakers``, as in
``build_info.json``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lalm_eval.audio.speaker import DEFAULT_SPEAKER_ENCODER, get_speaker_encoder
from lalm_eval.errors import ConfigError
from lalm_eval.metrics.verification import equal_error_rate, pair_scores
from palm_bench.corpus.embedded import Corpus


def folder_size_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder``, symbolic links followed (a linked speaker folder or clip
    counts as the reader reads it: its target's size), each file once (by device and inode), a
    linked folder already on the current path (a loop) not entered again."""
    import os

    seen: set[tuple[int, int]] = set()
    total = 0

    def visit(path: str, chain: frozenset) -> None:
        nonlocal total
        for entry in os.scandir(path):
            if entry.is_dir(follow_symlinks=True):
                real = os.path.realpath(entry.path)
                if real not in chain:
                    visit(entry.path, chain | {real})
            elif entry.is_file(follow_symlinks=True):
                st = entry.stat(follow_symlinks=True)
                if (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    total += st.st_size

    if Path(folder).is_dir():
        visit(str(folder), frozenset({os.path.realpath(folder)}))
    return total


def corpus_statistics(
    corpus: Corpus,
    encoder: str = DEFAULT_SPEAKER_ENCODER,
    cache_dir: str | Path | None = None,
    with_eer: bool = True,
    scene_config=None,
) -> dict:
    """Per-language counts and minutes, size in MB, the reader's skips (file, reason), with
    ``scene_config`` (a :class:`~palm_bench.config.BuildConfig`) whether each language has the
    speakers its scene mix needs, and (optionally) subject-pair EER."""
    from lalm_eval.audio.speaker import SPEAKER_ENCODERS
    from palm_bench.corpus.screen import screen_corpus

    if encoder not in SPEAKER_ENCODERS:
        import difflib

        close = difflib.get_close_matches(encoder, SPEAKER_ENCODERS.names(), n=1)
        raise ConfigError(
            f"--encoder {encoder}: unknown speaker encoder; "
            + (f"did you mean {close[0]!r}? " if close else "")
            + f"encoders: {', '.join(SPEAKER_ENCODERS.names())}"
        )
    corpus = screen_corpus(corpus, encoder)
    languages = {}
    for lang in corpus.languages():
        ids = {s.id for s in corpus.speakers.values() if s.language == lang}
        utts = [u for u in corpus.utterances if u.speaker in ids]
        subj = {s.id for s in corpus.subjects(lang)}
        languages[lang] = {
            "subjects": len(subj),
            "negatives": len(corpus.negatives(lang)),
            "utterances": len(utts),
            "subject_utterances": sum(u.speaker in subj for u in utts),
            "minutes": round(sum(u.duration for u in utts) / 60, 2),
            "min_utterances_per_subject": min((sum(u.speaker == s for u in utts) for s in subj), default=0),
        }
    stats = {
        "languages": languages,
        "totals": {
            "subjects": len(corpus.subjects()),
            "negatives": len(corpus.negatives()),
            "utterances": len(corpus.utterances),
            "minutes": round(sum(u.duration for u in corpus.utterances) / 60, 2),
        },
        "size_mb": round(folder_size_bytes(corpus.root) / 1e6, 2),
        "encoder": None,
        "eer": None,
        "eer_threshold": None,
        "eer_by_language": {},
    }
    skips = getattr(corpus, "skips", [])
    stats["skipped"] = [{"file": _relative(s.item, corpus.root), "reason": s.reason} for s in skips]
    names_from: dict[str, list[str]] = {}
    for s in corpus.subjects():
        if s.name_from:
            names_from.setdefault(s.name_from, []).append(s.id)
    stats["names_from"] = names_from
    if corpus.descriptions_dir is not None:  # a malformed file stops the build: say so here too
        from palm_bench.descriptions import load_human_descriptions

        hds = load_human_descriptions(Path(corpus.descriptions_dir) / "human_descriptions.yaml")
        stats["subjects_with_hd"] = sum(bool(hds.get(s.id)) for s in corpus.subjects())
    if scene_config is not None:
        from palm_bench.scene_needs import dropped_records, language_split

        stats["dropped_speakers"] = dropped_records(language_split(corpus, scene_config)[1], scene_config)
        stats["scene_mix"] = scene_mix(corpus, scene_config)
    if with_eer and len(corpus.subjects()) < 2:
        stats["eer_note"] = f"EER needs utterances of at least two subjects; the corpus has {len(corpus.subjects())}"
    elif with_eer:
        stats.update(subject_eer(corpus, encoder=encoder, cache_dir=cache_dir))
    return stats


def _relative(file, root) -> str:
    try:
        return Path(file).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(file)


def scene_mix(corpus: Corpus, cfg) -> dict:
    """Per language with subjects (of ``cfg.languages``): what ``cfg``'s scene mix needs, what
    the corpus has and whether it fits (see :mod:`palm_bench.scene_needs`)."""
    from palm_bench.scene_needs import scene_needs

    out = {}
    for lang in sorted({s.language for s in corpus.subjects() if s.language in cfg.languages}):
        subjects = len(corpus.subjects(lang))
        need = scene_needs(cfg, lang, subjects, sum(bool(s.profile) for s in corpus.subjects(lang)))
        voices = sum(s.language == lang for s in corpus.speakers.values())
        out[lang] = {
            "needs_subjects": need.subjects,
            "needs_speakers": need.speakers,
            "subjects": subjects,
            "speakers": voices,
            "fits": subjects >= need.subjects and voices >= need.speakers,
        }
    return out


def subject_eer(corpus: Corpus, encoder: str = DEFAULT_SPEAKER_ENCODER, cache_dir: str | Path | None = None) -> dict:
    """EER of same-subject vs different-subject utterance pairs, pooled and per language."""
    enc = get_speaker_encoder(encoder, cache_dir=cache_dir)
    subjects = {s.id: s for s in corpus.subjects()}
    utts = [u for u in corpus.utterances if u.speaker in subjects]
    if len({u.speaker for u in utts}) < 2:
        raise ConfigError(
            f"{corpus.root}: EER needs utterances of at least two subjects, the corpus has "
            f"{len({u.speaker for u in utts})}; run corpus-info with --no-eer"
        )
    embs = enc.embed([u.load_audio() for u in utts], names=[str(u.audio) for u in utts])
    labels = np.array([u.speaker for u in utts])
    eer, threshold = equal_error_rate(*pair_scores(embs, labels))
    by_lang = {}
    for lang in corpus.languages():
        mask = np.array([subjects[u.speaker].language == lang for u in utts])
        if len(set(labels[mask])) >= 2:
            by_lang[lang] = round(equal_error_rate(*pair_scores(embs[mask], labels[mask]))[0], 4)
    return {"encoder": enc.name, "eer": round(eer, 4), "eer_threshold": round(threshold, 4), "eer_by_language": by_lang}


def format_table(stats: dict) -> str:
    """A readable table of :func:`corpus_statistics`."""
    rows = [("language", "subjects", "negatives", "utterances", "minutes")]
    for lang, s in stats["languages"].items():
        rows.append((lang, s["subjects"], s["negatives"], s["utterances"], f"{s['minutes']:.1f}"))
    t = stats["totals"]
    rows.append(("all", t["subjects"], t["negatives"], t["utterances"], f"{t['minutes']:.1f}"))
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).rjust(w) for c, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines.append("")
    lines.append(f"shipped size: {stats['size_mb']:.1f} MB")
    if stats.get("skipped"):
        first = stats["skipped"][0]
        lines.append(f"skipped: {len(stats['skipped'])} (e.g. {first['file']}: {first['reason']}; all with --json)")
    for source, ids in (stats.get("names_from") or {}).items():
        lines.append(f"names: {len(ids)} subject(s) without a name, called by their {source}: {', '.join(ids)}")
    for lang, d in (stats.get("dropped_speakers") or {}).items():
        lines.append(
            f"left out of a build: {len(d['speakers'])} speaker(s) of language {lang} ({d['reason']}): "
            + ", ".join(d["speakers"])
        )
    for lang, m in (stats.get("scene_mix") or {}).items():
        have = f"{lang}: {m['speakers']} voices ({m['subjects']} subjects)"
        need = f"{m['needs_speakers']} voices / {m['needs_subjects']} subjects needed"
        lines.append(
            f"scene mix: {have} " + (f"fits ({need})" if m["fits"] else f"< {need} (see README: speaker counts)")
        )
    if stats.get("eer_note"):
        lines.append(stats["eer_note"])
    if stats.get("eer") is not None:
        per = ", ".join(f"{k} {v:.2%}" for k, v in stats["eer_by_language"].items())
        lines.append(
            f"subject EER ({stats['encoder']}): {stats['eer']:.2%} (by language: {per}), "
            f"threshold cos {stats['eer_threshold']:.3f}"
        )
    return "\n".join(lines)
