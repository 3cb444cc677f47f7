"""The authors' public MSU-Benchmark release (multiple choice), read as its authors' scorer reads it
(the public release ASLP-lab/MSU-Bench, its README "Dataset" and ``bench_evaluation_pipeline/``;
task names, label spellings, schemes and audio-part labels
are data: ``msu_bench/mcq_release.yaml``)::

    bench_{cn,en}/QA_{cn,en}/<scenario>/QA_short|QA_long/<seg_id>/level{1,2}/<task>.json
    bench_{cn,en}/source_audio/<scenario>/<wav>.wav     <wav> = first three "__" fields of <seg_id>

What the authors score is kept: every rationale spelling (plain, underscore, letter-prefixed,
Chinese), English and Chinese task names, question lists under ``qa_result`` / ``result`` /
``questions``, files without speaker_meta, questions whose "ground truth" label is not at the
answer letter (kept, ``label_issue`` says why), ``reverse_*`` questions (kept, ``reverse``: the
tasks leave them out of the score by default), unknown schemes (``scheme: unknown_index``).
What cannot be asked as the authors ask it (no question text, not four options, an answer that is
not a letter A-D, a speaker reference or times that cut no clip from the audio, a file whose task
is unknown) is skipped and listed (``McqReport.skips``: file, question index, reason), and the
counts go to ``build_info.json`` and the dataset card (:func:`import_summary`).

A question repeated inside one task file (the same question text, options, ``question_type`` and
``pair``, i.e. the same question about the same audio parts, whatever its answer) is kept once:
each repeat is a skip ``duplicate question: duplicate of <id>`` (saying so when its answer
differs). A JSON file that cannot be parsed, or holds no question list, is one skip of the file
whose questions are not counted (``questions: None``): the summary says how many files that is,
and ``questions_kept + questions_skipped == questions_read`` (the questions of the files that
could be read). A ``.json`` under ``QA_<lang>/`` that is not at a task file's place in the layout
is listed too (``misplaced``), never ignored silently. JSON files may start with a byte-order mark.

Audio parts, as the authors send them: a ``no_index`` question with a ``pair`` gets both clips
("Clip 1:", "Clip 2:"); any other ``no_index`` question the target's first segment ``spk_a[0]``
("Target speaker snippet:"); at level >= 2 a ``no_index`` question also gets the full audio
("Full conversation audio:"); every other scheme the full audio only. Segment times are seconds
in the source wav.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import re
from collections import Counter
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import ReaderResult, SkipLog

log = logging.getLogger(__name__)
RELEASE_YAML = Path(__file__).with_name("mcq_release.yaml")
LANGUAGES = {"cn": "zh", "en": "en"}  # release folder code -> language tag
LETTERS = ["A", "B", "C", "D"]
GROUND_TRUTH = "ground truth"
LAYOUT = "bench_{cn,en}/QA_{cn,en}/<scenario>/QA_short|QA_long/<seg_id>/level<N>/<task>.json"
HUB_LAYOUT = "annotations/ + audio/ + data/test.jsonl (the Hub dataset ASLP-lab/MSU-Benchmark)"
QUESTION_KEYS = ("qa_result", "result", "questions")  # the README's key first, then the official reader's
_PREFIX = re.compile(r"\s*[(（]?\s*([A-Za-z])\s*[)）]?\s*[.)、．:：]\s*(.*)", re.S)  # "A. x", "B) x", "(C): x"
_REF = re.compile(r"\s*(spk_\w+)\s*\[\s*(\d+)\s*\]\s*")


@functools.lru_cache(maxsize=1)
def release_data() -> dict:
    """``mcq_release.yaml`` parsed (tasks, capabilities, labels, schemes, part labels)."""
    data = yaml.safe_load(RELEASE_YAML.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or len(data.get("tasks") or {}) != 16:
        raise ConfigError(f"{RELEASE_YAML}: 'tasks' must map the release's 16 task codes")
    return data


def _words(text: str) -> str:
    return " ".join(re.sub(r"[-_\s]+", " ", text.strip().lower()).split())


@functools.lru_cache(maxsize=1)
def _names() -> list[tuple[str, str]]:
    """(normalised name, code) for every Chinese name and English name/keyword."""
    out = []
    for code, t in release_data()["tasks"].items():
        out += [(_words(n), code) for n in [*t.get("zh", []), t.get("en", ""), *t.get("keywords", [])] if n]
    return out


def task_code(stem: str) -> str | None:
    """The task code a task file's stem names, or None (no match, or two codes tie: see the YAML)."""
    tasks, words = release_data()["tasks"], _words(stem)
    lead = re.split(r"[-_\s]", stem.strip(), maxsplit=1)[0].upper()
    if stem.strip().upper() in tasks:
        return stem.strip().upper()
    if lead in tasks:
        return lead
    hits = [(len(n), code) for n, code in _names() if re.search(rf"(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])", words)]
    if not hits:
        return None
    best = max(n for n, _ in hits)
    codes = {code for n, code in hits if n == best}
    return codes.pop() if len(codes) == 1 else None


