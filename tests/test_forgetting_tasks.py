"""The forgetting checks (tasks/forgetting/, PALM Table 4) end to end on fixtures in the corpora's
real layouts (tiny tones, no download): local copy → Parquet folder → evaluator with scripted
replies → WER / CER / accuracy worked out by hand → `lalm-eval report` forgetting table."""

from __future__ import annotations

import json
import os
import re

import datasets
import numpy as np
import pytest
import soundfile as sf

from lalm_eval.api import Adapter, Response
from lalm_eval.errors import ConfigError, DataError
from lalm_eval.report.assemble import write_outputs
from lalm_eval.report.combine import combine
from lalm_eval.tasks import TaskManager
from tests.evaluation_helpers import evaluate_names

SR = 16_000
TM = TaskManager()

# LibriSpeech test-clean fixture: (speaker, chapter, utterance, text, seconds). Each clip has its
# own length, which is how the scripted model knows which one it hears.
LIBRI = [
    ("1089", "134686", "0000", "HE HOPED THERE WOULD BE STEW FOR DINNER", 0.30),
    ("1089", "134686", "0001", "STUFF IT INTO YOU HIS BELLY COUNSELLED HIM", 0.35),
    ("121", "121726", "0000", "ALSO A POPULAR CONTRIVANCE", 0.40),
]
# AISHELL-1: test wavs (speaker, id, seconds); the transcript also has a train line, and one test
# wav has no transcript line (skipped, counted).
AISHELL_TEXT = {
    "BAC009S0764W0121": "甚至 出现 交易 几乎 停滞 的 情况",
    "BAC009S0764W0122": "一二 线 城市 虽然 也 处于 调整 中",
    "BAC009S0002W0122": "而 对 楼市 成交 抑制 作用 最 大 的 限 购",
}
AISHELL_WAVS = [
    ("S0764", "BAC009S0764W0121", 0.30),
    ("S0764", "BAC009S0764W0122", 0.35),
    ("S0764", "BAC009S0764W0199", 0.50),
]
MMAU = [
    {
        "id": "q1",
        "choices": ["Dog barking", "Car horn", "Rain", "Thunder"],
        "answer": "Car horn",
        "s": 0.30,
        "task": "sound",
        "difficulty": "easy",
    },
    {
        "id": "q2",
        "choices": ["Piano", "Guitar", "Violin", "Drums"],
        "answer": "Violin",
        "s": 0.35,
        "task": "music",
        "difficulty": "hard",
    },
    {
        "id": "q3",
        "choices": ["Piano", "Guitar"],
        "answer": "Flute",
        "s": 0.40,
        "task": "music",  # not a choice
        "difficulty": "easy",
    },
    {
        "id": "q4",
        "choices": ["happy", "sad", "angry"],
        "answer": "sad",
        "s": 0.45,
        "task": "speech",
        "difficulty": "medium",
    },
]

# Replies of the "base" model by clip length, and what they cost:
#   LibriSpeech: 0.30 exact (0 / 8 words); 0.35 "counseled" for COUNSELLED (1 substitution / 8);
#   0.40 "indeed" added (1 insertion / 4)  →  WER = 2 / 20 = 0.1
#   AISHELL-1: 0.30 exact but for the "。" (removed by normalisation: 0 / 13 characters);
#   0.35 在 for 于 (1 substitution / 13)  →  CER = 1 / 26
#   MMAU: q1 "B" (Car horn, right), q2 "It is a guitar." (wrong), q4 "The speaker sounds sad." (right)
#   →  accuracy 2 / 3
BASE = {
    "librispeech": {
        0.30: "He hoped there would be stew for dinner.",
        0.35: "Stuff it into you, his belly counseled him.",
        0.40: "Also a popular contrivance indeed.",
    },
    "aishell1": {0.30: "甚至出现交易几乎停滞的情况。", 0.35: "一二线城市虽然也处在调整中"},
    "mmau": {0.30: "B", 0.35: "It is a guitar.", 0.45: "The speaker sounds sad."},
}
# a "tuned" model that forgot: every transcript drops its last word / character, MMAU all wrong
#   LibriSpeech: 1 deletion each on top of the base's edits → (1 + 2 + 1) / 20 = 0.2
#     (0.40: "Also a popular" → 1 deletion / 4)
#   AISHELL-1: 0.30 drops 况 (1 / 13), 0.35 exact → CER 1 / 26; MMAU: "A", "A", "A" → 0 / 3
TUNED = {
    "librispeech": {
        0.30: "He hoped there would be stew for",
        0.35: "Stuff it into you his belly counseled",
        0.40: "Also a popular",
    },
    "aishell1": {0.30: "甚至出现交易几乎停滞的情", 0.35: "一二线城市虽然也处于调整中"},
    "mmau": {0.30: "A", 0.35: "A", 0.45: "A"},
}
TASK_CORPUS = {"asr_librispeech": "librispeech", "asr_aishell1": "aishell1", "mmau": "mmau"}


