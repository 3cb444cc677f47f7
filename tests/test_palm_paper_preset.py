"""``palm-bench build --preset paper``: the paper's steps, or a stop before planning that names the
flags; with ``--allow-deviation`` the card and build_info.json list every deviation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lalm_eval.errors import ConfigError
from lalm_eval.hub.build_once import build_once, jsonable
from palm_bench import deviations as dev
from palm_bench.cli import main
from palm_bench.config import load_preset
from palm_bench.deviations import deviation_keys, deviation_table, encoder_problem, resolve

KEYS = ["caption_reference", "descriptions", "negative_encoder"]
# the smallest embedded build the build tests use (tests/test_palm_enrollment.py), English only,
# with a validation split (tests/test_palm_validation_split.py reads the same build)
SETTINGS = {
    "languages": "[en]",
    "audios_per_subject": "{train: 1, validation: 2, test: 1}",
    "reasoning_per_subject": "{train: 1, validation: 1, test: 1}",
    "templates_per_audio": "2",
    "ad_max_seconds": "3.0",
}


def build_args(out, corpus_dir) -> list[str]:
    args = [
        "build",
        "--preset",
        "paper",
        "--out",
        str(out),
        "--corpus-dir",
        str(corpus_dir),
        "--encoder",
        "resemblyzer",
    ]
    for key, value in SETTINGS.items():
        args += ["--set", f"{key}={value}"]
    for key in KEYS:
        args += ["--allow-deviation", key]
    return args


def paper_build(tmp_path_factory, corpus) -> tuple[Path, dict]:
    """``(out_dir, build_info)`` of one tiny ``--preset paper`` build with every deviation allowed,
    made once per session through the CLI (embedding / AD caches shared with the enrollment
    tests' build)."""
    import yaml

    import palm_bench.cli as cli
    from tests.test_palm_builder import make_corpus_copy

    root = tmp_path_factory.getbasetemp()
    work = root / "palm_enroll_shared" / "work"  # content-keyed caches: shared, never changed in meaning
    corpus_dir, out = root / "palm_paper_shared" / "corpus", root / "palm_paper_shared" / "out"
    overrides = {k: yaml.safe_load(v) for k, v in SETTINGS.items()}
    overrides.update(encoder="resemblyzer", encoder_options={}, allowed_deviations=KEYS)
    expected, _, _ = resolve(load_preset("paper", overrides), None)

    def run_build(folder):
        if not corpus_dir.exists():
            make_corpus_copy(corpus_dir, corpus)
        saved, cli.DEFAULT_CACHE = cli.DEFAULT_CACHE, work
        try:
            assert main(build_args(folder, corpus_dir)) == 0
        finally:
            cli.DEFAULT_CACHE = saved

    built = build_once(out, jsonable(expected.to_dict()), run_build)
    return built, json.loads((built / "build_info.json").read_text())


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus):
    return paper_build(tmp_path_factory, corpus)


def run_cli(argv, capsys) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


@pytest.fixture
def no_planning(monkeypatch):
    """Planning fails loudly: an error that comes before it is the one the test sees."""

    def boom(*a, **k):
        raise AssertionError("planning started")

    monkeypatch.setattr("palm_bench.export.make_plan", boom)


def test_paper_preset_without_caption_llm_stops_before_planning(tmp_path, capsys, no_planning):
    out = tmp_path / "out"
    code, err = run_cli(["build", "--preset", "paper", "--out", str(out)], capsys)
    assert code == 2
    assert err.startswith("palm-bench: error: --preset paper: ")
    assert "--caption-reference summary+qa" in err and "--allow-deviation caption_reference" in err
    assert "--description-model" in err and "--allow-deviation descriptions" in err
    if encoder_problem("ecapa", {}):  # SpeechBrain absent here: the encoder step is named too
        assert "--encoder ecapa" in err and "--allow-deviation negative_encoder" in err
    assert not out.exists() and not list(tmp_path.iterdir())  # nothing written, no stage left


