"""The site: ``index.html`` (overview + sample browser), ``data.js`` (the rows, as a global, since
browsers block ``fetch()`` of local files), ``static/`` (JS, CSS), ``audio/``, ``plots/``.

Written into a staging sibling and renamed into place when complete, so ``--output_path`` holds
either the previous site or the new one, never half of one."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from lalm_eval.errors import ConfigError
from lalm_eval.view.markdown import render
from lalm_eval.view.runs import RunFolder

PACKAGE = Path(__file__).parent
MARKER = "lalm-view.json"  # a folder holding it is a site this command wrote (and may replace)
IDENTITY_KEYS = ("model_identity",)


def check_output(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--output_path {out}: is a file; give a folder for the site")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ConfigError(
            f"--output_path {out}: a folder of other files (no {MARKER}); give an empty or new folder, "
            "or a site lalm-eval view wrote"
        )


def run_summary(index: int, run: RunFolder, out: Path) -> dict:
    plots = []
    for plot in run.plots:
        name = f"plots/run{index + 1}_{plot.name}"
        shutil.copyfile(plot, out / name)
        plots.append(name)
    results = run.results
    return {
        "label": run.label,
        "folder": run.folder.name,
        "stamp": run.stamp,
        "identity": results.get("model_identity") or {},
        "model_args": (results.get("config") or {}).get("model_args"),
        "n_samples": {t: (v or {}).get("effective") for t, v in (results.get("n-samples") or {}).items()},
        "report_html": render(run.report.read_text(encoding="utf-8")) if run.report else "",
        "plots": plots,
    }


def data_script(data: dict) -> str:
    body = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return "window.LALM_VIEW = " + body.replace("</", "<\\/") + ";\n"


def metric_names(rows: list[dict]) -> list[str]:
    return sorted({m for row in rows for a in row["answers"] if a for m in (a.get("metrics") or {})})


def page(summaries: list[dict]) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(PACKAGE / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    env.filters["json"] = lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False, indent=1)
    return env.get_template("index.html.j2").render(runs=summaries)


def write_site(runs: list[RunFolder], rows: list[dict], counts: dict, out: Path, extract) -> dict:
    """Stage the site beside ``out``, ``extract(rows, stage)`` its audio, rename it into place.
    Returns the embedded data (what the page shows)."""
    check_output(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    stage = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    try:
        (stage / "plots").mkdir(parents=True)
        shutil.copytree(PACKAGE / "static", stage / "static")
        clips = extract(rows, stage)
        summaries = [run_summary(i, run, stage) for i, run in enumerate(runs)]
        data = {
            "runs": [{k: v for k, v in s.items() if k != "report_html"} for s in summaries],
            "counts": counts,
            "metrics": metric_names(rows),
            "rows": rows,
            "clips": {"written": clips.written, "shared": clips.shared, "missing": dict(sorted(clips.missing.items()))},
        }
        (stage / "data.js").write_text(data_script(data), encoding="utf-8")
        (stage / "index.html").write_text(page(summaries), encoding="utf-8")
        (stage / MARKER).write_text(
            json.dumps({"runs": [s["folder"] for s in summaries], "rows": len(rows)}, sort_keys=True) + "\n",
            encoding="utf-8",
        )
        if out.exists():
            out.rename(old)
        stage.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return data
