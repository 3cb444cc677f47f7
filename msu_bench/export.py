"""``msu-bench build``: run the builder per tier and export Parquet + card (``all`` = union).

The folder is written as a whole (:func:`lalm_eval.hub.atomic.staged_build`): into a temporary
sibling, renamed into place when complete, an earlier build replaced only then, so
``load_dataset(out_dir, ...)`` never meets a half-built folder; the next build cleans up what an
interrupted one left.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict

import yaml

from lalm_eval.hub.atomic import stage_report, staged_build
from lalm_eval.hub.card import feature_rows, front_matter, render_card
from lalm_eval.hub.export import build_progress, check_num_proc, export_builders, finish_folder, with_union_config
from lalm_eval.resources import hub_cards_dir
from msu_bench.builder import CITATION, FEATURES, TIERS, MsuBench
from msu_bench.plan import MsuConfig, make_plan
from msu_bench.taxonomy import load_taxonomy

log = logging.getLogger(__name__)
DEFAULT_OUT = "msu-bench"
EMBEDDED_NOTE = (
    "**Source: the lalm-eval embedded conversations.** All speech is synthetic: scripted "
    "English and Mandarin conversations of 2-4 speakers written for lalm-eval and rendered with "
    "Debian's espeak-ng, flite and festival voices; emotions are rendered as tempo, pitch and "
    "loudness changes, interruptions as overlapping audio. Annotations (emotions, roles, "
    "outcomes, cause links) are authored with the script, times are measured from the audio."
)
LICENCES = {
    "embedded": "Scripts, annotations and rendered audio: lalm-eval (same licence as the package); voices "
    "from espeak-ng (GPL-3.0), flite and festival (BSD-style CMU/Edinburgh licences).",
    "alimeeting": "AliMeeting: CC BY-SA 4.0.",
    "chime6": "CHiME-6: see the CHiME-5/6 licence (non-commercial).",
    "magicdata": "MagicData conversational corpora: see the MagicData licence.",
    "rttm": "User data: its licence applies.",
}


def statistics(built: dict) -> dict:
    by = defaultdict(lambda: {"questions": 0, "segments": set()})
    mcq = {name: len(dd["test"]) for name, dd in built.items() if name not in TIERS}
    for dd in (dd for name, dd in built.items() if name in TIERS):
        for row in dd["test"].select_columns(["segment_id", "tier", "capability", "task_id", "language", "duration"]):
            for key in (
                ("tier", row["tier"]),
                ("capability", row["capability"]),
                ("task", row["task_id"]),
                ("language", row["language"]),
            ):
                by[key]["questions"] += 1
                by[key]["segments"].add(row["segment_id"])
    table = defaultdict(dict)
    for (dim, value), cell in sorted(by.items()):
        table[dim][value] = {"questions": cell["questions"], "segments": len(cell["segments"])}
    return {
        "by": dict(table),
        "total_questions": sum(c["questions"] for c in table.get("tier", {}).values()),
        "mcq_questions": mcq.get("mcq", 0),
    }


def build(
    out_dir,
    cfg: MsuConfig,
    corpus: str = "embedded",
    corpus_dir: str | None = None,
    corpus_options: dict | None = None,
    repo_id: str | None = None,
    llm=None,
    mcq_dir: str | None = None,
    num_proc: int | None = None,
    mcq_report=None,
) -> dict:
    """Build and export; ``llm`` (a TextLLM) asks the tasks the annotation cannot answer;
    ``mcq_dir`` (a local copy of the authors' public release) adds the ``mcq`` config (``mcq_report``:
    that release as :func:`msu_bench.mcq.read_mcq_release` read it, when the caller did; else read here, once);
    ``num_proc`` writes each tier's rows in that many processes (same shards for any value).
    ``out_dir`` is checked before any work (a :class:`~lalm_eval.errors.ConfigError` naming
    ``--out``); the returned info's ``folder`` says what was replaced, kept and cleaned up."""
    check_num_proc(num_proc)  # before planning
    with staged_build(out_dir) as stage:  # --out checked, leftovers of interrupted builds cleaned up
        info = _build(stage, cfg, corpus, corpus_dir, corpus_options, repo_id, llm, mcq_dir, num_proc, mcq_report)
    info["folder"] = stage_report(stage)
    return info


