"""Captioning references per PALM Table 24 (``--caption-reference transcript|summary|qa``), built
on a few embedded English speakers with a scripted OpenAI-protocol LLM server on 127.0.0.1 that
answers like a thinking model (trace first)."""

import json
import re
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.llm import TextLLM, get_text_llm
from lalm_eval.llm.ask import ReplyInvalid, ask_text
from palm_bench.caption_references import parse_qa_pairs, validate_summary
from palm_bench.config import BuildConfig, load_preset
from palm_bench.corpus.embedded import SOURCE_DIR
from palm_bench.export import build
from palm_bench.profiles import _prompt
from tests.api_servers import OpenAIServer

SPEAKERS = ["en_s01", "en_s02", "en_s03", "en_s04", "en_n01", "en_n02"]


def _fields(prompt: str) -> tuple[str, str]:
    if "summarization assistant" in prompt:
        return re.search(r"Speaker: (.*)", prompt)[1].strip(), re.search(r"Transcription: (.*)", prompt)[1].strip()
    name, text = re.search(r"Transcript spoken by (.+?): (.*)", prompt).groups()
    return name.strip(), text.strip()


def summary_of(name: str, transcript: str) -> str:
    return f"{name} mentions {' '.join(transcript.split()[:3])} in brief."


def qa_of(name: str, transcript: str) -> list[tuple[str, str]]:
    words = transcript.split()
    return [(f"What is word {k} of the remark?", f"{name} says {words[k - 1]}.") for k in (1, 2, 3)]


