"""The public MSU-Benchmark release (multiple choice): reader, prompt, letter extraction, error
classification and the ``MsuMcq`` builder, on a miniature release written in the exact layout."""

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from lalm_eval.errors import ConfigError, DataError
from msu_bench.mcq import classify_wrong, extract_letter, mcq_prompt, read_mcq_release, task_code

SEG_CN = "R8001_M8004__seg0000__0.00-3.00__idx000-003__0.50-2.50"  # wav: R8001_M8004__seg0000__0.00-3.00.wav
SEG_EN = "ep01__seg0001__10.00-13.00"
SR_IN = 22050  # resampled to 16 kHz by the builder


def seg(start, end, spk_id, text, gender):
    return {"seg_id": f"{spk_id}_{start}", "start_time": start, "end_time": end, "transcript": text,
            "spk_id": spk_id, "spk_index": 0, "age": "adult", "gender": gender, "emotion": "neutral",
            "accent": "standard"}


META_CN = {"speaker_meta": {"spk_a": [seg(0.2, 1.1, "M8004", "你好", "male")],
                            "spk_b": [seg(1.3, 2.4, "F8001", "你好啊", "female"), seg(2.5, 2.9, "F8001", "嗯", "female")]}}
META_EN = {"speaker_meta": {"spk_a": [seg(0.1, 1.0, "host", "Welcome back", "female")],
                            "spk_b": [seg(1.2, 2.8, "guest", "Thanks for having me", "male")]}}


def question(text, qtype, options, answer, rationale, pair=None):
    q = {"question": text, "question_type": qtype, "options": [f"{x}. {o}" for x, o in zip("ABCD", options)],
         "answer": answer, "answer_text": options["ABCD".index(answer)] if answer in "ABCD" else "",
         "rationale": rationale}
    return {**q, "pair": pair} if pair else q


SV_PAIR = question("这两个片段是同一个说话人吗？", "no_index", ["是同一个人", "不是同一个人", "无法判断", "两段都没有人说话"],
                   "B", ["wrong speaker", "ground truth", "unknown", "hallucination"],
                   pair={"left": "spk_a[0]", "right": "spk_b[0]"})
SV_TIME = question("在0.2秒到1.1秒说话的人和在1.3秒到2.4秒说话的人是同一个人吗？", "time_index",
                   ["是", "不是", "无法判断", "没有人说话"], "B", ["wrong speaker", "ground truth", "unknown", "hallucination"])
EIR_TARGET = question("目标说话人在对话中的情绪如何变化？", "no_index", ["保持平静", "越来越生气", "由悲转喜", "无法判断"], "A",
                      ["ground truth", "hallucination", "hallucination", "unknown"])
EIR_BAD = question("说话人B对说话人A的情绪作何反应？", "speaker_index", ["安慰", "争吵", "沉默", "离开"], "E",
                   ["ground truth", "wrong speaker", "hallucination", "unknown"])
GI_TARGET = question("What is the gender of the target speaker?", "no_index",
                     ["Male", "Female", "A child", "Cannot tell"], "B",
                     ["hallucination", "ground truth", "wrong speaker", "unknown"])
BI_SCENE = question("Where does this conversation most likely take place?", "complex_index",
                    ["A hospital", "A courtroom", "A kitchen", "A podcast studio"], "D",
                    ["hallucination", "hallucination", "unknown", "ground truth"])


def write_task(root, lang, scenario, length, seg_id, level, stem, items, key="result", audio=None):
    path = root / f"bench_{lang}" / f"QA_{lang}" / scenario / f"QA_{length}" / seg_id / f"level{level}" / f"{stem}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    audio = audio or f"source_audio/{scenario}/{seg_id}.wav"
    path.write_text(json.dumps({"source_audio": audio, "model": "gemini-2.5-pro", key: items}, ensure_ascii=False),
                    encoding="utf-8")
    return path


