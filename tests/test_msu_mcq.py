"""The public MSU-Benchmark release importer (msu_bench.mcq / mcq_builder / mcq_export) on a
miniature release in its REAL layout (tests/msu_release_fixture.py): what the authors score is
kept, the rest is skipped with a counted reason, and each row carries the audio parts they send."""

import io
import json

import numpy as np
import pytest
import soundfile as sf

from lalm_eval.audio.io import resample, to_mono
from lalm_eval.errors import ConfigError, DataError
from msu_bench.mcq import normalize_label, read_mcq_release, scheme_of, task_code
from tests.msu_release_fixture import SEG_M, SEG_P, SR_P, make_release, meeting_audio, podcast_audio

__all__ = ["make_release"]  # tests/test_msu_builder.py builds it too


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return make_release(tmp_path_factory.mktemp("rel") / "MSU-Bench")


@pytest.fixture(scope="module")
def report(release):
    return read_mcq_release(release)


def by_id(report):
    return {r["id"]: r for r in report.records}


def test_kept_and_skipped_counts_with_reasons(report):
    # worked out by hand in tests/msu_release_fixture.py's docstring
    assert len(report.records) == 16
    assert report.skip_reasons() == {
        "bad options": 1,
        "bad answer": 1,
        "bad speaker reference": 1,
        "not a question": 1,
        "no question": 1,
        "unknown task": 2,
    }
    skips = {(s.item.rsplit("/", 1)[-1], s.within): s.reason for s in report.skips}
    assert skips[("说话人识别能力-未知任务.json", None)].startswith("unknown task")
    assert "'E'" in skips[("多说话人上下文推理能力-多说话人情感交互.json", 2)]
    assert "spk_c[0]" in skips[("说话人识别能力-说话人计数任务.json", 1)]
    assert sum(r["reverse"] for r in report.records) == 3
    assert sorted(r["id"].split("/", 1)[0] + "/" + r["task"] for r in report.records if r["reverse"]) == [
        "en/DAR",
        "zh/BI",
        "zh/SV",
    ]


def test_english_and_chinese_task_names_map_to_codes(report):
    tasks = {(r["language"], r["task"]) for r in report.records}
    assert tasks == {
        ("zh", "SV"),
        ("zh", "GI"),
        ("zh", "EIR"),
        ("zh", "BI"),
        ("zh", "SC"),
        ("en", "SV"),
        ("en", "DAR"),
        ("en", "ER"),
    }
    rec = next(r for r in report.records if r["task"] == "DAR")
    assert (rec["tier"], rec["capability"], rec["task_name"]) == ("tier2", "DSA", "Dialogue Act Recognition")
    assert task_code("说话人识别能力-说话人反向检索任务") == "RSR"
    assert task_code("多说话人上下文推理能力-多说话人观点总结") == "MSVS"
    assert task_code("说话人识别能力-说话人观点总结任务") == "SVS"
    assert task_code("speaker-verification") == "SV" and task_code("SV") == "SV" and task_code("qasi") == "QASI"
    assert task_code("multi_speaker_viewpoint_summary") == "MSVS"
    assert task_code("reverse-speaker-retrieval") == "RSR" and task_code("speaker_retrieval") == "SR"
    assert task_code("readme") is None and task_code("message") is None


@pytest.mark.parametrize(
    "raw, out",
    [
        ("wrong speaker", (None, "wrong speaker")),
        ("ground_truth", (None, "ground truth")),
        ("A. wrong speaker", ("A", "wrong speaker")),
        ("B) Ground-Truth", ("B", "ground truth")),
        ("C：幻觉", ("C", "hallucination")),
        ("无法判断", (None, "unknown")),
        ("错误说话人", (None, "wrong speaker")),
        ("正确答案", (None, "ground truth")),
        ("partially correct", (None, "partially correct")),
    ],
)
def test_rationale_spellings(raw, out):
    assert normalize_label(raw) == out


def test_every_rationale_spelling_gives_the_four_labels(report):
    ids = by_id(report)
    expect = {
        f"zh/meeting/{SEG_M}/level1/SV/0": ["wrong speaker", "ground truth", "unknown", "hallucination"],  # lettered
        f"zh/meeting/{SEG_M}/level1/SV/1": ["wrong speaker", "ground truth", "unknown", "hallucination"],  # Chinese
        f"zh/meeting/{SEG_M}/level1/GI/0": ["hallucination", "ground truth", "wrong speaker", "unknown"],  # underscore
        f"en/meeting/{SEG_M}/level2/DAR/0": ["ground truth", "wrong speaker", "hallucination", "unknown"],
    }
    for rid, labels in expect.items():
        assert ids[rid]["rationale"] == labels and ids[rid]["labels_consistent"], rid
    assert ids[f"zh/meeting/{SEG_M}/level1/SV/0"]["rationale_raw"][0] == "A. wrong speaker"