def task_info(code: str) -> dict:
    """``{tier, capability, name}`` of a task code."""
    t = release_data()["tasks"][code]
    return {"tier": t["tier"], "capability": t["capability"], "task_name": t["en"]}


@functools.lru_cache(maxsize=1)
def _label_map() -> dict[str, str]:
    return {_words(s): label for label, spellings in release_data()["labels"].items() for s in spellings}


def normalize_label(raw) -> tuple[str | None, str]:
    """(letter prefix or None, label): ``"A. wrong speaker"`` → ``("A", "wrong speaker")``,
    ``"ground_truth"`` → ``(None, "ground truth")``, ``"幻觉"`` → ``(None, "hallucination")``; an
    unknown spelling comes back as written (lower-cased, separators as spaces)."""
    text = str(raw if raw is not None else "").strip()
    letter, m = None, _PREFIX.fullmatch(text)
    if m and m.group(1).upper() in LETTERS and m.group(2).strip():
        letter, text = m.group(1).upper(), m.group(2)
    words = _words(text).rstrip(".。")
    return letter, _label_map().get(words, words)


def scheme_of(question_type: str) -> tuple[str, bool]:
    """(scheme, reverse) of a question_type: the five schemes as they are, ``reverse_*`` kept by
    name and flagged, anything else ``unknown_index``."""
    data = release_data()
    if question_type in data["schemes"]:
        return question_type, False
    if question_type.startswith(data["reverse_prefix"]):
        return question_type, True
    return data["unknown_scheme"], False


@dataclasses.dataclass
class McqReport(ReaderResult):
    """The release as read: the question ``records`` kept, the ``skips`` (each a
    :class:`~lalm_eval.hub.readers.Skip`: ``item`` the task JSON relative to the release root,
    ``within`` the question's index in its list or None for the whole file, ``lost`` the questions
    lost, None when they could not be counted), the wavs found by search, and the task files read."""

    records: list[dict] = dataclasses.field(default_factory=list)
    audio_found_by_search: list[tuple[str, str]] = dataclasses.field(default_factory=list)  # (task JSON, wav)
    files: dict = dataclasses.field(default_factory=dict)  # (lang, scenario, seg_id, level, task) -> task JSON read

    def skip_reasons(self) -> Counter:
        """Questions lost per skip kind (a skipped file counts its questions; a file whose questions
        could not be counted is in :meth:`uncounted_files`, not here)."""
        out: Counter = Counter()
        for s in self.skips:
            if s.lost is not None:
                out[s.reason.split(":")[0]] += s.lost
        return out

    def uncounted_files(self) -> Counter:
        """Skipped files whose questions could not be counted, per skip kind."""
        return Counter(s.reason.split(":")[0] for s in self.skips if s.lost is None)


class _Bad(Exception):  # a question fails validation; the message is the skip reason
    pass


def _need(ok, reason: str) -> None:
    if not ok:
        raise _Bad(reason)


def _options(opts) -> list[str]:
    _need(
        isinstance(opts, list) and len(opts) == 4 and all(isinstance(o, str) for o in opts),
        f"bad options: not a list of 4 strings: {opts!r}",
    )
    found = [_PREFIX.fullmatch(o) for o in opts]
    if all(found) and [m.group(1).upper() for m in found] == LETTERS:
        return [m.group(2).strip() for m in found]
    _need(not any(found), f"bad options: letters are not A-D in order: {opts}")
    return [o.strip() for o in opts]  # unlettered: A-D by position


