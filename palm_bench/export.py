"""``palm-bench build``: run the builder for each task config and export Parquet + card.

Output layout (what ``load_dataset(out_dir, "<config>")`` and the Hub expect)::

    out_dir/README.md                      card with the `configs:` block (+ `all` = the union)
    out_dir/<task>/<split>-0000i-of-0000N.parquet
    out_dir/enrollment/train-0000i-of-0000N.parquet   subjects' train-split clips (not in `all`)
    out_dir/build_info.json                config, statistics, plan log, timings, shard hashes,
                                           kept_files (files of an earlier folder no build wrote)

The folder is written as a whole (:func:`lalm_eval.hub.atomic.staged_build`): into
``<out_dir>.tmp-<pid>``, renamed into place when complete, an earlier build replaced only then.
So ``load_dataset(out_dir, ...)`` never meets a half-built folder, even after ``kill -9``; the
next build cleans up what an interrupted one left.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import yaml

from lalm_eval.hub.atomic import stage_report, staged_build
from lalm_eval.hub.card import feature_rows, front_matter, render_card
from lalm_eval.hub.export import build_progress, check_num_proc, export_builders, finish_folder, with_union_config
from lalm_eval.resources import hub_cards_dir
from palm_bench.builder import CITATION, FEATURES, TASKS, PalmBench
from palm_bench.config import BuildConfig
from palm_bench.enrollment_builder import CONFIG as ENROLLMENT
from palm_bench.enrollment_builder import FEATURES as ENROLLMENT_FEATURES
from palm_bench.enrollment_builder import PalmEnrollment, check_no_leak
from palm_bench.plan import make_plan
from palm_bench.stats import COLUMNS, collect

log = logging.getLogger(__name__)

DEFAULT_OUT = "palm-bench"  # so that load_dataset("palm-bench", ...) finds it from the same folder
EMBEDDED_NOTE = (
    "**Source: the lalm-eval embedded corpus.** All speech is synthetic: 18 fictional subjects "
    "(12 English, 6 Mandarin) and 14 negative-pool voices rendered by lalm-eval with Debian's "
    "espeak-ng, flite and festival voices (some pitch/tempo-shifted), from text written for the "
    "project. Profiles and human descriptions are authored; acoustic descriptions are measured "
    "from the audio. Use it to exercise pipelines and compare systems; it is not natural speech."
)
EMBEDDED_LICENCE = (
    "Text, profiles and rendered audio: written and rendered for lalm-eval (same "
    "licence as the package). Voices: espeak-ng (GPL-3.0), flite and festival "
    "voices (BSD-style CMU/Edinburgh licences)."
)
CORPUS_LICENCE = {
    "ncssd": "Built from NCSSD (CC-BY-NC-4.0, gated): non-commercial use; cite the NCSSD authors.",
    "folder": "Built from a user-supplied corpus: its licence applies.",
}


def build(
    out_dir: str | Path,
    cfg: BuildConfig,
    corpus: str = "embedded",
    corpus_dir: str | None = None,
    corpus_options: dict | None = None,
    work_dir: str | Path | None = None,
    tasks: tuple[str, ...] = TASKS,
    repo_id: str | None = None,
    llm=None,
    num_proc: int | None = None,
    preset: str | None = None,
) -> dict:
    """Build, export and describe; returns the ``build_info`` dictionary. ``llm`` (a
    :class:`lalm_eval.llm.TextLLM`) writes the profiles of subjects that have none. ``num_proc``
    renders each split in that many processes (same shards for any value). The paper's steps the
    build replaces are checked first (:func:`palm_bench.deviations.resolve`; ``preset``, the name
    the config came from, is named in its error and the card) and listed in the card and the
    info's ``deviations``.

    ``out_dir`` is checked first (a file, under a file, not writable, or a folder of other files
    than a build's: a :class:`~lalm_eval.errors.ConfigError` naming ``--out``), then the build
    writes into a temporary sibling that replaces it when complete (module docstring); the
    returned info's ``folder`` says what was replaced, kept and cleaned up."""
    from lalm_eval.audio.io import require_codec
    from palm_bench.deviations import resolve

    check_num_proc(num_proc)  # before planning
    # the paper's steps this build cannot do, before planning (palm_bench.deviations); the config
    # that runs has this project's replacement for each allowed one
    cfg, deviations, followed = resolve(cfg, llm, **({"where": f"--preset {preset}"} if preset else {}))
    with staged_build(out_dir) as stage:  # --out checked, leftovers of interrupted builds cleaned up
        require_codec()  # before planning: the export encodes every clip through torchcodec
        info = _build(
            stage,
            Path(out_dir),
            cfg,
            corpus,
            corpus_dir,
            corpus_options,
            work_dir,
            tasks,
            repo_id,
            llm,
            num_proc,
            {"preset": preset, "deviations": deviations, "paper_steps_followed": followed},
        )
    info["folder"] = stage_report(stage)
    return info


def _build(
    stage, out_dir: Path, cfg, corpus, corpus_dir, corpus_options, work_dir, tasks, repo_id, llm, num_proc, paper
):
    t0 = time.perf_counter()
    work = Path(work_dir) if work_dir else None
    plan = make_plan(cfg, corpus=corpus, corpus_dir=corpus_dir, corpus_options=corpus_options, work_dir=work, llm=llm)
    t_plan = time.perf_counter()
    planned = {a.task for audios in plan.audios.values() for a in audios}
    say = build_progress("palm-bench build")
    say(f"planned {sum(map(len, plan.audios.values()))} clips for {len(planned)} task(s) in {t_plan - t0:.0f} s")
    empty = [t for t in tasks if t not in planned]
    if empty:
        log.warning("no samples planned for %s: those configs are not written", empty)

    def make_builder(config: str, cache_dir: str):
        cls = PalmEnrollment if config == ENROLLMENT else PalmBench
        # planned once for all configs (same seed, same plan), handed to each builder
        return cls(
            config_name=config,
            cache_dir=cache_dir,
            plan=plan,
            build=cfg,
            corpus=corpus,
            corpus_dir=corpus_dir,
            corpus_options=corpus_options or {},
            work_dir=str(work) if work else None,
        )

    def statistics(built: dict) -> dict:
        enrollment = built.get(ENROLLMENT)
        built = {name: dd for name, dd in built.items() if name != ENROLLMENT}
        splits = sorted({split for dd in built.values() for split in dd})
        stats = collect({split: _split_rows(built, split) for split in splits})
        if enrollment is not None:
            stats["enrollment"] = _enrollment_stats(enrollment["train"], built, out_dir)
        return stats

    configs = [t for t in tasks if t in planned] + ([ENROLLMENT] if cfg.enrollment else [])
    files, stats = export_builders(
        make_builder, configs, stage.path, statistics, num_proc=num_proc, say=say, work_dir=stage.path
    )
    t_export = time.perf_counter()
    enrollment_files = files.pop(ENROLLMENT, None)
    files = with_union_config(files)  # `all` = the QA configs only
    if enrollment_files is not None:
        files[ENROLLMENT] = enrollment_files
    context = _card_context(plan, cfg, files, stats, corpus, repo_id, stage.path)
    card = render_card("palm.md.j2", {**context, **paper}, templates=hub_cards_dir())
    info = {
        "config": cfg.to_dict(),
        **paper,
        "corpus": corpus,
        "corpus_dir": corpus_dir,
        "stats": stats,
        "plan": plan.stats,
        "empty_configs": empty,
        "llm": llm.settings if llm is not None else None,
        "seconds": {
            "plan": round(t_plan - t0, 2),
            "generate_and_export": round(t_export - t_plan, 2),
            "total": round(time.perf_counter() - t0, 2),
        },
    }
    info = finish_folder(stage.path, card, info, stage=stage)
    qa_bytes = sum((stage.path / rel).stat().st_size for rel in info["shards"] if not rel.startswith(f"{ENROLLMENT}/"))
    info["bytes_per_sample"] = round(qa_bytes / max(stats["total_samples"], 1))  # QA rows only
    return info


def _split_rows(datasets_by_task: dict, split: str):
    for dd in datasets_by_task.values():
        if split in dd:
            yield from dd[split].select_columns(COLUMNS)


def _enrollment_stats(rows, built: dict, where) -> dict:
    """Counts of the ``enrollment`` rows, after the leak check against every test and
    validation row."""
    held_out = [dd[split]["source_clips"] for dd in built.values() for split in ("validation", "test") if split in dd]
    check_no_leak(rows["clip_id"], (clips for column in held_out for clips in column), where)
    return {
        "clips": len(rows),
        "subjects": len(set(rows["subject_id"])),
        "hours": round(sum(rows["duration"]) / 3600, 3),
    }


def _card_context(plan, cfg: BuildConfig, files: dict, stats: dict, corpus: str, repo_id: str | None, out_dir) -> dict:
    languages = sorted({a.language for audios in plan.audios.values() for a in audios})
    return {
        "configs_yaml": front_matter(
            files,
            root=out_dir,
            default_config="recognition" if "recognition" in files else next(iter(files)),
            license="other",
            language=languages,
            task_categories=["audio-classification", "automatic-speech-recognition", "question-answering"],
            tags=[
                "speaker-recognition",
                "personalization",
                "audio-language-models",
                "synthetic" if corpus == "embedded" else "speech",
            ],
            pretty_name="PALM-Bench",
        ),
        "corpus_name": "embedded corpus" if corpus == "embedded" else corpus,
        "corpus_note": EMBEDDED_NOTE if corpus == "embedded" else f"Built from the `{corpus}` corpus.",
        "licence_note": EMBEDDED_LICENCE if corpus == "embedded" else CORPUS_LICENCE.get(corpus, ""),
        "stats": stats,
        "plan": plan.stats,
        "encoder": plan.stats["encoder"],
        "features": feature_rows(FEATURES),
        "enrollment": stats.get("enrollment"),
        "enrollment_features": feature_rows(ENROLLMENT_FEATURES),
        "audio_format": cfg.audio_format,
        "templates_per_audio": cfg.templates_per_audio,
        "build_yaml": yaml.safe_dump(cfg.to_dict(), sort_keys=False, allow_unicode=True).rstrip(),
        "repo_id": repo_id or DEFAULT_OUT,
        "citation": CITATION,
        "default_config": "recognition" if "recognition" in files else next(iter(files)),
    }
