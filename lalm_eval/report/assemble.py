"""From an :class:`~lalm_eval.evaluation.run.EvalRun` (what :func:`lalm_eval.evaluation.run.evaluate`
returns) to the files a user reads: the results JSON (lm-eval layout), per-task sample logs, a
Markdown report with breakdown tables, and PNG plots."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import TYPE_CHECKING

from lalm_eval.report.results import metric_key, task_entry, timestamp, write_results, write_samples
from lalm_eval.report.tables import _markdown, breakdown

if TYPE_CHECKING:
    from lalm_eval.evaluation.run import EvalRun


def _plain(value):
    """A task config as JSON: ``!function`` references written as in the YAML."""
    from lalm_eval.tasks.loader import FunctionRef

    if isinstance(value, FunctionRef):
        return f"!function {value.spec}"
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def results_document(run: EvalRun, config: dict) -> dict:
    results, configs, versions, n_samples, hib, hashes, errors = {}, {}, {}, {}, {}, {}, {}
    metric_info = {}
    for task in run.tasks:
        r = run.results[task.name]
        metrics = {k: v for k, v in r.summary.items() if not k.endswith(("_stderr", "_ci95"))}
        stderrs = {k[: -len("_stderr")]: v for k, v in r.summary.items() if k.endswith("_stderr")}
        results[task.name] = task_entry(task.alias, metrics, stderrs)
        for name in metrics:  # the 95 % bootstrap interval beside each value
            results[task.name][metric_key(f"{name}_ci95")] = r.summary.get(f"{name}_ci95")
        metric_info[task.name] = r.metrics
        configs[task.name] = _plain(task.config.to_dict())
        versions[task.name] = task.version
        n_samples[task.name] = {
            "original": r.n["original"],
            "effective": r.n["effective"],
            "scored": r.n["scored"],
        }
        hib[task.name] = {m["metric"]: m["higher_is_better"] for m in task.config.metric_list or []}
        hashes[task.name] = task.task_hash
        if r.errors:
            errors[task.name] = r.errors
    groups = {
        g: {"alias": g, **{metric_key(k): v for k, v in e.items() if k != "subtasks"}} for g, e in run.groups.items()
    }
    return {
        "results": results,
        "groups": groups,
        "group_subtasks": {g: e["subtasks"] for g, e in run.groups.items()},
        "configs": configs,
        "versions": versions,
        "n-samples": n_samples,
        "higher_is_better": hib,
        "config": config,
        "task_hashes": hashes,
        "metric_info": metric_info,
        "cache": run.cache,
        "errors": errors,
        "sample_info": {t.name: run.results[t.name].sample_info for t in run.tasks},
        "usage": run.usage,
        "budget": run.budget,
        "model_identity": run.model_identity,
        "adapter_counters": run.adapter_counters,
        "total_evaluation_time_seconds": round(run.seconds, 3),
        "timings": run.timings,
        "date": _dt.datetime.now().timestamp(),
    }


def _fmt(v, ci=None) -> str:
    if v is None:
        return "—"
    return f"{v:.4f}" + (f" [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else "")


def missing_reasons(run: EvalRun) -> dict[str, str]:
    """{metric: why it has no value} over all tasks (e.g. the LLM judge without --judge)."""
    out = {}
    for r in run.results.values():
        for name, info in (r.metrics or {}).items():
            if isinstance(info, dict) and info.get("missing"):
                out.setdefault(name, info["missing"])
    return out


def metric_details(run: EvalRun) -> dict[str, dict[str, str]]:
    """{task: {metric: what its numbers rest on}} for the layouts' footnotes: BERTScore's backbone,
    the judge and its model."""
    out: dict[str, dict[str, str]] = {}
    for task, r in run.results.items():
        for name, info in (r.metrics or {}).items():
            if not isinstance(info, dict):
                continue
            if info.get("backbone"):  # BERTScore: per language, and "not comparable" where so
                from lalm_eval.metrics.bertscore import describe_result

                out.setdefault(task, {})[name] = describe_result(info)
            elif isinstance(info.get("judge"), dict):  # the judge's decoding is part of its score
                from lalm_eval.judges.decoding import describe_judge

                out.setdefault(task, {})[name] = describe_judge(info["judge"], info.get("judge_spread"))
            _classification_detail(out, task, name, info)
    return out


def _classification_detail(out: dict, task: str, name: str, info: dict) -> None:
    """``out[task]["<metric>:error_types"]``: the failed-answer threshold and the classifier of a
    metric that classifies its failures (the error-type layouts' footnote)."""
    from lalm_eval.judges.decoding import describe_classification

    text = describe_classification(info)
    if text:
        out.setdefault(task, {})[f"{name}:error_types"] = text


def _notes(run: EvalRun) -> list[str]:
    """What each metric's numbers rest on: BLEU tokenizers, backbones, judges, failures, agreement."""
    lines = []
    for task in run.tasks:
        for name, info in (run.results[task.name].metrics or {}).items():
            bits = [
                f"{k}: {info[k]}"
                for k in (
                    "signature",
                    "corpus_bleu",
                    "backbone",
                    "not_comparable",
                    "missing",
                    "judge_failures",
                    "judge_cache_hits",
                    "agreement_with_rule_scorer",
                    "error_types",
                )
                if info.get(k)
            ]
            if info.get("failures") and "judge_failures" not in info and not info.get("missing"):
                bits.append(f"unscored samples: {info['failures']}")
            if isinstance(info.get("judge"), dict):
                from lalm_eval.judges.decoding import describe_judge

                bits.append(describe_judge(info["judge"], info.get("judge_spread")))
            if info.get("classify_below") is not None:
                from lalm_eval.judges.decoding import describe_classification

                bits.append(describe_classification(info))
            if bits:
                lines.append(f"- {task.name} · {name}: " + "; ".join(map(str, bits)))
    return lines


def endpoint_notes(endpoints: list[dict]) -> list[str]:
    """The per-endpoint stats of an API adapter with several endpoints (``adapter_counters.endpoints``)."""
    if len(endpoints) < 2:
        return []
    lines = [
        "",
        "### Endpoints",
        "",
        "| endpoint | requests | answered | failures | moved elsewhere | taken out | mean s | p50 s | p95 s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in endpoints:
        lat = e.get("latency_s") or {}
        lines.append(
            f"| {e['url']} | {e['requests']} | {e['answered']} | {e['failures']} | {e['moved_elsewhere']} | "
            f"{e['taken_out']} | "
            + " | ".join(f"{lat[k]:.3f}" if k in lat else "—" for k in ("mean", "p50", "p95"))
            + " |"
        )
    return lines


def run_notes(run: EvalRun) -> list[str]:
    """What the model did not hear, what failed and why, and what the provider billed — per task.

    "Audio heard" appears whenever an adapter reported audio seconds (every adapter with an
    audio limit does), so a 60–120 s MSU run on a 30 s model says how much was cut.
    """
    info = {t.name: run.results[t.name].sample_info or {} for t in run.tasks}
    lines = []
    timed = {k: v for k, v in info.items() if "audio_s" in v}
    if timed:
        lines += [
            "",
            "### Audio heard",
            "",
            "| task | samples | truncated | audio s | heard s | heard % |",
            "|---|---|---|---|---|---|",
        ]
        for name, v in timed.items():
            share = 100 * v["seen_s"] / v["audio_s"] if v["audio_s"] else 100.0
            lines.append(
                f"| {name} | {v['samples_with_audio_info']} | {v['truncated']} | {v['audio_s']:.1f} | "
                f"{v['seen_s']:.1f} | {share:.1f} |"
            )
        if any(v["truncated"] for v in timed.values()):
            lines += [
                "",
                "Truncated samples were scored on what the model heard (long_audio=truncate); "
                "`long_audio=refuse` fails them instead, `chunk` sends the rest as further clips.",
            ]
    left_out = {k: v["excluded"] for k, v in info.items() if v.get("excluded")}
    if left_out:
        lines += [
            "",
            "### Docs the tasks left out (not scored, not in any denominator)",
            "",
            "| task | reason | docs |",
            "|---|---|---|",
        ]
        lines += [f"| {name} | {reason} | {n} |" for name, v in left_out.items() for reason, n in v.items()]
    failed = {k: v["failures"] for k, v in info.items() if v.get("failures")}
    if failed:
        kinds = sorted({k for v in failed.values() for k in v})
        lines += [
            "",
            "### Failures by kind (left out of every mean)",
            "",
            "| task | " + " | ".join(kinds) + " |",
            "|---|" + "---|" * len(kinds),
        ]
        lines += [f"| {name} | " + " | ".join(str(v.get(k, 0)) for k in kinds) + " |" for name, v in failed.items()]
    billed = {k: v for k, v in info.items() if v.get("usage") or v.get("model_ids")}
    if billed:
        fields = sorted({f for v in billed.values() for f in v.get("usage", {})})
        lines += [
            "",
            "### Provider usage",
            "",
            "| task | " + " | ".join(fields) + " | cost USD | model ids |",
            "|---|" + "---|" * (len(fields) + 2),
        ]
        for name, v in billed.items():
            cost = f"{v['cost_usd']:.4f}" if "cost_usd" in v else "—"
            lines.append(
                f"| {name} | "
                + " | ".join(str(v.get("usage", {}).get(f, 0)) for f in fields)
                + f" | {cost} | {', '.join(v.get('model_ids', [])) or '—'} |"
            )
        cached = (run.usage or {}).get("usage_cached") or {}
        if cached:
            lines += [
                "",
                "Answers served by the response cache were paid for by an earlier run: "
                + ", ".join(f"{k} {v}" for k, v in sorted(cached.items()))
                + " (not in the table).",
            ]
        ids = (run.usage or {}).get("model_ids", [])
        if len(ids) > 1:
            lines += ["", f"**The provider answered with {len(ids)} different model ids: {', '.join(ids)}.**"]
    lines += endpoint_notes((run.adapter_counters or {}).get("endpoints") or [])
    budget = run.budget
    if budget:
        lines += [
            "",
            f"Budget: --max_cost {budget['max_cost_usd']} USD, spent {budget['spent_usd']:.4f} USD; "
            f"{budget['not_run']} requests not run"
            + (" (rerun to resume: answers so far are cached)" if budget["not_run"] else ""),
        ]
    return lines


def _judge_spread(info: dict) -> str:
    """Beside a judge score's bootstrap CI, with ``--judge_samples K`` > 1: the judge's own spread
    (the SD of its K run-level means)."""
    spread = info.get("judge_spread") if isinstance(info, dict) else None
    if not spread or spread.get("run_mean_sd") is None:
        return ""
    return f"; judge SD {spread['run_mean_sd']:.4f} over {spread['samples']} verdicts"


def _cut_header(run: EvalRun) -> list[str]:
    """The header's bold line per task whose audio was cut (:mod:`lalm_eval.report.audio_heard`)."""
    from lalm_eval.report.audio_heard import run_cut_lines

    cut = run_cut_lines(run)
    return [x for line in cut for x in (line, "")]


def markdown_report(run: EvalRun, model_name: str) -> str:
    lines = [
        f"# lalm-eval report: {model_name}",
        "",
        "Values are means with 95 % bootstrap intervals; failed generations and unscored samples "
        "are left out of the means and counted.",
        "",
        *_cut_header(run),
        "| task | metric | value [95 % CI] | scored / docs | errors |",
        "|---|---|---|---|---|",
    ]
    missing = missing_reasons(run)
    for task in run.tasks:
        r = run.results[task.name]
        for m in [x["metric"] for x in task.config.metric_list or []]:
            info = (r.metrics or {}).get(m, {})
            n = info.get("n", r.n["scored"])
            lines.append(
                f"| {task.name} | {m} | {_fmt(r.summary.get(m), r.summary.get(f'{m}_ci95'))}"
                f"{_judge_spread(info)} | {n} / {r.n['effective']} | {len(r.errors)} |"
            )
    if missing:
        lines += [""] + [f"— {m}: {why}" for m, why in missing.items()]
    notes = _notes(run)
    if notes:
        lines += ["", "### Metric notes", ""] + notes
    lines += run_notes(run)
    if run.groups:
        lines += ["", "| group | metric | value |", "|---|---|---|"]
        for g, e in run.groups.items():
            for k, v in e.items():
                if k != "subtasks":
                    lines.append(f"| {g} | {k} | {_fmt(v)} |")
    for task in run.tasks:
        metrics = [x["metric"] for x in task.config.metric_list or []]
        rows = [with_details(r) for r in run.results[task.name].rows if "metrics" in r]
        left_out = (run.results[task.name].sample_info or {}).get("excluded") or {}
        for entry in (task.config.metadata or {}).get("breakdown", []):
            by = [entry] if isinstance(entry, str) else list(entry)
            if not any(all(f in r for f in by) for r in rows):
                continue
            lines += ["", f"### {task.name} by {' × '.join(by)}", "", breakdown_table(rows, by, metrics)]
            if left_out:
                lines += [
                    "",
                    f"Not in this table: {sum(left_out.values())} docs the task left out ("
                    + ", ".join(f"{reason} {n}" for reason, n in left_out.items())
                    + ").",
                ]
    return "\n".join(lines) + "\n"


def with_details(row: dict) -> dict:
    """A sample row with its metrics' scalar per-sample details (e.g. ``error_type``) as fields, so
    that a breakdown can name them; the row's own fields win."""
    extra = {
        k: v
        for d in (row.get("metric_details") or {}).values()
        if isinstance(d, dict)
        for k, v in d.items()
        if isinstance(v, (str, int, float, bool))
    }
    return {**extra, **row}


def breakdown_table(rows: list[dict], by: list[str], metrics: list[str]) -> str:
    """Markdown: per combination of ``by``, n and each metric with its 95 % CI. With two or more
    fields, ``share`` is n over the rows that have the same values of the other fields (e.g. a
    scheme's share of its tier for ``[scheme, tier]``)."""
    table = breakdown(rows, by, metrics, ci=True)
    totals: dict = {}
    for t in table:
        totals[tuple(t[f] for f in by[1:])] = totals.get(tuple(t[f] for f in by[1:]), 0) + t["count"]
    share = len(by) > 1
    header = by + ["n"] + (["share"] if share else []) + metrics
    body = [
        [str(t[f]) for f in by]
        + [str(t["count"])]
        + ([f"{t['count'] / totals[tuple(t[f] for f in by[1:])]:.3f}"] if share else [])
        + [_fmt(t.get(m), t.get(f"{m}_ci")) for m in metrics]
        for t in table
    ]
    return _markdown(header, body)


def rows_by_report(run: EvalRun, model_name: str, index) -> dict[str, list[dict]]:
    """{report name: scored sample rows of the tasks declaring ``metadata.report``}, tagged as the
    report declares (:func:`lalm_eval.report.layouts.tag_rows`)."""
    from lalm_eval.report.layouts import tag_rows

    out: dict[str, list[dict]] = {}
    for task in run.tasks:
        meta = task.config.metadata or {}
        if meta.get("report"):
            out.setdefault(meta["report"], []).extend(
                tag_rows(
                    run.results[task.name].rows,
                    model=model_name,
                    task=task.name,
                    metadata=meta,
                    report=index.report(meta["report"]),
                )
            )
    return out


def layout_index_for(run: EvalRun):
    """The layouts of the installed task folders and of every folder a run's tasks came from."""
    from lalm_eval.report.layouts import LayoutIndex

    return LayoutIndex.load(sorted({str(t.folder) for t in run.tasks if getattr(t, "folder", None)}))


def write_outputs(run: EvalRun, config: dict, output_path: str | Path, log_samples: bool) -> dict[str, Path]:
    """The results JSON, the samples JSONL (``log_samples``), the Markdown report and the plots;
    every text in them passes :func:`lalm_eval.redaction.redact` (no API key is written)."""
    from lalm_eval.redaction import redact, redact_value

    out = Path(output_path)
    stamp = timestamp()
    files = {"results": write_results(out, redact_value(results_document(run, config)), stamp=stamp)}
    if log_samples:
        for name, rows in run.samples.items():
            files[f"samples_{name}"] = write_samples(out, name, (redact_value(row) for row in rows), stamp=stamp)
    from lalm_eval.report.cells import task_aggregations
    from lalm_eval.report.layouts import render_reports, report_plots

    model = str(config.get("model"))
    index = layout_index_for(run)
    by_report = rows_by_report(run, model, index)
    report = out / f"report_{stamp}.md"
    aggregations = task_aggregations({task: r.metrics for task, r in run.results.items()})
    tables = render_reports(
        by_report, index, missing=missing_reasons(run), details=metric_details(run), aggregations=aggregations
    )
    report.write_text(redact(markdown_report(run, model) + ("\n" + tables if tables else "")), encoding="utf-8")
    files["report"] = report
    for i, path in enumerate(report_plots(by_report, index, out, stamp)):
        files[f"plot_{i}"] = path
    return files
