"""``msu-bench build --mcq-dir RELEASE``: the authors' public release alone, as config ``mcq`` of a
Hub-style folder (Parquet + card + ``build_info.json`` with what was kept and skipped, and why),
written as a whole (:func:`lalm_eval.hub.atomic.staged_build`: a temporary sibling renamed into
place when complete), so an interrupted import never leaves a half-written folder."""

from __future__ import annotations

import time

from lalm_eval.hub.atomic import stage_report, staged_build
from lalm_eval.hub.card import feature_rows, front_matter, render_card
from lalm_eval.hub.export import export_builders, finish_folder
from lalm_eval.resources import hub_cards_dir
from msu_bench.mcq import check_kept, import_summary, read_mcq_release, release_data

DEFAULT_OUT = "msu-bench-mcq"  # the msu_mcq tasks' dataset_path


def card_context(summary: dict) -> dict:
    """What ``hub_cards/_msu_mcq_import.md.j2`` needs."""
    data = release_data()
    return {
        "mcq": summary,
        "mcq_tasks": [{"code": c, **t} for c, t in data["tasks"].items()],
        "mcq_capabilities": data["capabilities"],
    }


def build_mcq(out_dir, mcq_dir, repo_id: str | None = None, languages=("cn", "en")) -> dict:
    """Import the release under ``mcq_dir`` into ``out_dir/mcq/``; returns build_info (and
    ``folder``: what was replaced, kept and cleaned up). ``out_dir`` is checked before the release
    is read (a :class:`~lalm_eval.errors.ConfigError` naming ``--out``)."""
    with staged_build(out_dir) as stage:
        info = _build_mcq(stage, mcq_dir, repo_id, languages)
    info["folder"] = stage_report(stage)
    return info


def _build_mcq(stage, mcq_dir, repo_id, languages) -> dict:
    from msu_bench.mcq_builder import CITATION, FEATURES, MsuMcq

    out_dir, t0 = stage.path, time.perf_counter()
    report = read_mcq_release(mcq_dir, languages)  # read once: the builder writes this report's records
    summary = import_summary(report)
    check_kept(summary, mcq_dir)  # before any audio is read
    files, n = export_builders(
        lambda name, cache: MsuMcq(
            config_name=name, data_dir=str(mcq_dir), cache_dir=cache, languages=tuple(languages), plan=report
        ),
        ["mcq"],
        out_dir,
        lambda built: len(built["mcq"]["test"]),
        work_dir=out_dir,
    )
    stats = {"mcq_questions": n, "mcq_import": summary}
    context = {
        "configs_yaml": front_matter(
            files,
            root=out_dir,
            default_config="mcq",
            license="cc-by-nc-4.0",
            language=sorted(summary["by_language"]) or ["zh", "en"],
            task_categories=["question-answering"],
            tags=["multi-speaker", "conversation", "audio-language-models", "multiple-choice"],
            pretty_name="MSU-Benchmark (multiple choice)",
        ),
        "features": feature_rows(FEATURES),
        "citation": CITATION,
        "repo_id": repo_id or DEFAULT_OUT,
        "mcq_dir": str(mcq_dir),
        **card_context(summary),
    }
    info = {
        "source": "msu-release",
        "mcq_dir": str(mcq_dir),
        "languages": list(languages),
        "stats": stats,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    return finish_folder(out_dir, render_card("msu_mcq.md.j2", context, templates=hub_cards_dir()), info, stage=stage)