def _answer(q: dict) -> str:
    answer = str(q.get("answer") if q.get("answer") is not None else "").strip()
    m = re.fullmatch(r"[(（]?\s*([A-Za-z])\s*(?:[)）.、．:：\s].*)?", answer, re.S)
    letter = m.group(1).upper() if m else ""
    _need(letter in LETTERS, f"bad answer: {answer!r} is not a letter among the options A-D")
    return letter


def _rationale(rat, answer: str) -> tuple[list[str], list[str], str]:
    """(label per option A-D, the raw entries, label_issue) — never a skip: the authors score it."""
    issues = []
    if isinstance(rat, dict):
        raw = [str(rat.get(x, rat.get(x.lower(), ""))) for x in LETTERS]
        parsed = [normalize_label(r) for r in raw]
    elif isinstance(rat, list):
        raw = [str(r) for r in rat]
        parsed = [normalize_label(r) for r in raw]
        letters = [p[0] for p in parsed]
        if all(letters) and sorted(letters) == sorted(set(letters)):  # placed by their letter prefixes
            parsed = [next((p for p in parsed if p[0] == x), (x, "")) for x in LETTERS]
        elif len(rat) != 4:
            issues.append(f"{len(rat)} rationale labels for 4 options")
        parsed = (parsed + [(None, "")] * 4)[:4]
    else:
        raw, parsed = [], [(None, "")] * 4
        issues.append("no rationale list")
    labels = [label for _, label in parsed]
    known = set(release_data()["labels"])
    issues += [f"unrecognised label {lab!r} at {x}" for x, lab in zip(LETTERS, labels) if lab and lab not in known]
    truth = [x for x, lab in zip(LETTERS, labels) if lab == GROUND_TRUTH]
    if truth != [answer]:
        issues.append(f"ground truth at {'/'.join(truth) or 'no option'}, answer {answer}")
    return labels, raw, "; ".join(issues)


def _segment(ref: str, meta: dict, duration: float) -> dict:
    m = _REF.fullmatch(ref or "")
    try:
        seg = meta[m.group(1)][int(m.group(2))]
        start, end = float(seg["start_time"]), float(seg["end_time"])
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        raise _Bad(
            f"bad speaker reference: {ref!r} is not a segment with start_time/end_time in "
            f"speaker_meta (speakers: {sorted(meta) or 'none'})"
        ) from None
    _need(
        0 <= start < end <= duration + 0.05,
        f"bad segment times: {ref!r} spans {start}-{end} s, the source audio {duration:.2f} s",
    )
    return {
        "ref": f"{m.group(1)}[{m.group(2)}]",
        "speaker": str(seg.get("spk_id") or m.group(1)),
        "start": start,
        "end": min(end, duration),
    }


def _question(q, meta: dict, level: int, lang: str, duration: float) -> dict:
    _need(isinstance(q, dict), f"not a question: item is a {type(q).__name__}, not an object")
    _need(isinstance(q.get("question"), str) and q["question"].strip(), "no question: empty or missing 'question'")
    options, answer = _options(q.get("options")), _answer(q)
    labels, raw, issue = _rationale(q.get("rationale"), answer)
    qtype = str(q.get("question_type") or "").strip().lower()
    scheme, reverse = scheme_of(qtype)
    pair = q.get("pair") if isinstance(q.get("pair"), dict) else {}
    pair = {"left": str(pair.get("left") or ""), "right": str(pair.get("right") or "")}
    names = release_data()["part_labels"][lang]
    if qtype == "no_index" and pair["left"] and pair["right"]:  # verification pair: two clips
        parts = [("clip", pair["left"], names["clip"].format(n=1)), ("clip", pair["right"], names["clip"].format(n=2))]
    elif qtype == "no_index":  # the target speaker's first segment
        parts = [("target", "spk_a[0]", names["target"])]
    else:
        parts = []
    clips = [{"role": role, "label": label, **_segment(ref, meta, duration)} for role, ref, label in parts]
    full = qtype != "no_index" or level >= 2
    return {
        "question_type": qtype,
        "scheme": scheme,
        "reverse": reverse,
        "question": q["question"].strip(),
        "options": options,
        "option_letters": list(LETTERS),
        "answer": answer,
        "answer_text": str(q.get("answer_text") or ""),
        "rationale": labels,
        "rationale_raw": raw,
        "label_issue": issue,
        "labels_consistent": not issue,
        "pair": pair,
        "clips": clips,
        "full_audio": full,
        "full_audio_label": names["full"] if full else "",
        "sub_question_type": str(q.get("sub_question_type") or ""),
    }


