"""The authors' public MSU-Benchmark release (Hub ``ASLP-lab/MSU-Benchmark``, 4-option multiple choice):
``bench_{cn,en}/QA_{cn,en}/<scenario>/QA_short|QA_long/<seg_id>/level{1,2}/<task>.json`` + ``source_audio/``.
One validated record per question; failures are listed (file + reason) in ``McqReport.skipped``. Audio as
the release's scorer gives it: a ``no_index`` question gets the target speaker's first segment (``spk_a[0]``,
else the first speaker; both ``pair`` segments for a verification pair) plus, at level 2, the full audio
(``full_audio``); any other question gets the full audio only.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from lalm_eval.errors import ConfigError, DataError

LANGUAGES = {"cn": "zh", "en": "en"}  # release folder code -> language tag
LETTERS = ["A", "B", "C", "D"]
LABELS = ("ground truth", "wrong speaker", "hallucination", "unknown")
_TABLE = [x.split("=") for x in (  # code=capability=Chinese task name a file stem may carry instead of the code
    "RSR=SID=反向检索 SR=SID=说话人检索 SVS=SID=说话人观点总结 SC=SID=说话人计数 SV=SID=说话人验证 AI=SAR=口音识别 AR=SAR=年龄 "
    "GI=SAR=性别识别 ER=SAR=情感识别 SP=SAR=说话人画像 BI=DSR=对话背景推理 RII=DSR=对话身份识别 DAR=DSA=对话行为识别 "
    "QASI=DSA=问答结构识别 EIR=DCR=多说话人情感交互 MSVS=DCR=多说话人观点总结").split()]
TASKS = {code: cap for code, cap, _ in _TABLE}  # capabilities SID, SAR at level 1; DSR, DSA, DCR at level 2
_CN_STEMS = {name: code for code, _, name in _TABLE}  # longest match wins
_PREFIX = re.compile(r"\s*([A-Za-z])\s*[.)、．:：]\s*(.*)", re.S)  # "A. text", "B) text", "C、text"


class Skip(NamedTuple):
    file: str  # task JSON, relative to the release root
    question: int | None  # index in the file's question list; None when the whole file was skipped
    reason: str  # "<kind>: <detail>"


@dataclasses.dataclass
class McqReport:
    records: list[dict] = dataclasses.field(default_factory=list)
    skipped: list[Skip] = dataclasses.field(default_factory=list)
    audio_found_by_search: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (task JSON, wav)
    files: dict = dataclasses.field(default_factory=dict)  # (lang, scenario, seg_id, level, task) -> task JSON read

    def skip_reasons(self) -> Counter:
        return Counter(s.reason.split(":")[0] for s in self.skipped)


class _Bad(Exception):  # a question fails validation; the message is the skip reason
    pass


def _need(ok, reason: str) -> None:
    if not ok:
        raise _Bad(reason)


def task_code(stem: str) -> str | None:
    """The task code of a task-file stem: the code itself, or the code of a Chinese task name."""
    return stem.upper() if stem.upper() in TASKS else _CN_STEMS.get(max(filter(stem.__contains__, _CN_STEMS),
                                                                         key=len, default=""))


def _clip(ref: str, meta: dict) -> dict:
    try:
        m = re.fullmatch(r"(spk_\w+)\[(\d+)\]", ref.strip())
        seg = meta[m.group(1)][int(m.group(2))]
        start, end = float(seg["start_time"]), float(seg["end_time"])
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        raise _Bad(f"bad speaker reference: {ref!r} not in speaker_meta, or no start_time/end_time") from None
    _need(0 <= start < end, f"bad segment times: {ref!r} spans {start}-{end}")
    return {"ref": m.group(0), "speaker": str(seg.get("spk_id") or m.group(1)), "start": start, "end": end}


def _question(q, meta: dict, level: int) -> dict:
    _need(isinstance(q, dict) and isinstance(q.get("question"), str) and q["question"].strip(), "no question: no text")
    opts = q.get("options") if isinstance(q.get("options"), list) else []
    found = [_PREFIX.fullmatch(o) if isinstance(o, str) else None for o in opts]
    _need(all(found) and [m.group(1).upper() for m in found] == LETTERS, f"bad options: not 4 lettered A-D: {opts}")
    answer = str(q.get("answer") or "").strip()
    letter = answer[:1].upper() if re.fullmatch(r"[A-Za-z](?:[.)、:：\s].*)?", answer, re.S) else ""
    _need(letter in LETTERS, f"bad answer: letter {answer!r} not among the options A-D")
    rat = q.get("rationale")
    labels = [re.sub(r"[-_\s]+", " ", str(r).strip().lower()) for r in rat] if isinstance(rat, list) else []
    _need(len(labels) == 4 and set(labels) <= set(LABELS), f"bad rationale: {rat} is not 4 labels of {LABELS}")
    _need(labels.count("ground truth") == 1 and labels[LETTERS.index(letter)] == "ground truth",
          f"bad rationale: {labels} does not mark exactly the answer {letter} as ground truth")
    pair = q.get("pair") or {}
    _need(isinstance(pair, dict), f"bad pair: not an object: {pair!r}")
    pair = {"left": str(pair.get("left") or ""), "right": str(pair.get("right") or "")}
    qtype, refs = str(q.get("question_type") or "").strip().lower(), []
    if qtype == "no_index" and pair["left"] and pair["right"]:  # verification pair: two clips
        refs = [pair["left"], pair["right"]]
    elif qtype == "no_index":  # the target speaker's first segment
        first = "spk_a" if meta.get("spk_a") else next((k for k, v in meta.items() if v), None)
        _need(first is not None, "bad speaker reference: no_index question but speaker_meta is empty")
        refs = [f"{first}[0]"]
    return {"question_type": qtype, "question": q["question"].strip(), "options": [m.group(2).strip() for m in found],
            "option_letters": list(LETTERS), "answer": letter, "answer_text": str(q.get("answer_text") or ""),
            "rationale": labels, "pair": pair, "clips": [_clip(r, meta) for r in refs],
            "full_audio": qtype != "no_index" or level >= 2}


def _find_audio(root: Path, index: dict, hint, code: str, scenario: str, seg_id: str) -> tuple[Path | None, bool]:
    """The JSON's ``source_audio``, ``source_audio/<scenario>/<wav>``, else a search (then True)."""
    names = [seg_id, "__".join(seg_id.split("__")[:3])]  # the wav drops the "__idx..__t0-t1" window
    rels = [hint] if isinstance(hint, str) and hint.endswith(".wav") else []
    rels += [f"source_audio/{scenario}/{n}.wav" for n in names]
    hit = next((b / r for r in rels for b in (root / f"bench_{code}", root) if (b / r).is_file()), None)
    if hit is None and "" not in index:  # every wav under a source_audio/ folder at any depth, listed once
        index[""] = [p for p in sorted(root.rglob("*.wav")) if "source_audio" in p.relative_to(root).parts]
    found = [] if hit else sorted((scenario not in p.parts, p) for p in index[""] if p.stem in names)
    return (hit, False) if hit else (found[0][1], True) if found else (None, False)


