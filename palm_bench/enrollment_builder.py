"""The ``enrollment`` config of PALM-Bench: every train-split clip of every subject, one per row.

Why a builder of its own (not a config of :class:`~palm_bench.builder.PalmBench`): a
``GeneratorBasedBuilder`` declares one ``Features`` in ``_info``, and the enrollment rows share
none of the QA columns (no question, answer, spans or negatives). Making ``PalmBench._info``
switch features on the config name would give one class two schemas and make every consumer
of ``palm_bench.builder.FEATURES`` (card, statistics, task contracts) special-case it. So:
one builder per schema, sharing the build plan — ``palm-bench build`` plans once and hands the
same plan (corpus, clip split, config) to both, so the enrollment clips are exactly the clips
that ``palm_bench.splits.split_clips`` put in ``train`` for that build.

Split: ``train`` only. The test split never leaks: a clip listed here is never in a test row's
``source_clips`` (checked on the plan here, and on the exported rows by ``palm_bench.export``).

    builder = PalmEnrollment(cache_dir=tmp, build=load_preset("small"))
    builder.download_and_prepare()
    ds = builder.as_dataset(split="train")
"""

from __future__ import annotations

from collections.abc import Iterable

import datasets

from lalm_eval.audio.io import TARGET_SR
from lalm_eval.errors import DataError
from lalm_eval.hub.builder import BenchBuilder, Rendered, UnitAudio
from palm_bench.builder import CITATION, PalmBenchConfig, plan_for
from palm_bench.corpus.types import Utterance
from palm_bench.plan import BuildPlan

CONFIG = "enrollment"
SPLIT = "train"
FEATURES = datasets.Features(
    {
        "subject_id": datasets.Value("string"),
        "name": datasets.Value("string"),  # the subject's name, as the QA rows' `queried` spell it
        "language": datasets.Value("string"),
        "clip_id": datasets.Value("string"),  # the corpus utterance id (as in the QA rows' `source_clips`)
        "audio": datasets.Audio(sampling_rate=TARGET_SR),
        "duration": datasets.Value("float32"),
        "transcript": datasets.Value("string"),
    }
)


def enrollment_clips(plan: BuildPlan) -> list[tuple[str, Utterance]]:
    """``(subject name, clip)`` for every train-split clip of every subject of the build, ordered
    by subject id then clip id (negative-pool speakers are not subjects and are left out)."""
    train = plan.splits.get(SPLIT)
    if train is None:
        raise DataError(
            plan.corpus.root,
            "the build plan has no clip split; it was made without palm_bench.plan.make_plan",
            field="splits",
        )
    speakers = plan.corpus.speakers
    return [
        (speakers[sid].name or "", clip)
        for sid in sorted(train)
        if speakers[sid].role == "subject"
        for clip in sorted(train[sid], key=lambda u: u.id)
    ]


def check_no_leak(enrollment_ids: Iterable[str], test_source_clips: Iterable[Iterable[str]], where) -> None:
    """Raise :class:`DataError` naming the clips if any enrollment clip is in a test row's
    ``source_clips`` (the build-time leak check of the ``enrollment`` config)."""
    enrolled = set(enrollment_ids)
    leaked = sorted({c for clips in test_source_clips for c in clips if c in enrolled})
    if leaked:
        raise DataError(
            where,
            f"{len(leaked)} enrollment clip(s) are also in test rows: "
            f"{', '.join(leaked[:5])}{' …' if len(leaked) > 5 else ''}",
            field="clip_id",
        )


class PalmEnrollment(BenchBuilder):
    """``PalmEnrollment(cache_dir=..., plan=plan)``: the enrollment rows of ``plan`` (the same
    plan as the QA configs' builders); without ``plan`` it plans from the config."""

    BUILDER_CONFIG_CLASS = PalmBenchConfig
    BUILDER_CONFIGS = [
        PalmBenchConfig(name=CONFIG, tasks=(), description="PALM-Bench enrollment: subjects' train-split clips")
    ]
    DEFAULT_CONFIG_NAME = CONFIG
    DEFAULT_WRITER_BATCH_SIZE = 64
    SPLITS = (SPLIT,)
    PREFETCH = 32  # clips decoded and encoded ahead of the writer
    _enrollment: list[tuple[str, Utterance]] | None = None  # enrollment_clips(self.plan), once

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="PALM-Bench enrollment clips: each subject's train-split utterances, with transcripts",
            features=FEATURES,
            citation=CITATION,
            license="see the corpus licence",
        )

    def make_plan(self) -> BuildPlan:
        return plan_for(self.config)

    def audio_format(self) -> str:
        return self.plan.config.audio_format

    def units(self, split: str) -> list[int]:
        # positions in enrollment_clips(plan); the test split never holds one (checked here)
        plan = self.plan
        clips = self._clips()
        check_no_leak(
            (c.id for _, c in clips), ([c.id for c in a.clips] for a in plan.audios.get("test", [])), plan.corpus.root
        )
        return list(range(len(clips)))

    def render(self, unit: int) -> Rendered:
        # decoding dominates: a few threads decode and encode ahead of the writer (PREFETCH)
        clip = self._clips()[unit][1]
        return Rendered(clip.load_audio(), clip.id)

    def rows(self, unit: int, audio: UnitAudio):
        name, clip = self._clips()[unit]
        yield {
            "subject_id": clip.speaker,
            "name": name,
            "language": clip.language,
            "clip_id": clip.id,
            "audio": audio.audio,
            "duration": round(audio.duration, 3),
            "transcript": clip.text,
        }

    def _clips(self) -> list[tuple[str, Utterance]]:
        if self._enrollment is None:
            self._enrollment = enrollment_clips(self.plan)
        return self._enrollment