def _wav_variants(path: Path) -> list[Path]:
    """``path`` and its ``.wav`` suffix in the other spellings a copy may have (``.WAV``, ``.Wav``)."""
    return [path.with_suffix(v) for v in (".wav", ".WAV", ".Wav")] if path.suffix.lower() == ".wav" else [path]


def _source_index(root: Path, index: dict) -> list[Path]:
    """Every file under a ``source_audio/`` folder at any depth, listed once per import."""
    if "" not in index:
        index[""] = [p for p in sorted(root.rglob("*")) if p.is_file() and "source_audio" in p.relative_to(root).parts]
    return index[""]


def _find_audio(root: Path, index: dict, hint, code: str, scenario: str, seg_id: str) -> tuple[Path | None, bool]:
    """The JSON's ``source_audio`` (relative to ``bench_<lang>``), ``source_audio/<scenario>/<wav>``
    under ``bench_<lang>`` / the other language's folder / the root, else a search (then True).
    The ``.wav`` suffix matches in any case (``.WAV``)."""
    names = [seg_id, "__".join(seg_id.split("__")[:3])]  # the wav drops the "__idx..__t0-t1" window
    rels = [hint] if isinstance(hint, str) and hint.lower().endswith(".wav") else []
    rels += [f"source_audio/{scenario}/{n}.wav" for n in names]
    bases = [root / f"bench_{code}"] + [root / f"bench_{c}" for c in LANGUAGES if c != code] + [root]
    hit = next((p for r in rels for b in bases for p in _wav_variants(b / r) if p.is_file()), None)
    if hit is not None:
        return hit, False
    found = sorted(
        (scenario not in p.parts, p)
        for p in _source_index(root, index)
        if p.suffix.lower() == ".wav" and p.stem in names
    )
    return (found[0][1], True) if found else (None, False)


def _no_audio_reason(root: Path, index: dict, scenario: str, seg_id: str) -> str:
    """Why no source wav was found: none of that name anywhere, or one in another format."""
    wav = "__".join(seg_id.split("__")[:3])
    other = [p for p in _source_index(root, index) if p.stem in (seg_id, wav) and p.suffix.lower() != ".wav"]
    if other:
        return (
            f"no source audio: {other[0].relative_to(root).as_posix()} is there, but the release's audio is "
            f"{wav}.wav (convert it to WAV)"
        )
    return (
        f"no source audio: {wav}.wav is under no bench_<lang>/source_audio/{scenario}/ "
        "(nor anywhere under source_audio/)"
    )


def _check_layout(root: Path) -> None:
    if any((root / f"bench_{c}").is_dir() or (root / f"QA_{c}").is_dir() for c in LANGUAGES):
        return
    if (root / "data" / "test.jsonl").is_file() or ((root / "annotations").is_dir() and (root / "audio").is_dir()):
        raise DataError(
            root,
            f"this is the Hub layout ({HUB_LAYOUT}), whose schema could not be established "
            f"(no file of it could be read when the importer was written); msu-bench reads the "
            f"authors' GitHub layout {LAYOUT} with bench_<lang>/source_audio/<scenario>/<wav>.wav",
        )


def read_mcq_release(root, languages=("cn", "en")) -> McqReport:
    """Every question of the release under ``root`` that the authors score; the rest listed with reasons."""
    root = Path(root)
    if not root.is_dir():
        raise ConfigError(
            f"--mcq-dir: MSU-Benchmark release folder {str(root)!r} not found; give the folder holding bench_cn/ and bench_en/"
        )
    if set(languages) - set(LANGUAGES):
        raise ConfigError(f"release languages {list(languages)}: not among {sorted(LANGUAGES)}; use some of them")
    _check_layout(root)
    report, wavs, skips = McqReport(), {}, SkipLog(log, logging.DEBUG)  # skips: summed up by the import's summary
    for code in languages:
        qa_root = next((p for p in (root / f"bench_{code}" / f"QA_{code}", root / f"QA_{code}") if p.is_dir()), None)
        task_files = sorted(qa_root.glob("*/QA_*/*/level[0-9]/*.json")) if qa_root else []
        for path in task_files:
            _read_file(root, path, code, wavs, report, skips)
        placed = set(task_files)
        for path in sorted(qa_root.rglob("*.json")) if qa_root else []:
            if path not in placed:
                skips.add(path.relative_to(root).as_posix(), f"misplaced: not at {LAYOUT}", lost=None)
    report.skips = skips.items
    if not report.files and not report.skips:
        raise DataError(root, f"no task JSON at {LAYOUT} (nor the Hub layout {HUB_LAYOUT}); check --mcq-dir")
    return report


