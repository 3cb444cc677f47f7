"""Captioning references as the paper writes them (PALM-Bench Appendix C, Table 24).

``palm-bench build --caption-reference KIND --llm ...`` (the build knob ``caption_reference``):

- ``transcript`` (the default; needs no LLM): a positive captioning row's reference is the
  target's transcript, attributed (``answers.yaml`` ``caption_positive``: "Amy said: “…”"). A
  deviation from the paper, whose answers "are produced by summarizing ASR transcripts with an
  LLM" (Appendix B.3); overlap metrics (BLEU, token F1) run higher against it.
- ``summary``: every positive captioning row's reference is an LLM summary of the target's
  utterance in that audio (Table 24, "Summarization-based"; prompt
  ``prompts/caption_summary.<lang>.j2``), one per utterance, checked to name the speaker and
  not to repeat the transcript (the prompt's own rule).
- ``qa``: the template rows stay as with ``transcript``, and each captioning audio gains three
  QA-style rows (Table 21, captioning 3–4: "What kind of art is Bob interested in?" → "Bob is
  interested in printmaking."): for a positive audio the three question/answer pairs the LLM
  writes from the target's utterance (Table 24, "QA-based Caption Generation"; prompt
  ``prompts/caption_qa.<lang>.j2``; every answer names the speaker), for a negative audio three
  more of Table 13's absent-target questions with their refusals, so positive and negative rows
  stay balanced.

- ``summary+qa``: both, as the paper does (Appendix B.3 summarises for the template answers;
  Table 24 also prints the QA-based prompt): the positive template rows get the summary, and the
  QA rows and refusals of ``qa`` are added.

Every row records how its reference was made in the column ``caption_reference``
(:data:`ROW_KINDS`: ``transcript`` / ``summary`` / ``qa`` for a present target, ``refusal`` for an
absent one, ``""`` outside captioning), so a score can be read against its kind. Replies are
cached (:class:`lalm_eval.llm.cache.CachedTextLLM`, ``<work_dir>/llm_replies.sqlite``) and an
invalid one is asked again once, then raises :class:`~lalm_eval.errors.DataError` naming the clip.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from lalm_eval.errors import ConfigError
from lalm_eval.llm.ask import ReplyInvalid, ask_text
from lalm_eval.seeding import rng_for
from palm_bench.corpus.types import Corpus
from palm_bench.profiles import PROMPTS_DIR, _prompt
from palm_bench.samples import QA, AudioPlan, templates
from palm_bench.templates import render

KINDS = ("transcript", "summary", "qa", "summary+qa")
ROW_KINDS = ("transcript", "summary", "qa", "refusal", "")
QA_PER_UTTERANCE = 3  # Table 24: "Generate exactly three question–answer pairs"
MAX_SUMMARY_CHARS = 600
REPLY_CACHE = "llm_replies.sqlite"
_QA_PAIR = re.compile(
    r"question\s*(?P<n>[1-9])\s*[:：]\s*(?P<q>.+?)\s*[,，]?\s*answer\s*(?P=n)\s*[:：]\s*(?P<a>.+?)"
    r"\s*(?=question\s*[1-9]\s*[:：]|\Z)",
    re.IGNORECASE | re.DOTALL,
)


def check_kind(kind: str, llm) -> None:
    if kind not in KINDS:
        raise ConfigError(f"caption_reference must be one of {list(KINDS)}, got {kind!r}")
    if kind != "transcript" and llm is None:
        raise ConfigError(
            f"--caption-reference {kind} needs a text LLM to write the references (PALM Table 24): "
            "add --llm openai --llm-option model=M --llm-option base_url=URL"
        )


def _norm(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _names(text: str, name: str) -> bool:
    return name.lower() in text.lower()


def validate_summary(text: str, name: str, transcript: str) -> str:
    text = text.strip().strip('"“”「」').strip()
    if not text:
        raise ReplyInvalid("the summary is empty")
    if len(text) > MAX_SUMMARY_CHARS:
        raise ReplyInvalid(f"the summary is {len(text)} characters long; at most {MAX_SUMMARY_CHARS}")
    if _norm(text) == _norm(transcript):
        raise ReplyInvalid("the summary is identical to the transcription; restate it in your own words")
    if not _names(text, name):
        raise ReplyInvalid(f"the summary does not name the speaker {name}")
    return text


def parse_qa_pairs(text: str, name: str) -> list[tuple[str, str]]:
    """The three ``(question, answer)`` pairs of a reply in Table 24's format
    ``questionN: xxx?, answerN: xxx.``; raises :class:`ReplyInvalid` naming what is wrong."""
    pairs = [(int(m["n"]), m["q"].strip(), m["a"].strip()) for m in _QA_PAIR.finditer(text)]
    numbers = [n for n, _, _ in pairs]
    if numbers != list(range(1, QA_PER_UTTERANCE + 1)):
        raise ReplyInvalid(
            f"need exactly {QA_PER_UTTERANCE} pairs numbered 1 to {QA_PER_UTTERANCE} in the format "
            f"'question1: xxx?, answer1: xxx.'; found {numbers or 'none'}"
        )
    for n, question, answer in pairs:
        if not question or not answer:
            raise ReplyInvalid(f"pair {n} has an empty question or answer")
        if not _names(answer, name):
            raise ReplyInvalid(f"answer{n} does not contain the name {name}")
    return [(q, a) for _, q, a in pairs]


STEMS = {"summary": "caption_summary", "qa": "caption_qa"}


def parts(kind: str) -> tuple[str, ...]:
    """The LLM-written parts of a kind: ``summary+qa`` → ``("summary", "qa")``."""
    return tuple(p for p in kind.split("+") if p in STEMS)


def prompt_files(kind: str) -> dict[str, str]:
    """``{file name: sha256}`` of the prompts a kind uses (recorded with the build)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for part in parts(kind)
        for p in sorted(PROMPTS_DIR.glob(f"{STEMS[part]}.*.j2"))
    }