def test_allowing_some_deviations_names_only_the_rest(tmp_path, capsys, no_planning):
    argv = ["build", "--preset", "paper", "--out", str(tmp_path / "out"), "--encoder", "resemblyzer"]
    code, err = run_cli(argv + ["--allow-deviation", "caption_reference", "--allow-deviation", "descriptions"], capsys)
    assert code == 2
    assert "1 of the paper's steps" in err and "--allow-deviation negative_encoder" in err
    assert "--allow-deviation caption_reference" not in err and "--description-model" not in err
    # an explicit non-paper choice under the paper preset needs its key as well
    code, err = run_cli(
        argv + ["--caption-reference", "transcript"] + sum((["--allow-deviation", k] for k in KEYS[1:]), []), capsys
    )
    assert code == 2 and "transcript references" in err and "--allow-deviation caption_reference" in err


def test_a_misspelt_deviation_key_gets_a_did_you_mean(tmp_path, capsys, no_planning):
    code, err = run_cli(
        ["build", "--preset", "paper", "--out", str(tmp_path / "o"), "--allow-deviation", "captoin"], capsys
    )
    assert code == 2
    assert "--allow-deviation captoin: unknown deviation key 'captoin'; did you mean 'caption_reference'?" in err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ConfigError, match=r"allowed_deviations.*did you mean 'descriptions'"):
        load_preset("small", {"allowed_deviations": ["descriptons"]})


def test_the_keys_and_texts_are_the_yaml_file(monkeypatch):
    assert deviation_keys() == KEYS  # the flag's keys are the YAML file's, in its order
    for key, entry in deviation_table().items():
        assert all(entry[f].strip() for f in ("step", "paper", "ours", "fix")), key


def test_every_step_done_the_papers_way_records_no_deviation(monkeypatch):
    monkeypatch.setattr(dev, "encoder_problem", lambda *a: None)  # as if SpeechBrain were installed
    cfg = load_preset("paper", {"description_model": "qwen2_audio:pretrained=DIR"})
    effective, records, followed = resolve(cfg, llm=object(), where="--preset paper")
    assert records == [] and followed == KEYS and effective == cfg


def test_one_of_the_two_caption_prompts_is_a_deviation_of_its_own(monkeypatch):
    monkeypatch.setattr(dev, "encoder_problem", lambda *a: None)
    for kind in ("summary", "qa"):
        cfg = load_preset("paper", {"description_model": "qwen2_audio:pretrained=DIR", "caption_reference": kind})
        with pytest.raises(ConfigError, match=r"one of Table 24's two prompts.*--allow-deviation caption_reference"):
            resolve(cfg, llm=object())
        allowed = load_preset(
            "paper",
            {"description_model": "x:y=1", "caption_reference": kind, "allowed_deviations": ["caption_reference"]},
        )
        effective, records, _ = resolve(allowed, llm=object())
        assert effective.caption_reference == kind and [r["key"] for r in records] == ["caption_reference"]


class ScriptedLLM:
    """In-process stand-in for a text LLM: tests/test_caption_references.py's scripted replies."""

    settings = {"backend": "scripted", "model": "scripted"}

    def complete(self, batch, **settings):
        from types import SimpleNamespace

        from tests.test_caption_references import scripted_llm

        return [scripted_llm(SimpleNamespace(prompt=chat[0]["content"])) for chat in batch]


