"""What each model hears comes from its checkpoint (issue 21, part 1).

Tiny Qwen2.5-Omni thinkers whose feature extractor is saved with ``chunk_length`` 30 and 300: a
90 s clip is heard whole with 300 (results: ``seen_s`` 90) and cut with 30 (the report's header
says so in bold); a tiny Qwen2-Audio stays at its encoder's 30 s whatever its feature extractor
says; the ``vllm`` adapter reads the same limits from the same files at build, without vLLM.
"""

import io
import json
import shutil
import types

import datasets
import numpy as np
import pytest
import soundfile as sf

from lalm_eval.api import AUDIO_SR, Request
from lalm_eval.errors import ConfigError
from lalm_eval.hub.card import front_matter, write_card
from lalm_eval.hub.parquet import export_dataset_dict
from lalm_eval.models import audio_limits
from lalm_eval.models import vllm_adapter as va
from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter
from lalm_eval.models.qwen_omni import Qwen25OmniThinkerAdapter
from lalm_eval.models.tiny import make_tiny_model
from lalm_eval.report.assemble import write_outputs
from lalm_eval.report.layouts import LayoutIndex, render_reports
from tests.evaluation_helpers import evaluate_names

LONG_S = 90.0


def noise(seconds, seed=0):
    return (0.1 * np.random.default_rng(seed).standard_normal(int(seconds * AUDIO_SR))).astype(np.float32)


def request(seconds, doc=0):
    content = [{"type": "audio"}, {"type": "text", "text": "Who speaks?"}]
    return Request("t", doc, (noise(seconds),), ({"role": "user", "content": content},), {"max_new_tokens": 2})


def with_chunk_length(src, dst, chunk_length):
    """A copy of the tiny model ``src`` whose feature extractor is saved with ``chunk_length``."""
    from transformers import AutoFeatureExtractor, WhisperFeatureExtractor

    shutil.copytree(src, dst)
    fe = AutoFeatureExtractor.from_pretrained(src)
    fields = {k: getattr(fe, k) for k in ("feature_size", "sampling_rate", "hop_length", "n_fft")}
    saved = WhisperFeatureExtractor(chunk_length=chunk_length, **fields)
    if (dst / "preprocessor_config.json").is_file():
        saved.save_pretrained(dst)
    else:  # transformers 5 keeps a processor's feature extractor inside processor_config.json
        path = dst / "processor_config.json"
        data = json.loads(path.read_text())
        data["feature_extractor"] = {**data["feature_extractor"], **json.loads(saved.to_json_string())}
        path.write_text(json.dumps(data, indent=2))
    return dst


@pytest.fixture(scope="module")
def omni(tmp_path_factory):
    root = tmp_path_factory.mktemp("omni")
    base = make_tiny_model("qwen2_5_omni", root / "base")
    return {n: with_chunk_length(base, root / f"chunk{n}", n) for n in (30, 300)}


@pytest.fixture(scope="module")
def qwen2_audio(tmp_path_factory):
    root = tmp_path_factory.mktemp("q2a")
    base = make_tiny_model("qwen2_audio", root / "base")
    return {30: base, 300: with_chunk_length(base, root / "chunk300", 300)}


def test_omni_limit_is_the_saved_chunk_length(omni):
    for n in (30, 300):
        limit = Qwen25OmniThinkerAdapter(str(omni[n]), device="cpu").audio_limit
        assert limit.seconds == n and limit.rule == "feature_extractor"
        assert f"chunk_length {n} s" in limit.source and "preprocessor_config.json" in limit.source


def test_qwen2_audio_stays_at_its_encoders_30_s(qwen2_audio):
    for n in (30, 300):
        adapter = Qwen2AudioAdapter(str(qwen2_audio[n]), device="cpu")
        assert adapter.AUDIO_LIMIT_S == 30.0 and "max_source_positions 1500" in adapter.audio_limit.source
        (resp,) = adapter.fit([request(LONG_S)])[2]
        assert resp == {"audio_s": LONG_S, "seen_s": 30.0, "truncated": True}
        # the features are the encoder's fixed 3000 frames, not the extractor's own 30000
        fitted = adapter.fit([request(LONG_S)])[1]
        assert adapter.build_inputs(fitted)["input_features"].shape[-1] == 3000
    assert Qwen2AudioAdapter(str(qwen2_audio[300]), device="cpu").audio_limit.feature_kwargs == {"max_length": 480000}


