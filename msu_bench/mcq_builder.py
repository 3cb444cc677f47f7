"""The public MSU-Benchmark release (multiple choice) as a ``datasets.GeneratorBasedBuilder``: config
``mcq``, one ``test`` split, read from a local copy of the release (``data_dir``)::

    builder = MsuMcq(config_name="mcq", data_dir="/data/MSU-Benchmark", cache_dir=tmp)
    builder.download_and_prepare()
    ds = builder.as_dataset()["test"]

Each row carries the audio parts the authors send (``msu_bench.mcq``): ``clips`` are the segments
of a ``no_index`` question (both clips of a verification pair, or the target's first segment),
each with its text label and its audio cut from the source wav by its times (a ranged read of
those frames only, then 16 kHz mono FLAC); ``audio`` is the whole conversation (decoded and encoded
once per source wav, shared by that wav's consecutive rows), sent when ``full_audio`` is true,
after ``full_audio_label``. The plan is the release read once (:func:`msu_bench.mcq.read_mcq_release`,
an :class:`~msu_bench.mcq.McqReport`): the export reads it, hands it to the builder (``plan=``) and
puts its skipped files and questions in ``build_info.json`` and the card
(:func:`msu_bench.mcq.import_summary`).
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import datasets
import numpy as np

from lalm_eval.audio.io import TARGET_SR, read_audio, read_audio_span
from lalm_eval.errors import ConfigError
from lalm_eval.hub.builder import BenchBuilder, Rendered, UnitAudio
from msu_bench.mcq import McqReport, check_kept, import_summary, read_mcq_release

log = logging.getLogger(__name__)

_STR = datasets.Value("string")
_F64 = datasets.Value("float64")
FEATURES = datasets.Features(
    {
        "id": _STR,  # <language>/<scenario>/<seg_id>/level<N>/<task>/<question index>
        "language": _STR,  # zh | en
        "scenario": _STR,
        "length": _STR,  # short | long (the release's QA_short / QA_long)
        "seg_id": _STR,
        "level": datasets.Value("int32"),  # 1 | 2
        "task": _STR,  # RSR SR SVS SC SV AI AR GI ER SP BI RII DAR QASI EIR MSVS
        "task_name": _STR,  # its English name (msu_bench/mcq_release.yaml)
        "tier": _STR,  # tier1 | tier2, from the task code
        "capability": _STR,  # SID SAR (tier 1), DSR DSA DCR (tier 2)
        "question_type": _STR,  # as written in the release
        "scheme": _STR,  # no_index time_index transcript_index speaker_index complex_index | reverse_* | unknown_index
        "reverse": datasets.Value("bool"),  # a reverse_* question: left out of the score by default
        "question": _STR,
        "options": datasets.List(_STR),  # option texts without their "A. " prefix
        "option_letters": datasets.List(_STR),  # A B C D
        "answer": _STR,  # a letter
        "answer_text": _STR,
        "rationale": datasets.List(
            _STR
        ),  # per option letter: ground truth | wrong speaker | hallucination | unknown | as written
        "rationale_raw": datasets.List(_STR),  # the release's entries
        "label_issue": _STR,  # "" or why the labels disagree with the answer (kept and scored, as by the authors)
        "labels_consistent": datasets.Value("bool"),
        "pair": {"left": _STR, "right": _STR},  # verification pair references ("spk_a[0]"), or ""
        "clips": datasets.List(
            {
                "role": _STR,
                "label": _STR,
                "ref": _STR,
                "speaker": _STR,
                "start": _F64,
                "end": _F64,
                "audio": datasets.Audio(sampling_rate=TARGET_SR),
            }
        ),
        "full_audio": datasets.Value("bool"),  # the model also hears `audio`
        "full_audio_label": _STR,
        "sub_question_type": _STR,
        "speaker_meta": _STR,  # the file's speaker_meta as JSON
        "audio": datasets.Audio(sampling_rate=TARGET_SR),
        "duration": datasets.Value("float32"),
        "audio_path": _STR,  # source wav, relative to data_dir
        "source_file": _STR,  # task JSON, relative to data_dir
        "question_index": datasets.Value("int32"),
    }
)


def cut(path: Path, start: float, end: float) -> np.ndarray:
    """Seconds ``start``-``end`` of an audio file as 16 kHz mono float32, reading those frames only;
    the release's times are clamped to the file (an :class:`AudioError` when nothing is left)."""
    return read_audio_span(path, start, end - start, TARGET_SR, clamp=True)[0]