def make_release(root: Path) -> Path:
    t = np.arange(3 * SR_IN) / SR_IN
    tone = (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    (root / "source_audio" / "meeting").mkdir(parents=True)
    sf.write(root / "source_audio" / "meeting" / "R8001_M8004__seg0000__0.00-3.00.wav",
             np.stack([tone, 0.5 * tone], axis=1), SR_IN)  # stereo, named without the idx window
    (root / "source_audio" / "archive" / "podcast").mkdir(parents=True)  # not where the layout puts it
    sf.write(root / "source_audio" / "archive" / "podcast" / f"{SEG_EN}.wav", tone[: 2 * SR_IN], SR_IN)
    write_task(root, "cn", "meeting", "short", SEG_CN, 1, "SV", [META_CN, SV_PAIR, SV_TIME])
    write_task(root, "cn", "meeting", "short", SEG_CN, 2, "多说话人上下文推理能力-多说话人情感交互",
               [META_CN, EIR_TARGET, EIR_BAD], key="qa_result")
    write_task(root, "en", "podcast", "long", SEG_EN, 1, "GI", [META_EN, GI_TARGET])
    write_task(root, "en", "podcast", "long", SEG_EN, 2, "BI", [META_EN, BI_SCENE])
    return root


@pytest.fixture
def release(tmp_path):
    return make_release(tmp_path / "release")


@pytest.fixture
def report(release):
    return read_mcq_release(release)


def by_id(report):
    return {r["id"]: r for r in report.records}


def test_reads_every_valid_question_with_stable_ids(report):
    assert len(report.records) == 5 and len(report.files) == 4
    ids = by_id(report)
    assert sorted(ids) == sorted([
        f"zh/meeting/{SEG_CN}/level1/SV/0", f"zh/meeting/{SEG_CN}/level1/SV/1", f"zh/meeting/{SEG_CN}/level2/EIR/0",
        f"en/podcast/{SEG_EN}/level1/GI/0", f"en/podcast/{SEG_EN}/level2/BI/0"])
    rec = ids[f"zh/meeting/{SEG_CN}/level2/EIR/0"]
    assert (rec["language"], rec["scenario"], rec["length"], rec["seg_id"], rec["level"], rec["task"],
            rec["capability"]) == ("zh", "meeting", "short", SEG_CN, 2, "EIR", "DCR")
    assert rec["audio_path"] == "source_audio/meeting/R8001_M8004__seg0000__0.00-3.00.wav"
    assert json.loads(rec["speaker_meta"]) == META_CN["speaker_meta"]


def test_the_malformed_question_is_skipped_and_counted(report):
    assert len(report.skipped) == 1
    skip = report.skipped[0]
    assert skip.file.endswith("level2/多说话人上下文推理能力-多说话人情感交互.json") and skip.question == 1
    assert skip.reason.startswith("bad answer") and "'E'" in skip.reason
    assert report.skip_reasons() == {"bad answer": 1}


def test_audio_found_by_search_is_reported(report):
    en = [r for r in report.records if r["language"] == "en"]
    assert {r["audio_path"] for r in en} == {f"source_audio/archive/podcast/{SEG_EN}.wav"}
    folder = f"bench_en/QA_en/podcast/QA_long/{SEG_EN}"
    assert sorted(f for f, _ in report.audio_found_by_search) == [f"{folder}/level1/GI.json", f"{folder}/level2/BI.json"]


def test_letters_options_and_rationale_are_preserved(report):
    rec = by_id(report)[f"zh/meeting/{SEG_CN}/level1/SV/0"]
    assert rec["options"] == ["是同一个人", "不是同一个人", "无法判断", "两段都没有人说话"]
    assert rec["option_letters"] == ["A", "B", "C", "D"]
    assert (rec["answer"], rec["answer_text"]) == ("B", "不是同一个人")
    assert rec["rationale"] == ["wrong speaker", "ground truth", "unknown", "hallucination"]
    assert rec["question_type"] == "no_index" and rec["pair"] == {"left": "spk_a[0]", "right": "spk_b[0]"}


def test_no_index_clips_follow_the_release_scorer(report):
    ids = by_id(report)
    pair = ids[f"zh/meeting/{SEG_CN}/level1/SV/0"]  # verification pair: two clips, no full audio at level 1
    assert [(c["ref"], c["speaker"], c["start"], c["end"]) for c in pair["clips"]] == [
        ("spk_a[0]", "M8004", 0.2, 1.1), ("spk_b[0]", "F8001", 1.3, 2.4)]
    assert pair["full_audio"] is False
    target = ids[f"zh/meeting/{SEG_CN}/level2/EIR/0"]  # the target's first segment, plus the full audio at level 2
    assert [(c["ref"], c["start"], c["end"]) for c in target["clips"]] == [("spk_a[0]", 0.2, 1.1)]
    assert target["full_audio"] is True
    gi = ids[f"en/podcast/{SEG_EN}/level1/GI/0"]
    assert [c["ref"] for c in gi["clips"]] == ["spk_a[0]"] and gi["full_audio"] is False
    for rid in (f"zh/meeting/{SEG_CN}/level1/SV/1", f"en/podcast/{SEG_EN}/level2/BI/0"):  # indexed: full audio only
        assert ids[rid]["clips"] == [] and ids[rid]["full_audio"] is True


@pytest.mark.parametrize("change, kind", [
    ({"rationale": ["wrong speaker", "ground truth", "unknown"]}, "bad rationale"),
    ({"rationale": ["ground truth", "ground truth", "unknown", "hallucination"]}, "bad rationale"),
    ({"rationale": ["ground truth", "wrong speaker", "unknown", "hallucination"]}, "bad rationale"),  # not at B
    ({"rationale": ["wrong speaker", "ground truth", "maybe", "hallucination"]}, "bad rationale"),
    ({"options": ["A. x", "B. y", "C. z"]}, "bad options"),
    ({"options": ["A. x", "B. y", "D. z", "C. w"]}, "bad options"),
    ({"answer": ""}, "bad answer"),
    ({"question": "  "}, "no question"),
    ({"pair": {"left": "spk_a[0]", "right": "spk_c[0]"}}, "bad speaker reference"),
    ({"pair": {"left": "spk_a[0]", "right": "spk_b[1]"}, "question_type": "no_index"}, None),  # valid
    ({"rationale": ["Wrong-Speaker", "Ground_Truth", "unknown", "hallucination"]}, None),  # spelling variants
])
def test_each_validation_failure_is_counted(release, change, kind):
    write_task(release, "cn", "meeting", "short", SEG_CN, 1, "SC", [META_CN, {**copy.deepcopy(SV_PAIR), **change}])
    report = read_mcq_release(release)
    extra = [s for s in report.skipped if s.file.endswith("level1/SC.json")]
    assert [s.reason.split(":")[0] for s in extra] == ([kind] if kind else [])
    assert len(report.records) == 5 + (kind is None)


def test_bad_files_are_skipped_whole_with_a_reason(release):
    write_task(release, "en", "podcast", "long", SEG_EN, 1, "NOT_A_TASK", [META_EN, GI_TARGET])
    write_task(release, "en", "podcast", "long", "missing__seg0009__0.00-1.00", 1, "GI", [META_EN, GI_TARGET])
    (release / "bench_en" / "QA_en" / "podcast" / "QA_long" / SEG_EN / "level1" / "SP.json").write_text("{oops")
    reasons = read_mcq_release(release).skip_reasons()
    assert reasons == {"bad answer": 1, "unknown task": 1, "no source audio": 1, "unreadable JSON": 1}


def test_missing_or_empty_release_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        read_mcq_release(tmp_path / "nowhere")
    with pytest.raises(DataError, match="no task JSON"):
        read_mcq_release(tmp_path)
    with pytest.raises(ConfigError, match="languages"):
        read_mcq_release(tmp_path, languages=("fr",))


def test_task_codes_from_file_stems():
    assert task_code("SV") == "SV" and task_code("qasi") == "QASI"
    assert task_code("说话人识别能力-说话人反向检索任务") == "RSR"
    assert task_code("说话人识别能力-说话人观点总结任务") == "SVS"
    assert task_code("多说话人上下文推理能力-多说话人观点总结") == "MSVS"
    assert task_code("readme") is None


def test_prompt_text(report):
    ids = by_id(report)
    assert mcq_prompt(ids[f"en/podcast/{SEG_EN}/level1/GI/0"]) == (
        "What is the gender of the target speaker?\n\nOptions:\nA. Male\nB. Female\nC. A child\nD. Cannot tell"
        "\n\n[Output format]\nOn the very last line of your reply, output only: Final answer: A/B/C/D.\n")
    zh = ids[f"zh/meeting/{SEG_CN}/level1/SV/0"]
    assert mcq_prompt(zh) == ("这两个片段是同一个说话人吗？\n\n选项：\nA. 是同一个人\nB. 不是同一个人\nC. 无法判断\nD. 两段都没有人说话"
                              "\n\n【输出格式要求】\n在回复的最后一行按照固定格式输出：最后答案：A/B/C/D。\n")
    assert mcq_prompt(zh, "en").endswith("Final answer: A/B/C/D.\n") and mcq_prompt(zh, "cn") == mcq_prompt(zh)
    with pytest.raises(ConfigError):
        mcq_prompt(zh, "fr")


@pytest.mark.parametrize("response, language, letter", [
    ("Final answer: C", "en", "C"),
    ("最后答案：B", "zh", "B"),
    ("The answer is (D)", "en", "D"),
    ("garbage", "en", None),
    ("", "en", None),
    (None, "zh", None),
    ("B", "en", "B"),
    (" (a) ", "en", "A"),
    ("Option A is about the host, B is wrong.\nFinal answer: C", "en", "C"),
    ("**Final answer:** c", "en", "C"),
    ("Final answer: A\n...on reflection\nFinal answer: D", "en", "D"),
    ("根据对话，答案是D选项。", "zh", "D"),
    ("Final answer: B", "zh", "B"),  # an English reply to a Chinese prompt
    ("Either A or B.", "en", None),  # ambiguous
    ("最后答案：E", "zh", None),
])
def test_extract_letter(response, language, letter):
    assert extract_letter(response, language) == letter


def test_classify_wrong(report):
    rec = by_id(report)[f"zh/meeting/{SEG_CN}/level1/SV/0"]
    assert [classify_wrong(rec, x) for x in "ABCD"] == ["wrong speaker", "ground truth", "unknown", "hallucination"]
    assert classify_wrong(rec, None) == "no answer" and classify_wrong(rec, "E") == "no answer"
    assert classify_wrong(rec, extract_letter("Final answer: D", "en")) == "hallucination"
    assert classify_wrong(rec, extract_letter("no idea", "en")) == "no answer"


def test_builder_direct_use(release, tmp_path):
    import datasets

    from msu_bench.mcq_builder import FEATURES, MsuMcq

    b = MsuMcq(config_name="mcq", data_dir=str(release), cache_dir=str(tmp_path / "cache"))
    b.download_and_prepare()
    ds = b.as_dataset()["test"]
    assert len(ds) == 5 and ds.features == FEATURES and len(b.report.skipped) == 1
    rows = {r["id"]: r for r in ds}
    sv = rows[f"zh/meeting/{SEG_CN}/level1/SV/0"]
    assert sv["rationale"] == ["wrong speaker", "ground truth", "unknown", "hallucination"]
    assert sv["option_letters"] == ["A", "B", "C", "D"] and sv["answer"] == "B"
    assert [(c["ref"], c["start"], c["end"]) for c in sv["clips"]] == [("spk_a[0]", 0.2, 1.1), ("spk_b[0]", 1.3, 2.4)]
    assert sv["pair"] == {"left": "spk_a[0]", "right": "spk_b[0]"} and sv["full_audio"] is False
    assert rows[f"en/podcast/{SEG_EN}/level2/BI/0"]["pair"] == {"left": "", "right": ""}
    for rid, seconds in ((sv["id"], 3.0), (f"en/podcast/{SEG_EN}/level1/GI/0", 2.0)):
        samples = rows[rid]["audio"].get_all_samples()
        assert samples.sample_rate == 16000
        assert samples.data.shape[-1] == pytest.approx(seconds * 16000, abs=2) and rows[rid]["duration"] == seconds
    raw = ds.cast_column("audio", datasets.Audio(decode=False))[0]["audio"]
    assert raw["bytes"][:4] == b"fLaC"


def test_builder_needs_a_data_dir(tmp_path):
    from msu_bench.mcq_builder import MsuMcq

    builder = MsuMcq(config_name="mcq", data_dir=str(tmp_path / "nowhere"), cache_dir=str(tmp_path / "c"))
    with pytest.raises(ConfigError, match="data_dir"):
        builder.download_and_prepare()