def scripted_llm(record) -> str:
    name, transcript = _fields(record.prompt)
    trace = f"<think>The transcript is “{transcript}”. question1: draft?, answer1: draft.</think>\n"
    if "summarization assistant" in record.prompt:
        return trace + summary_of(name, transcript)
    return trace + "\n".join(f"question{k}: {q}, answer{k}: {a}" for k, (q, a) in enumerate(qa_of(name, transcript), 1))


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory, corpus):
    root = tmp_path_factory.mktemp("cap_corpus")
    shutil.copytree(SOURCE_DIR, root / "source")
    lines = []
    for sid in SPEAKERS:
        for utt in corpus.utterances_of(sid)[:6]:
            rel = Path("audio") / sid / utt.audio.name
            (root / "data" / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(utt.audio, root / "data" / rel)
            lines.append(
                {
                    "id": utt.id,
                    "speaker": sid,
                    "language": utt.language,
                    "text": utt.text,
                    "duration": utt.duration,
                    "audio": rel.as_posix(),
                    "sampling_rate": utt.sampling_rate,
                    "voice": utt.voice,
                }
            )
    (root / "data" / "manifest.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return root


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("cap_work")


@pytest.fixture(scope="module")
def server():
    with OpenAIServer(answer=scripted_llm) as srv:
        yield srv


def config(kind: str) -> BuildConfig:
    return load_preset(
        "small",
        {
            "languages": ["en"],
            "audios_per_subject": {"train": 4, "test": 4},
            "reasoning_per_subject": {"train": 0, "test": 0},
            "templates_per_audio": 4,
            "ad_max_seconds": 3.0,
            "caption_reference": kind,
            "enrollment": False,
        },
    )


def build_kind(kind, out, corpus_dir, work, server=None):
    llm = (
        get_text_llm("openai", model="qwen3-thinking", base_url=server.base_url, api_key="k", retry_delay=0.01)
        if server
        else None
    )
    info = build(
        out,
        config(kind),
        corpus="embedded",
        corpus_dir=str(corpus_dir),
        work_dir=work,
        tasks=("recognition", "captioning"),
        llm=llm,
    )
    return info, load_rows(out), (Path(out) / "README.md").read_text(encoding="utf-8")


def load_rows(out):
    import datasets

    from lalm_eval.hub.load import load_dataset_fresh

    rows = []
    for config_name in ("recognition", "captioning"):
        dd = load_dataset_fresh(out, config_name, cache_root=Path(str(out) + "_cache")).cast_column(
            "audio", datasets.Audio(decode=False)
        )
        rows += [r for split in dd for r in dd[split]]
    return rows


@pytest.fixture(scope="module")
def transcript_build(tmp_path_factory, corpus_dir, work):
    return build_kind("transcript", tmp_path_factory.mktemp("cap_transcript"), corpus_dir, work)


@pytest.fixture(scope="module")
def summary_build(tmp_path_factory, corpus_dir, work, server):
    return build_kind("summary", tmp_path_factory.mktemp("cap_summary"), corpus_dir, work, server)


@pytest.fixture(scope="module")
def qa_build(tmp_path_factory, corpus_dir, work, server):
    return build_kind("qa", tmp_path_factory.mktemp("cap_qa"), corpus_dir, work, server)


def target_text(row, corpus) -> str:
    """The transcript of the target's clip in the row's audio."""
    texts = {u.id: u.text for u in corpus.utterances_of(row["target_id"])}
    [text] = [texts[c] for c in row["source_clips"] if c in texts]
    return text


# ---- parsing and validation ---------------------------------------------------------------------


def test_qa_pairs_parse_in_the_printed_format_and_every_answer_names_the_speaker():
    reply = (
        "question1: What does Amy oppose?, answer1: Amy opposes mandatory health interventions.\n\n"
        "question2: What does Amy value?, answer2: Amy values personal freedom.\n"
        "question3：Who speaks？，answer3：Amy。"
    )
    assert parse_qa_pairs(reply, "Amy") == [
        ("What does Amy oppose?", "Amy opposes mandatory health interventions."),
        ("What does Amy value?", "Amy values personal freedom."),
        ("Who speaks？", "Amy。"),
    ]
    with pytest.raises(ReplyInvalid, match="exactly 3 pairs"):
        parse_qa_pairs("question1: A?, answer1: Amy.\nquestion2: B?, answer2: Amy.", "Amy")
    with pytest.raises(ReplyInvalid, match="answer2 does not contain the name Amy"):
        parse_qa_pairs(
            "question1: A?, answer1: Amy.\nquestion2: B?, answer2: She.\nquestion3: C?, answer3: Amy.", "Amy"
        )


def test_a_summary_must_restate_the_transcript_and_name_the_speaker():
    assert validate_summary("“Amy says she loves tea.”", "Amy", "I love tea.") == "Amy says she loves tea."
    with pytest.raises(ReplyInvalid, match="identical"):
        validate_summary("I love tea!", "Amy", "I love tea.")
    with pytest.raises(ReplyInvalid, match="does not name"):
        validate_summary("The speaker loves tea.", "Amy", "I love tea.")


class _Canned(TextLLM):
    settings = {"model": "canned"}

    def __init__(self, replies):
        self.replies, self.chats = list(replies), []

    def complete(self, batch, **settings):
        self.chats += batch
        return [self.replies.pop(0) for _ in batch]


def test_an_invalid_reply_is_asked_again_with_the_reason_then_an_error_naming_the_clip():
    prompts = {"clip-1": _prompt("caption_summary", "en", {"name": "Amy", "transcript": "I love tea."})}
    check = lambda key, text: validate_summary(text, "Amy", "I love tea.")  # noqa: E731
    llm = _Canned(["<think>copy it</think>I love tea.", "Amy says she loves tea."])
    assert ask_text(llm, prompts, check, "caption summary for clip") == {"clip-1": "Amy says she loves tea."}
    assert "identical to the transcription" in llm.chats[1][-1]["content"]
    with pytest.raises(DataError, match="clip-1"):
        ask_text(_Canned(["I love tea.", "The speaker loves tea."]), prompts, check, "caption summary for clip")


def test_summary_and_qa_need_an_llm_and_unknown_kinds_are_named(tmp_path, corpus_dir, monkeypatch, capsys):
    with pytest.raises(ConfigError, match="transcript, summary or qa"):
        BuildConfig(caption_reference="summaries")
    import palm_bench.export
    from palm_bench.cli import main

    def no_build(*args, **kwargs):
        raise AssertionError("the build started")

    monkeypatch.setattr(palm_bench.export, "build", no_build)
    # refused before any planning work, naming the option to add
    assert (
        main(
            [
                "build",
                "--out",
                str(tmp_path / "o"),
                "--corpus-dir",
                str(corpus_dir),
                "--caption-reference",
                "summary",
                "--no-cache",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--caption-reference summary needs a text LLM" in err and "--llm" in err
    assert not (tmp_path / "o").exists()


# ---- builds -------------------------------------------------------------------------------------


def test_default_transcript_references_are_recorded_and_the_card_calls_it_a_deviation(transcript_build):
    info, rows, card = transcript_build
    kinds = Counter((r["task"], r["label"], r["caption_reference"]) for r in rows)
    assert {k for k in kinds if k[0] == "captioning"} == {
        ("captioning", "positive", "transcript"),
        ("captioning", "negative", "refusal"),
    }
    assert all(r["caption_reference"] == "" for r in rows if r["task"] == "recognition")
    assert info["plan"]["caption_reference"] == {"kind": "transcript"}
    assert "**Captioning references: `transcript`.**" in card and "**Deviation from the paper**" in card
    assert "--caption-reference summary|qa" in card
    assert not any(r["template_id"].startswith("cap_qa") for r in rows)


def test_summary_references_come_from_the_llm_without_its_trace(summary_build, corpus, server):
    info, rows, card = summary_build
    assert "**Captioning references: `summary`.**" in card and "written by\n`qwen3-thinking`" in card
    positives = [r for r in rows if r["task"] == "captioning" and r["label"] == "positive"]
    negatives = [r for r in rows if r["task"] == "captioning" and r["label"] == "negative"]
    assert positives and negatives
    for r in positives:
        assert r["caption_reference"] == "summary"
        assert r["answer"] == summary_of(r["target"], target_text(r, corpus))  # the model's words, no <think>
    for r in negatives:
        assert r["caption_reference"] == "refusal" and r["target"] in r["answer"]
    recorded = info["plan"]["caption_reference"]
    assert recorded["kind"] == "summary" and recorded["llm"]["model"] == "qwen3-thinking"
    assert recorded["rows_written"]["summary"] == len(positives)
    assert recorded["utterances"] == len({target_text(r, corpus) for r in positives})
    assert set(recorded["prompts"]) == {"caption_summary.en.j2", "caption_summary.zh.j2"}
    # the prompt is Table 24's, verbatim, with the utterance attached
    prompt = next(rec.prompt for rec in server.records if "summarization assistant" in rec.prompt)
    assert prompt.startswith(
        "You are a professional text summarization assistant. Please concisely summarize, the "
        "textual content of this audio transcription. Even if the transcription is very short, "
        "you must restate it in your own words and must not output a summary that is identical "
        "to the original text."
    )


def test_qa_rows_three_per_positive_audio_naming_the_target_and_refusals_for_absent_ones(qa_build, corpus):
    info, rows, card = qa_build
    assert "**Captioning references: `qa`.**" in card
    by_audio = defaultdict(list)
    for r in rows:
        if r["task"] == "captioning":
            by_audio[r["audio_id"]].append(r)
    assert by_audio
    for audio_rows in by_audio.values():
        head = audio_rows[0]
        added = audio_rows[4:]  # templates_per_audio = 4 template rows first
        assert len(audio_rows) == 4 + 3
        if head["label"] == "positive":
            assert [r["caption_reference"] for r in audio_rows] == ["transcript"] * 4 + ["qa"] * 3
            expected = qa_of(head["target"], target_text(head, corpus))
            assert [(r["question"], r["answer"]) for r in added] == expected
            assert [r["template_id"] for r in added] == ["cap_qa_1", "cap_qa_2", "cap_qa_3"]
            assert all(r["present"] == [head["target"]] and r["absent"] == [] for r in added)
        else:
            assert [r["caption_reference"] for r in audio_rows] == ["refusal"] * 7
            assert len({r["template_id"] for r in audio_rows}) == 7  # three Table 13 questions not yet asked
            assert all(r["template_id"].startswith("cap_neg") and r["absent"] == [head["target"]] for r in added)
    assert info["plan"]["caption_reference"]["rows_written"]["qa"] == 3 * sum(
        v[0]["label"] == "positive" for v in by_audio.values()
    )


def test_a_rebuild_asks_the_llm_nothing(tmp_path, corpus_dir, work, server, summary_build, qa_build):
    n = len(server.records)
    info, rows, _ = build_kind("qa", tmp_path / "again", corpus_dir, work, server)
    assert len(server.records) == n
    assert info["plan"]["caption_reference"]["cache_hits"] == info["plan"]["caption_reference"]["utterances"]
    assert info["plan"]["caption_reference"]["llm_calls"] == 0
    assert [r["answer"] for r in rows] == [r["answer"] for r in qa_build[1]]