def test_inconsistent_labels_are_kept_with_a_flag(report):
    ids = by_id(report)
    gi = ids[f"zh/meeting/{SEG_M}/level1/GI/1"]
    assert gi["answer"] == "C" and gi["label_issue"] == "ground truth at A, answer C" and not gi["labels_consistent"]
    dar = ids[f"en/meeting/{SEG_M}/level2/DAR/1"]
    assert dar["label_issue"] == "unrecognised label 'partially correct' at D"
    assert sum(not r["labels_consistent"] for r in report.records) == 2


def test_schemes_reverse_and_unknown(report):
    ids = by_id(report)
    assert scheme_of("reverse_count") == ("reverse_count", True) and scheme_of("type_text") == ("unknown_index", False)
    eir = ids[f"zh/meeting/{SEG_M}/level2/EIR/1"]
    assert (eir["question_type"], eir["scheme"], eir["reverse"]) == ("speech_index", "unknown_index", False)
    bi = ids[f"zh/podcast/{SEG_P}/level2/BI/1"]
    assert (bi["scheme"], bi["reverse"]) == ("reverse_count", True)


def test_files_without_speaker_meta_and_top_level_meta(report):
    ids = by_id(report)
    bi = ids[f"zh/podcast/{SEG_P}/level2/BI/0"]  # no speaker_meta anywhere: a complex_index question, full audio
    assert json.loads(bi["speaker_meta"]) == {} and bi["clips"] == [] and bi["full_audio"]
    eir = ids[f"zh/meeting/{SEG_M}/level2/EIR/0"]  # top-level speaker_meta, question list under "questions"
    assert [(c["ref"], c["start"], c["end"]) for c in eir["clips"]] == [("spk_a[0]", 0.2, 1.1)]


def test_audio_parts_and_labels_follow_the_authors(report):
    ids = by_id(report)
    parts = {
        rid: ([(c["role"], c["label"], c["ref"]) for c in r["clips"]], r["full_audio"], r["full_audio_label"])
        for rid, r in ids.items()
    }
    assert parts[f"zh/meeting/{SEG_M}/level1/SV/0"] == (
        [("clip", "片段1：", "spk_a[0]"), ("clip", "片段2：", "spk_b[0]")],
        False,
        "",
    )
    assert parts[f"en/meeting/{SEG_M}/level1/SV/0"] == (
        [("clip", "Clip 1:", "spk_a[0]"), ("clip", "Clip 2:", "spk_b[0]")],
        False,
        "",
    )
    assert parts[f"zh/meeting/{SEG_M}/level2/EIR/0"] == (
        [("target", "目标说话人片段：", "spk_a[0]")],
        True,
        "完整对话音频：",
    )
    assert parts[f"en/podcast/{SEG_P}/level1/ER/0"] == ([("target", "Target speaker snippet:", "spk_a[0]")], False, "")
    assert parts[f"en/meeting/{SEG_M}/level1/SV/1"] == ([], True, "Full conversation audio:")


def test_english_files_find_the_shared_audio(report):
    en = [r for r in report.records if r["language"] == "en" and r["scenario"] == "meeting"]
    assert {r["audio_path"] for r in en} == {"bench_cn/source_audio/meeting/R8001_M8004__seg0000__0.00-4.00.wav"}
    assert report.audio_found_by_search == []


@pytest.mark.parametrize(
    "change, kind",
    [
        ({"options": ["A. x", "B. y", "D. z", "C. w"]}, "bad options"),
        ({"answer": ""}, "bad answer"),
        ({"answer": "b"}, None),
        ({"question": "  "}, "no question"),
        ({"pair": {"left": "spk_a[0]", "right": "spk_b[7]"}}, "bad speaker reference"),
        ({"pair": {"left": "spk_a[0]", "right": "spk_b[1]"}}, None),
        ({"rationale": ["wrong speaker", "ground truth", "unknown"]}, None),  # kept, flagged
        ({"rationale": {"A": "wrong speaker", "B": "ground truth", "C": "unknown", "D": "hallucination"}}, None),
    ],
)
def test_each_validation_outcome(tmp_path, change, kind):
    root = make_release(tmp_path / "r")
    path = next(root.glob("bench_cn/QA_cn/meeting/*/*/level1/说话人识别能力-说话人验证任务.json"))
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["qa_result"][1].update(change)
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    report = read_mcq_release(root)
    extra = [s.reason.split(":")[0] for s in report.skips if s.item.endswith("说话人验证任务.json")]
    assert extra == ([kind] if kind else [])
    assert len(report.records) == 16 - (kind is not None)