def tone(path, seconds):
    t = np.arange(int(round(seconds * SR))) / SR
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, (0.2 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), SR)


def make_librispeech(root):
    by_chapter = {}
    for spk, ch, utt, text, s in LIBRI:
        tone(root / "LibriSpeech" / "test-clean" / spk / ch / f"{spk}-{ch}-{utt}.flac", s)
        by_chapter.setdefault((spk, ch), []).append(f"{spk}-{ch}-{utt} {text}")
    for (spk, ch), lines in by_chapter.items():
        (root / "LibriSpeech" / "test-clean" / spk / ch / f"{spk}-{ch}.trans.txt").write_text("\n".join(lines) + "\n")
    return root


def make_aishell(root):
    base = root / "data_aishell"
    (base / "transcript").mkdir(parents=True)
    (base / "transcript" / "aishell_transcript_v0.8.txt").write_text(
        "".join(f"{k} {v}\n" for k, v in AISHELL_TEXT.items()), encoding="utf-8"
    )
    for spk, utt, s in AISHELL_WAVS:
        tone(base / "wav" / "test" / spk / f"{utt}.wav", s)
    tone(base / "wav" / "train" / "S0002" / "BAC009S0002W0122.wav", 0.6)
    return root


def make_mmau(root):
    items = []
    for q in MMAU:
        tone(root / "test-mini-audios" / f"{q['id']}.wav", q["s"])
        items.append(
            {
                "id": q["id"],
                "audio_id": f"./test-mini-audios/{q['id']}.wav",
                "question": "What is heard?",
                "choices": q["choices"],
                "answer": q["answer"],
                "dataset": "fixture",
                "task": q["task"],
                "split": "test-mini",
                "category": "fixture",
                "sub-category": "fixture",
                "difficulty": q["difficulty"],
            }
        )
    (root / "mmau-test-mini.json").write_text(json.dumps(items, indent=1))
    return root


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    root = tmp_path_factory.mktemp("copies")
    return {
        "librispeech": make_librispeech(root / "ls"),
        "aishell1": make_aishell(root / "ai"),
        "mmau": make_mmau(root / "mmau"),
    }


@pytest.fixture
def env(copies, monkeypatch):
    for corpus, var in (
        ("librispeech", "LALM_EVAL_LIBRISPEECH"),
        ("aishell1", "LALM_EVAL_AISHELL1"),
        ("mmau", "LALM_EVAL_MMAU"),
    ):
        monkeypatch.setenv(var, str(copies[corpus]))
    return copies


class Scripted(Adapter):
    def __init__(self, name, replies):
        super().__init__()
        self.name, self.replies = name, replies

    def identity(self):
        return {"name": self.name}

    def generate(self, requests, batch_size=1):
        return [Response(self.replies[TASK_CORPUS[r.task]].get(round(len(r.audios[0]) / SR, 2), "")) for r in requests]


