"""PALM-Bench and MSU-Bench builders share one shape (lalm_eval.hub.builder): a config base, the
plan passed in through the constructor, one ``plan`` property, reader results with ``skips``, and
a corpus-reader registry per benchmark."""

import dataclasses

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.hub.builder import BenchBuilder, BenchBuilderConfig
from lalm_eval.hub.readers import ReaderResult, Skip, SkipLog, skip_records
from msu_bench.builder import MsuBench, MsuBenchConfig
from msu_bench.corpora import READERS as MSU_READERS
from msu_bench.corpora import make_conversation
from msu_bench.corpora import read_corpus as msu_read_corpus
from msu_bench.types import ReadReport
from palm_bench.builder import PalmBench, PalmBenchConfig
from palm_bench.corpus import READERS as PALM_READERS
from palm_bench.corpus import read_corpus as palm_read_corpus
from palm_bench.corpus.types import Corpus
from palm_bench.enrollment_builder import PalmEnrollment

SHARED = {"build", "corpus", "corpus_dir", "corpus_options"}


@pytest.mark.parametrize("config_class", [PalmBenchConfig, MsuBenchConfig])
def test_both_configs_derive_the_shared_fields_from_one_base(config_class):
    assert issubclass(config_class, BenchBuilderConfig)
    fields = {f.name for f in dataclasses.fields(config_class)}
    assert SHARED <= fields
    own = {f.name for f in dataclasses.fields(config_class)} - {f.name for f in dataclasses.fields(BenchBuilderConfig)}
    assert own == ({"tasks", "work_dir"} if config_class is PalmBenchConfig else {"tiers"})


@pytest.mark.parametrize(
    "builder_class, config", [(PalmBench, "recognition"), (PalmEnrollment, "enrollment"), (MsuBench, "tier1")]
)
def test_a_plan_passed_in_is_used_and_none_is_made(builder_class, config, tmp_path, monkeypatch):
    assert issubclass(builder_class, BenchBuilder)
    assert not hasattr(builder_class, "build_plan")  # one property name: `plan`

    def no_planning(self):
        raise AssertionError("planned although a plan was passed in")

    monkeypatch.setattr(builder_class, "make_plan", no_planning)
    sentinel = object()
    builder = builder_class(config_name=config, cache_dir=str(tmp_path), plan=sentinel)
    assert builder.plan is sentinel


def test_without_a_plan_the_builder_plans_once_from_its_config(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(MsuBench, "make_plan", lambda self: calls.append(self.config.corpus) or "the plan")
    builder = MsuBench(config_name="tier2", cache_dir=str(tmp_path), corpus="rttm")
    assert builder.plan == "the plan" and builder.plan == "the plan"
    assert calls == ["rttm"]


def test_reader_results_carry_skips_of_one_type(tmp_path):
    assert issubclass(Corpus, ReaderResult) and issubclass(ReadReport, ReaderResult)
    report = ReadReport([], skips=[Skip("a.json", "audio missing"), Skip("b.json:3", "bad line")])
    assert report.n_skipped == 2 and report.skips[1].item == "b.json:3"
    assert skip_records(report.skips, relative=lambda f: f.upper()) == [
        {"file": "A.JSON", "reason": "audio missing"},
        {"file": "B.JSON:3", "reason": "bad line"},
    ]
    corpus = Corpus(speakers={}, utterances=[], root=tmp_path)
    assert corpus.skips == [] and corpus.n_skipped == 0


def test_skip_log_keeps_items_and_reasons_and_logs_them(caplog):
    log = SkipLog()
    with caplog.at_level("WARNING"):
        log.add("x/1.wav", "no transcript")
    assert log.items == [Skip("x/1.wav", "no transcript")]
    assert "x/1.wav" in caplog.text and "no transcript" in caplog.text


def test_msu_readers_record_skip_objects(tmp_path):
    skipped = SkipLog()
    conv = make_conversation(
        "c1",
        source="rttm",
        language="en",
        annotation=tmp_path / "c1.rttm",
        audio=tmp_path / "missing.wav",
        turns=[("A", 0.0, 1.0, "hi")],
        speakers={},
        skips=skipped,
    )
    assert conv is not None and conv.audio is None
    assert skipped.items == [Skip(str(tmp_path / "c1.rttm"), "audio missing")] and isinstance(skipped.items[0], Skip)


@pytest.mark.parametrize(
    "readers, kinds",
    [
        (PALM_READERS, ["embedded", "folder", "ncssd"]),
        (MSU_READERS, ["alimeeting", "chime6", "embedded", "magicdata", "rttm"]),
    ],
)
def test_each_benchmark_has_a_reader_registry(readers, kinds):
    assert readers.names() == kinds
    for kind in kinds:
        assert callable(readers.get(kind))  # every lazy "module:function" entry resolves


@pytest.mark.parametrize("read", [palm_read_corpus, msu_read_corpus])
def test_unknown_corpus_kinds_and_missing_folders_are_config_errors(read):
    with pytest.raises(ConfigError, match="Available: .*embedded"):
        read("no_such_corpus", "/tmp")
    kind = "folder" if read is palm_read_corpus else "rttm"
    with pytest.raises(ConfigError, match="needs a corpus folder"):
        read(kind, None)


def test_embedded_readers_go_through_the_registries():
    corpus = palm_read_corpus("embedded")
    assert isinstance(corpus, Corpus) and corpus.utterances and corpus.skips == []
    assert (corpus.descriptions_dir / "human_descriptions.yaml").is_file()
    report = msu_read_corpus("embedded")
    assert isinstance(report, ReadReport) and report.conversations and report.skips == []


def test_split_generators_list_their_work_so_datasets_can_shard_it(tmp_path):
    """gen_kwargs hold one list (what `num_proc` shards), of the rows' sources in plan order."""
    from datasets.utils.sharding import _number_of_shards_in_gen_kwargs, _split_gen_kwargs

    from msu_bench.plan import load_preset, make_plan

    plan = make_plan(load_preset("small"))
    builder = MsuBench(config_name="all", cache_dir=str(tmp_path), plan=plan)
    (gen,) = builder._split_generators(None)
    assert gen.gen_kwargs["units"] == list(range(len(plan.segments)))
    assert _number_of_shards_in_gen_kwargs(gen.gen_kwargs) == len(plan.segments)
    halves = _split_gen_kwargs(gen.gen_kwargs, max_num_jobs=2)
    assert len(halves) == 2 and [i for h in halves for i in h["units"]] == gen.gen_kwargs["units"]


@pytest.mark.parametrize("bad", [0, -2, 1.5, True])
def test_a_bad_num_proc_fails_before_any_planning(bad, tmp_path, monkeypatch):
    import msu_bench.export
    import palm_bench.export

    def no_planning(*args, **kwargs):
        raise AssertionError("planned before checking num_proc")

    monkeypatch.setattr(palm_bench.export, "make_plan", no_planning)
    monkeypatch.setattr(msu_bench.export, "make_plan", no_planning)
    with pytest.raises(ConfigError, match="--num_proc: must be a whole number of processes >= 1"):
        palm_bench.export.build(tmp_path / "p", None, num_proc=bad)
    with pytest.raises(ConfigError, match="--num_proc: must be a whole number of processes >= 1"):
        msu_bench.export.build(tmp_path / "m", None, num_proc=bad)