def _build(stage, cfg, corpus, corpus_dir, corpus_options, repo_id, llm, mcq_dir, num_proc, mcq_report) -> dict:
    from lalm_eval.audio.io import require_codec

    require_codec()  # before planning: the export encodes every clip through torchcodec
    out_dir, t0 = stage.path, time.perf_counter()
    plan = make_plan(cfg, corpus, corpus_dir, corpus_options, llm=llm)
    if mcq_dir and mcq_report is None:
        from msu_bench.mcq import read_mcq_release

        mcq_report = read_mcq_release(mcq_dir)
    taxonomy = load_taxonomy()
    asked_tiers = {taxonomy.task(q.task_id).tier for qs in plan.questions.values() for q in qs}

    def make_builder(tier: str, cache_dir: str):
        if tier == "mcq":
            from msu_bench.mcq_builder import MsuMcq

            return MsuMcq(config_name="mcq", data_dir=mcq_dir, cache_dir=cache_dir, plan=mcq_report)
        return MsuBench(
            config_name=tier,
            cache_dir=cache_dir,
            plan=plan,
            build=cfg,
            corpus=corpus,
            corpus_dir=corpus_dir,
            corpus_options=corpus_options or {},
        )

    configs = [t for t in TIERS if t in asked_tiers] + (["mcq"] if mcq_dir else [])
    files, stats = export_builders(
        make_builder,
        configs,
        out_dir,
        statistics,
        num_proc=num_proc,
        say=build_progress("msu-bench build"),
        work_dir=out_dir,
    )
    tier_files = {k: v for k, v in files.items() if k in TIERS}
    durations = [s.duration for s in plan.segments]
    stats.update(
        {
            "segments": len(plan.segments),
            "segment_seconds": [round(min(durations), 1), round(max(durations), 1)] if durations else [],
            "languages": dict(Counter(s.language for s in plan.segments)),
        }
    )
    mcq_context = {}
    if mcq_dir:  # what the release import kept and skipped, and why: build_info.json and the card
        from msu_bench.mcq import import_summary
        from msu_bench.mcq_export import card_context

        stats["mcq_import"] = import_summary(mcq_report)
        mcq_context = card_context(stats["mcq_import"])
    context = {
        "configs_yaml": front_matter(
            {**with_union_config(tier_files), **{k: v for k, v in files.items() if k not in TIERS}},
            default_config="all",
            root=out_dir,
            license="other",
            language=sorted(stats["languages"]),
            task_categories=["question-answering"],
            tags=["multi-speaker", "conversation", "audio-language-models"],
            pretty_name="MSU-Bench",
        ),
        "corpus": corpus,
        "corpus_note": EMBEDDED_NOTE if corpus == "embedded" else f"Built from `{corpus}`.",
        "licence_note": LICENCES.get(corpus, ""),
        "stats": stats,
        "plan": plan.stats,
        "tasks": taxonomy.tasks,
        "features": feature_rows(FEATURES),
        "citation": CITATION,
        "build_yaml": yaml.safe_dump(cfg.to_dict(), sort_keys=False).rstrip(),
        "repo_id": repo_id or DEFAULT_OUT,
        **mcq_context,
    }
    info = {
        "config": cfg.to_dict(),
        "corpus": corpus,
        "corpus_dir": corpus_dir,
        "stats": stats,
        "plan": plan.stats,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return finish_folder(out_dir, render_card("msu.md.j2", context, templates=hub_cards_dir()), info, stage=stage)