@pytest.fixture(scope="module")
def runs(copies, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    cache = out / "cache"
    saved = {k: os.environ.get(k) for k in ("LALM_EVAL_LIBRISPEECH", "LALM_EVAL_AISHELL1", "LALM_EVAL_MMAU")}
    os.environ.update(
        {
            "LALM_EVAL_LIBRISPEECH": str(copies["librispeech"]),
            "LALM_EVAL_AISHELL1": str(copies["aishell1"]),
            "LALM_EVAL_MMAU": str(copies["mmau"]),
        }
    )
    try:
        results = {}
        for label, replies in (("base", BASE), ("lora_attn", TUNED)):
            result = evaluate_names(Scripted("qwen2_audio", replies), ["forgetting"], cache_dir=cache, use_cache=False)
            write_outputs(result, {"model": "qwen2_audio"}, out / label, log_samples=True)
            results[label] = result
    finally:
        for k, v in saved.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return out, results


def test_values_worked_out_by_hand(runs):
    _, results = runs
    base, tuned = results["base"].results, results["lora_attn"].results
    assert base["asr_librispeech"].summary["wer"] == pytest.approx(2 / 20)
    assert base["asr_aishell1"].summary["cer"] == pytest.approx(1 / 26)
    assert base["mmau"].summary["option_accuracy"] == pytest.approx(2 / 3)
    assert tuned["asr_librispeech"].summary["wer"] == pytest.approx(4 / 20)
    assert tuned["asr_aishell1"].summary["cer"] == pytest.approx(1 / 26)
    assert tuned["mmau"].summary["option_accuracy"] == 0.0
    # rows: 3 LibriSpeech utterances, the 2 transcribed AISHELL-1 test wavs, the 3 MMAU questions
    # whose answer is a choice
    assert [base[t].n["scored"] for t in ("asr_librispeech", "asr_aishell1", "mmau")] == [3, 2, 3]
    assert base["asr_librispeech"].metrics["wer"]["reference_units"] == 20


def test_report_puts_the_forgetting_metrics_beside_the_base_model(runs):
    out, _ = runs
    text, _ = combine([out / "base", out / "lora_attn"])
    table = text[text.index("## Forgetting") :]
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    header = lines[0]
    assert "AISHELL-1 test (CER) · cer ↓" in header and "LibriSpeech test-clean (WER) · wer ↓" in header
    assert "MMAU test-mini (accuracy) · option_accuracy ↑" in header
    cols = [c.strip() for c in header.strip("|").split("|")]
    base = dict(zip(cols, [c.strip() for c in lines[1].strip("|").split("|")]))
    tuned = dict(zip(cols, [c.strip() for c in lines[2].strip("|").split("|")]))
    assert base["Model"] == "base" and tuned["Model"] == "lora_attn"  # same model name: folder names
    wer = "LibriSpeech test-clean (WER) · wer ↓"
    assert base[wer].startswith("0.1000") and tuned[wer].startswith("0.2000") and tuned[wer].endswith("(+0.1000)")
    acc = "MMAU test-mini (accuracy) · option_accuracy ↑"
    assert base[acc].startswith("0.6667") and tuned[acc].startswith("0.0000") and tuned[acc].endswith("(-0.6667)")


def test_built_folder_and_skips(env, tmp_path):
    hook = TM.load_task("asr_aishell1").hook("prepare_dataset")
    folder = hook("aishell1", "test", tmp_path)
    ds = datasets.load_dataset(folder, "test", split="test")
    assert ds["id"] == ["BAC009S0764W0121", "BAC009S0764W0122"] and ds["speaker"] == ["S0764", "S0764"]
    assert ds[0]["text"] == AISHELL_TEXT["BAC009S0764W0121"]
    info = json.loads((datasets.config.Path(folder) / "build_info.json").read_text())
    assert info["skipped"] == {"no transcript line": {"count": 1, "examples": ["wav/test/S0764/BAC009S0764W0199.wav"]}}
    assert "skipped: no transcript line | 1" in (datasets.config.Path(folder) / "README.md").read_text()
    # built once: a second call reuses the folder
    hook.__globals__["_write"], saved = (lambda *a, **k: pytest.fail("rebuilt")), hook.__globals__["_write"]
    try:
        assert hook("aishell1", "test", tmp_path) == folder
    finally:
        hook.__globals__["_write"] = saved
    mmau = datasets.load_dataset(
        TM.load_task("mmau").hook("prepare_dataset")("mmau", "test-mini", tmp_path), "test-mini", split="test"
    )
    assert mmau["id"] == ["q1", "q2", "q4"] and mmau[1]["choices"] == ["Piano", "Guitar", "Violin", "Drums"]
    assert mmau["task"] == ["sound", "music", "speech"] and mmau["sub_category"] == ["fixture"] * 3


def test_dataset_path_overrides_the_variable(copies, tmp_path, monkeypatch):
    monkeypatch.delenv("LALM_EVAL_LIBRISPEECH", raising=False)
    hook = TM.load_task("asr_librispeech").hook("prepare_dataset")
    ds = datasets.load_dataset(
        hook(str(copies["librispeech"] / "LibriSpeech"), "test-clean", tmp_path), "test-clean", split="test"
    )
    assert ds["id"] == ["1089-134686-0000", "1089-134686-0001", "121-121726-0000"]
    assert ds[2]["text"] == "ALSO A POPULAR CONTRIVANCE" and ds[2]["chapter"] == "121726"


def test_missing_copy_names_the_variable_and_layout(tmp_path, monkeypatch):
    for task, var, layout in (
        ("asr_librispeech", "LALM_EVAL_LIBRISPEECH", "trans.txt"),
        ("asr_aishell1", "LALM_EVAL_AISHELL1", "aishell_transcript_v0.8.txt"),
        ("mmau", "LALM_EVAL_MMAU", "mmau-<split>.json"),
    ):
        monkeypatch.delenv(var, raising=False)
        t = TM.load_task(task)
        with pytest.raises(ConfigError, match=re.escape(var)) as e:
            t.hook("prepare_dataset")(t.config.dataset_path, t.config.dataset_name, tmp_path)
        assert layout in str(e.value)
    monkeypatch.setenv("LALM_EVAL_LIBRISPEECH", str(tmp_path))
    t = TM.load_task("asr_librispeech")
    with pytest.raises(ConfigError, match="no split folder 'test-clean'"):
        t.hook("prepare_dataset")("librispeech", "test-clean", tmp_path)


def test_broken_copies_name_the_file(tmp_path, monkeypatch):
    root = make_librispeech(tmp_path / "ls")
    (root / "LibriSpeech/test-clean/121/121726/121-121726-0000.flac").unlink()
    monkeypatch.setenv("LALM_EVAL_LIBRISPEECH", str(root))
    hook = TM.load_task("asr_librispeech").hook("prepare_dataset")
    with pytest.raises(DataError, match=r"121-121726-0000\.flac.*not found"):
        hook("librispeech", "test-clean", tmp_path / "c")
    mm = make_mmau(tmp_path / "mm")
    items = json.loads((mm / "mmau-test-mini.json").read_text())
    del items[1]["choices"]
    (mm / "mmau-test-mini.json").write_text(json.dumps(items))
    with pytest.raises(DataError, match=r"mmau-test-mini\.json: field 'choices': item 1 \(id 'q2'\)"):
        TM.load_task("mmau").hook("prepare_dataset")(str(mm), "test-mini", tmp_path / "c")


def test_asr_embedded_uses_only_clips_no_training_split_has(tmp_path):
    from palm_bench.config import load_preset
    from palm_bench.corpus.embedded import load_embedded_corpus
    from palm_bench.splits import split_clips

    cfg = load_preset("small")
    splits = split_clips(load_embedded_corpus(), cfg.test_fraction, cfg.seed)
    train = {c.id for clips in splits["train"].values() for c in clips}
    test_zh = {c.id: c.text for clips in splits["test"].values() for c in clips if c.language == "zh"}
    t = TM.load_task("asr_embedded_zh")
    ds = datasets.load_dataset(t.hook("prepare_dataset")(t.config.dataset_path, "zh", tmp_path), "zh", split="test")
    assert set(ds["id"]) == set(test_zh) and not set(ds["id"]) & train
    assert all(text == test_zh[i] for i, text in zip(ds["id"], ds["text"])) and set(ds["language"]) == {"zh"}
    # zh: 6 subjects × 28 clips and 6 negatives × 14; held out round(0.25 × 28) = 7 and round(0.25 × 14) = 4
    assert len(ds) == 6 * 7 + 6 * 4
    assert t.render_text(ds[0]).startswith("请转写") and [m["metric"] for m in t.config.metric_list] == ["cer"]
    assert [m["metric"] for m in TM.load_task("asr_embedded_en").config.metric_list] == ["wer"]


def test_groups():
    assert TM.resolve(["forgetting"]) == ["asr_aishell1", "asr_librispeech", "mmau"]
    assert TM.resolve(["asr_embedded"]) == ["asr_embedded_en", "asr_embedded_zh"]
    assert all(TM.load_task(t).config.metadata["table"] == "forgetting" for t in TM.resolve(["forgetting_all"]))
