"""What every API adapter must do, as a test mixin run against each protocol's local server
(helpers, not collected: ``tests/test_openai_audio.py`` and ``tests/test_gemini.py`` subclass
:class:`AdapterContract`), plus the datasets and expected audio of the end-to-end CLI tests.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import math
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from lalm_eval.api import Request
from lalm_eval.cost import Budget, load_prices
from lalm_eval.errors import ConfigError

SECRET = "sk-test-7Hq2SECRETkey0000"
QUANT = 1 / 32768 + 1e-7  # PCM16 quantisation


def tone(seconds: float, freq: float = 220.0) -> np.ndarray:
    t = np.arange(int(seconds * 16000)) / 16000
    return (0.3 * np.sin(2 * np.pi * freq * t) + 0.01 * np.cos(2 * np.pi * 3 * freq * t)).astype(np.float32)


def request(
    i: int = 0,
    seconds: float = 1.0,
    text: str = "Who speaks?",
    gen: dict | None = None,
    audios: tuple | None = None,
    key: str = "",
) -> Request:
    audios = audios if audios is not None else (tone(seconds, 200 + 10 * i),)
    parts = [{"type": "audio"} for _ in audios] + [{"type": "text", "text": f"{text} #{i}"}]
    return Request(
        "t",
        i,
        audios,
        ({"role": "user", "content": parts},),
        {"max_new_tokens": 16, "do_sample": False} if gen is None else gen,
        key,
    )


def enroll_request() -> Request:
    """Like the ``*_enroll`` tasks: labelled reference clips, then the test audio, text interleaved."""
    audios = (tone(0.5, 300), tone(0.7, 400), tone(1.2, 500))
    content = [
        {"type": "text", "text": "Reference clip of Alice:"},
        {"type": "audio"},
        {"type": "text", "text": "Reference clip of Bob:"},
        {"type": "audio"},
        {"type": "text", "text": "Test audio:"},
        {"type": "audio"},
        {"type": "text", "text": "Is Alice speaking?"},
    ]
    return Request("t_enroll", 0, audios, ({"role": "user", "content": content},), {"max_new_tokens": 8})


def assert_same_audio(received: np.ndarray, sent: np.ndarray) -> None:
    assert received.shape == sent.shape
    assert np.max(np.abs(received - sent)) <= QUANT


def audio_digest(audios, text: str = "") -> str:
    """Content id of a prompt text and its audios at PCM16 resolution."""
    h = hashlib.sha256(text.encode() + b"|")
    for a in audios:
        h.update(np.round(np.asarray(a, np.float64) * 32768).astype(np.int32).tobytes() + b"|")
    return h.hexdigest()


class AdapterContract:
    """Subclasses set ``Server`` (tests/api_servers.py), ``Adapter``, ``KEY_ENV`` and ``PRICED`` (a
    model id with a price-table entry, answered by the server as ``Server.default_model``)."""

    Server = Adapter = None
    KEY_ENV = ""
    PRICED = ""

    @pytest.fixture
    def server(self):
        with self.Server() as srv:
            yield srv

    def make(self, server, **args):
        args = {"model": self.PRICED, "base_url": server.base_url, "retry_delay": 0.01, "timeout": 5, **args}
        return self.Adapter(**args)

    # -- audio on the wire --------------------------------------------------------------------------
    def test_audio_decoded_by_server_equals_request_audio(self, server):
        reqs = [request(i, seconds=0.5 + 0.25 * i) for i in range(3)]
        out = self.make(server, concurrency=1).generate(reqs)
        assert [r.text for r in out] == ["answer 1 audio(s)"] * 3
        assert server.errors == [] and len(server.records) == 3
        by_prompt = {rec.prompt: rec for rec in server.records}
        for r in reqs:
            rec = by_prompt[r.messages[0]["content"][-1]["text"]]
            assert rec.rates == [16000]
            assert_same_audio(rec.audios[0], r.audios[0])

    def test_multi_audio_parts_keep_the_task_order(self, server):
        req = enroll_request()
        (resp,) = self.make(server).generate([req])
        assert resp.text == "answer 3 audio(s)"
        rec = server.records[0]
        assert rec.order == [
            ("text", "Reference clip of Alice:"),
            ("audio", 0),
            ("text", "Reference clip of Bob:"),
            ("audio", 1),
            ("text", "Test audio:"),
            ("audio", 2),
            ("text", "Is Alice speaking?"),
        ]
        for got, sent in zip(rec.audios, req.audios):
            assert_same_audio(got, sent)
        assert rec.rates == [16000] * 3

    # -- concurrency and retries --------------------------------------------------------------------
    def test_concurrency_is_bounded_and_parallel(self):
        with self.Server(latency=0.15) as server:
            adapter = self.make(server, concurrency=4)
            t0 = time.monotonic()
            out = adapter.generate([request(i) for i in range(12)])
            elapsed = time.monotonic() - t0
        assert all(r.text for r in out)
        assert 1 < server.max_in_flight <= 4 and adapter.stats["max_in_flight"] <= 4
        assert elapsed < 12 * 0.15 * 0.6  # sequential would take 1.8 s

    def test_retry_after_is_honoured_and_counted(self, server):
        server.script({"status": 429, "retry_after": "0.6"}, match="#7")
        adapter = self.make(server, retry_delay=0.01)
        (resp,) = adapter.generate([request(7)])
        assert resp.text and resp.meta["attempts"] == 2 and adapter.stats["retries"] == 1
        first, second = server.records
        assert second.t_start - first.t_start >= 0.6  # not the 0.01 s backoff

    def test_retry_after_longer_than_allowed_gives_up_at_once(self, server):
        server.script({"status": 429, "retry_after": "3600"})
        (resp,) = self.make(server, max_retry_delay=5).generate([request()])
        assert resp.failure == "retries_exhausted" and "3600" in resp.error and len(server.records) == 1

    def test_5xx_retried_with_backoff_then_exhausted(self, server):
        server.script({"status": 500}, {"status": 503}, match="#1")
        server.script(*[{"status": 500}] * 3, match="#2")
        ok, bad = self.make(server, max_retries=2, retry_delay=0.05).generate([request(1), request(2)])
        assert ok.text and ok.meta["attempts"] == 3
        assert bad.text is None and bad.failure == "retries_exhausted" and bad.meta["attempts"] == 3
        assert "500" in bad.error
        tries = [r.t_start for r in server.records if "#2" in r.prompt]
        assert len(tries) == 3 and tries[2] - tries[1] >= 0.1 - 0.01 >= 0 and tries[1] - tries[0] >= 0.05 - 0.01

    def test_timeout_is_retried(self, server):
        server.script({"delay": 1.5})
        t0 = time.monotonic()
        (resp,) = self.make(server, timeout=0.4).generate([request()])
        assert resp.text and resp.meta["attempts"] == 2 and len(server.records) == 2
        assert time.monotonic() - t0 < 1.5  # the first attempt was abandoned before the delayed reply

    def test_bad_request_is_a_failure_with_the_provider_message(self, server):
        server.script({"status": 400, "message": "audio format not supported: pcm9"})
        (resp,) = self.make(server).generate([request()])
        assert resp.text is None and resp.failure == "bad_request"
        assert "audio format not supported: pcm9" in resp.error and len(server.records) == 1  # not retried

    def test_refusal_and_content_filter_are_failures_of_their_kind(self, server):
        server.script({"refusal": "I can't help with that."}, match="#0")
        server.script({"filter": True}, match="#1")
        refused, filtered, fine = self.make(server).generate([request(0), request(1), request(2)])
        assert refused.text is None and refused.failure == "refusal"
        assert filtered.text is None and filtered.failure == "content_filter"
        assert fine.text == "answer 1 audio(s)" and fine.failure is None

    # -- meta --------------------------------------------------------------------------------------
    def test_usage_model_id_and_cost_in_meta(self, server):
        (resp,) = self.make(server).generate([request(seconds=2.0)])
        usage = resp.meta["usage"]
        assert usage["audio_tokens"] == 20 and usage["prompt_tokens"] > usage["audio_tokens"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert resp.meta["model"] == self.Server.default_model != self.PRICED
        price = load_prices().lookup(self.Server.default_model)
        assert resp.meta["cost_usd"] == pytest.approx(price.cost(usage))
        assert resp.meta["audio_s"] == resp.meta["seen_s"] == 2.0 and resp.meta["truncated"] is False

    def test_until_is_applied_to_the_answer(self, server):
        server.script({"text": "Alice.\nAnd more"})
        (resp,) = self.make(server).generate([request(gen={"max_new_tokens": 8, "until": ["\n"]})])
        assert resp.text == "Alice."

    # -- the key -----------------------------------------------------------------------------------
    def test_key_sent_but_never_in_identity_errors_or_logs(self, server, monkeypatch, caplog):
        monkeypatch.setenv(self.KEY_ENV, SECRET)
        caplog.set_level(logging.DEBUG)
        adapter = self.make(server)
        server.script({"status": 400, "message": f"invalid key {SECRET}"}, match="#0")
        server.script({"status": 500, "message": f"upstream said {SECRET}"}, match="#1")
        bad, retried = adapter.generate([request(0), request(1)])
        assert any(SECRET in json.dumps(r.headers) for r in server.records)  # it was sent
        assert bad.failure == "bad_request" and "invalid key ***" in bad.error
        assert retried.text and retried.meta["attempts"] == 2
        server.script({"status": 401, "message": f"invalid key {SECRET}"})  # a refused key stops the call
        with pytest.raises(ConfigError, match=self.KEY_ENV) as refused:
            adapter.generate([request(2)])
        assert "invalid key ***" in str(refused.value)
        text = json.dumps([adapter.identity(), repr(adapter), bad.error, bad.meta, retried.meta, str(refused.value)])
        assert SECRET not in text and SECRET not in caplog.text and "upstream said ***" in caplog.text

    def test_missing_key_is_a_config_error_naming_the_variable(self, monkeypatch):
        for env in (self.KEY_ENV, "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY", "MY_KEY"):
            monkeypatch.delenv(env, raising=False)
        with pytest.raises(ConfigError, match=self.KEY_ENV):
            self.Adapter(model=self.PRICED, base_url="https://api.example.com/v1")
        with pytest.raises(ConfigError, match="MY_KEY"):
            self.Adapter(model=self.PRICED, base_url="https://api.example.com/v1", api_key_env="MY_KEY")
        monkeypatch.setenv("MY_KEY", "k")
        self.Adapter(model=self.PRICED, base_url="https://api.example.com/v1", api_key_env="MY_KEY")
        self.Adapter(model=self.PRICED, base_url="http://127.0.0.1:9/v1")  # loopback: no key needed

    def test_unknown_model_arg_and_key_as_arg_are_errors(self, server):
        with pytest.raises(ConfigError, match=r"unknown model arg\(s\) temprature.*valid: .*concurrency"):
            self.make(server, temprature=0.2)
        with pytest.raises(ConfigError, match="environment only") as err:
            self.make(server, api_key=SECRET)
        assert SECRET not in str(err.value)
        with pytest.raises(ConfigError, match="'model'"):
            self.make(server, model=None)
        self.make(server, device="cuda")  # --device: accepted, nothing to place

    def test_unsupported_gen_kwarg_is_an_error_before_sending(self, server):
        adapter = self.make(server)
        with pytest.raises(ConfigError, match="typical_p"):
            adapter.generate([request(0), request(1, gen={"max_new_tokens": 4, "typical_p": 0.9})])
        with pytest.raises(ConfigError, match="num_beams"):
            adapter.generate([request(gen={"num_beams": 4})])
        with pytest.raises(ConfigError, match="contradict"):
            adapter.generate([request(gen={"do_sample": False, "temperature": 0.7})])
        assert server.records == []

    # -- long audio --------------------------------------------------------------------------------
    def test_audio_over_the_request_limit(self, server):
        refuse = self.make(server, max_request_mb=0.4)  # (0.4 MB - reserve) / base64 WAV rate = 4.7 s
        assert refuse.AUDIO_LIMIT_S == pytest.approx(4.7) and refuse.identity()["long_audio"] == "refuse"
        long, short = request(0, seconds=6.0), request(1, seconds=1.0)
        over, fine = refuse.generate([long, short])
        assert over.failure == "audio_over_limit" and "4.7 s" in over.error
        assert over.meta["audio_s"] == 6.0 and fine.text and len(server.records) == 1
        truncate = self.make(server, max_request_mb=0.4, long_audio="truncate")
        (cut,) = truncate.generate([long])
        assert cut.text and cut.meta["truncated"] is True and cut.meta["seen_s"] == 4.7 and cut.meta["audio_s"] == 6.0
        sent = server.records[-1].audios[0]
        assert len(sent) == int(4.7 * 16000)
        assert_same_audio(sent, long.audios[0][: len(sent)])
        with pytest.raises(ConfigError, match="chunk"):
            self.make(server, long_audio="chunk")

    # -- cost ----------------------------------------------------------------------------------------
    def test_budget_stops_further_requests(self, server):
        adapter = self.make(server, concurrency=1)
        price = load_prices().lookup(self.Server.default_model)
        adapter.budget = Budget(price.cost({"prompt_tokens": 1, "completion_tokens": 1}) / 2, adapter.prices)
        out = adapter.generate([request(i) for i in range(5)])
        assert out[0].text and out[0].meta["cost_usd"] > 0
        assert [r.failure for r in out[1:]] == ["budget"] * 4 and len(server.records) == 1
        assert adapter.budget.spent == pytest.approx(out[0].meta["cost_usd"], rel=1e-6) and adapter.budget.exhausted

    def test_budget_for_an_unpriced_model_is_a_config_error(self, server):
        adapter = self.make(server, model="no-such-model-xyz")
        with pytest.raises(ConfigError, match="no price for model 'no-such-model-xyz'"):
            adapter.budget = Budget(1.0, load_prices())

    def test_estimate_without_network(self, server):
        adapter = self.make(server, max_request_mb=0.4)
        reqs = [request(0, seconds=2.0), request(1, seconds=3.5), request(2, seconds=9.0)]
        est = adapter.estimate(reqs)
        per_s = load_prices().lookup(self.PRICED).audio_tokens_per_s
        assert server.records == []
        assert est["requests"] == 3 and est["over_limit"] == 1 and est["audio_s"] == 5.5
        assert est["est_audio_tokens"] == math.ceil(2.0 * per_s) + math.ceil(3.5 * per_s)
        assert est["max_completion_tokens"] == 32 and est["est_text_tokens"] > 0
        assert est["est_cost_usd"] > 0
        unpriced = self.make(server, model="no-such-model-xyz").estimate(reqs)
        assert unpriced["est_cost_usd"] is None and "no price" in unpriced["cost_missing_reason"]

    # -- resume --------------------------------------------------------------------------------------
    def test_each_answer_is_committed_to_the_cache_at_once(self, server, tmp_path):
        from lalm_eval.cache import ResponseCache

        server.script({"status": 400}, match="#1")
        adapter = self.make(server, cache_dir=str(tmp_path))
        adapter.generate([request(0, key="k0"), request(1, key="k1")])
        with ResponseCache(tmp_path / "responses.sqlite") as cache:
            stored = cache.get_many(["k0", "k1"])
        assert list(stored) == ["k0"] and stored["k0"].meta["usage"]["audio_tokens"] == 10


# -- end to end ------------------------------------------------------------------------------------------

_DATASETS: dict[str, Path] = {}


def api_datasets(tmp_path_factory) -> Path:
    """A folder holding ``palm-bench/`` (the tiny PALM build shared with the enrollment tests)
    and ``msu-bench/`` (the English half of the ``small`` MSU preset), built once per session: the
    tasks read these folders when the CLI runs in it."""
    if "root" in _DATASETS:
        return _DATASETS["root"]
    from lalm_eval.hub.build_once import build_once, jsonable
    from msu_bench.export import build as build_msu
    from msu_bench.plan import load_preset
    from palm_bench.corpus.embedded import load_embedded_corpus
    from tests.test_palm_enrollment import shared_build

    root = tmp_path_factory.getbasetemp() / "api_datasets"
    root.mkdir(exist_ok=True)
    palm = shared_build(tmp_path_factory, load_embedded_corpus())[0]
    cfg = load_preset("small", {"languages": ["en"]})
    msu = build_once(
        tmp_path_factory.getbasetemp() / "api_msu_en", jsonable(cfg.to_dict()), lambda folder: build_msu(folder, cfg)
    )
    for name, target in (("palm-bench", palm), ("msu-bench", msu)):
        if not (root / name).exists():
            (root / name).symlink_to(target, target_is_directory=True)
    _DATASETS["root"] = root
    return root


def _decode(value) -> np.ndarray:
    if isinstance(value, dict) and value.get("bytes") is not None:
        audio, sr = sf.read(io.BytesIO(value["bytes"]), dtype="float32")
    else:
        audio, sr = sf.read(value["path"] if isinstance(value, dict) else value, dtype="float32")
    assert sr == 16000
    return audio


def expected_audio(task_names: list[str], limit: int, cache_dir: Path) -> list[tuple[str, int, list]]:
    """``(task, doc_id, audios)`` of every doc a run of ``task_names`` sends, decoded with
    soundfile straight from the dataset rows (call it with the datasets folder as cwd)."""
    from lalm_eval.evaluation.docs import open_docs
    from lalm_eval.tasks import TaskManager

    manager = TaskManager()
    out = []
    for name in manager.resolve(task_names):
        task = manager.load_task(name)
        docs = open_docs(task, cache_dir, limit).docs
        out += [(name, doc_id, [_decode(a) for a in task.audio_of(doc)]) for doc_id, doc in enumerate(docs)]
    return out


def match_received(records, expected) -> tuple[list, list]:
    """``(records matching no dataset doc, docs no record matched)``: a record matches a doc when
    it carries as many audios, of the same lengths, each equal within PCM16 quantisation."""
    by_shape: dict[tuple, list] = {}
    for entry in expected:
        by_shape.setdefault(tuple(len(a) for a in entry[2]), []).append(entry)
    seen, strays = set(), []
    for rec in records:
        hits = [
            (task, doc)
            for task, doc, audios in by_shape.get(tuple(len(a) for a in rec.audios), [])
            if all(np.max(np.abs(got - want), initial=0.0) <= QUANT for got, want in zip(rec.audios, audios))
        ]
        if not hits or any(r != 16000 for r in rec.rates):
            strays.append(rec)
        seen.update(hits)
    return strays, [(task, doc) for task, doc, _ in expected if (task, doc) not in seen]


def check_cli_run(
    model: str, server, model_args: str, tasks: list[str], tmp_path: Path, *, retried: int, failures: dict
) -> dict:
    """``lalm-eval --model <model>`` in this process against ``server`` (cwd: :func:`api_datasets`),
    ``--limit 2``, then checked: every audio the server decoded equals a dataset doc's audio and
    every doc was sent (``retried`` requests twice), several clips in one request somewhere, the
    results' failures by kind, model ids, usage and cost, and no key in the outputs."""
    from lalm_eval.cli import main

    rc = main(
        [
            "--model",
            model,
            "--model_args",
            f"{model_args},base_url={server.base_url}",
            "--tasks",
            ",".join(tasks),
            "--limit",
            "2",
            "--output_path",
            str(tmp_path / "out"),
            "--cache_dir",
            str(tmp_path / "cache"),
            "--log_samples",
            # the scripted failures land on whichever requests the server sees first; with
            # --limit 2 both can be one task's docs, which would (rightly) exit 4: the failure
            # accounting is what is checked here, so no share of failures stops the run
            "--max_failure_share",
            "1",
        ]
    )
    assert rc == 0
    records = list(server.records)
    expected = expected_audio(tasks, 2, tmp_path / "cache")
    strays, missing = match_received(records, expected)
    assert strays == [] and missing == [] and len(expected) >= 40
    assert any(len(r.audios) > 1 for r in records)  # an enrollment task's several clips
    assert len(records) == len(expected) + retried
    results = results_of(tmp_path / "out")
    assert results["usage"]["failures"] == failures
    assert results["usage"]["model_ids"] == [server.default_model]
    assert results["usage"]["usage"]["audio_tokens"] > 0 and results["usage"]["cost_usd"] > 0
    (endpoint,) = results["adapter_counters"]["endpoints"]  # the per-endpoint stats reach the results
    assert endpoint["url"] == server.base_url and endpoint["requests"] == len(records)
    assert endpoint["answered"] + endpoint["failures"] == len(records) and endpoint["failures"] == retried
    text = "".join(p.read_text() for p in (tmp_path / "out").iterdir() if p.suffix in (".json", ".jsonl", ".md"))
    assert SECRET not in text
    return results


def results_of(out_dir: Path) -> dict:
    (path,) = list(Path(out_dir).glob("results_*.json"))
    return json.loads(path.read_text())