@dataclasses.dataclass
class MsuMcqConfig(datasets.BuilderConfig):
    languages: tuple[str, ...] = ("cn", "en")  # release folders bench_cn / bench_en


class MsuMcq(BenchBuilder):
    """``MsuMcq(config_name="mcq", data_dir=..., cache_dir=..., plan=report)`` writes the questions
    of ``report`` (the :class:`~msu_bench.mcq.McqReport` of the release under ``data_dir``, read
    once by the caller); without ``plan`` it reads the release on first use of :attr:`plan`."""

    BUILDER_CONFIG_CLASS = MsuMcqConfig
    BUILDER_CONFIGS = [MsuMcqConfig(name="mcq", description="MSU-Benchmark public release, multiple choice")]
    DEFAULT_CONFIG_NAME = "mcq"
    DEFAULT_WRITER_BATCH_SIZE = 16  # rows carry whole conversations
    PREFETCH = 2  # whole conversations: few ahead of the writer

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="MSU-Benchmark (ASLP-lab/MSU-Benchmark): speaker-centric multiple-choice questions "
            "on multi-speaker conversations",
            features=FEATURES,
            citation=CITATION,
            license="see the release's licence (cc-by-nc-4.0 on the Hub)",
        )

    def make_plan(self) -> McqReport:
        data_dir = self.config.data_dir
        if not data_dir or not Path(data_dir).is_dir():
            raise ConfigError(f"MsuMcq needs data_dir=<local copy of the MSU-Benchmark release>, got {data_dir!r}")
        return read_mcq_release(data_dir, tuple(self.config.languages))

    def units(self, split: str) -> list[tuple[int, int]]:
        """Runs ``(start, stop)`` of consecutive records with the same source wav, whose whole audio
        is decoded and encoded once and shared by the run's rows."""
        report = self.plan
        check_kept(import_summary(report), self.config.data_dir)  # an import that keeps nothing stops here
        _log_what_was_left(report)
        runs, start = [], 0
        for i, record in enumerate(report.records):
            if i and record["audio_path"] != report.records[i - 1]["audio_path"]:
                runs.append((start, i))
                start = i
        return runs + [(start, len(report.records))] if report.records else runs

    def render(self, unit: tuple[int, int]) -> Rendered:
        """The source wav, and each record's clips cut from it (encoded here, in the prefetch threads)."""
        records = self.plan.records[unit[0] : unit[1]]
        source = Path(self.config.data_dir) / records[0]["audio_path"]
        samples, _ = read_audio(source, TARGET_SR)
        return Rendered(samples, source.stem, extra=[[self._clip(source, c) for c in r["clips"]] for r in records])

    def _clip(self, source: Path, clip: dict) -> dict:
        """A question's clip with its audio: cut from ``source`` by its times, encoded."""
        stem = f"{source.stem}_{clip['start']:.2f}-{clip['end']:.2f}"
        return {**clip, "audio": self.encode(cut(source, clip["start"], clip["end"]), stem)}

    def rows(self, unit: tuple[int, int], audio: UnitAudio):
        for record, clips in zip(self.plan.records[unit[0] : unit[1]], audio.extra, strict=True):
            yield {**record, "clips": clips, "audio": audio.audio, "duration": audio.duration}


def _log_what_was_left(report: McqReport) -> None:
    """The import's skips (counted by reason) and the wavs found by search, as warnings."""
    if report.skips:
        log.warning(
            "MSU-Benchmark: %d question(s) skipped (see build_info.json): %s%s",
            sum(s.lost for s in report.skips if s.lost is not None),
            dict(report.skip_reasons()),
            "".join(f"; {n} file(s) {k}, questions not counted" for k, n in report.uncounted_files().items()),
        )
    for json_file, wav in report.audio_found_by_search:
        log.warning(
            "%s: source audio not at bench_<lang>/source_audio/<scenario>/; found by search: %s", json_file, wav
        )


CITATION = """@inproceedings{sun2026msubench,
  title     = {MSU-Bench: Towards Speaker-Centric Understanding in Conversational Multi-Speaker Scenarios},
  author    = {Sun, Zhaokai and Wang, Shuai and Lin, Zhennan and Wang, Chengyou and Gao, Dehui and Cao, Yuang and
               He, Chunjiang and Zhou, Pan and Xie, Lei},
  booktitle = {Interspeech},
  year      = {2026},
  note      = {arXiv:2606.22868}
}"""
