"""The public MSU-Benchmark release (multiple choice) as a ``datasets.GeneratorBasedBuilder``: config
``mcq``, one ``test`` split, read from a local copy of the release (``data_dir``)::

    builder = MsuMcq(config_name="mcq", data_dir="/data/MSU-Benchmark", cache_dir=tmp)
    builder.download_and_prepare()
    ds = builder.as_dataset()["test"]

Every row embeds its conversation audio (16 kHz mono FLAC, resampled by ``lalm_eval.audio.io``);
the audio is decoded and encoded once per source wav and shared by that wav's consecutive rows.
``clips`` are the segments a ``no_index`` question is asked about (seconds in that audio);
``full_audio`` says whether the model also hears the whole conversation (see ``msu_bench.mcq``).
Skipped files and questions are logged and kept in ``builder.report``.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import datasets

from lalm_eval.audio.io import TARGET_SR, encode_audio, read_audio
from lalm_eval.errors import ConfigError
from msu_bench.mcq import McqReport, read_mcq_release

log = logging.getLogger(__name__)

_STR = datasets.Value("string")
FEATURES = datasets.Features({
    "id": _STR,  # <language>/<scenario>/<seg_id>/level<N>/<task>/<question index>
    "language": _STR,  # zh | en
    "scenario": _STR,
    "length": _STR,  # short | long (the release's QA_short / QA_long)
    "seg_id": _STR,
    "level": datasets.Value("int32"),  # 1 | 2
    "task": _STR,  # RSR SR SVS SC SV AI AR GI ER SP BI RII DAR QASI EIR MSVS
    "capability": _STR,  # SID SAR (level 1), DSR DSA DCR (level 2)
    "question_type": _STR,  # no_index | time_index | transcript_index | speaker_index | complex_index
    "question": _STR,
    "options": datasets.List(_STR),  # option texts without their "A. " prefix
    "option_letters": datasets.List(_STR),  # A B C D
    "answer": _STR,  # a letter
    "answer_text": _STR,
    "rationale": datasets.List(_STR),  # per option letter: ground truth | wrong speaker | hallucination | unknown
    "pair": {"left": _STR, "right": _STR},  # verification pair references ("spk_a[0]"), or ""
    "clips": datasets.List({"ref": _STR, "speaker": _STR, "start": datasets.Value("float64"),
                            "end": datasets.Value("float64")}),
    "full_audio": datasets.Value("bool"),
    "speaker_meta": _STR,  # the file's speaker_meta as JSON
    "audio": datasets.Audio(sampling_rate=TARGET_SR),
    "duration": datasets.Value("float32"),
    "audio_path": _STR,  # source wav, relative to data_dir
    "source_file": _STR,  # task JSON, relative to data_dir
    "question_index": datasets.Value("int32"),
})


@dataclasses.dataclass
class MsuMcqConfig(datasets.BuilderConfig):
    languages: tuple[str, ...] = ("cn", "en")  # release folders bench_cn / bench_en


class MsuMcq(datasets.GeneratorBasedBuilder):
    BUILDER_CONFIG_CLASS = MsuMcqConfig
    BUILDER_CONFIGS = [MsuMcqConfig(name="mcq", description="MSU-Benchmark public release, multiple choice")]
    DEFAULT_CONFIG_NAME = "mcq"
    DEFAULT_WRITER_BATCH_SIZE = 16  # rows carry whole conversations

    report: McqReport | None = None

    def _info(self) -> datasets.DatasetInfo:
        return datasets.DatasetInfo(
            description="MSU-Benchmark (ASLP-lab/MSU-Benchmark): speaker-centric multiple-choice questions "
                        "on multi-speaker conversations", features=FEATURES, citation=CITATION,
            license="see the release's licence (cc-by-nc-4.0 on the Hub)")

    def _split_generators(self, dl_manager):
        data_dir = self.config.data_dir
        if not data_dir or not Path(data_dir).is_dir():
            raise ConfigError(f"MsuMcq needs data_dir=<local copy of the MSU-Benchmark release>, got {data_dir!r}")
        return [datasets.SplitGenerator(name=datasets.Split.TEST,
                                        gen_kwargs={"data_dir": data_dir, "languages": tuple(self.config.languages)})]

    def _generate_examples(self, data_dir, languages):
        report = self.report = read_mcq_release(data_dir, languages)
        if report.skipped:
            log.warning("MSU-Benchmark: %d file(s)/question(s) skipped: %s", len(report.skipped),
                        dict(report.skip_reasons()))
        for json_file, wav in report.audio_found_by_search:
            log.warning("%s: source audio not at source_audio/<scenario>/; found by search: %s", json_file, wav)
        path, audio, duration = None, None, 0.0
        for index, record in enumerate(report.records):
            if record["audio_path"] != path:
                path = record["audio_path"]
                samples, _ = read_audio(Path(data_dir) / path, TARGET_SR)
                audio = {"bytes": encode_audio(samples, TARGET_SR, "flac"), "path": f"{Path(path).stem}.flac"}
                duration = len(samples) / TARGET_SR
            yield datasets.builder.Key(0, index), {**record, "audio": audio, "duration": duration}


CITATION = """@inproceedings{sun2026msubench,
  title     = {MSU-Bench: Towards Speaker-Centric Understanding in Conversational Multi-Speaker Scenarios},
  author    = {Sun, Zhaokai and Wang, Shuai and Lin, Zhennan and Wang, Chengyou and Gao, Dehui and Cao, Yuang and
               He, Chunjiang and Zhou, Pan and Xie, Lei},
  booktitle = {Interspeech},
  year      = {2026},
  note      = {arXiv:2606.22868}
}"""
