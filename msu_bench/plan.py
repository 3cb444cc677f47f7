"""From conversations to the MSU-Bench question plan: read the corpus, select 60-120 s segments
with at least two speakers, and ask each segment ``per_segment`` questions by templates
(and, for corpora without rich annotations, through an LLM when one is given)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from lalm_eval.cli_support import check_keys, load_preset_data
from lalm_eval.errors import ConfigError
from lalm_eval.hub.readers import skip_records
from lalm_eval.seeding import rng_for
from msu_bench.qa.generate import QAItem, generate_segment_qa
from msu_bench.segments import SegmentRule, select_segments
from msu_bench.taxonomy import load_taxonomy
from msu_bench.types import Conversation, ReadReport

log = logging.getLogger(__name__)
PRESET_DIR = Path(__file__).resolve().parent / "presets"


@dataclasses.dataclass(frozen=True)
class MsuConfig:
    seed: int = 0
    per_segment: int = 10  # paper: ten QA pairs per session
    min_segment_s: float = 60.0
    max_segment_s: float = 120.0
    min_speakers: int = 2
    languages: tuple[str, ...] = ("en", "zh")
    audio_format: str = "flac"

    @classmethod
    def from_dict(cls, data: dict, where: str = "msu config") -> MsuConfig:
        check_keys(cls, data, where)
        data = {**data, **({"languages": tuple(data["languages"])} if "languages" in data else {})}
        cfg = cls(**data)
        if not 0 < cfg.min_segment_s <= cfg.max_segment_s or cfg.min_speakers < 2 or cfg.per_segment < 1:
            raise ConfigError(f"{where}: need 0 < min_segment_s <= max_segment_s, min_speakers >= 2, per_segment >= 1")
        return cfg

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["languages"] = list(self.languages)
        return out


def load_preset(name_or_path: str, overrides: dict | None = None) -> MsuConfig:
    data, path = load_preset_data(name_or_path, PRESET_DIR)
    return MsuConfig.from_dict({**data, **(overrides or {})}, where=str(path))


def read_corpus(kind: str, corpus_dir: str | None, options: dict) -> ReadReport:
    """The conversations of reader ``kind`` of :data:`msu_bench.corpora.READERS`."""
    from msu_bench.corpora import read_corpus as read_with_registry

    return read_with_registry(kind, corpus_dir, options)


@dataclasses.dataclass
class MsuPlan:
    config: MsuConfig
    segments: list[Conversation]
    questions: dict[str, list[QAItem]]  # segment id -> questions
    stats: dict


def make_plan(
    cfg: MsuConfig,
    corpus: str = "embedded",
    corpus_dir: str | None = None,
    corpus_options: dict | None = None,
    llm=None,
) -> MsuPlan:
    """``llm`` (a :class:`lalm_eval.llm.TextLLM`) fills a segment's remaining questions with tasks
    its annotation cannot answer (generate + filter); without it those questions are not asked."""
    report = read_corpus(corpus, corpus_dir, corpus_options or {})
    rule = SegmentRule(cfg.min_segment_s, cfg.max_segment_s, cfg.min_speakers)
    segments, rejected = [], []
    for conv in sorted(report.conversations, key=lambda c: c.id):
        if conv.language not in cfg.languages:
            rejected.append(f"{conv.id}: language {conv.language!r} is not in languages {list(cfg.languages)}")
            continue
        if conv.audio is None:  # the reader counted why (audio missing / unreadable)
            rejected.append(f"{conv.id}: no readable audio, so no segment")
            continue
        found, why = select_segments(conv, rule)
        segments += found
        rejected += why
    for reason in rejected:
        log.info("segment skipped: %s", reason)
    if not segments:
        raise ConfigError(no_segment_message(report, rejected, cfg, corpus, corpus_dir))
    task_ids = [t.id for t in load_taxonomy().tasks]
    asked: dict[str, int] = {}
    questions, llm_stats = {}, {}
    for seg in segments:
        items = generate_segment_qa(seg, task_ids, asked, rng_for(cfg.seed, "qa", seg.id), cfg.per_segment)
        if llm is not None and len(items) < cfg.per_segment:
            from msu_bench.fields import segment_fields
            from msu_bench.qa.llm_pipeline import llm_questions

            have = {q.task_id for q in items}
            wanted = sorted((t for t in task_ids if t not in have), key=lambda t: (asked.get(t, 0), t))
            extra = llm_questions(llm, segment_fields(seg), wanted[: cfg.per_segment - len(items)], llm_stats)
            for q in extra:
                asked[q.task_id] = asked.get(q.task_id, 0) + 1
            items += extra
        questions[seg.id] = items
    stats = {
        "llm": dict(llm.settings) if llm is not None else None,
        **llm_stats,
        "conversations": len(report.conversations),
        "segments": len(segments),
        "skipped_source_items": report.n_skipped,
        "skipped_source": skip_records(report.skips, lambda item: _relative(item, corpus_dir)),
        "untranscribed_turns": getattr(report, "n_untranscribed", 0),
        "skipped_segments": rejected,
        "questions_per_task": dict(sorted(asked.items())),
        "tasks_without_questions": sorted(set(task_ids) - set(asked)),
    }
    return MsuPlan(cfg, segments, questions, stats)


def _relative(file: str, corpus_dir: str | None) -> str:
    """``file`` relative to the corpus folder (so cards do not carry the builder's paths)."""
    if corpus_dir:
        try:
            return str(Path(file).relative_to(Path(corpus_dir).expanduser().resolve()))
        except ValueError:
            pass
    return str(file)


def no_segment_message(
    report: ReadReport, rejected: list[str], cfg: MsuConfig, corpus: str, corpus_dir: str | None
) -> str:
    """Why a build found nothing to ask about: the reasons per conversation and the knobs."""
    where = f"{corpus} corpus" + (f" at {corpus_dir}" if corpus_dir else "")
    shown = "; ".join(rejected[:3]) + (f"; ... ({len(rejected) - 3} more)" if len(rejected) > 3 else "")
    skipped = f"; {report.n_skipped} source item(s) skipped by the reader" if report.n_skipped else ""
    return (
        f"no segment to ask questions about in the {len(report.conversations)} conversation(s) of the "
        f"{where} (segments are {cfg.min_segment_s:g}-{cfg.max_segment_s:g} s with >= {cfg.min_speakers} "
        f"speakers; change with --set min_segment_s=... / max_segment_s=... / min_speakers=...): "
        f"{shown or 'no conversation read'}{skipped}"
    )
