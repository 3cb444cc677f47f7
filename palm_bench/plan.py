"""From a corpus and a build config to the full plan of a PALM-Bench build (no audio yet).

``make_plan`` loads the corpus, splits its clips (no clip in two splits), embeds every clip with
the speaker encoder, grades negatives per split against each subject's train-split reference,
measures the subjects' acoustic descriptions and plans every composed audio. ``BuildPlan.rows``
turns one planned audio into its dataset rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from lalm_eval.audio.speaker import EMBEDDINGS_FOLDER, get_speaker_encoder
from lalm_eval.errors import ConfigError
from lalm_eval.hub.readers import skip_records
from palm_bench.config import BuildConfig
from palm_bench.corpus.folder import check_names
from palm_bench.corpus.screen import screen_corpus
from palm_bench.corpus.types import Corpus
from palm_bench.descriptions import acoustic_descriptions, llm_human_descriptions, load_human_descriptions
from palm_bench.negatives import build_pool, embed_clips, reference_embeddings
from palm_bench.samples import AudioPlan, SplitPlanner
from palm_bench.scene_needs import check_speaker_counts, dropped_records, language_split
from palm_bench.splits import planned_splits, split_clips

log = logging.getLogger(__name__)
STRATUM_ORDER = {"hard": 0, "semi-hard": 1, "medium": 2, "easy": 3}


def load_corpus_by_kind(kind: str, corpus_dir: str | None, options: dict) -> tuple[Corpus, Path | None]:
    """The corpus (reader ``kind`` of :data:`palm_bench.corpus.READERS`) and the folder holding
    its ``human_descriptions.yaml`` (if any)."""
    from palm_bench.corpus import read_corpus

    corpus = read_corpus(kind, corpus_dir, options)
    return corpus, corpus.descriptions_dir


@dataclasses.dataclass
class BuildPlan:
    config: BuildConfig
    corpus: Corpus
    audios: dict[str, list[AudioPlan]]
    descriptions: dict[str, dict[str, str]]  # subject id -> {"hd", "ad"}
    stats: dict
    #: ``{split: {speaker_id: [clips]}}`` from :func:`palm_bench.splits.split_clips` (the one split
    #: every config of the build uses: the task configs' audios and the ``enrollment`` clips)
    splits: dict = dataclasses.field(default_factory=dict)

    def rows(self, plan: AudioPlan, spans, duration: float):
        """The dataset rows (without the audio column) of one planned audio."""
        speakers = self.corpus.speakers
        target = speakers[plan.target]
        name = lambda sid: speakers[sid].name or ""  # noqa: E731 - negatives have no name
        span_rows = [
            {
                "speaker_id": s.speaker,
                "name": name(s.speaker),
                "clip_id": s.clip,
                "start": round(s.start, 3),
                "end": round(s.end, 3),
            }
            for s in spans
        ]
        for j, qa in enumerate(plan.qas):
            worst = _hardest(plan.negatives, qa.absent)
            label = "positive" if not qa.absent else "negative" if not qa.present else "mixed"
            yield {
                "id": f"{plan.key}-{j}",
                "audio_id": plan.key,
                "task": plan.task,
                "language": plan.language,
                "duration": round(duration, 3),
                "question": qa.question,
                "answer": qa.answer,
                "template_id": qa.template_id,
                "n_speakers": len(plan.clips),
                "target": target.name or "",
                "target_id": plan.target,
                "queried": [name(s) for s in qa.queried],
                "queried_ids": list(qa.queried),
                "present": [name(s) for s in qa.present],
                "absent": [name(s) for s in qa.absent],
                "label": label,
                "negative_stratum": worst["stratum"] if worst else "",
                "negative_similarity": worst["similarity"] if worst else None,
                "negatives": plan.negatives,
                "augmentation": json.dumps(plan.augmentation, sort_keys=True) if plan.augmentation else "",
                "source_clips": [c.id for c in plan.clips],
                "speakers": span_rows,
                "subjects": [
                    {"id": s, "name": name(s), **self.descriptions.get(s, {"hd": "", "ad": ""})} for s in qa.queried
                ],
                "profile": format_profile(target.profile, plan.language) if plan.task == "reasoning" else "",
                "evidence": [{"field": f, "value": v} for f, v in plan.evidence.items()],
                "caption_reference": qa.reference,
            }


def _hardest(negatives: list[dict], absent_ids: list[str]) -> dict | None:
    relevant = [n for n in negatives if n["for_subject"] in absent_ids]
    return min(relevant, key=lambda n: (STRATUM_ORDER[n["stratum"]], -n["similarity"])) if relevant else None


def format_profile(profile: dict | None, language: str) -> str:
    if not profile:
        return ""
    from palm_bench.samples import answer_data

    labels = answer_data()["profile_labels"][language]
    lines = [f"{labels[k]}: {profile[k]}" for k in ("age", "occupation", "personality") if k in profile]
    interests = profile.get("interests", {})
    lines.append(f"{labels['interests']}:")
    lines += [f"- {labels.get(k, k)}: {v}" for k, v in interests.items()]
    lines += [f"{labels[k]}: {profile[k]}" for k in ("speaking_style", "intro") if k in profile]
    return "\n".join(lines)


def fill_missing_profiles(data: Corpus, llm, work_dir: Path | None) -> tuple[Corpus, int]:
    """Profiles for subjects without one, generated by ``llm`` from their transcripts (§4.1)
    and cached by transcript content; returns the corpus and how many were generated."""
    missing = [s for s in data.subjects() if not s.profile]
    if not missing or llm is None:
        return data, 0
    from palm_bench.profiles import generate_profiles

    transcripts = {s.id: [u.text for u in data.utterances if u.speaker == s.id] for s in missing}
    key = hashlib.sha256(json.dumps([llm.settings, transcripts], sort_keys=True, default=str).encode()).hexdigest()
    path = work_dir / "profiles" / f"{key}.json" if work_dir else None
    if path is not None and path.is_file():
        profiles = json.loads(path.read_text(encoding="utf-8"))
    else:
        profiles = generate_profiles(llm, missing, transcripts)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(profiles, ensure_ascii=False, indent=1), encoding="utf-8")
    speakers = {sid: dataclasses.replace(s, profile=profiles.get(sid, s.profile)) for sid, s in data.speakers.items()}
    return dataclasses.replace(data, speakers=speakers), len(profiles)


@contextlib.contextmanager
def _beside(fn, *args):
    """Start ``fn(*args)`` in a second (spawned) process; yields a function that waits for its
    result. The plan measures the subjects' acoustic descriptions this way while it embeds the
    clips: librosa's pitch tracking (its numba code compiled on first use in an environment, about
    20 s) and the embeddings each keep a core busy for about as long, and neither reads the other's
    results. The result is the same as a call here. Where the process cannot start or fails (an
    error, a killed worker), the call is made here, so an error is raised by the same code with its
    own message; leaving the block early (the plan failed) stops the process."""
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        job = pool.submit(fn, *args)
    except Exception as exc:  # noqa: BLE001 - no second process: the call runs here
        log.info("%s runs in this process (no second process: %s)", fn.__name__, exc)
        job = None

    def result():
        if job is not None:
            try:
                return job.result()
            except Exception as exc:  # noqa: BLE001 - made again here, where an error keeps its message
                log.info("%s runs again in this process (%s: %s)", fn.__name__, type(exc).__name__, exc)
        return fn(*args)

    try:
        yield result
    finally:
        if job is not None and not job.done():  # nobody waits for it any more
            for process in list((getattr(pool, "_processes", None) or {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)


def make_plan(
    cfg: BuildConfig,
    corpus: str = "embedded",
    corpus_dir: str | None = None,
    corpus_options: dict | None = None,
    work_dir: Path | None = None,
    llm=None,
) -> BuildPlan:
    """``llm`` (a :class:`lalm_eval.llm.TextLLM`) writes profiles for subjects that lack one;
    without it such subjects get no reasoning samples (counted in ``stats``)."""
    t0 = time.perf_counter()
    data, hd_dir = load_corpus_by_kind(corpus, corpus_dir, corpus_options or {})
    hds = load_human_descriptions(hd_dir / "human_descriptions.yaml") if hd_dir else {}  # errors before embedding
    data = screen_corpus(data, cfg.encoder)  # what the build refuses: counted skips, before any planning
    keep, dropped = language_split(data, cfg)
    check_names(data.root, {sid: s for sid, s in data.speakers.items() if sid in keep})
    data, n_generated = fill_missing_profiles(data, llm, work_dir)
    for language, ids in sorted(dropped.items()):
        log.warning(
            "%d speaker(s) of language %r left out (languages=%s): %s",
            len(ids),
            language,
            list(cfg.languages),
            ", ".join(ids),
        )
    if not data.subjects():
        raise ConfigError(
            f"{data.root}: the corpus has no subject, only negatives, so there is nobody to ask about; "
            "give speakers 'role: subject' in speakers.yaml (or --corpus-option role=subject, the default)"
        )
    if not any(s.id in keep for s in data.subjects()):
        raise ConfigError(
            f"{data.root}: no subject left in languages {list(cfg.languages)}, the corpus has subjects in "
            f"{sorted({s.language for s in data.subjects()}) or 'no language'} "
            f"(PALM-Bench's templates exist for en and zh); set --set 'languages=[en]' or give "
            "speakers a 'language' in speakers.yaml"
        )
    data = dataclasses.replace(data, utterances=[u for u in data.utterances if u.speaker in keep])
    speaker_counts = check_speaker_counts(data, cfg, keep)
    wanted = planned_splits(cfg)
    splits = split_clips(
        data,
        cfg.test_fraction,
        cfg.seed,
        validation_fraction=cfg.validation_fraction if "validation" in wanted else 0.0,
    )
    subjects = {s.id for s in data.subjects() if s.id in keep}
    references = {s: splits["train"][s] for s in subjects}
    encoder = get_speaker_encoder(
        cfg.encoder, cache_dir=work_dir / EMBEDDINGS_FOLDER if work_dir else None, **cfg.encoder_options
    )
    with _beside(acoustic_descriptions, data, references, work_dir, cfg.ad_max_seconds) as measured:
        embeddings = embed_clips(encoder, data.utterances)
        ads = measured()
    refs = reference_embeddings(references, embeddings)
    if llm is not None:
        hds.update(
            llm_human_descriptions(
                data, references, llm, sorted(s for s in subjects if not hds.get(s)), work_dir, cfg.ad_max_seconds
            )
        )
    if cfg.description_model:  # the paper's setting: HD and AD written by an audio model (Table 23)
        from palm_bench.model_descriptions import model_descriptions

        written, description_info = model_descriptions(cfg, data, references, work_dir)
        hds.update({s: d["hd"] for s, d in written.items()})
        ads.update({s: d["ad"] for s, d in written.items()})
    else:
        description_info = {"ad": "measured", "hd": "data" if llm is None else "data, else text LLM"}
    descriptions = {s: {"hd": hds.get(s, ""), "ad": ads.get(s, "")} for s in subjects}
    audios, stats = (
        {},
        {"encoder": encoder.name, "strata_fallbacks": {}, "cut_points": {}, "descriptions": description_info},
    )
    for split in wanted:
        pool = build_pool(data, splits[split], refs, embeddings, cfg.negative_strata)
        planner = SplitPlanner(data, cfg, split, splits[split], pool)
        audios[split] = planner.plan()
        stats.setdefault("skipped_reasoning_slots", {})[split] = planner.skipped_reasoning
        stats["strata_fallbacks"][split] = pool.fallbacks
        stats["cut_points"][split] = {s: [round(c, 4) for c in cuts] for s, cuts in pool.cut_points.items()}
    from palm_bench.caption_references import apply_caption_references

    stats["caption_reference"] = apply_caption_references(audios, data, cfg.caption_reference, llm, work_dir, cfg.seed)
    # source clips per split (validation: held out of the speakers' training clips, palm_bench.splits)
    stats["clips_per_split"] = {split: sum(len(clips) for clips in splits[split].values()) for split in wanted}
    stats["skipped_source_items"] = data.n_skipped
    from palm_bench.corpus_info import _relative

    stats["skipped_source"] = skip_records(data.skips, lambda item: _relative(item, data.root))
    stats["dropped_speakers"] = dropped_records(dropped, cfg)
    stats["speakers_per_language"] = speaker_counts
    stats["generated_profiles"] = n_generated
    stats["subjects_without_hd"] = sorted(s for s in subjects if not descriptions[s]["hd"])
    stats["subjects_without_profile"] = sorted(s.id for s in data.subjects() if s.id in keep and not s.profile)
    if stats["subjects_without_profile"]:
        log.warning(
            "no profile for %d subject(s) %s: their reasoning samples are skipped (pass an LLM to generate profiles)",
            len(stats["subjects_without_profile"]),
            stats["subjects_without_profile"],
        )
    stats["plan_seconds"] = round(time.perf_counter() - t0, 2)
    log.info("planned %s audios (%s)", {k: len(v) for k, v in audios.items()}, stats["encoder"])
    return BuildPlan(cfg, data, audios, descriptions, stats, splits=splits)
