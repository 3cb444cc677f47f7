"""MSU-Bench as a ``datasets.GeneratorBasedBuilder``: configs ``tier1`` … ``tier4`` (and ``all``),
one ``test`` split. Each row is one open-ended question about a 60-120 s segment, with the
task's inference prompt (answer format and constraints) and the segment's speaker-attributed
transcript. Rows of one segment share its audio and are written together (see
:mod:`lalm_eval.hub.parquet` for why that stores the audio once per row group)."""

from __future__ import annotations

import dataclasses
import json

import datasets
import numpy as np

from lalm_eval.audio.io import TARGET_SR, read_audio_span
from lalm_eval.hub.builder import BenchBuilder, BenchBuilderConfig, Rendered, UnitAudio
from msu_bench.fields import segment_fields
from msu_bench.plan import MsuConfig, MsuPlan, make_plan
from msu_bench.taxonomy import load_taxonomy

TIERS = ("tier1", "tier2", "tier3", "tier4")
_SPEAKER = {k: datasets.Value("string") for k in ("label", "speaker_id", "gender", "age_group", "accent", "role")}
_TURN = {
    "speaker": datasets.Value("string"),
    "start": datasets.Value("float32"),
    "end": datasets.Value("float32"),
    "text": datasets.Value("string"),
}
FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "segment_id": datasets.Value("string"),
        "source": datasets.Value("string"),
        "language": datasets.Value("string"),
        "audio": datasets.Audio(sampling_rate=TARGET_SR),
        "duration": datasets.Value("float32"),
        "n_speakers": datasets.Value("int32"),
        "tier": datasets.Value("string"),
        "capability": datasets.Value("string"),
        "task_id": datasets.Value("string"),
        "task_name": datasets.Value("string"),
        "question": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "inference_prompt": datasets.Value("string"),
        "speakers": datasets.List(_SPEAKER),
        "transcript": datasets.List(_TURN),
        "evidence": datasets.Value("string"),  # JSON: the turns / annotation fields the answer rests on
    }
)


@dataclasses.dataclass
class MsuBenchConfig(BenchBuilderConfig):
    """``build``, ``corpus`` (a name in :data:`msu_bench.corpora.READERS`), ``corpus_dir`` and
    ``corpus_options`` as for every benchmark (:class:`lalm_eval.hub.builder.BenchBuilderConfig`)."""

    build: MsuConfig | None = None
    tiers: tuple[str, ...] = TIERS


class MsuBench(BenchBuilder):
    """``MsuBench(config_name=..., cache_dir=..., plan=plan)`` writes the rows of ``plan`` (an
    :class:`~msu_bench.plan.MsuPlan`); without ``plan`` it plans from the config."""

    BUILDER_CONFIG_CLASS = MsuBenchConfig
    BUILDER_CONFIGS = [MsuBenchConfig(name=t, tiers=(t,), description=f"MSU-Bench {t}") for t in TIERS] + [
        MsuBenchConfig(name="all", tiers=TIERS, description="MSU-Bench, all tiers")
    ]
    DEFAULT_CONFIG_NAME = "all"
    DEFAULT_WRITER_BATCH_SIZE = 50

    def _info(self):
        return datasets.DatasetInfo(
            description="MSU-Bench: multi-speaker conversation understanding", features=FEATURES, citation=CITATION
        )

    def make_plan(self) -> MsuPlan:
        return make_plan(
            self.config.build or MsuConfig(), self.config.corpus, self.config.corpus_dir, self.config.corpus_options
        )

    def audio_format(self) -> str:
        return self.plan.config.audio_format

    def units(self, split: str) -> list[int]:
        # the segments with a question of these tiers, as positions in plan.segments
        plan = self.plan
        return [i for i, seg in enumerate(plan.segments) if self._questions(seg)]

    def render(self, unit: int) -> Rendered:
        seg = self.plan.segments[unit]
        return Rendered(segment_audio(seg), seg.id)

    def rows(self, unit: int, audio: UnitAudio):
        taxonomy, seg = load_taxonomy(), self.plan.segments[unit]
        common = segment_fields(seg)
        for j, q in enumerate(self._questions(seg)):
            task = taxonomy.task(q.task_id)
            yield {
                **common,
                "id": f"{seg.id}-q{j:02d}",
                "audio": audio.audio,
                "tier": task.tier,
                "capability": task.capability,
                "task_id": task.id,
                "task_name": task.name,
                "question": q.question,
                "answer": q.answer,
                "inference_prompt": task.inference_prompt(seg.language),
                "evidence": json.dumps(q.evidence, ensure_ascii=False, sort_keys=True),
            }

    def _questions(self, seg) -> list:
        """The segment's planned questions of this config's tiers."""
        taxonomy = load_taxonomy()
        return [q for q in self.plan.questions[seg.id] if taxonomy.task(q.task_id).tier in self.config.tiers]


def segment_audio(seg) -> np.ndarray:
    """The segment's span of its recording, mono 16 kHz: only that span is decoded (a ranged
    ``soundfile`` read), so segments of a multi-hour session never decode the whole session."""
    return read_audio_span(seg.audio, seg.offset, seg.duration, target_sr=TARGET_SR)[0]


CITATION = """@article{msubench,
  title  = {MSU-Bench: Towards Understanding the Conversational Multi-talker Scenarios},
  note   = {Benchmark of multi-speaker conversation understanding: 4 tiers, 10 capabilities, 25 tasks}
}"""