def _questions(data) -> tuple[dict, list | None, str | None]:
    """(speaker_meta, question items, problem) of a task JSON; items None: no question list found."""
    if not isinstance(data, dict):
        return {}, None, f"no questions: the JSON is a {type(data).__name__}, not an object"
    key = next((k for k in QUESTION_KEYS if isinstance(data.get(k), list)), None)
    if key is None:
        return {}, None, f"no questions: none of {list(QUESTION_KEYS)} is a list"
    items = list(data[key])
    meta = data.get("speaker_meta")
    if items and isinstance(items[0], dict) and "speaker_meta" in items[0] and "question" not in items[0]:
        meta, items = items[0]["speaker_meta"], items[1:]
    if meta is not None and not isinstance(meta, dict):
        return {}, items, f"bad speaker_meta: a {type(meta).__name__}, not an object"
    return meta or {}, items, None if items else f"no questions: {key!r} holds no question"


def _read_file(root: Path, path: Path, code: str, wavs: dict, report: McqReport, skips: SkipLog) -> None:
    scenario, length, seg_id, level_dir = path.parts[-5:-1]
    rel, task = path.relative_to(root).as_posix(), task_code(path.stem)
    try:
        data = json.loads(path.read_bytes())  # UTF-8/16/32, with or without a byte-order mark
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return skips.add(rel, f"unreadable JSON: {exc}", lost=None)
    meta, questions, problem = _questions(data)
    key = (code, scenario, seg_id, level_dir, task)
    audio, searched = _find_audio(
        root, wavs, data.get("source_audio") if isinstance(data, dict) else None, code, scenario, seg_id
    )
    duration = None
    if audio is not None and problem is None:
        import soundfile as sf

        try:
            duration = wavs[audio] if audio in wavs else wavs.setdefault(audio, sf.info(str(audio)).duration)
        except (RuntimeError, sf.LibsndfileError) as exc:
            problem = f"unreadable audio: {audio.name}: {exc}"
    reason = problem or (
        f"unknown task: file name {path.stem!r} names no task of {RELEASE_YAML.name} (none, or two equally well)"
        if task is None
        else f"duplicate task file: same ids as {report.files.get(key)}"
        if key in report.files
        else _no_audio_reason(root, wavs, scenario, seg_id)
        if audio is None
        else None
    )
    if reason:
        return skips.add(rel, reason, lost=None if questions is None else len(questions))
    report.files[key] = rel
    audio_rel = audio.relative_to(root).as_posix() if audio.is_relative_to(root) else str(audio)
    report.audio_found_by_search += [(rel, audio_rel)] if searched else []  # not where the layout puts it
    level, lang = int(level_dir[5:]), LANGUAGES[code]
    seen: dict[tuple, tuple[str, str]] = {}  # what makes a question the same -> (id, answer) of its first
    for i, q in enumerate(questions):
        try:
            fields = _question(q, meta, level, lang, duration)
        except _Bad as exc:
            skips.add(rel, str(exc), within=i)
            continue
        qid = f"{lang}/{scenario}/{seg_id}/level{level}/{task}/{i}"
        same = (
            " ".join(fields["question"].split()),
            tuple(" ".join(o.split()) for o in fields["options"]),
            fields["question_type"],
            fields["pair"]["left"],
            fields["pair"]["right"],
        )
        if same in seen:
            first, answer = seen[same]
            differs = f" (its answer {fields['answer']} differs from {answer})" if fields["answer"] != answer else ""
            skips.add(
                rel,
                f"duplicate question: duplicate of {first}: same question, options and audio parts{differs}",
                within=i,
            )
            continue
        seen[same] = (qid, fields["answer"])
        report.records.append(
            {
                "id": qid,
                "language": lang,
                "scenario": scenario,
                "length": length[3:],
                "seg_id": seg_id,
                "level": level,
                "task": task,
                **task_info(task),
                **fields,
                "speaker_meta": json.dumps(meta, ensure_ascii=False),
                "audio_path": audio_rel,
                "source_file": rel,
                "question_index": i,
            }
        )


