"""--wandb_args (W&B offline, the run folder read back) and --hf_hub_log_args (a push to a local
fake Hub, and the dry run) on the outputs of one real tiny run."""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.trackers import prepare_trackers
from lalm_eval.trackers.args import parse_tracker_args
from tests.fake_hub import FakeHub

ROOT = Path(__file__).resolve().parents[1]
LALM_EVAL = Path(sys.executable).with_name("lalm-eval")
LIMIT = 4

pytest.importorskip("wandb")
pytest.importorskip("huggingface_hub")


def model_folder(pretrained: Path) -> str:
    """lm-eval's folder of a run's files on the Hub: its ``sanitize_model_name`` of the model's name,
    here the ``pretrained=`` path as given (every run of ``"<>:/|\\?*[]`` made ``__``)."""
    return re.sub(r"[\"<>:/|\\?*\[\]]+", "__", pretrained.as_posix())


def env_for(tmp: Path, hub_url: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", WANDB_MODE="offline", WANDB_SILENT="true")
    env.update(WANDB_DIR=str(tmp), WANDB_DATA_DIR=str(tmp / "wandb-data"), WANDB_CACHE_DIR=str(tmp / "wandb-cache"))
    env.update(HF_ENDPOINT=hub_url, HF_TOKEN="hf_fake_token_for_tests", HF_HUB_DISABLE_TELEMETRY="1")
    env.pop("WANDB_API_KEY", None)
    return env


@pytest.fixture(scope="module")
def tracked(tmp_path_factory, tiny_qwen2_audio):
    """One real run with both trackers: W&B offline with audio, the Hub push to a fake Hub."""
    tmp = tmp_path_factory.mktemp("tracked")
    out = tmp / "run"
    with FakeHub() as hub:
        proc = subprocess.run(
            [str(LALM_EVAL), "--model", "qwen2_audio", "--model_args", f"pretrained={tiny_qwen2_audio.as_posix()}"]
            + ["--tasks", "palm_recognition", "--limit", str(LIMIT), "--batch_size", "4"]
            + ["--gen_kwargs", "max_new_tokens=8", "--output_path", str(out), "--log_samples"]
            + ["--wandb_args", "project=lalm-tests,name=tiny,job_type=eval", "--wandb_log_audio"]
            + ["--wandb_config_args", "suite=tiny,shots=0"]
            + ["--hf_hub_log_args", "hub_results_org=acme,details_repo_name=details,results_repo_name=results"
               ",push_results_to_hub=True,push_samples_to_hub=True,public_repo=False"],
            cwd=ROOT, env=env_for(tmp, hub.url), capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"out": out, "tmp": tmp, "hub": hub, "proc": proc, "folder": model_folder(tiny_qwen2_audio)}


def offline_run(tmp: Path) -> Path:
    runs = sorted((tmp / "wandb").glob("offline-run-*"))
    assert len(runs) == 1, runs
    return runs[0]


def table(run: Path, pattern: str) -> dict:
    found = sorted((run / "files" / "media" / "table").glob(pattern))
    assert len(found) == 1, (pattern, found)
    return json.loads(found[0].read_text(encoding="utf-8"))


def written(out: Path) -> tuple[dict, list[dict]]:
    results = json.loads(next(out.glob("results_*.json")).read_text(encoding="utf-8"))
    samples = [json.loads(x) for x in next(out.glob("samples_palm_recognition_*.jsonl")).read_text().splitlines()]
    return results, samples


def test_wandb_offline_results_table(tracked):
    run = offline_run(tracked["tmp"])
    got = table(run, "evaluation/eval_results_*.table.json")
    assert got["columns"] == ["Tasks", "Version", "Filter", "num_fewshot", "Metric", "Value", "Stderr"]
    results, _ = written(tracked["out"])
    metrics = {
        k.split(",")[0] for k in results["results"]["palm_recognition"] if k != "alias" and "_stderr" not in k
    } - {k.split(",")[0] for k in results["results"]["palm_recognition"] if "_ci95" in k}
    assert {row[4] for row in got["data"]} == metrics  # one row per metric of the run
    assert len(got["data"]) == len(metrics) >= 4
    row = next(r for r in got["data"] if r[4] == "token_f1")
    assert row[0] == "palm_recognition" and row[2] == "none"
    assert float(row[5]) == results["results"]["palm_recognition"]["token_f1,none"]


def wandb_records(run: Path) -> list:
    """The protobuf records of the run's ``.wandb`` file (a LevelDB-style log: a 7-byte header,
    32 KiB blocks of records with a 7-byte header each: crc32, length, FULL/FIRST/MIDDLE/LAST)."""
    from wandb.proto import wandb_internal_pb2

    data = next(run.glob("*.wandb")).read_bytes()
    assert data[:4] == b":W&B"
    pos, pending, records = 7, b"", []
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:  # block trailer padding
            pos += 32768 - pos % 32768
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk, pos = data[pos + 7 : pos + 7 + length], pos + 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def artifacts(run: Path) -> dict:
    """(name, type) → {path in the artifact: local file} of every artifact the run logged."""
    out = {}
    for r in wandb_records(run):
        if r.WhichOneof("record_type") == "artifact":
            out[(r.artifact.name, r.artifact.type)] = {e.path: Path(e.local_path) for e in r.artifact.manifest.contents}
    return out


def test_wandb_offline_config(tracked):
    config = {}
    for r in wandb_records(offline_run(tracked["tmp"])):
        if r.WhichOneof("record_type") == "config":
            config.update({item.key: json.loads(item.value_json) for item in r.config.update})
    assert config["suite"] == {"value": "tiny"} or config["suite"] == "tiny"
    assert "cli_configs" in config and "task_configs" in config


def test_wandb_offline_artifacts(tracked):
    got = artifacts(offline_run(tracked["tmp"]))
    results, samples = written(tracked["out"])
    assert json.loads(got[("results", "eval_results")]["results.json"].read_text())["results"] == results["results"]
    logged = json.loads(got[("palm_recognition", "samples_by_task")]["palm_recognition_eval_samples.json"].read_text())
    assert logged == samples


def test_wandb_offline_samples_table_with_audio(tracked):
    run = offline_run(tracked["tmp"])
    _, samples = written(tracked["out"])
    assert len(table(run, "palm_recognition_eval_results_*.table.json")["data"]) == len(samples) == LIMIT
    # the table with its media: the run_table artifact W&B makes of a logged table
    (entries,) = [e for (name, kind), e in artifacts(run).items() if name.endswith("-palm_recognition_eval_results")]
    got = json.loads(entries["palm_recognition_eval_results.table.json"].read_text(encoding="utf-8"))
    assert len(got["data"]) == LIMIT
    cols = got["columns"]
    assert cols[:7] == ["id", "data", "input_len", "labels", "output_type", "raw_predictions", "filtered_predictions"]
    assert {"token_f1", "bleu", "audio"} <= set(cols)
    by_id = {r[cols.index("id")]: r for r in got["data"]}
    import soundfile

    for sample in samples:
        row = by_id[sample["doc_id"]]
        assert row[cols.index("labels")] == sample["target"]
        assert row[cols.index("raw_predictions")] == sample["response"]
        assert row[cols.index("token_f1")] == sample["metrics"]["token_f1"]
        assert sample["messages"][0]["content"][1]["text"] in row[cols.index("data")]
        audio = row[cols.index("audio")]
        assert audio["_type"] == "audio-file"
        info = soundfile.info(str(entries[audio["path"]]))
        assert info.samplerate == 16_000
        assert abs(info.duration - sample["audio_s"]) < 0.1


def test_hub_push_at_lm_eval_paths(tracked):
    hub, out, folder = tracked["hub"], tracked["out"], tracked["folder"]
    results_file = next(out.glob("results_*.json"))
    samples_file = next(out.glob("samples_palm_recognition_*.jsonl"))
    stamp = results_file.stem.removeprefix("results_")
    assert set(hub.repos) == {"acme/results-private", "acme/details-private"}
    assert all(p["type"] == "dataset" and p.get("visibility", "private") == "private" for p in hub.repos.values())
    card = hub.files.pop(("acme/details-private", "README.md")).decode()
    assert hub.files == {
        ("acme/results-private", f"{folder}/results_{stamp}.json"): results_file.read_bytes(),
        ("acme/details-private", f"{folder}/samples_palm_recognition_{stamp}.jsonl"): samples_file.read_bytes(),
        ("acme/details-private", f"{folder}/results_{stamp}.json"): results_file.read_bytes(),
    }
    assert [c["repo"] for c in hub.commits] == ["acme/results-private", "acme/details-private"]
    assert "hub: pushed 3 file(s)" in tracked["proc"].stdout
    assert hub.validated == [card]
    import yaml

    front = yaml.safe_load(card.split("---\n")[1])
    split = stamp.replace("-", "_")  # lm-eval's split name: every character but letters, digits, _ and . made _
    assert front["configs"] == [
        {
            "config_name": f"{folder}__palm_recognition",
            "data_files": [
                {"split": split, "path": [f"{folder}/samples_palm_recognition_{stamp}.jsonl"]},
                {"split": "latest", "path": [f"{folder}/samples_palm_recognition_{stamp}.jsonl"]},
            ],
        },
        {
            "config_name": f"{folder}__results",
            "data_files": [
                {"split": split, "path": [f"{folder}/results_{stamp}.json"]},
                {"split": "latest", "path": [f"{folder}/results_{stamp}.json"]},
            ],
        },
    ]


def test_card_takes_each_configs_newest_file():
    from lalm_eval.trackers.hub_card import card_configs

    paths = [
        "m/results_2026-01-02T10-00-00.000001.json",
        "m/results_2026-01-01T10-00-00.000001.json",
        "m/samples_palm_recognition_2026-01-01T10-00-00.000001.jsonl",
        "README.md",
        ".gitattributes",
    ]
    assert card_configs(paths) == [
        {
            "config_name": "m__palm_recognition",
            "data_files": [
                {
                    "split": "2026_01_01T10_00_00.000001",
                    "path": ["m/samples_palm_recognition_2026-01-01T10-00-00.000001.jsonl"],
                },
                {"split": "latest", "path": ["m/samples_palm_recognition_2026-01-01T10-00-00.000001.jsonl"]},
            ],
        },
        {
            "config_name": "m__results",
            "data_files": [
                {"split": "2026_01_02T10_00_00.000001", "path": ["m/results_2026-01-02T10-00-00.000001.json"]},
                {"split": "latest", "path": ["m/results_2026-01-02T10-00-00.000001.json"]},
            ],
        },
    ]


def hub_args(text: str, out: Path, log_samples=True, **kw) -> argparse.Namespace:
    values = dict(wandb_args=None, wandb_log_audio=False, hf_hub_log_args=text, output_path=str(out))
    values.update(log_samples=log_samples, **kw)
    return argparse.Namespace(**values)


def files_of(out: Path) -> dict:
    files = {"results": next(out.glob("results_*.json"))}
    for f in out.glob("samples_*.jsonl"):
        files["samples_" + f.stem.removeprefix("samples_").rsplit("_", 1)[0]] = f
    return files


def test_hub_dry_run_lists_without_network(tracked, capsys, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: a request would fail
    out, folder = tracked["out"], tracked["folder"]
    trackers = prepare_trackers(
        hub_args(
            "hub_results_org=acme,push_results_to_hub=True,push_samples_to_hub=True,public_repo=True,dry_run=True", out
        )
    )
    assert trackers.run(files_of(out)) is True
    text = capsys.readouterr().out
    stamp = next(out.glob("results_*.json")).stem.removeprefix("results_")
    assert "would push (dry_run=True) 2 file(s)" in text  # one repository for both: the results file once
    assert "(dataset card) -> datasets/acme/lm-eval-results/README.md" in text
    assert f"datasets/acme/lm-eval-results/{folder}/results_{stamp}.json" in text
    assert f"datasets/acme/lm-eval-results/{folder}/samples_palm_recognition_{stamp}.jsonl" in text


def test_tracker_failure_is_reported_and_keeps_the_run(tracked, capsys):
    out = tracked["out"]
    args = hub_args(None, out, wandb_args="project=p,not_an_init_argument=1")
    trackers = prepare_trackers(args)
    assert trackers.run(files_of(out)) is False
    err = capsys.readouterr().err
    assert "lalm-eval: warning: --wandb_args: logging failed" in err
    assert next(out.glob("results_*.json")).exists()


def test_hub_failure_is_reported_and_keeps_the_run(tracked, capsys, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setenv("HF_TOKEN", "hf_fake_token_for_tests")
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    out = tracked["out"]
    trackers = prepare_trackers(hub_args("hub_results_org=acme,push_results_to_hub=True", out))
    assert trackers.run(files_of(out)) is False
    err = capsys.readouterr().err
    assert err.startswith("lalm-eval: warning: --hf_hub_log_args: logging failed (")
    assert "hf_fake_token_for_tests" not in err


@pytest.mark.parametrize(
    "text, message",
    [
        ("project", "--wandb_args: 'project' is not key=value"),
        ("project=a,project=b", "'project' is given twice"),
    ],
)
def test_wandb_args_errors(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_tracker_args(text, "--wandb_args")


def test_parse_types_like_lm_eval():
    got = parse_tracker_args('a=1,b=True,c=none,d=0.5,e="7",f=x y', "--wandb_args")
    assert got == {"a": 1, "b": True, "c": None, "d": 0.5, "e": "7", "f": "x y"}


@pytest.mark.parametrize(
    "text, log_samples, message",
    [
        ("hub_results_org=a,bogus=1,push_results_to_hub=True", True, "unknown key 'bogus'"),
        ("hub_results_org=a", True, "nothing to push"),
        ("push_results_to_hub=yes", True, "push_results_to_hub='yes' is not a boolean"),
        ("push_samples_to_hub=True", False, "needs the samples; add --log_samples"),
    ],
)
def test_hub_args_errors(tmp_path, text, log_samples, message):
    with pytest.raises(ConfigError, match=message):
        prepare_trackers(hub_args(text, tmp_path, log_samples))


def test_flags_need_output_path_and_the_package(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="--wandb_args: logs the written results; add --output_path"):
        prepare_trackers(hub_args(None, tmp_path, wandb_args="project=p", output_path=None))
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "wandb" else real(name, *a))
    with pytest.raises(ConfigError) as exc:
        prepare_trackers(hub_args(None, tmp_path, wandb_args="project=p"))
    assert str(exc.value) == "--wandb_args: needs the package 'wandb'; pip install 'lalm-eval[track]'"


def test_push_without_a_token_is_refused_before_the_run(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_STORED_TOKENS_PATH", str(tmp_path / "no-tokens"))
    with pytest.raises(ConfigError, match="pushing needs a Hugging Face token"):
        prepare_trackers(hub_args("hub_results_org=a,push_results_to_hub=True", tmp_path))
    assert prepare_trackers(hub_args("hub_results_org=a,push_results_to_hub=True,dry_run=True", tmp_path))


def test_cli_bad_flag_exits_2_before_the_run(tmp_path):
    proc = subprocess.run(
        [str(LALM_EVAL), "--model", "qwen2_audio", "--model_args", "pretrained=nowhere", "--tasks", "palm_recognition"]
        + ["--output_path", str(tmp_path / "o"), "--wandb_args", "project"],
        cwd=ROOT, env=dict(os.environ, OMP_NUM_THREADS="1"), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("lalm-eval: error: --wandb_args: 'project' is not key=value")


def test_cli_tracker_failure_keeps_the_evaluations_exit_status(tmp_path, tiny_qwen2_audio):
    out = tmp_path / "run"
    proc = subprocess.run(
        [str(LALM_EVAL), "--model", "qwen2_audio", "--model_args", f"pretrained={tiny_qwen2_audio.as_posix()}"]
        + ["--tasks", "palm_recognition", "--limit", "2", "--batch_size", "2", "--gen_kwargs", "max_new_tokens=8"]
        + ["--output_path", str(out), "--hf_hub_log_args", "hub_results_org=acme,push_results_to_hub=True"],
        cwd=ROOT, env=env_for(tmp_path, "http://127.0.0.1:9"), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "lalm-eval: warning: --hf_hub_log_args: logging failed" in proc.stderr
    assert len(list(out.glob("results_*.json"))) == 1


def test_trackers_import_nothing_unless_asked():
    code = (
        "import sys, argparse; from lalm_eval.cli import eval_parser; from lalm_eval.trackers import prepare_trackers;"
        "args = eval_parser().parse_args(['--model', 'm', '--tasks', 't']);"
        "assert prepare_trackers(args) is None;"
        "print(sorted(m for m in ('wandb', 'huggingface_hub', 'lalm_eval.trackers.hub_log') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
