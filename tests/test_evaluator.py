"""The evaluation end to end with a scripted adapter: requests, cache, errors, filters, groups, files."""

import io
import json

import datasets
import numpy as np
import pytest
import soundfile as sf

from lalm_eval.api import Adapter, Response
from lalm_eval.hub.card import front_matter, write_card
from lalm_eval.hub.parquet import export_dataset_dict
from lalm_eval.report.assemble import write_outputs
from lalm_eval.report.results import load_results
from tests.evaluation_helpers import evaluate_names


def flac(seconds, freq):
    t = np.arange(int(16000 * seconds)) / 16000
    buf = io.BytesIO()
    sf.write(buf, (0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), 16000, format="FLAC")
    return buf.getvalue()


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ds")
    rows = {"question": [], "answer": [], "audio": [], "language": []}
    for i in range(6):
        rows["question"].append(f"Who speaks in clip {i}?")
        rows["answer"].append("Alice" if i % 2 else "Bob")
        rows["audio"].append(
            {"bytes": flac(1 + i * 0.5, 200 + 50 * i), "path": None}
            if i != 4
            else {"bytes": b"not audio", "path": None}
        )
        rows["language"].append("en" if i < 3 else "zh")
    features = datasets.Features(
        {
            "question": datasets.Value("string"),
            "answer": datasets.Value("string"),
            "audio": datasets.Audio(sampling_rate=16000),
            "language": datasets.Value("string"),
        }
    )
    ds = datasets.Dataset.from_dict(rows, features=features)
    files = export_dataset_dict({"main": datasets.DatasetDict({"test": ds})}, out)
    write_card(out, f"---\n{front_matter(files)}\n---\n")
    return out


@pytest.fixture
def task_dir(tmp_path, dataset_dir):
    folder = tmp_path / "mytasks"
    folder.mkdir()
    (folder / "base.yaml").write_text(f"""
dataset_path: {dataset_dir}
dataset_name: main
test_split: test
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
generation_kwargs: {{max_new_tokens: 4}}
metric_list:
  - {{metric: exact_match, aggregation: mean, higher_is_better: true}}
  - {{metric: token_f1, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1, breakdown: [language]}}
""")
    (folder / "plain.yaml").write_text("include: base.yaml\ntask: who_plain\n")
    (folder / "cot.yaml").write_text("""include: base.yaml
task: who_cot
filter_list:
  - name: answer
    filter:
      - {function: regex, regex_pattern: "<Answer>\\\\s*(.*?)\\\\s*(?:</Answer>|$)", group_select: 0}
      - {function: take_first}
""")
    (folder / "group.yaml").write_text("""group: who
task: [who_plain, who_cot]
aggregate_metric_list: [{metric: exact_match, aggregation: mean, weight_by_size: true}]
""")
    return folder


class Scripted(Adapter):
    """Answers 'Alice' for clips longer than 2 s, fails on the 1.5 s clip, wraps CoT answers."""

    name = "scripted"

    def __init__(self):
        super().__init__()
        self.seen = []

    def identity(self):
        return {"name": self.name, "version": 1}

    def generate(self, requests, batch_size=1):
        out = []
        for r in requests:
            self.seen.append((r.task, r.doc_id))
            self.n_generated += 1
            seconds = r.audio_seconds
            if abs(seconds - 1.5) < 0.01:
                out.append(Response(None, error="RuntimeError('boom')"))
                continue
            answer = "Alice" if seconds > 2 else "Bob"
            out.append(
                Response(
                    f"<Reasoning>thinking</Reasoning> <Answer>{answer}</Answer>" if r.task == "who_cot" else answer
                )
            )
        return out


def test_evaluate_scores_excludes_failures_and_uses_the_cache(task_dir, tmp_path):
    adapter = Scripted()
    run = evaluate_names(adapter, ["who"], include_path=[task_dir], batch_size="2", cache_dir=tmp_path / "cache")
    plain = run.results["who_plain"]
    # 6 docs: doc 4 has undecodable audio (never sent), doc 1 (1.5 s) fails in the model
    assert plain.n == {"original": 6, "effective": 6, "scored": 4}
    assert {e["doc_id"] for e in plain.errors} == {1, 4}
    assert (("who_plain", 4) not in adapter.seen) and ("who_plain", 1) in adapter.seen
    # docs 0, 2, 3, 5: durations 1.0, 2.0, 2.5, 3.5 s → Bob, Bob, Alice, Alice; targets Bob, Bob, Alice, Alice
    assert plain.summary["exact_match"] == 1.0
    cot = run.results["who_cot"]
    assert cot.summary["exact_match"] == 1.0  # the <Answer> filter extracted the answer
    assert run.groups["who"]["exact_match"] == 1.0 and run.groups["who"]["subtasks"] == ["who_plain", "who_cot"]
    assert run.cache == {"hits": 0, "misses": 10}

    again = Scripted()
    rerun = evaluate_names(again, ["who"], include_path=[task_dir], batch_size="2", cache_dir=tmp_path / "cache")
    # successes come from the cache; only the failed doc is retried (failures are not cached)
    assert sorted(again.seen) == [("who_cot", 1), ("who_plain", 1)]
    assert rerun.cache == {"hits": 8, "misses": 2}
    assert rerun.results["who_plain"].summary == plain.summary


