"""Subject descriptions written by an audio model (``palm-bench build --description-model``, PALM
Table 23): ``openai_audio`` against a scripted OpenAI-protocol server on 127.0.0.1, and the tiny
random Qwen2-Audio through the command line."""

import json
from pathlib import Path

import pytest

from lalm_eval.api import Request
from lalm_eval.llm import strip_thinking
from palm_bench.config import load_preset
from palm_bench.export import build
from palm_bench.model_descriptions import PROMPTS, reference_audio, split_spec
from palm_bench.profiles import _prompt
from tests.api_servers import OpenAIServer
from tests.test_caption_references import SPEAKERS, corpus_dir  # noqa: F401 - the small corpus copy fixture

SUBJECTS = [s for s in SPEAKERS if "_s" in s]
TABLE_23_START = (
    "You are to produce an as-detailed-as-possible professional analysis report based only on this "
    "audio, focusing on the primary speaker only. The report must include the sections below."
)
TABLE_23_END = "• Do not output any extra explanation; provide the analysis results directly."


def audio_model(record) -> str:
    """A thinking audio model: a trace, then the kind of description and what it heard."""
    kind = "AD" if "professional analysis report" in record.prompt else "HD"
    return f"<think>I hear {len(record.audios)} audio part(s).</think>\n{kind} from {len(record.audios[0])} samples"


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(answer=audio_model) as srv:
        yield srv


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("desc_work")


def config(**changes):
    base = {
        "languages": ["en"],
        "audios_per_subject": {"train": 2, "test": 2},
        "reasoning_per_subject": {"train": 0, "test": 0},
        "templates_per_audio": 2,
        "ad_max_seconds": 3.0,
        "enrollment": False,
    }
    return load_preset("small", {**base, **changes})


def rows_of(out):
    import datasets

    from lalm_eval.hub.load import load_dataset_fresh

    dd = load_dataset_fresh(out, "recognition", cache_root=Path(str(out) + "_cache")).cast_column(
        "audio", datasets.Audio(decode=False)
    )
    return [r for split in dd for r in dd[split]]


def test_spec_is_split_like_model_and_model_args():
    assert split_spec("openai_audio:model=m,base_url=http://127.0.0.1:8000/v1") == (
        "openai_audio",
        "model=m,base_url=http://127.0.0.1:8000/v1",
    )
    assert split_spec("qwen2_audio") == ("qwen2_audio", "")


def test_openai_audio_writes_ad_with_table_23_and_hd_from_train_reference_audio(
    tmp_path, corpus_dir, work, server, corpus, monkeypatch
):  # noqa: F811 - fixture
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-test")
    spec = f"openai_audio:model=qwen3-omni-thinking,base_url={server.base_url},retry_delay=0.01"
    cfg = config(description_model=spec, description_gen_kwargs={"max_new_tokens": 64, "do_sample": False})
    info = build(
        tmp_path / "out", cfg, corpus="embedded", corpus_dir=str(corpus_dir), work_dir=work, tasks=("recognition",)
    )
    recorded = info["plan"]["descriptions"]
    assert (recorded["ad"], recorded["hd"], recorded["model"]) == ("model", "model", "openai_audio")
    assert recorded["identity"]["model"] == "qwen3-omni-thinking" and recorded["generated"] == 2 * len(SUBJECTS)
    rows = rows_of(tmp_path / "out")
    test_clips = {c for r in rows if r["id"].startswith("test") for c in r["source_clips"]}
    clips = {u.id: u for sid in SUBJECTS for u in corpus.utterances_of(sid)}
    expected = {}
    for sid, used in recorded["reference_clips"].items():
        assert used and all(clips[c].speaker == sid for c in used)
        assert not set(used) & test_clips  # reference audio is train-split only
        audio, _ = reference_audio([clips[c] for c in used], cfg.ad_max_seconds, cfg.silence_s)
        expected[sid] = len(audio)
    assert sorted(expected) == SUBJECTS
    seen = 0
    for r in rows:
        for s in r["subjects"]:  # the model's answers, without the trace, for the right subject
            assert s["ad"] == f"AD from {expected[s['id']]} samples"
            assert s["hd"] == f"HD from {expected[s['id']]} samples"
            seen += 1
    assert seen
    ad_prompts = [rec for rec in server.records if "professional analysis report" in rec.prompt]
    hd_prompts = [rec for rec in server.records if rec not in ad_prompts]
    assert len(ad_prompts) == len(hd_prompts) == len(SUBJECTS)
    assert all(rec.prompt.startswith(TABLE_23_START) and rec.prompt.endswith(TABLE_23_END) for rec in ad_prompts)
    names = {corpus.speakers[s].name for s in SUBJECTS}
    assert {n for n in names if any(n in rec.prompt for rec in hd_prompts)} == names
    assert all(len(rec.audios) == 1 and rec.rates == [16000] for rec in server.records)
    assert {rec.body["max_completion_tokens"] for rec in server.records} == {64}
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "written by the audio model `openai_audio`" in card and "Table 23 prompt" in card
    assert "sk-local-test" not in card and "sk-local-test" not in json.dumps(info)

    # rebuilt: every description comes from the response cache
    n = len(server.records)
    again = build(
        tmp_path / "again", cfg, corpus="embedded", corpus_dir=str(corpus_dir), work_dir=work, tasks=("recognition",)
    )
    assert len(server.records) == n and again["plan"]["descriptions"]["cached"] == 2 * len(SUBJECTS)

    # the default stays the measured AD, and the card says so
    plain = build(
        tmp_path / "plain",
        config(),
        corpus="embedded",
        corpus_dir=str(corpus_dir),
        work_dir=work,
        tasks=("recognition",),
    )
    assert plain["plan"]["descriptions"]["ad"] == "measured"
    ads = {s["ad"] for r in rows_of(tmp_path / "plain") for s in r["subjects"]}
    assert ads and not any(a.startswith("AD from") for a in ads)
    assert "AD measured from each subject's train-split reference audio" in (
        tmp_path / "plain" / "README.md"
    ).read_text(encoding="utf-8")