def test_summary_and_qa_together_as_the_paper(corpus):
    """``summary+qa`` (the paper preset's kind): template answers summarised and QA rows added."""
    from palm_bench.caption_references import apply_caption_references
    from palm_bench.samples import QA, AudioPlan
    from tests.test_caption_references import qa_of, summary_of

    target, other = corpus.utterances_of("en_s01")[0], corpus.utterances_of("en_n01")[0]
    name = corpus.speakers["en_s01"].name

    def plan(key, clip, answer, reference):
        present = [clip.speaker] if clip.speaker == "en_s01" else []
        qa = QA("cap_1", f"What did {name} say?", answer, ["en_s01"], present, [] if present else ["en_s01"], reference)
        return AudioPlan(key, "test", "captioning", "en", "en_s01", [clip], {}, [], [qa])

    positive = plan("test-000000", target, f"{name} said: {target.text}", "transcript")
    negative = plan("test-000001", other, f"{name} does not speak.", "refusal")
    info = apply_caption_references({"test": [positive, negative]}, corpus, "summary+qa", ScriptedLLM())
    assert positive.qas[0].answer == summary_of(name, target.text) and positive.qas[0].reference == "summary"
    assert [(q.question, q.answer) for q in positive.qas[1:]] == qa_of(name, target.text)
    assert {q.reference for q in positive.qas[1:]} == {"qa"}
    assert [q.reference for q in negative.qas] == ["refusal"] * 4 and negative.qas[
        0
    ].answer == f"{name} does not speak."
    assert info["rows_written"] == {"summary": 1, "qa": 3, "refusal": 3}
    assert {f.split(".")[0] for f in info["prompts"]} == {"caption_summary", "caption_qa"}


def test_small_records_each_replaced_step_and_never_stops():
    cfg = load_preset("small")
    effective, records, followed = resolve(cfg, None)
    assert [r["key"] for r in records] == KEYS and followed == [] and effective == cfg
    assert all(not r["allowed"] and r["paper"] and r["done"] and r["fix"] for r in records)


def test_ecapa_without_speechbrain_names_the_extra_or_falls_back_when_allowed(monkeypatch):
    monkeypatch.setattr(dev.importlib.util, "find_spec", lambda name: None)
    cfg = load_preset("small", {"encoder": "ecapa"})
    with pytest.raises(ConfigError, match=r"lalm-eval\[ecapa\].*--allow-deviation negative_encoder"):
        resolve(cfg, None)
    effective, records, _ = resolve(
        load_preset("small", {"encoder": "ecapa", "allowed_deviations": ["negative_encoder"]}), None
    )
    assert effective.encoder == "resemblyzer" and effective.encoder_options == {}
    assert "not installed" in next(r["why"] for r in records if r["key"] == "negative_encoder")


def test_encoder_options_are_checked_against_the_encoder():
    with pytest.raises(ConfigError, match=r"--set encoder_options \(or --encoder-option\): unknown option 'sorce'"):
        load_preset("small", {"encoder": "ecapa", "encoder_options": {"sorce": "x"}})


def test_paper_build_with_allowed_deviations_lists_each_in_card_and_build_info(built):
    out, info = built
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "This build replaces 3 of the PALM-Bench paper's construction steps" in card
    assert "preset `paper`, each allowed with `--allow-deviation`" in card
    table = deviation_table()
    for key in KEYS:
        row = next(line for line in card.splitlines() if f"(`{key}`)" in line)
        assert table[key]["paper"] in row and table[key]["ours"] in row and table[key]["fix"] in row
    assert [d["key"] for d in info["deviations"]] == KEYS and all(d["allowed"] for d in info["deviations"])
    assert info["preset"] == "paper" and info["paper_steps_followed"] == []
    # what was done is what the config that ran says: this project's replacement for each step
    config = info["config"]
    assert config["caption_reference"] == "transcript" and config["encoder"] == "resemblyzer"
    assert config["description_model"] is None and config["require_paper_steps"] is True
    assert info["plan"]["encoder"] == "resemblyzer-ge2e"


def test_small_preset_card_states_the_paper_steps_it_replaces(tmp_path_factory, corpus):
    from tests.test_palm_enrollment import shared_build  # the session's small build, reused

    out, info, _, _ = shared_build(tmp_path_factory, corpus)
    card = (out / "README.md").read_text(encoding="utf-8")
    assert "This build replaces 3 of the PALM-Bench paper's construction steps" in card
    for key in KEYS:
        assert f"| {deviation_table()[key]['step']} (`{key}`) |" in card
    assert [d["key"] for d in info["deviations"]] == KEYS and not any(d["allowed"] for d in info["deviations"])
