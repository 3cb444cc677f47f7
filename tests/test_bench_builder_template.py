"""``BenchBuilder`` as a template method (lalm_eval.hub.builder): a benchmark gives ``units``,
``render`` and ``rows``; splits, prefetch, encoding, keys and sharding are the base's. And one
``Skip`` / ``SkipLog`` (lalm_eval.hub.readers) for every reader, the MSU release import included."""

import logging

import numpy as np
import pytest
import soundfile as sf

from lalm_eval.audio.io import TARGET_SR
from lalm_eval.hub.builder import BenchBuilder, BenchBuilderConfig, Rendered
from lalm_eval.hub.readers import ReaderResult, Skip, SkipLog


class ToyBuilder(BenchBuilder):
    """Units ``(split, n)``: a tone of n tenths of a second, and n rows about it."""

    BUILDER_CONFIGS = [BenchBuilderConfig(name="toy")]
    SPLITS = ("train", "validation", "test")
    OPTIONAL_SPLITS = ("validation",)
    PREFETCH = 2

    def _info(self):
        import datasets

        return datasets.DatasetInfo(features=datasets.Features({"id": datasets.Value("string")}))

    def make_plan(self):
        return {"train": [1, 2, 3], "validation": [], "test": [2]}

    def units(self, split):
        return [(split, n) for n in self.plan[split]]

    def render(self, unit):
        self.rendered.append(unit)
        n = unit[1]
        return Rendered(np.sin(np.arange(n * TARGET_SR // 10) / 7).astype(np.float32) * 0.5, f"tone{n}", extra=n)

    def rows(self, unit, audio):
        for j in range(audio.extra):
            yield {"id": f"{unit[0]}-{unit[1]}-{j}", "audio": audio.audio, "duration": audio.duration}


@pytest.fixture
def toy(tmp_path):
    builder = ToyBuilder(config_name="toy", cache_dir=str(tmp_path))
    builder.rendered = []
    return builder


def test_splits_come_from_units_and_an_empty_optional_split_is_left_out(toy):
    gens = {g.name: g.gen_kwargs for g in toy._split_generators(None)}
    assert list(gens) == ["train", "test"]  # validation planned empty: left out; train and test always
    assert gens["train"] == {"units": [("train", 1), ("train", 2), ("train", 3)]}  # the one list num_proc shards


def test_each_unit_is_rendered_and_encoded_once_and_its_rows_share_it(toy):
    (train, _test) = toy._split_generators(None)
    examples = list(toy._generate_examples(**train.gen_kwargs))
    assert toy.rendered == [("train", 1), ("train", 2), ("train", 3)]
    assert [key.item_or_batch_id for key, _ in examples] == list(range(6))  # keys numbered by the base, in order
    rows = [row for _, row in examples]
    assert [r["id"] for r in rows] == ["train-1-0", "train-2-0", "train-2-1", "train-3-0", "train-3-1", "train-3-2"]
    assert rows[1]["audio"] is rows[2]["audio"]  # one encoding per unit
    assert rows[3]["audio"]["path"] == "tone3.flac" and rows[3]["duration"] == pytest.approx(0.3)
    import io

    samples, sr = sf.read(io.BytesIO(rows[3]["audio"]["bytes"]), dtype="float32")
    assert sr == TARGET_SR and len(samples) == 3 * TARGET_SR // 10


def test_contiguous_shards_of_the_units_give_the_same_rows_in_order(toy):
    from datasets.utils.sharding import _split_gen_kwargs

    (train, _test) = toy._split_generators(None)
    whole = [row["id"] for _, row in toy._generate_examples(**train.gen_kwargs)]
    halves = _split_gen_kwargs(train.gen_kwargs, max_num_jobs=2)
    assert len(halves) == 2
    assert [row["id"] for h in halves for _, row in toy._generate_examples(**h)] == whole


def test_skip_log_level_and_the_counts_inside_an_item(caplog):
    quiet = SkipLog(logging.getLogger("toy.reader"), logging.DEBUG)
    with caplog.at_level(logging.INFO):
        quiet.add("a.json", "bad answer: 'E'", within=2)
        quiet.add("b.json", "unreadable JSON", lost=None, level=logging.WARNING)
    assert [r.getMessage() for r in caplog.records] == ["skipped b.json: unreadable JSON"]  # only the override
    assert quiet.items == [Skip("a.json", "bad answer: 'E'", 2, 1), Skip("b.json", "unreadable JSON", None, None)]
    assert len(quiet) == 2 and list(quiet) == quiet.items
    assert Skip("x", "y") == Skip("x", "y", within=None, lost=1)  # a reader's plain skip: the item as a whole


def test_the_release_import_reports_skips_of_the_one_type(tmp_path):
    import msu_bench.mcq
    from msu_bench.mcq import McqReport, import_summary, read_mcq_release
    from tests.msu_release_fixture import make_release

    assert not hasattr(msu_bench.mcq, "Skip")  # no second Skip type
    report = read_mcq_release(make_release(tmp_path / "rel"))
    assert isinstance(report, McqReport) and isinstance(report, ReaderResult)
    assert report.skips and all(type(s) is Skip for s in report.skips)
    whole_files = [s for s in report.skips if s.within is None]
    assert whole_files and import_summary(report)["files_skipped"] == len(whole_files)


def test_the_mcq_builder_writes_the_report_it_is_given_without_reading_the_release(tmp_path, monkeypatch):
    import msu_bench.mcq_builder
    from msu_bench.mcq import read_mcq_release
    from msu_bench.mcq_builder import MsuMcq
    from tests.msu_release_fixture import make_release

    release = make_release(tmp_path / "rel")
    report = read_mcq_release(release)
    monkeypatch.setattr(msu_bench.mcq_builder, "read_mcq_release", lambda *a: pytest.fail("read the release again"))
    builder = MsuMcq(config_name="mcq", data_dir=str(release), cache_dir=str(tmp_path / "cache"), plan=report)
    assert not hasattr(builder, "report")  # no side channel: the report is the builder's plan
    (test,) = builder._split_generators(None)
    runs = test.gen_kwargs["units"]
    assert runs[0][0] == 0 and runs[-1][1] == len(report.records)
    assert all(a[1] == b[0] for a, b in zip(runs, runs[1:]))  # contiguous runs of the records
    for start, stop in runs:  # a run shares one source wav, the next run has another
        assert len({r["audio_path"] for r in report.records[start:stop]}) == 1
    rows = [row for _, row in builder._generate_examples(units=runs[:1])]
    first = report.records[runs[0][0] : runs[0][1]]
    assert [r["id"] for r in rows] == [r["id"] for r in first]
    assert all(r["audio"] is rows[0]["audio"] for r in rows)  # the whole conversation encoded once per run
    assert all(
        len(r["clips"]) == len(f["clips"]) and all("audio" in c for c in r["clips"]) for r, f in zip(rows, first)
    )