def flac(seconds):
    buf = io.BytesIO()
    sf.write(buf, noise(seconds), AUDIO_SR, format="FLAC")
    return buf.getvalue()


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory):
    """One task over a 90 s clip and a 5 s clip."""
    root = tmp_path_factory.mktemp("long")
    features = datasets.Features(
        {"question": datasets.Value("string"), "answer": datasets.Value("string"), "audio": datasets.Audio(AUDIO_SR)}
    )
    ds = datasets.Dataset.from_dict(
        {
            "question": ["Who speaks?", "Who speaks?"],
            "answer": ["Alice", "Bob"],
            "audio": [{"bytes": flac(LONG_S), "path": None}, {"bytes": flac(5.0), "path": None}],
        },
        features=features,
    )
    files = export_dataset_dict({"main": datasets.DatasetDict({"test": ds})}, root / "ds")
    write_card(root / "ds", f"---\n{front_matter(files)}\n---\n")
    (root / "tasks").mkdir()
    (root / "tasks" / "long.yaml").write_text(f"""
task: long_audio_task
dataset_path: {root / "ds"}
dataset_name: main
test_split: test
doc_to_audio: "{{{{ audio }}}}"
doc_to_text: "{{{{ question }}}}"
doc_to_target: "{{{{ answer }}}}"
generation_kwargs: {{max_new_tokens: 2, do_sample: false}}
metric_list:
  - {{metric: token_f1, aggregation: mean, higher_is_better: true}}
metadata: {{version: 1}}
""")
    return root / "tasks"


def record_frames(adapter) -> list[int]:
    """The mel frames of each audio the adapter's encoder gets, appended as it builds its inputs."""
    frames, build = [], adapter.build_inputs

    def recorded(requests):
        inputs = build(requests)
        frames.extend(inputs["feature_attention_mask"].sum(-1).tolist())
        return inputs

    adapter.build_inputs = recorded
    return frames


def test_90_s_heard_whole_with_300_and_cut_with_30_and_the_report_says_so(omni, task_dir, tmp_path):
    reports = {}
    for n in (30, 300):
        adapter = Qwen25OmniThinkerAdapter(str(omni[n]), device="cpu")
        frames = record_frames(adapter)
        run = evaluate_names(
            adapter, ["long_audio_task"], include_path=[task_dir], cache_dir=tmp_path / "c", use_cache=False
        )
        rows = {r["doc_id"]: r for r in run.results["long_audio_task"].rows}
        assert rows[0]["audio_s"] == LONG_S and rows[1]["seen_s"] == 5.0 and not rows[1]["truncated"]
        assert rows[0]["seen_s"] == (LONG_S if n == 300 else 30.0) and rows[0]["truncated"] is (n == 30)
        files = write_outputs(run, {"model": "qwen2_5_omni"}, tmp_path / str(n), log_samples=True)
        reports[n] = files["report"].read_text()
        logged = [json.loads(x) for x in files["samples_long_audio_task"].read_text().splitlines()]
        assert sorted(r["seen_s"] for r in logged) == [5.0, LONG_S if n == 300 else 30.0]
        assert run.adapter_counters["audio_limit_s"] == n  # the limit the run used, in the results
        assert sorted(frames) == [500, 9000 if n == 300 else 3000]  # 100 frames a second, all 90 s with 300
    line = "**long_audio_task: 1 of 2 samples heard 33.3 % of their audio on average (long_audio=truncate)**"
    header = reports[30].split("| task | metric |")[0]
    assert (
        line in header and "The model hears 30 s of each audio: preprocessor_config.json: chunk_length 30 s" in header
    )
    assert "samples heard" not in reports[300]


def msu_rows(seen_s, truncated):
    base = {"model": "m", "tier": "tier1", "capability": "sr", "metrics": {"llm_judge": 0.5}}
    return [
        {**base, "task_name": "msu_t1_sr_speaker_counting", "audio_s": 90.0, "seen_s": seen_s, "truncated": truncated},
        {**base, "task_name": "msu_t1_sr_speaker_counting", "audio_s": 60.0, "seen_s": 30.0, "truncated": truncated},
        {**base, "task_name": "msu_t1_sr_speaker_recognition", "audio_s": 20.0, "seen_s": 20.0, "truncated": False},
    ]


