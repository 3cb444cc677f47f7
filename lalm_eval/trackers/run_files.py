"""What a tracker logs, read back from the files ``write_outputs`` wrote: the results JSON and
the ``samples_<task>_<stamp>.jsonl`` files of the same stamp. Trackers read the written run, so
what they log is what the folder holds."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from lalm_eval.errors import DataError


@dataclass
class RunFiles:
    results_file: Path
    results: dict
    stamp: str  # the ``<date>`` of lm-eval's file names, e.g. 2026-12-02T16-19-01.696500
    samples_files: dict[str, Path] = field(default_factory=dict)  # task → its samples JSONL

    def samples(self, task: str) -> list[dict]:
        path = self.samples_files[task]
        rows = []
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise DataError(path, f"not JSON ({exc.msg})", line=n) from None
        return rows


def read_run_files(files: dict[str, Path]) -> RunFiles:
    """``files`` as ``write_outputs`` returns it (``results``, ``samples_<task>`` …)."""
    results_file = Path(files["results"])
    stamp = results_file.stem.removeprefix("results_")
    try:
        results = json.loads(results_file.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(results_file, f"cannot read the results ({exc})") from None
    samples = {key.removeprefix("samples_"): Path(p) for key, p in files.items() if key.startswith("samples_")}
    return RunFiles(results_file, results, stamp, dict(sorted(samples.items())))


def model_name(results: dict) -> str:
    """The model's name as lm-eval's ``GeneralConfigTracker`` takes it: the value of the first of
    ``peft, delta, pretrained, model, path, engine`` in ``model_args``, else the adapter's name."""
    config = results.get("config") or {}
    args = str(config.get("model_args") or "")
    pairs = dict(item.split("=", 1) for item in args.split(",") if "=" in item)
    for key in ("peft", "delta", "pretrained", "model", "path", "engine"):
        if pairs.get(key):
            return pairs[key]
    return str(config.get("model") or "model")


def sanitize_model_name(name: str) -> str:
    """lm-eval's ``sanitize_model_name``: ``org/model`` → ``org__model``."""
    import re

    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", name)
