"""From an :func:`lalm_eval.evaluator.evaluate` run to the files a user reads: the results JSON
(lm-eval layout), per-task sample logs, a Markdown report with breakdown tables, and PNG plots."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from lalm_eval.report.results import metric_key, task_entry, timestamp, write_results, write_samples
from lalm_eval.report.tables import _markdown, breakdown


def results_document(run: dict, config: dict) -> dict:
    results, configs, versions, n_samples, hib, hashes, errors = {}, {}, {}, {}, {}, {}, {}
    for task in run["tasks"]:
        r = run["results"][task.name]
        metrics = {k: v for k, v in r["summary"].items() if not k.endswith("_stderr")}
        stderrs = {k[: -len("_stderr")]: v for k, v in r["summary"].items() if k.endswith("_stderr")}
        results[task.name] = task_entry(task.alias, metrics, stderrs)
        configs[task.name] = task.config.to_dict()
        versions[task.name] = task.version
        n_samples[task.name] = {"original": r["n"]["original"], "effective": r["n"]["effective"],
                                "scored": r["n"]["scored"]}
        hib[task.name] = {m["metric"]: m["higher_is_better"] for m in task.config.metric_list or []}
        hashes[task.name] = task.task_hash
        if r["errors"]:
            errors[task.name] = r["errors"]
    groups = {g: {"alias": g, **{metric_key(k): v for k, v in e.items() if k != "subtasks"}}
              for g, e in run["groups"].items()}
    return {"results": results, "groups": groups,
            "group_subtasks": {g: e["subtasks"] for g, e in run["groups"].items()},
            "configs": configs, "versions": versions, "n-samples": n_samples, "higher_is_better": hib,
            "config": config, "task_hashes": hashes, "cache": run["cache"], "errors": errors,
            "total_evaluation_time_seconds": round(run["seconds"], 3),
            "date": _dt.datetime.now().timestamp()}


def markdown_report(run: dict, model_name: str) -> str:
    lines = [f"# lalm-eval report: {model_name}", "", "| task | metric | value | scored / docs | errors |",
             "|---|---|---|---|---|"]
    for task in run["tasks"]:
        r = run["results"][task.name]
        for m in [x["metric"] for x in task.config.metric_list or []]:
            v = r["summary"].get(m)
            lines.append(f"| {task.name} | {m} | {'—' if v is None else f'{v:.4f}'} | "
                         f"{r['n']['scored']} / {r['n']['effective']} | {len(r['errors'])} |")
    if run["groups"]:
        lines += ["", "| group | metric | value |", "|---|---|---|"]
        for g, e in run["groups"].items():
            for k, v in e.items():
                if k != "subtasks":
                    lines.append(f"| {g} | {k} | {'—' if v is None else f'{v:.4f}'} |")
    for task in run["tasks"]:
        fields = (task.config.metadata or {}).get("breakdown", [])
        metrics = [x["metric"] for x in task.config.metric_list or []]
        rows = [r for r in run["_samples"][task.name] if "metrics" in r]
        for field in fields:
            if not any(field in r for r in rows):
                continue
            table = breakdown(rows, [field], metrics)
            header = [field, "n"] + metrics
            body = [[str(t[field]), str(t["count"])] + [f"{t[m]:.4f}" if t.get(m) is not None else "—" for m in metrics]
                    for t in table]
            lines += ["", f"### {task.name} by {field}", "", _markdown(header, body)]
    return "\n".join(lines) + "\n"


def write_outputs(run: dict, config: dict, output_path: str | Path, log_samples: bool) -> dict[str, Path]:
    out = Path(output_path)
    stamp = timestamp()
    files = {"results": write_results(out, results_document(run, config), stamp=stamp)}
    if log_samples:
        for name, rows in run["_samples"].items():
            files[f"samples_{name}"] = write_samples(out, name, rows, stamp=stamp)
    report = out / f"report_{stamp}.md"
    report.write_text(markdown_report(run, str(config.get("model"))), encoding="utf-8")
    files["report"] = report
    return files