def test_outputs_follow_lm_eval_layout(task_dir, tmp_path):
    run = evaluate_names(Scripted(), ["who_plain"], include_path=[task_dir], cache_dir=tmp_path / "c", use_cache=False)
    files = write_outputs(run, {"model": "scripted"}, tmp_path / "out", log_samples=True)
    results = load_results(files["results"])
    assert results["results"]["who_plain"]["exact_match,none"] == 1.0
    assert results["n-samples"]["who_plain"]["scored"] == 4
    assert len(results["task_hashes"]["who_plain"]) == 64
    assert {e["doc_id"] for e in results["errors"]["who_plain"]} == {1, 4}
    lines = files["samples_who_plain"].read_text().splitlines()
    assert len(lines) == 5 and all("language" in json.loads(x) for x in lines)
    report = files["report"].read_text()
    assert "who_plain by language" in report


def test_limit_and_gen_kwargs_reach_the_request(task_dir, tmp_path):
    seen = []

    class Recorder(Scripted):
        def generate(self, requests, batch_size=1):
            seen.extend(requests)
            return super().generate(requests, batch_size)

    evaluate_names(
        Recorder(),
        ["who_plain"],
        include_path=[task_dir],
        limit=3,
        gen_kwargs={"max_new_tokens": 9, "min_new_tokens": 2},
        cache_dir=tmp_path / "c",
        use_cache=False,
    )
    assert [r.doc_id for r in seen] == [0, 1, 2]
    assert all(r.gen_kwargs == {"max_new_tokens": 9, "min_new_tokens": 2} for r in seen)
    assert seen[0].messages[0]["content"][0] == {"type": "audio"}


def test_unknown_task_suggests_close_names(task_dir, tmp_path):
    from lalm_eval.tasks import UnknownTaskError

    with pytest.raises(UnknownTaskError, match="who_plain"):
        evaluate_names(Scripted(), ["who_plian"], include_path=[task_dir], cache_dir=tmp_path)


def test_two_process_data_parallel_matches_one_process(task_dir, tmp_path):
    """torchrun with 2 CPU processes (the same launcher protocol as `accelerate launch
    --multi_gpu`): each rank generates half, rank 0 writes results equal to a 1-process run."""
    import glob
    import shutil
    import subprocess
    import sys

    if shutil.which("torchrun") is None:
        pytest.skip("torchrun not installed")
    tiny = tmp_path / "tiny"
    subprocess.run(
        [sys.executable, "-m", "lalm_eval.cli", "make-tiny-model", "qwen2_audio", str(tiny)],
        check=True,
        capture_output=True,
    )
    common = [
        "--model",
        "qwen2_audio",
        "--model_args",
        f"pretrained={tiny}",
        "--tasks",
        "who_plain",
        "--include_path",
        str(task_dir),
        "--batch_size",
        "2",
        "--log_samples",
        "--gen_kwargs",
        "max_new_tokens=6",
    ]
    # one process, unchunked, filling the response cache c1
    subprocess.run(
        [
            sys.executable,
            "-m",
            "lalm_eval.cli",
            *common,
            "--output_path",
            str(tmp_path / "one"),
            "--cache_dir",
            str(tmp_path / "c1"),
            "--stream_chunk",
            "0",
        ],
        check=True,
        capture_output=True,
    )

    def torchrun(*args):
        return subprocess.run(
            ["torchrun", "--nproc_per_node", "2", "--master_port", "29517", "-m", "lalm_eval.cli", *common, *args],
            capture_output=True,
            text=True,
        )

    # two processes, streamed 2 misses at a time: each chunk is split between the ranks
    dp = torchrun(
        "--output_path", str(tmp_path / "two"), "--cache_dir", str(tmp_path / "c2"), "--no_cache", "--stream_chunk", "2"
    )
    assert dp.returncode == 0, dp.stderr[-2000:]
    assert len(glob.glob(str(tmp_path / "two" / "results_*.json"))) == 1  # only rank 0 writes
    assert "model calls: 3" in dp.stdout  # rank 0 generated its half of the 5 decodable docs
    assert "cache: 0 hits, 5 misses" in dp.stdout  # counts cover both ranks

    def responses(folder):
        (path,) = glob.glob(str(tmp_path / folder / "samples_who_plain_*.jsonl"))
        return [(json.loads(x)["doc_id"], json.loads(x)["response"]) for x in open(path)]

    assert responses("two") == responses("one")
    # two processes on the warm cache: they agree that every doc is answered, nothing is decoded or generated
    warm = torchrun("--output_path", str(tmp_path / "warm"), "--cache_dir", str(tmp_path / "c1"), "--stream_chunk", "2")
    assert warm.returncode == 0, warm.stderr[-2000:]
    assert "cache: 5 hits, 0 misses" in warm.stdout and "model calls: 0" in warm.stdout
    assert responses("warm") == responses("one")


