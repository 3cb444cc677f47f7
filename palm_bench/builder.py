"""PALM-Bench as a ``datasets.GeneratorBasedBuilder``: configs ``recognition``, ``captioning``,
``reasoning`` and ``all``, splits ``train``, ``test`` and, when the build plans one,
``validation`` (:mod:`palm_bench.splits`: its clips are in no train or test row). The ``enrollment`` config (subjects'
train-split clips, other features) is its own builder: :mod:`palm_bench.enrollment_builder`.

``datasets`` 5 has no loading scripts, so the builder is used as an imported class (the
``palm-bench build`` command does it and exports Parquet + card)::

    builder = PalmBench(config_name="recognition", cache_dir=tmp, build=load_preset("small"))
    builder.download_and_prepare()
    ds = builder.as_dataset()

Audio duplication: each composed audio carries several QA samples (``templates_per_audio``,
default 8). Every row embeds its audio bytes so any row stands alone, but the audio is rendered
and encoded once per composed clip and its rows are written next to each other, so the Parquet
export stores one copy per row group (dictionary encoding); see ``bench/palm_build.py``.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import datasets

from lalm_eval.audio.io import TARGET_SR
from lalm_eval.hub.builder import BenchBuilder, BenchBuilderConfig, Rendered, UnitAudio
from palm_bench.config import BuildConfig
from palm_bench.plan import BuildPlan, make_plan
from palm_bench.samples import AudioPlan
from palm_bench.scenes import compose
from palm_bench.splits import SPLITS

log = logging.getLogger(__name__)

TASKS = ("recognition", "captioning", "reasoning")
_SPAN = {
    "speaker_id": datasets.Value("string"),
    "name": datasets.Value("string"),
    "clip_id": datasets.Value("string"),
    "start": datasets.Value("float32"),
    "end": datasets.Value("float32"),
}
_NEGATIVE = {
    "for_subject": datasets.Value("string"),
    "speaker": datasets.Value("string"),
    "clip": datasets.Value("string"),
    "stratum": datasets.Value("string"),
    "similarity": datasets.Value("float32"),
}
_SUBJECT = {
    "id": datasets.Value("string"),
    "name": datasets.Value("string"),
    "hd": datasets.Value("string"),
    "ad": datasets.Value("string"),
}
FEATURES = datasets.Features(
    {
        "id": datasets.Value("string"),
        "audio_id": datasets.Value("string"),  # the composed clip; shared by its template samples
        "task": datasets.Value("string"),
        "language": datasets.Value("string"),
        "audio": datasets.Audio(sampling_rate=TARGET_SR),
        "duration": datasets.Value("float32"),
        "question": datasets.Value("string"),
        "answer": datasets.Value("string"),
        "template_id": datasets.Value("string"),
        "n_speakers": datasets.Value("int32"),
        "target": datasets.Value("string"),  # the subject's name
        "target_id": datasets.Value("string"),
        "queried": datasets.List(datasets.Value("string")),  # names asked about, in question order
        "queried_ids": datasets.List(datasets.Value("string")),
        "present": datasets.List(datasets.Value("string")),  # queried names who speak in the audio
        "absent": datasets.List(datasets.Value("string")),
        "label": datasets.Value("string"),  # positive (all queried present) | negative (none) | mixed
        "negative_stratum": datasets.Value("string"),  # hardest stratum standing in for an absent name
        "negative_similarity": datasets.Value("float32"),
        "negatives": datasets.List(_NEGATIVE),
        "augmentation": datasets.Value("string"),  # JSON record of the applied augmentation, or ""
        "source_clips": datasets.List(datasets.Value("string")),
        "speakers": datasets.List(_SPAN),  # who speaks when in the mix
        "subjects": datasets.List(_SUBJECT),  # queried subjects' HD and AD (prompt strategies)
        "profile": datasets.Value("string"),  # reasoning: the target's profile as text
        "evidence": datasets.List({"field": datasets.Value("string"), "value": datasets.Value("string")}),
        # captioning: what the reference was made from (PALM Table 24; palm_bench.caption_references):
        # transcript | summary | qa (target present) | refusal (absent); "" for the other tasks
        "caption_reference": datasets.Value("string"),
    }
)


@dataclasses.dataclass
class PalmBenchConfig(BenchBuilderConfig):
    """``build``, ``corpus`` (a name in :data:`palm_bench.corpus.READERS`), ``corpus_dir`` and
    ``corpus_options`` as for every benchmark (:class:`lalm_eval.hub.builder.BenchBuilderConfig`)."""

    build: BuildConfig | None = None
    tasks: tuple[str, ...] = TASKS
    work_dir: str | None = None  # embedding and acoustic-description caches


def plan_for(config: PalmBenchConfig) -> BuildPlan:
    """The build plan a builder config describes (``palm-bench build`` plans once and hands the
    same plan to every builder instead)."""
    return make_plan(
        config.build or BuildConfig(),
        corpus=config.corpus,
        corpus_dir=config.corpus_dir,
        corpus_options=config.corpus_options,
        work_dir=Path(config.work_dir) if config.work_dir else None,
    )


class PalmBench(BenchBuilder):
    """``PalmBench(config_name=..., cache_dir=..., plan=plan)`` writes the rows of ``plan``
    (a :class:`~palm_bench.plan.BuildPlan`); without ``plan`` it plans from the config."""

    BUILDER_CONFIG_CLASS = PalmBenchConfig
    BUILDER_CONFIGS = [PalmBenchConfig(name=t, tasks=(t,), description=f"PALM-Bench {t}") for t in TASKS] + [
        PalmBenchConfig(name="all", tasks=TASKS, description="PALM-Bench, all three tasks")
    ]
    DEFAULT_CONFIG_NAME = "recognition"
    DEFAULT_WRITER_BATCH_SIZE = 64
    SPLITS = SPLITS
    OPTIONAL_SPLITS = ("validation",)

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="PALM-Bench: personalized audio-LLM recognition, captioning and reasoning",
            features=FEATURES,
            citation=CITATION,
            license="see the corpus licence",
        )

    def make_plan(self) -> BuildPlan:
        return plan_for(self.config)

    def audio_format(self) -> str:
        return self.plan.config.audio_format

    def units(self, split: str) -> list[tuple[str, int]]:
        # train and test always; validation when planned and this config has audios in it
        audios = self.plan.audios.get(split, [])
        return [(split, i) for i, a in enumerate(audios) if a.task in self.config.tasks]

    def render(self, unit: tuple[str, int]) -> Rendered:
        audio_plan = self._audio_plan(unit)
        mix, spans = compose(audio_plan, self.plan.config.silence_s)
        return Rendered(mix, audio_plan.key, extra=spans)

    def rows(self, unit: tuple[str, int], audio: UnitAudio):
        for row in self.plan.rows(self._audio_plan(unit), audio.extra, audio.duration):
            yield {**row, "audio": audio.audio}

    def _audio_plan(self, unit: tuple[str, int]) -> AudioPlan:
        split, i = unit
        return self.plan.audios[split][i]


CITATION = """@article{wang2026palmbench,
  title   = {PALM-Bench: A Comprehensive Benchmark for Personalized Audio-Language Models},
  author  = {Wang, Yuwen and Qian, Xinyuan and Zhang, Tian-Hao and Gao, Jiaran and Pan, Yuchen and
             Wang, Xin and Pan, Zhou and Wei, Chen and Wang, Yiming},
  year    = {2026}
}"""
