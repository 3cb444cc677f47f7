"""``--wandb_args``: the run logged to Weights & Biases under the names lm-eval's ``WandbLogger``
uses: ``evaluation/eval_results`` (results table: Tasks, Version, Filter, num_fewshot, Metric,
Value, Stderr), ``evaluation/group_eval_results`` (groups), each task's metrics as
``<task>/<metric>`` (text values into the summary), the results JSON as artifact ``results``
(type ``eval_results``), each task's samples as the table ``<task>_eval_results`` and the artifact
``<task>`` (type ``samples_by_task``). ``--wandb_log_audio`` adds the clip as ``wandb.Audio`` in
an ``audio`` column of the samples table."""

from __future__ import annotations

import json
from collections.abc import Callable

from lalm_eval.trackers.run_files import RunFiles

RESULT_COLUMNS = ["Version", "Filter", "num_fewshot", "Metric", "Value", "Stderr"]
SKIPPED_SUFFIXES = ("_stderr", "_ci95")


def results_rows(results: dict, key: str = "results") -> list[list]:
    """The rows of lm-eval's results table for ``results[key]`` (tasks, or ``groups``)."""
    rows = []
    groups = set(results.get("groups") or {})
    for name, values in (results.get(key) or {}).items():
        if key == "results" and name in groups:
            continue
        version = (results.get("versions") or {}).get(name)
        version = None if version == "N/A" else version
        shots = (results.get("n-shot") or {}).get(name, 0)
        for metric_filter, value in values.items():
            metric, _, filt = metric_filter.partition(",")
            if metric == "alias" or metric.endswith(SKIPPED_SUFFIXES):
                continue
            stderr = values.get(f"{metric}_stderr,{filt}")
            if isinstance(stderr, (int, float)) and not isinstance(stderr, bool):
                stderr = f"{stderr:.4f}"
            rows.append([name, version, filt, shots, metric, str(value), "" if stderr is None else str(stderr)])
    return rows


def flat_metrics(results: dict) -> tuple[dict, dict]:
    """(summary, metrics): ``<task>/<metric>`` with lm-eval's ``,none`` filter suffix dropped;
    numbers are logged, text goes to the summary, lists and None are left out."""
    summary, metrics = {}, {}
    for task, values in (results.get("results") or {}).items():
        for metric_filter, value in values.items():
            metric = metric_filter.removesuffix(",none")
            if metric == "alias" or metric.endswith("_ci95"):
                continue
            if isinstance(value, str):
                summary[f"{task}/{metric}"] = value
            elif isinstance(value, (int, float)) and not isinstance(value, bool):
                metrics[f"{task}/{metric}"] = value
    return summary, metrics


def prompt_text(row: dict) -> str:
    """The text the model saw: every text part of the sample's messages, in order."""
    parts = []
    for message in row.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
            continue
        for part in content or []:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def samples_columns(rows: list[dict]) -> tuple[list[str], list[str]]:
    """(columns, metric names): lm-eval's samples table columns, then one per metric."""
    names = sorted({m for row in rows for m in (row.get("metrics") or {})})
    base = ["id", "data", "input_len", "labels", "output_type", "raw_predictions", "filtered_predictions"]
    return base + names, names


def samples_table_rows(rows: list[dict]) -> list[list]:
    _, names = samples_columns(rows)
    out = []
    for row in rows:
        text = prompt_text(row)
        target = row.get("target")
        out.append(
            [
                row.get("doc_id"),
                text,
                len(text),
                target if isinstance(target, str) else json.dumps(target, ensure_ascii=False),
                "generate_until",
                row.get("response"),
                row.get("filtered", row.get("response")),
            ]
            + [(row.get("metrics") or {}).get(n) for n in names]
        )
    return out


def log_to_wandb(
    run_files: RunFiles, init_args: dict, audio_of: Callable | None = None, config_args: dict | None = None
) -> str:
    """Log ``run_files`` to a new W&B run (``wandb.init(**init_args)``, ``step`` popped as lm-eval
    does), ``config_args`` added to its config, and finish it; ``audio_of(task, doc_id)`` → (samples, rate) or None adds the clips.
    Returns the run's directory."""
    import wandb

    args = dict(init_args)
    step = args.pop("step", None)
    run = wandb.init(**args)
    try:
        if config_args:  # --wandb_config_args, as lm-eval's wandb_config_args
            run.config.update(config_args)
        results = run_files.results
        run.config.update(
            {"task_configs": results.get("configs", {}), "cli_configs": results.get("config", {})},
            allow_val_change=step is not None,
        )
        summary, metrics = flat_metrics(results)
        run.summary.update(summary)
        run.log(metrics, step=step)
        run.log(
            {"evaluation/eval_results": wandb.Table(columns=["Tasks"] + RESULT_COLUMNS, data=results_rows(results))},
            step=step,
        )
        if results.get("groups"):
            table = wandb.Table(columns=["Groups"] + RESULT_COLUMNS, data=results_rows(results, "groups"))
            run.log({"evaluation/group_eval_results": table}, step=step)
        artifact = wandb.Artifact("results", type="eval_results")
        with artifact.new_file("results.json", mode="w", encoding="utf-8") as fh:
            fh.write(json.dumps(results, indent=2, ensure_ascii=False))
        run.log_artifact(artifact)
        for task in run_files.samples_files:
            rows = run_files.samples(task)
            columns, _ = samples_columns(rows)
            data = samples_table_rows(rows)
            if audio_of is not None:
                columns = columns + ["audio"]
                data = [r + [_audio_cell(wandb, audio_of(task, row.get("doc_id")))] for r, row in zip(data, rows)]
            run.log({f"{task}_eval_results": wandb.Table(columns=columns, data=data)}, step=step)
            samples = wandb.Artifact(task, type="samples_by_task")
            with samples.new_file(f"{task}_eval_samples.json", mode="w", encoding="utf-8") as fh:
                fh.write(json.dumps(rows, indent=2, ensure_ascii=False))
            run.log_artifact(samples)
        return str(run.dir)
    finally:
        run.finish()


def _audio_cell(wandb, clip):
    if clip is None:
        return None
    samples, rate = clip
    return wandb.Audio(samples, sample_rate=rate)