def test_a_failed_description_names_the_subject(tmp_path, corpus_dir, work, monkeypatch):  # noqa: F811
    from lalm_eval.errors import DataError

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with OpenAIServer(answer=lambda rec: "<think>only thinking, never answering") as srv:
        spec = f"openai_audio:model=m,base_url={srv.base_url},retry_delay=0.01"
        with pytest.raises(DataError, match=r"subject en_s0\d.*empty"):
            build(
                tmp_path / "o",
                config(description_model=spec),
                corpus="embedded",
                corpus_dir=str(corpus_dir),
                work_dir=work,
                tasks=("recognition",),
            )


def test_tiny_qwen2_audio_through_the_command_line(tmp_path, corpus_dir, corpus, work, monkeypatch):  # noqa: F811
    import palm_bench.cli
    from lalm_eval.models.build import build_adapter
    from lalm_eval.models.tiny import make_tiny_model

    model_dir = make_tiny_model("qwen2_audio", tmp_path / "tiny")
    monkeypatch.setattr(palm_bench.cli, "DEFAULT_CACHE", work)  # embeddings already cached
    out = tmp_path / "out"
    args = [
        "build",
        "--out",
        str(out),
        "--corpus-dir",
        str(corpus_dir),
        "--tasks",
        "recognition",
        "--description-model",
        f"qwen2_audio:pretrained={model_dir}",
        "--set",
        "description_gen_kwargs={max_new_tokens: 6, do_sample: false}",
    ]
    for key, value in config().to_dict().items():
        if key in (
            "languages",
            "audios_per_subject",
            "reasoning_per_subject",
            "templates_per_audio",
            "ad_max_seconds",
            "enrollment",
        ):
            args += ["--set", f"{key}={json.dumps(value)}"]
    assert palm_bench.cli.main(args) == 0
    info = json.loads((out / "build_info.json").read_text(encoding="utf-8"))
    recorded = info["plan"]["descriptions"]
    assert recorded["model"] == "qwen2_audio" and recorded["gen_kwargs"] == {"max_new_tokens": 6, "do_sample": False}
    rows = rows_of(out)
    # what the model answers for a subject's reference audio and the Table 23 prompt is the row's AD
    sid = rows[0]["subjects"][0]["id"]
    clips = {u.id: u for u in corpus.utterances_of(sid)}
    audio, _ = reference_audio([clips[c] for c in recorded["reference_clips"][sid]], 3.0, 0.5)
    adapter = build_adapter("qwen2_audio", f"pretrained={model_dir}", None, str(tmp_path / "direct"))
    replies = {}
    for kind, stem in PROMPTS.items():
        text = str(_prompt(stem, "en", {"name": corpus.speakers[sid].name})).strip()
        [reply] = adapter.generate(
            [
                Request(
                    "direct",
                    0,
                    (audio,),
                    ({"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": text}]},),
                    {"max_new_tokens": 6, "do_sample": False},
                )
            ]
        )
        replies[kind] = strip_thinking(reply.text)
    subject = rows[0]["subjects"][0]
    assert (subject["ad"], subject["hd"]) == (replies["ad"], replies["hd"])
    assert replies["ad"] and replies["hd"]