def _target_clip(plan: AudioPlan):
    return next(c for c in plan.clips if c.speaker == plan.target)


def apply_caption_references(
    audios: dict[str, list[AudioPlan]], corpus: Corpus, kind: str, llm, work_dir: Path | None = None, seed: int = 0
) -> dict:
    """Rewrite the captioning plans of ``audios`` for ``kind`` (in place); returns what to record."""
    check_kind(kind, llm)
    plans = [p for split in sorted(audios) for p in audios[split] if p.task == "captioning"]
    if kind == "transcript":
        return {"kind": kind}
    if work_dir is not None:
        from lalm_eval.llm.cache import CachedTextLLM

        llm = CachedTextLLM(llm, Path(work_dir) / REPLY_CACHE)
    speakers = corpus.speakers
    positives = [p for p in plans if p.target in p.speakers]
    utterances = {}
    for plan in positives:
        clip = _target_clip(plan)
        utterances.setdefault(clip.id, (clip, speakers[plan.target].name or plan.target, plan.language))
    written = {}
    for part in parts(kind):
        prompts = {
            cid: _prompt(STEMS[part], language, {"name": name, "transcript": clip.text})
            for cid, (clip, name, language) in sorted(utterances.items())
        }
        if part == "summary":
            written[part] = ask_text(
                llm,
                prompts,
                lambda cid, text: validate_summary(text, utterances[cid][1], utterances[cid][0].text),
                "caption summary for clip",
            )
        else:
            written[part] = ask_text(
                llm, prompts, lambda cid, text: parse_qa_pairs(text, utterances[cid][1]), "caption QA pairs for clip"
            )
    rows = {"summary": 0, "qa": 0, "refusal": 0}
    for plan in plans:
        present = plan.target in plan.speakers
        name = speakers[plan.target].name or plan.target
        if "summary" in written and present:
            summary = written["summary"][_target_clip(plan).id]
            for qa in plan.qas:
                qa.answer, qa.reference = summary, "summary"
                rows["summary"] += 1
        if "qa" not in written:
            continue
        if present:
            for k, (question, answer) in enumerate(written["qa"][_target_clip(plan).id], 1):
                plan.qas.append(QA(f"cap_qa_{k}", question, answer, [plan.target], [plan.target], [], reference="qa"))
                rows["qa"] += 1
            continue
        pool = templates("captioning", plan.language, "cap_neg")
        used = {qa.template_id for qa in plan.qas}
        unused = [t for t in pool if t.id not in used] or pool
        order = rng_for(seed, "caption_qa_refusals", plan.key).permutation(len(unused))
        for j in range(QA_PER_UTTERANCE):
            t = unused[int(order[j % len(unused)])]
            rendered = render(t, spk=name)
            plan.qas.append(
                QA(t.id, rendered.question, rendered.answer, [plan.target], [], [plan.target], reference="refusal")
            )
            rows["refusal"] += 1
    return {
        "kind": kind,
        "llm": dict(llm.settings),
        "prompts": prompt_files(kind),
        "utterances": len(utterances),
        "rows_written": rows,
        "llm_calls": getattr(llm, "asked", None),
        "cache_hits": getattr(llm, "hits", None),
    }
