"""`palm-bench export-sft`: a tiny PALM-Bench folder (the builder's FEATURES, 3 train rows per config)
exported for ms-swift and LLaMA-Factory; prompts are the harness tasks' (checked against the YAML's
literal text), one <audio> per listed file, files exist and hold the row's audio."""

import io
import json
from pathlib import Path

import datasets
import numpy as np
import pytest
import soundfile as sf

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub import export_dataset_dict, front_matter, write_card
from palm_bench.builder import FEATURES
from palm_bench.cli import main
from palm_bench.sft_export import export_sft

SR = 16_000


def flac(seconds):
    buf = io.BytesIO()
    sf.write(
        buf, (0.2 * np.sin(2 * np.pi * 220 * np.arange(int(seconds * SR)) / SR)).astype(np.float32), SR, format="FLAC"
    )
    return {"bytes": buf.getvalue(), "path": f"clip_{seconds}.flac"}


def default_of(feature):
    if isinstance(feature, datasets.Audio):
        return flac(0.1)
    if isinstance(feature, (datasets.List, datasets.Sequence, list)):
        return []
    if isinstance(feature, datasets.Value):
        return "" if feature.dtype == "string" else (0.0 if feature.dtype.startswith("float") else 0)
    raise TypeError(feature)


def row(task, **values):
    return {**{k: default_of(f) for k, f in FEATURES.items()}, "task": task, **values}


# train rows: two questions about one 0.5 s clip (stored once) and a Mandarin one about a 0.75 s clip
TRAIN = {
    "recognition": [
        row(
            "recognition",
            language="en",
            question="Is Amy speaking?",
            answer="Yes, Amy is speaking.",
            audio=flac(0.5),
            n_speakers=1,
        ),
        row(
            "recognition",
            language="en",
            question="Is Bob speaking?",
            answer="No, Bob is not speaking.",
            audio=flac(0.5),
            n_speakers=1,
        ),
        row(
            "recognition",
            language="zh",
            question="李明在说话吗？",
            answer="是的，李明在说话。",
            audio=flac(0.75),
            n_speakers=2,
        ),
    ],
    "captioning": [
        row(
            "captioning",
            language="en",
            question="What does Amy say?",
            answer="Amy says she is a nurse.",
            audio=flac(0.5),
            n_speakers=1,
        )
    ],
}


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bench") / "palm-bench"
    configs = {
        task: datasets.DatasetDict(
            {
                "train": datasets.Dataset.from_list(rows, features=FEATURES),
                "test": datasets.Dataset.from_list(rows[:1], features=FEATURES),
            }
        )
        for task, rows in TRAIN.items()
    }
    files = export_dataset_dict(configs, folder)
    write_card(folder, "---\n" + front_matter(files) + "\n---\n# fixture\n")
    return folder


def lines_of(path):
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines()]


def test_ms_swift(bench, tmp_path):
    out = tmp_path / "swift"
    info = export_sft(out, "ms-swift", dataset=str(bench), cache_dir=tmp_path / "c")
    lines = lines_of(out / "train.jsonl")
    assert info["rows"] == len(lines) == 4 and info["audio_files"] == 2  # the 0.5 s clip written once
    assert [(line["task"], line["doc_id"]) for line in lines] == [
        ("palm_recognition", 0),
        ("palm_recognition", 1),
        ("palm_recognition", 2),
        ("palm_captioning", 0),
    ]
    first = lines[0]
    # the prompt text of tasks/palm/_palm_prompt_base.yaml, after one audio tag
    assert first["messages"] == [
        {
            "role": "user",
            "content": "<audio>Listen to the audio, then answer the question.\nQuestion: Is Amy speaking?",
        },
        {"role": "assistant", "content": "Yes, Amy is speaking."},
    ]
    assert lines[2]["messages"][0]["content"] == "<audio>请听这段音频，然后回答问题。\n问题：李明在说话吗？"
    for line in lines:
        assert sum(m["content"].count("<audio>") for m in line["messages"]) == len(line["audios"]) == 1
        assert Path(line["audios"][0]).is_absolute() and Path(line["audios"][0]).is_file()
    assert lines[0]["audios"] == lines[1]["audios"] == lines[3]["audios"] != lines[2]["audios"]
    audio, sr = sf.read(lines[2]["audios"][0])
    assert sr == SR and len(audio) == int(0.75 * SR)
    assert not (out / "dataset_info.json").exists()


def test_llamafactory(bench, tmp_path):
    out = tmp_path / "lf"
    export_sft(out, "llamafactory", dataset=str(bench), tasks=("captioning",), strategy="hd", cache_dir=tmp_path / "c")
    assert json.loads((out / "dataset_info.json").read_text()) == {
        "palm_bench_train": {
            "file_name": "train.jsonl",
            "formatting": "sharegpt",
            "columns": {"messages": "messages", "audios": "audios"},
            "tags": {
                "role_tag": "role",
                "content_tag": "content",
                "user_tag": "user",
                "assistant_tag": "assistant",
                "system_tag": "system",
            },
        }
    }
    (line,) = lines_of(out / "train.jsonl")
    assert line["task"] == "palm_captioning_hd" and line["audios"] == [line["audios"][0]]
    assert not Path(line["audios"][0]).is_absolute() and (out / line["audios"][0]).is_file()
    assert line["messages"][-1] == {"role": "assistant", "content": "Amy says she is a nurse."}


def test_cli_and_errors(bench, tmp_path, capsys):
    assert (
        main(
            [
                "export-sft",
                "--format",
                "ms-swift",
                "--out",
                str(tmp_path / "o"),
                "--dataset",
                str(bench),
                "--tasks",
                "recognition",
                "--limit",
                "2",
            ]
        )
        == 0
    )
    assert "2 ms-swift examples" in capsys.readouterr().out and len(lines_of(tmp_path / "o" / "train.jsonl")) == 2
    with pytest.raises(ConfigError, match="--format 'axolotl'"):
        export_sft(tmp_path / "x", "axolotl", dataset=str(bench))
    with pytest.raises(DataError, match="split 'validation'"):
        export_sft(tmp_path / "x", "ms-swift", split="validation", dataset=str(bench), cache_dir=tmp_path / "c")