class Counting:
    """``decode_audio`` wrapped: counts decodes and how many decoded arrays are alive at once."""

    def __init__(self, monkeypatch):
        import weakref

        from lalm_eval.evaluation import docs

        real = docs.decode_audio
        self.decoded = self.alive = self.peak = 0

        def decode(value):
            audio = real(value)
            self.decoded += 1
            self.alive += 1
            self.peak = max(self.peak, self.alive)
            weakref.finalize(audio, self._gone)
            return audio

        monkeypatch.setattr(docs, "decode_audio", decode)

    def _gone(self):
        self.alive -= 1


def _comparable(run):
    """The run without its timing; soundfile's decode errors name a BytesIO by its address."""
    import re

    results = {name: {k: v for k, v in vars(r).items() if k != "task"} for name, r in run.results.items()}
    kept = {"results": results, "groups": run.groups, "cache": run.cache, "n_generated": run.n_generated}
    return re.sub(r" at 0x[0-9a-f]+", "", json.dumps(kept, sort_keys=True, default=str))


def test_streamed_run_holds_at_most_one_chunk_of_decoded_audio(task_dir, tmp_path, monkeypatch):
    counting = Counting(monkeypatch)
    first = evaluate_names(Scripted(), ["who"], include_path=[task_dir], cache_dir=tmp_path / "c", stream_chunk=2)
    assert counting.decoded == 10  # 5 decodable docs x 2 tasks (doc 4's bytes are not audio)
    assert counting.peak <= 2 and counting.alive == 0
    # cached answers decode nothing: only the doc that failed in the model (not cached) is decoded again
    counting.decoded = counting.peak = 0
    again = evaluate_names(Scripted(), ["who"], include_path=[task_dir], cache_dir=tmp_path / "c", stream_chunk=2)
    assert counting.decoded == 2 and again.cache == {"hits": 8, "misses": 2}
    assert again.results["who_plain"].summary == first.results["who_plain"].summary
    # the same run unchunked (--stream_chunk 0) decodes everything before generating: the bound is the chunk's
    counting.decoded = counting.peak = 0
    evaluate_names(Scripted(), ["who"], include_path=[task_dir], cache_dir=tmp_path / "c0", stream_chunk=0)
    assert counting.decoded == 10 and counting.peak == 10


def test_chunk_size_changes_neither_requests_nor_scores_nor_files(task_dir, tmp_path):
    runs, seen, files = {}, {}, {}
    for chunk in (0, 1, 3, None):
        adapter = Scripted()
        runs[chunk] = evaluate_names(
            adapter, ["who"], include_path=[task_dir], cache_dir=tmp_path / f"c{chunk}", stream_chunk=chunk, seed=3
        )
        seen[chunk] = adapter.seen
        out = write_outputs(runs[chunk], {"model": "scripted"}, tmp_path / f"out{chunk}", log_samples=True)
        files[chunk] = {name: path.read_bytes() for name, path in out.items() if name.startswith("samples_")}
    for chunk in (1, 3, None):
        assert seen[chunk] == seen[0]  # same requests, same order
        assert _comparable(runs[chunk]) == _comparable(runs[0])
        assert files[chunk] == files[0] and len(files[0]) == 2


def test_stream_chunk_size_rules():
    from lalm_eval.errors import ConfigError
    from lalm_eval.evaluation.generation import DEFAULT_STREAM_CHUNK, stream_chunk_size

    assert stream_chunk_size(None, "1") == DEFAULT_STREAM_CHUNK
    assert stream_chunk_size(0, "8") is None  # all at once
    assert stream_chunk_size(2, "4") == 4  # at least one batch
    assert stream_chunk_size(100, "8") == 128  # a multiple of the cache's commit chunk (64): the same batches
    assert stream_chunk_size(200, "16") == 256  # commit chunk 8 x 16 = 128
    assert stream_chunk_size(5, "auto") == 5
    for bad in (-1, 2.5, True):
        with pytest.raises(ConfigError, match="stream_chunk"):
            stream_chunk_size(bad, "1")


def test_streamed_docs_keep_no_audio_bytes():
    from lalm_eval.evaluation.docs import light_doc

    doc = {
        "question": "q",
        "audio": {"bytes": b"\x00" * 10, "path": "a.flac"},
        "enrollment": [{"label": "Alice", "audio": {"bytes": b"x", "path": None}}],
        "decoded": {"array": [0.1, 0.2], "sampling_rate": 16000},
        "names": ("A", "B"),
    }
    assert light_doc(doc) == {
        "question": "q",
        "audio": {"bytes": None, "path": "a.flac"},
        "enrollment": [{"label": "Alice", "audio": {"bytes": None, "path": None}}],
        "decoded": {"array": None, "sampling_rate": 16000},
        "names": ("A", "B"),
    }