def test_msu_table_carries_the_cut_line_where_it_applies():
    index = LayoutIndex.load()
    cut = render_reports({"msu_tiers": msu_rows(30.0, True)}, index, ["msu_table3"])
    # (30/90 + 30/60) / 2 = 41.7 % over the 2 cut samples of the task; the other task is not named
    assert "**m · msu_t1_sr_speaker_counting: 2 of 2 samples heard 41.7 % of their audio on average" in cut
    assert "msu_t1_sr_speaker_recognition: " not in cut
    whole = [dict(r, seen_s=r["audio_s"], truncated=False) for r in msu_rows(90.0, False)]
    assert "samples heard" not in render_reports({"msu_tiers": whole}, index, ["msu_table3"])


# -- vllm: the same limits, read from the files at build (no vLLM needed) -----------------------


def test_files_read_as_the_loaded_feature_extractor(omni, qwen2_audio):
    from transformers import AutoFeatureExtractor

    for folder in (omni[30], omni[300], qwen2_audio[300]):
        fields = audio_limits.feature_extractor_from_files(str(folder))
        loaded = AutoFeatureExtractor.from_pretrained(folder)
        assert (fields.n_samples, fields.sampling_rate, fields.hop_length) == (
            loaded.n_samples,
            loaded.sampling_rate,
            loaded.hop_length,
        )


@pytest.fixture
def fake_vllm(monkeypatch):
    monkeypatch.setattr(va, "vllm_available", lambda: True)


def test_vllm_entries_read_the_checkpoint(fake_vllm, omni, qwen2_audio):
    for n in (30, 300):
        adapter = va.VLLMAdapter(str(omni[n]), prompt_format="qwen2_5_omni")
        assert adapter.AUDIO_LIMIT_S == n and adapter.audio_limit.rule == "feature_extractor"
    assert va.VLLMAdapter(str(qwen2_audio[30])).AUDIO_LIMIT_S == 30.0
    # vLLM's processor would pad to the extractor's 300 s and the encoder refuses that: said before any engine
    with pytest.raises(ConfigError, match="fixed input.*--model qwen2_audio"):
        va.VLLMAdapter(str(qwen2_audio[300]))
    assert va.VLLMAdapter(str(omni[300]), prompt_format="kimi_audio", trust_remote_code=True).AUDIO_LIMIT_S == 30.0


def test_hf_audio_rule_by_processor_class_and_whisper_defaults(tmp_path):
    whisper = types.SimpleNamespace(n_samples=480000, sampling_rate=16000, chunk_length=30, hop_length=160)

    def processor(name, **attrs):
        return type(name, (), {"feature_extractor": attrs.pop("fe", whisper), **attrs})()

    assert audio_limits.rule_for_processor(processor("Qwen3OmniMoeProcessor"))[0] == "none"
    rule, why = audio_limits.rule_for_processor(processor("SomeNewProcessor"))
    assert rule == "feature_extractor" and "assumed" in why  # a Whisper window not listed: it cuts by default
    assert audio_limits.rule_for_processor(processor("Other", fe=types.SimpleNamespace()))[0] == "none"
    glm = processor("GlmAsrProcessor", max_audio_len=655)
    rule, _ = audio_limits.rule_for_processor(glm)
    assert audio_limits.resolve(rule, whisper, processor=glm).seconds == 630.0  # 21 whole 30 s windows
    # a folder without the feature extractor's file: WhisperFeatureExtractor's defaults, said so
    fields = audio_limits.feature_extractor_from_files(str(tmp_path))
    assert fields.n_samples == 480000 and "defaults" in fields.source_file


def test_bad_rule_names_are_errors(tmp_path):
    with pytest.raises(ConfigError, match="one of feature_extractor, encoder_input, max_audio_len, none"):
        audio_limits.resolve("chunk_length", None)
    entry = tmp_path / "fmt.yaml"
    entry.write_text("x:\n  audio_token: '<a>'\n  audio_limit_s: feature_extractr\n")
    from lalm_eval.models.vllm_prompt_formats import load_prompt_formats

    with pytest.raises(ConfigError, match="no rule of audio_limits.yaml"):
        load_prompt_formats(str(entry))