def test_times_beyond_the_audio_are_skipped(tmp_path):
    root = make_release(tmp_path / "r")
    path = next(root.glob("bench_en/QA_en/podcast/*/*/level1/*.json"))
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["result"][0]["speaker_meta"]["spk_a"][0]["end_time"] = 9.5  # the wav is 3 s
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    reasons = [s.reason for s in read_mcq_release(root).skips if s.item == path.relative_to(root).as_posix()]
    assert reasons[0].startswith("bad segment times") and "3.00 s" in reasons[0]


def test_hub_layout_and_empty_folders_are_errors_naming_both_layouts(tmp_path):
    hub = tmp_path / "hub"
    (hub / "data").mkdir(parents=True)
    (hub / "data" / "test.jsonl").write_text('{"id": 1}\n')
    with pytest.raises(DataError, match="Hub layout") as err:
        read_mcq_release(hub)
    assert "bench_{cn,en}/QA_{cn,en}" in str(err.value) and "data/test.jsonl" in str(err.value)
    with pytest.raises(ConfigError, match="not found"):
        read_mcq_release(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no task JSON"):
        read_mcq_release(tmp_path / "empty")
    with pytest.raises(ConfigError, match="languages"):
        read_mcq_release(hub, languages=("fr",))


def _decode(audio):
    data, sr = sf.read(io.BytesIO(audio["bytes"]), dtype="float32")
    assert sr == 16000 and data.ndim == 1
    return data


def test_built_rows_carry_the_clips_cut_from_the_source(release, tmp_path, monkeypatch):
    import datasets

    import msu_bench.mcq_builder
    import msu_bench.mcq_export
    from msu_bench.mcq_export import build_mcq

    reads = []
    spy = lambda *a: reads.append(a) or read_mcq_release(*a)  # noqa: E731
    monkeypatch.setattr(msu_bench.mcq_export, "read_mcq_release", spy)
    monkeypatch.setattr(msu_bench.mcq_builder, "read_mcq_release", spy)
    out = tmp_path / "msu-bench-mcq"
    info = build_mcq(out, release)
    assert len(reads) == 1  # the release is read once: the builder writes that report's records
    imp = info["stats"]["mcq_import"]
    assert (imp["questions_kept"], imp["questions_skipped"], imp["files_skipped"]) == (16, 7, 1)
    assert (imp["reverse_questions"], imp["scored_by_default"], imp["label_issues"], imp["unknown_index"]) == (
        3,
        13,
        2,
        1,
    )
    assert imp["skipped_by_reason"]["unknown task"] == 2 and len(imp["skips"]) == 6
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "| unknown task | 2 |" in card and "| bad options | 1 |" in card and "16 questions kept" in card
    ds = datasets.load_dataset(str(out), "mcq", split="test").cast_column("audio", datasets.Audio(decode=False))
    ds = ds.cast_column(
        "clips",
        datasets.List(
            {
                **{k: v for k, v in ds.features["clips"].feature.items() if k != "audio"},
                "audio": datasets.Audio(decode=False),
            }
        ),
    )
    rows = {r["id"]: r for r in ds}
    assert len(rows) == 16
    meeting = meeting_audio()
    sv = rows[f"zh/meeting/{SEG_M}/level1/SV/0"]  # 16 kHz mono source: the cut is exact
    np.testing.assert_array_equal(_decode(sv["clips"][0]["audio"]), meeting[3200:17600])  # 0.20-1.10 s
    np.testing.assert_array_equal(_decode(sv["clips"][1]["audio"]), meeting[20800:38400])  # 1.30-2.40 s
    np.testing.assert_array_equal(_decode(sv["audio"]), meeting)
    eir = rows[f"zh/meeting/{SEG_M}/level2/EIR/0"]
    np.testing.assert_array_equal(_decode(eir["clips"][0]["audio"]), meeting[3200:17600])
    er = rows[f"en/podcast/{SEG_P}/level1/ER/0"]  # 22.05 kHz stereo: mixed down, resampled
    whole = resample(to_mono(podcast_audio()), SR_P, 16000)
    clip = _decode(er["clips"][0]["audio"])
    assert len(clip) == 14400  # 0.10-1.00 s
    np.testing.assert_allclose(clip[200:-200], whole[1600 + 200 : 16000 - 200], atol=2e-3)
    assert _decode(er["audio"]).shape == (48000,) and er["duration"] == 3.0


def test_cli_builds_the_release_alone(release, tmp_path, capsys):
    from msu_bench.cli import main

    out = tmp_path / "built"
    assert main(["build", "--mcq-dir", str(release), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "16 questions kept (13 scored by default, 3 reverse_* excluded), 7 skipped" in printed
    assert "unknown task: 2" in printed
    info = json.loads((out / "build_info.json").read_text(encoding="utf-8"))
    assert info["stats"]["mcq_import"]["questions_kept"] == 16 and sorted(p.name for p in out.iterdir()) == [
        "README.md",
        "build_info.json",
        "mcq",
    ]