def read_mcq_release(root, languages=("cn", "en")) -> McqReport:
    """Every valid question of the release under ``root``; skipped files and questions are listed."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(f"{root}: MSU-Benchmark release folder not found")
    if set(languages) - set(LANGUAGES):
        raise ConfigError(f"release languages {list(languages)}: use some of {sorted(LANGUAGES)}")
    report, wavs = McqReport(), {}
    for code in languages:
        qa_root = next((p for p in (root / f"bench_{code}" / f"QA_{code}", root / f"QA_{code}") if p.is_dir()), None)
        for path in sorted(qa_root.glob("*/QA_*/*/level[0-9]/*.json")) if qa_root else []:
            _read_file(root, path, code, wavs, report)
    if not report.files and not report.skipped:
        raise DataError(root, "no task JSON at bench_{cn,en}/QA_{cn,en}/<scenario>/QA_*/<seg_id>/level<N>/<task>.json")
    return report


def _read_file(root: Path, path: Path, code: str, wavs: dict, report: McqReport) -> None:
    scenario, length, seg_id, level_dir = path.parts[-5:-1]
    rel, task = path.relative_to(root).as_posix(), task_code(path.stem)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return report.skipped.append(Skip(rel, None, f"unreadable JSON: {exc}"))
    data = data if isinstance(data, dict) else {}
    items = next((data[k] for k in ("result", "qa_result") if isinstance(data.get(k), list) and data[k]), [])
    first = items[0] if items and isinstance(items[0], dict) else {}
    meta, questions = first.get("speaker_meta") or {}, items[1:] if "speaker_meta" in first else items
    audio, searched = _find_audio(root, wavs, data.get("source_audio"), code, scenario, seg_id)
    key = (code, scenario, seg_id, level_dir, task)
    reason = ("unknown task: file stem is not a task code" if task is None
              else "no questions: no 'result' / 'qa_result' list" if not questions
              else "bad speaker_meta: not an object" if not isinstance(meta, dict)
              else f"duplicate task file: same ids as {report.files.get(key)}" if key in report.files
              else f"no source audio: {seg_id}.wav not under source_audio/" if audio is None else None)
    if reason:
        return report.skipped.append(Skip(rel, None, reason))
    report.files[key] = rel
    audio_rel = audio.relative_to(root).as_posix() if audio.is_relative_to(root) else str(audio)
    report.audio_found_by_search += [(rel, audio_rel)] if searched else []  # not where the layout puts it
    level, lang = int(level_dir[5:]), LANGUAGES[code]
    for i, q in enumerate(questions):
        try:
            fields = _question(q, meta, level)
        except _Bad as exc:
            report.skipped.append(Skip(rel, i, str(exc)))
            continue
        report.records.append({
            "id": f"{lang}/{scenario}/{seg_id}/level{level}/{task}/{i}", "language": lang, "scenario": scenario,
            "length": length[3:], "seg_id": seg_id, "level": level, "task": task, "capability": TASKS[task],
            **fields, "speaker_meta": json.dumps(meta, ensure_ascii=False), "audio_path": audio_rel,
            "source_file": rel, "question_index": i})


_PROMPT = {  # the release scorer's prompt: question, options, then a fixed last-line answer format
    "en": "{q}\n\nOptions:{o}\n\n[Output format]\nOn the very last line of your reply, output only: Final answer: {x}.\n",
    "zh": "{q}\n\n选项：{o}\n\n【输出格式要求】\n在回复的最后一行按照固定格式输出：最后答案：{x}。\n"}
_FINAL = re.compile(r"(?i:final\s*answer|最后答案|最终答案)\s*(?i:is)?\s*[:：]?\s*[*(（\[【]*\s*([A-Da-d])(?![A-Za-z])")
_BARE = re.compile(r"[\s*(（\[【]*([A-Da-d])[\s*)）\]】.。:：]*")
_LONE = re.compile(r"(?<![A-Za-z])([A-D])(?![A-Za-z])")


def mcq_prompt(record: dict, language: str | None = None) -> str:
    """Question + "A. ..." options + the instruction to end with "Final answer: X" ("最后答案：X")."""
    lang = LANGUAGES.get(language, language) if language else record["language"]
    if lang not in _PROMPT:
        raise ConfigError(f"prompt language {language!r}: use 'en' or 'zh'")
    options = "".join(f"\n{x}. {t}" for x, t in zip(record["option_letters"], record["options"]))
    return _PROMPT[lang].format(q=record["question"], o=options, x="/".join(record["option_letters"]))


def extract_letter(response: str | None, language: str | None = None, letters=LETTERS) -> str | None:
    """The last "Final answer: X" / "最后答案：X" (both recognised whatever the prompt's ``language``),
    else a bare letter, else the one capital A-D standing alone ("The answer is (D)"), else ``None``."""
    text = (response or "").strip()
    hit = (_FINAL.findall(text) or [m.group(1) for m in [_BARE.fullmatch(text)] if m] or [""])[-1].upper()
    lone = {x for x in _LONE.findall(text) if x in letters}
    return hit if hit in tuple(letters) else lone.pop() if len(lone) == 1 else None


def classify_wrong(record: dict, letter: str | None) -> str:
    """The rationale label of the chosen option ("ground truth" when right); "no answer" when none."""
    letters = record["option_letters"]
    return record["rationale"][letters.index(letter)] if letter in letters else "no answer"
