"""A miniature of the authors' public MSU-Benchmark release in its REAL layout (docs/msu_release.md):
bench_cn + bench_en, Chinese and English task file names, every rationale spelling, the three
question-list keys, speaker_meta as first item / top level / absent, inconsistent labels,
reverse_* and unknown schemes, and malformed questions. Used by tests/test_msu_mcq*.py and
tests/test_msu_builder.py.

23 questions in 9 task files; what the authors' procedure keeps (worked out by hand):
- kept 16 = SV zh 3 + GI zh 2 + EIR zh 2 + BI zh 2 + SC zh 1 + SV en 2 + DAR en 3 + ER en 1
- of them reverse_* 3 (SV zh q2, BI zh q1, DAR en q2), so 13 scored by default
- label issues 2 (GI zh q1: ground truth at A, answer C; DAR en q1: unrecognised label at D)
- unknown_index 1 (EIR zh q1, question_type speech_index)
- skipped 7: bad options 1 (GI zh q2), bad answer 1 (EIR zh q2), bad speaker reference 1 (SC zh q1),
  not a question 1 (SC zh q2), no question 1 (ER en q1), unknown task 2 (a whole file of 2)
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

SEG_M = "R8001_M8004__seg0000__0.00-4.00__idx000-005__0.50-3.50"  # wav R8001_M8004__seg0000__0.00-4.00.wav
SEG_P = "ep01__seg0001__0.00-3.00__idx000-002__0.00-3.00"  # wav ep01__seg0001__0.00-3.00.wav
WAV_M = "R8001_M8004__seg0000__0.00-4.00.wav"  # 16 kHz mono PCM_16, 4 s
WAV_P = "ep01__seg0001__0.00-3.00.wav"  # 22.05 kHz stereo, 3 s (resampled by the builder)
SR_P = 22050


def _seg(start, end, spk_id, text, spk_index):
    return {
        "seg_id": f"{spk_id}_{start}",
        "start_time": start,
        "end_time": end,
        "transcript": text,
        "spk_id": spk_id,
        "spk_index": spk_index,
        "age": "中年",
        "gender": "男声",
        "emotion": "中性",
        "accent": "普通话",
    }


META_M = {
    "spk_a": [_seg(0.20, 1.10, "M8004", "你好", "spk_1")],
    "spk_b": [_seg(1.30, 2.40, "F8001", "你好啊", "spk_2"), _seg(2.50, 3.90, "F8001", "嗯", "spk_2")],
}
META_P = {
    "spk_a": [_seg(0.10, 1.00, "host", "Welcome back", "spk_1")],
    "spk_b": [_seg(1.20, 2.80, "guest", "Thanks for having me", "spk_2")],
}

PLAIN = ["wrong speaker", "ground truth", "unknown", "hallucination"]


def q(text, qtype, answer, rationale, options=None, pair=None, **extra):
    options = options or [f"{text} option {x}" for x in "ABCD"]
    item = {
        "question": text,
        "question_type": qtype,
        "type": "single_choice",
        "sub_question_type": "",
        "options": [f"{x}. {o}" for x, o in zip("ABCD", options)],
        "answer": answer,
        "answer_text": options["ABCD".index(answer)] if answer in "ABCD" else "",
        "rationale": rationale,
        **extra,
    }
    return {**item, "pair": pair} if pair else item


def lettered(labels):
    return [f"{x}. {lab}" for x, lab in zip("ABCD", labels)]


# question texts are unique: the tests' scripted model answers by question text
FILES = [
    # (lang, scenario, length, seg, level, file stem, list key, speaker_meta placement, questions)
    (
        "cn",
        "meeting",
        "short",
        SEG_M,
        1,
        "说话人识别能力-说话人验证任务",
        "qa_result",
        "first",
        [
            q(
                "zh-SV-0 这两个片段是同一个说话人吗？",
                "no_index",
                "B",
                lettered(PLAIN),
                pair={"left": "spk_a[0]", "right": "spk_b[0]"},
            ),
            q(
                "zh-SV-1 在0.2秒到1.1秒说话的人和在1.3秒到2.4秒说话的人是同一个人吗？",
                "time_index",
                "B",
                ["错误说话人", "正确答案", "无法判断", "幻觉"],
            ),
            q(
                "zh-SV-2 哪一段是说话人B说的？",
                "reverse_retrival",
                "A",
                ["ground truth", "wrong speaker", "unknown", "hallucination"],
            ),
        ],
    ),
    (
        "cn",
        "meeting",
        "short",
        SEG_M,
        1,
        "说话人属性识别能力-性别识别任务",
        "result",
        "first",
        [
            q(
                "zh-GI-0 目标说话人的性别是？",
                "no_index",
                "B",
                ["hallucination", "ground_truth", "wrong_speaker", "unknown"],
            ),
            q(
                "zh-GI-1 说话人B的性别是？",
                "speaker_index",
                "C",
                ["ground truth", "wrong speaker", "hallucination", "unknown"],
            ),
            {**q("zh-GI-2 坏题", "speaker_index", "A", PLAIN), "options": ["A. 男", "B. 女", "C. 无法判断"]},
        ],
    ),
    (
        "cn",
        "meeting",
        "short",
        SEG_M,
        2,
        "多说话人上下文推理能力-多说话人情感交互",
        "questions",
        "top",
        [
            q(
                "zh-EIR-0 目标说话人的情绪如何变化？",
                "no_index",
                "A",
                ["ground truth", "hallucination", "hallucination", "unknown"],
            ),
            q(
                "zh-EIR-1 谁先表达了不满？",
                "speech_index",
                "D",
                ["hallucination", "wrong speaker", "unknown", "ground truth"],
            ),
            q("zh-EIR-2 答案越界", "speaker_index", "E", PLAIN),
        ],
    ),
    (
        "cn",
        "podcast",
        "long",
        SEG_P,
        2,
        "对话场景推理能力-对话背景推理任务",
        "qa_result",
        "none",
        [
            q(
                "zh-BI-0 这段对话最可能发生在哪里？",
                "complex_index",
                "D",
                lettered(["hallucination", "hallucination", "unknown", "ground truth"]),
            ),
            q("zh-BI-1 对话中有几个人在说话？", "reverse_count", "B", PLAIN),
        ],
    ),
    (
        "cn",
        "podcast",
        "long",
        SEG_P,
        1,
        "说话人识别能力-说话人计数任务",
        "result",
        "first",
        [
            q(
                "zh-SC-0 说“Welcome back”的人一共说了几次话？",
                "transcript_index",
                "A",
                ["ground truth", "wrong speaker", "hallucination", "unknown"],
            ),
            q("zh-SC-1 坏引用", "no_index", "B", PLAIN, pair={"left": "spk_a[0]", "right": "spk_c[0]"}),
            "not a question but a string",
        ],
    ),
    (
        "cn",
        "podcast",
        "long",
        SEG_P,
        1,
        "说话人识别能力-未知任务",
        "result",
        "first",
        [
            q("zh-XX-0 未知任务的题", "no_index", "A", PLAIN),
            q("zh-XX-1 未知任务的题", "time_index", "B", PLAIN),
        ],
    ),
    (
        "en",
        "meeting",
        "short",
        SEG_M,
        1,
        "speaker_identification-speaker-verification",
        "qa_result",
        "first",
        [
            q(
                "en-SV-0 Are the two clips the same speaker?",
                "no_index",
                "B",
                lettered(PLAIN),
                pair={"left": "spk_a[0]", "right": "spk_b[0]"},
            ),
            q(
                "en-SV-1 Is the second speaker also the one who laughs at the end?",
                "complex_index",
                "C",
                ["wrong speaker", "hallucination", "ground truth", "unknown"],
            ),
        ],
    ),
    (
        "en",
        "meeting",
        "short",
        SEG_M,
        2,
        "dialogue_structure_analysis-dialogue_act_recognition",
        "result",
        "first",
        [
            q(
                "en-DAR-0 What is the act of the turn 'you know what'?",
                "transcript_index",
                "A",
                ["A. ground_truth", "B. wrong_speaker", "C. hallucination", "D. unknown"],
            ),
            q(
                "en-DAR-1 What does the speaker at 1.3 s do?",
                "time_index",
                "B",
                ["wrong speaker", "ground truth", "unknown", "partially correct"],
            ),
            q(
                "en-DAR-2 Who asked the question?",
                "reverse_retrival",
                "C",
                ["wrong speaker", "unknown", "ground truth", "hallucination"],
            ),
        ],
    ),
    (
        "en",
        "podcast",
        "long",
        SEG_P,
        1,
        "Speaker Attribute Recognition - Emotion Recognition",
        "result",
        "first",
        [
            q(
                "en-ER-0 What emotion does the target speaker show?",
                "no_index",
                "C",
                ["wrong speaker", "hallucination", "ground truth", "unknown"],
            ),
            q("   ", "no_index", "A", PLAIN),
        ],
    ),
]


def meeting_audio() -> np.ndarray:
    """4 s of seeded noise, quantised to 16 bits (what the wav stores)."""
    x = np.random.default_rng(0).uniform(-0.4, 0.4, 4 * 16000)
    return (np.round(x * 32768) / 32768).astype(np.float32)


def podcast_audio() -> np.ndarray:
    """3 s stereo at 22.05 kHz: a 300 Hz tone left, 500 Hz right."""
    t = np.arange(3 * SR_P) / SR_P
    return np.stack([0.3 * np.sin(2 * np.pi * 300 * t), 0.2 * np.sin(2 * np.pi * 500 * t)], axis=1).astype(np.float32)


def make_release(root: Path) -> Path:
    root = Path(root)
    audio = root / "bench_cn" / "source_audio"
    (audio / "meeting").mkdir(parents=True)
    (audio / "podcast").mkdir(parents=True)
    sf.write(audio / "meeting" / WAV_M, meeting_audio(), 16000, subtype="PCM_16")
    sf.write(audio / "podcast" / WAV_P, podcast_audio(), SR_P, subtype="FLOAT")
    for lang, scenario, length, seg, level, stem, key, meta_at, questions in FILES:
        folder = root / f"bench_{lang}" / f"QA_{lang}" / scenario / f"QA_{length}" / seg / f"level{level}"
        folder.mkdir(parents=True, exist_ok=True)
        meta = META_M if scenario == "meeting" else META_P
        items = ([{"speaker_meta": meta}] if meta_at == "first" else []) + list(questions)
        wav = WAV_M if scenario == "meeting" else WAV_P
        doc = {
            "source_movie_json": f"{seg}.json",
            "source_audio": f"source_audio/{scenario}/{wav}",
            "prompt_file": "prompt.txt",
            "prompt_relpath": "prompts/prompt.txt",
            "model": "gemini-2.5-pro",
            key: items,
            **({"speaker_meta": meta} if meta_at == "top" else {}),
        }
        (folder / f"{stem}.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    return root
