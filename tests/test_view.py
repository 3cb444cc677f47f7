"""``lalm-eval view``: a site built from two small real runs (one real tiny run and a copy of it
that lacks a doc and answers another differently): rows per task, missing docs, content-hashed
MP3 clips shared by the runs and as long as the dataset's audio, staging, bad input."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LALM_EVAL = Path(sys.executable).with_name("lalm-eval")
LIMIT = 4
ENV = dict(os.environ, OMP_NUM_THREADS="1")
JUDGE_COMMENT = "The answer says the voice is there, as the reference does."


def run_cli(*args, cwd=ROOT):
    return subprocess.run([str(LALM_EVAL), *map(str, args)], cwd=cwd, env=ENV, capture_output=True, text=True)


def read_data(site: Path) -> dict:
    text = (site / "data.js").read_text(encoding="utf-8")
    prefix = "window.LALM_VIEW = "
    assert text.startswith(prefix) and text.endswith(";\n")
    return json.loads(text[len(prefix) : -2])


@pytest.fixture(scope="module")
def runs(tmp_path_factory, tiny_qwen2_audio):
    tmp = tmp_path_factory.mktemp("view")
    first = tmp / "run_a"
    proc = run_cli(
        "--model", "qwen2_audio", "--model_args", f"pretrained={tiny_qwen2_audio.as_posix()}", "--tasks", "palm_recognition",
        "--limit", LIMIT, "--batch_size", "4", "--gen_kwargs", "max_new_tokens=8",
        "--output_path", first, "--log_samples", "--cache_dir", tmp / "cache",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    second = tmp / "run_b"
    shutil.copytree(first, second)
    (samples,) = second.glob("samples_palm_recognition_*.jsonl")
    rows = [json.loads(x) for x in samples.read_text(encoding="utf-8").splitlines()]
    assert [r["doc_id"] for r in rows] == list(range(LIMIT))
    rows[0]["response"] = rows[0]["filtered"] = "Yes, certainly a different answer."
    rows[1].setdefault("metric_details", {})["llm_judge"] = {"score": 1.0, "comment": JUDGE_COMMENT}
    rows = [r for r in rows if r["doc_id"] != LIMIT - 1]  # run b lacks the last doc
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    site = tmp / "site"
    proc = run_cli("view", first, second, "--output_path", site, "--cache_dir", tmp / "cache")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"tmp": tmp, "a": first, "b": second, "site": site, "proc": proc}


def test_rows_per_task_and_missing_doc(runs):
    data = read_data(runs["site"])
    assert [r["label"].split(" ")[0] for r in data["runs"]] == ["run_a", "run_b"]
    assert data["counts"] == {
        "palm_recognition": {data["runs"][0]["label"]: LIMIT, data["runs"][1]["label"]: LIMIT - 1}
    }
    assert data["runs"][0]["n_samples"]["palm_recognition"] == LIMIT
    rows = {r["doc_id"]: r for r in data["rows"] if r["task"] == "palm_recognition"}
    assert sorted(rows) == list(range(LIMIT))
    last = rows[LIMIT - 1]
    assert last["missing"] == 1 and last["answers"][1] is None and last["answers"][0] is not None
    assert rows[0]["disagree"] and rows[0]["answers"][1]["response"] == "Yes, certainly a different answer."
    assert not rows[1]["disagree"] and rows[1]["missing"] == 0
    assert rows[1]["answers"][1]["metric_details"]["llm_judge"]["comment"] == JUDGE_COMMENT
    assert "Question:" in rows[0]["question"] and rows[0]["target"]
    assert {"n_speakers", "language"} <= set(rows[0]["meta"])  # doc metadata, not answer fields
    assert "response" not in rows[0]["meta"] and "seen_s" in rows[0]["answers"][0]
    page = (runs["site"] / "index.html").read_text(encoding="utf-8")
    assert '<script src="data.js"></script>' in page and "<table>" in page  # the report rendered
    assert "http://" not in page and "https://" not in page  # nothing fetched from the network
    for static in ("static/view.js", "static/view.css"):
        assert (runs["site"] / static).is_file()
    assert "wrote " in runs["proc"].stdout


def test_audio_content_hashed_shared_and_full_length(runs):
    import numpy as np
    from torchcodec.decoders import AudioDecoder

    from lalm_eval.evaluation.docs import open_docs
    from lalm_eval.tasks import TaskManager

    data = read_data(runs["site"])
    assert data["clips"]["missing"] == {}
    task = TaskManager().load_task("palm_recognition")
    docs = open_docs(task, runs["tmp"] / "cache", LIMIT).docs
    names = set()
    for row in data["rows"]:
        assert len(row["audio"]) == 1
        path = runs["site"] / row["audio"][0]
        blob = path.read_bytes()
        assert path.name == hashlib.sha256(blob).hexdigest()[:16] + ".mp3"
        names.add(path.name)
        (item,) = task.audio_of(dict(docs[row["doc_id"]]))
        from lalm_eval.audio.io import read_audio

        audio, sr = read_audio(item["bytes"] or item["path"], target_sr=None)
        decoded = AudioDecoder(str(path)).get_all_samples()
        assert abs(decoded.data.shape[-1] / decoded.sample_rate - len(audio) / sr) <= 0.1
        assert np.isfinite(decoded.data.numpy()).all()
    assert sorted(p.name for p in (runs["site"] / "audio").iterdir()) == sorted(names)  # one file per clip
    # both runs' answers for a doc sit on one row with one clip: the runs share it
    assert data["clips"]["written"] == len(names)


def test_same_inputs_same_bytes_and_replaced_site(runs, tmp_path):
    before = (runs["site"] / "data.js").read_bytes()
    proc = run_cli("view", runs["a"], runs["b"], "--output_path", runs["site"], "--cache_dir", runs["tmp"] / "cache")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (runs["site"] / "data.js").read_bytes() == before
    assert not [p for p in runs["site"].parent.iterdir() if ".tmp-" in p.name or ".old-" in p.name]


def test_failure_midway_leaves_no_half_site(runs, tmp_path, monkeypatch):
    import lalm_eval.view.clips as clips
    from lalm_eval.view.cli import main

    site = tmp_path / "site"
    shutil.copytree(runs["site"], site)
    before = sorted(p.relative_to(site) for p in site.rglob("*"))

    def broken(rows, out, *args, **kwargs):
        (out / "audio").mkdir(exist_ok=True)
        (out / "audio" / "half.mp3").write_bytes(b"x")
        raise KeyboardInterrupt

    monkeypatch.setattr(clips, "extract_clips", broken)
    with pytest.raises(KeyboardInterrupt):
        main([str(runs["a"]), "--output_path", str(site), "--cache_dir", str(runs["tmp"] / "cache")])
    assert sorted(p.relative_to(site) for p in site.rglob("*")) == before  # the old site, whole
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # no staging folder left
    fresh = tmp_path / "new"
    with pytest.raises(KeyboardInterrupt):
        main([str(runs["a"]), "--output_path", str(fresh), "--cache_dir", str(runs["tmp"] / "cache")])
    assert not fresh.exists()


@pytest.mark.parametrize(
    "make, needle",
    [
        (lambda tmp: tmp / "nowhere", "no such folder, not a run's output folder"),
        (lambda tmp: tmp, "no results_*.json, not a run's output folder"),
    ],
)
def test_not_a_run_folder_is_exit_2(tmp_path, make, needle):
    proc = run_cli("view", make(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("lalm-eval: error: ") and needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_output_path_of_other_files_refused(runs, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = run_cli("view", runs["a"], "--output_path", tmp_path)
    assert proc.returncode == 2 and "--output_path" in proc.stderr and "folder of other files" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_doc_without_audio_is_counted_not_fatal(runs, tmp_path):
    """A run of a task the task manager does not know: its docs are shown without audio, counted."""
    run = tmp_path / "run_c"
    shutil.copytree(runs["a"], run)
    (samples,) = run.glob("samples_palm_recognition_*.jsonl")
    samples.rename(samples.with_name(samples.name.replace("palm_recognition", "no_such_task")))
    proc = run_cli("view", run, "--output_path", tmp_path / "site", "--cache_dir", runs["tmp"] / "cache")
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = read_data(tmp_path / "site")
    assert sum(data["clips"]["missing"].values()) == LIMIT and all("audio_missing" in r for r in data["rows"])
    assert f"{LIMIT} doc(s) without audio" in proc.stdout