def import_summary(report: McqReport) -> dict:
    """What the import kept and skipped, for ``build_info.json`` and the card:
    ``questions_kept + questions_skipped == questions_read``; files whose questions could not be
    counted are ``files_uncounted`` (by kind: ``uncounted_files_by_reason``), never a silent 0."""
    recs = report.records
    skipped = sum(s.lost for s in report.skips if s.lost is not None)
    return {
        "task_files_read": len(report.files),
        "questions_read": len(recs) + skipped,
        "questions_kept": len(recs),
        "questions_skipped": skipped,
        "files_skipped": sum(s.within is None for s in report.skips),
        "files_uncounted": sum(s.lost is None for s in report.skips),
        "skipped_by_reason": dict(sorted(report.skip_reasons().items())),
        "uncounted_files_by_reason": dict(sorted(report.uncounted_files().items())),
        "skips": [
            {"file": s.item, "question": s.within, "reason": s.reason, "questions": s.lost} for s in report.skips
        ],
        "reverse_questions": sum(r["reverse"] for r in recs),
        "scored_by_default": sum(not r["reverse"] for r in recs),
        "label_issues": sum(bool(r["label_issue"]) for r in recs),
        "unknown_index": sum(r["scheme"] == release_data()["unknown_scheme"] for r in recs),
        "audio_found_by_search": len(report.audio_found_by_search),
        "by_language": dict(sorted(Counter(r["language"] for r in recs).items())),
        "by_tier": dict(sorted(Counter(r["tier"] for r in recs).items())),
        "by_task": dict(sorted(Counter(r["task"] for r in recs).items())),
        "by_scheme": dict(sorted(Counter(r["scheme"] for r in recs).items())),
    }


def check_kept(summary: dict, mcq_dir) -> None:
    """A :class:`ConfigError` naming ``--mcq-dir`` when the import keeps no question (an empty
    ``mcq`` config is no benchmark): how many were read, the skips by reason and a few examples."""
    if summary["questions_kept"]:
        return
    reasons = ", ".join(f"{k}: {v}" for k, v in summary["skipped_by_reason"].items())
    uncounted = ", ".join(f"{n} file(s) {k}" for k, n in summary.get("uncounted_files_by_reason", {}).items())
    why = " | ".join(x for x in (reasons, uncounted) if x) or "no question in the task files"
    examples = " | ".join(f"{s['file']}: {s['reason']}" for s in summary["skips"][:1]).replace(";", ",")
    raise ConfigError(
        f"--mcq-dir {mcq_dir}: no question kept of the {summary['questions_read']} read ({why})"
        + (f", e.g. {examples}" if examples else "")
        + "; fix what the skip reasons name (each task file's wav belongs at "
        "bench_<lang>/source_audio/<scenario>/<wav>.wav), or give --mcq-dir a complete copy of the release"
    )


def describe_import(summary: dict) -> str:
    """One line of :func:`import_summary`: kept, skipped by reason, and the files whose questions
    could not be counted (``"1 file skipped as unreadable JSON (its questions not counted)"``)."""
    reasons = ", ".join(f"{k}: {v}" for k, v in summary["skipped_by_reason"].items()) or "none"
    uncounted = "".join(
        f"; {n} file{'s' if n != 1 else ''} skipped as {kind} ({'their' if n != 1 else 'its'} questions not counted)"
        for kind, n in summary.get("uncounted_files_by_reason", {}).items()
    )
    return (
        f"{summary['questions_kept']} questions kept ({summary['scored_by_default']} scored by default, "
        f"{summary['reverse_questions']} reverse_* excluded), {summary['questions_skipped']} skipped ({reasons}) "
        f"of {summary['questions_read']} read{uncounted}"
    )
