"""PALM-Bench from real voices in the ``folder`` layout: languages from speakers.yaml, speaker
counts checked against the scene mix before planning, reported drops, corpus-info on it."""

import json

import pytest

from lalm_eval.errors import ConfigError
from palm_bench.config import BuildConfig, load_preset
from palm_bench.plan import make_plan
from palm_bench.scene_needs import scene_needs
from tests.real_layouts import write_folder_corpus


def voices(n_en_subjects, n_en_negatives, others=()):
    out = {f"s{i}": {"language": "en", "role": "subject", "name": f"Subject{i}"} for i in range(n_en_subjects)}
    out.update({f"n{i}": {"language": "en", "role": "negative"} for i in range(n_en_negatives)})
    out.update({sid: {"language": lang, "role": "subject", "name": sid.title()} for sid, lang in others})
    return out


def test_default_scene_mix_needs_8_voices_and_4_subjects_per_language():
    need = scene_needs(BuildConfig(), "en")
    assert (need.subjects, need.speakers) == (4, 8) and "4-speaker recognition scene" in need.why
    fewer = scene_needs(BuildConfig(speaker_count_weights={2: 1, 3: 1}), "en")
    assert (fewer.subjects, fewer.speakers) == (3, 6)
    assert scene_needs(BuildConfig(single_multi_ratio=(1, 0)), "en").speakers == 2


def test_seven_voices_fail_before_planning_saying_what_the_mix_needs(tmp_path):
    root = write_folder_corpus(tmp_path / "voices", voices(5, 2))
    with pytest.raises(ConfigError) as err:  # was: ValueError "no negative candidate left" mid-plan
        make_plan(load_preset("small"), corpus="folder", corpus_dir=str(root), work_dir=tmp_path / "work")
    message = str(err.value)
    assert "en has 7 voice(s) (5 subject(s), 2 other), the mix needs 8 voices and 4 subjects" in message
    assert "--set 'speaker_count_weights={2: 1, 3: 1}' (needs 6 voices, 3 subject(s))" in message
    assert not (tmp_path / "work" / "embeddings").exists()  # nothing was embedded


def test_speakers_of_other_languages_are_reported_not_silently_dropped(tmp_path):
    root = write_folder_corpus(tmp_path / "voices", voices(1, 0, others=[("jean", "fr"), ("marie", "fr")]))
    with pytest.raises(ConfigError, match=r"en has 1 voice\(s\) \(1 subject\(s\), 0 other\)"):  # was: IndexError
        make_plan(load_preset("small"), corpus="folder", corpus_dir=str(root), work_dir=tmp_path / "work")
    only_fr = write_folder_corpus(tmp_path / "fr", voices(0, 0, others=[("jean", "fr"), ("marie", "fr")]))
    with pytest.raises(ConfigError, match=r"no subject left in languages \['en', 'zh'\].*subjects in \['fr'\]"):
        make_plan(load_preset("small"), corpus="folder", corpus_dir=str(only_fr), work_dir=tmp_path / "work")


def test_a_fitting_folder_corpus_plans_and_reports_dropped_speakers(tmp_path):
    root = write_folder_corpus(tmp_path / "voices", voices(2, 2, others=[("jean", "fr")]), clips_per_speaker=3)
    cfg = load_preset(
        "small",
        {
            "speaker_count_weights": {2: 1},
            "audios_per_subject": {"train": 2, "test": 2},
            "reasoning_per_subject": {"train": 0, "test": 0},
            "enrollment": False,
        },
    )
    plan = make_plan(cfg, corpus="folder", corpus_dir=str(root), work_dir=tmp_path / "work")
    assert plan.stats["dropped_speakers"] == {
        "fr": {"speakers": ["jean"], "reason": "language not in languages ['en', 'zh']"}
    }
    # 4 slots per split reach the 2-speaker cases "both present" and "one present": 3 voices
    assert plan.stats["speakers_per_language"] == {
        "en": {"needs_subjects": 2, "needs_speakers": 3, "subjects": 2, "speakers": 4}
    }
    assert sum(len(v) for v in plan.audios.values()) == 8


def test_corpus_info_reports_on_a_folder_corpus(tmp_path, capsys):
    from palm_bench.cli import main

    root = write_folder_corpus(tmp_path / "voices", voices(5, 2))
    (root / "s0" / "broken.wav").write_bytes(b"not audio")
    (root / "s0" / "broken.txt").write_text("x")
    assert main(["corpus-info", "--corpus", "folder", "--corpus-dir", str(root), "--no-eer", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["languages"]["en"]["subjects"] == 5 and stats["languages"]["en"]["negatives"] == 2
    assert stats["skipped"] == [{"file": "s0/broken.wav", "reason": stats["skipped"][0]["reason"]}]
    assert "unreadable audio" in stats["skipped"][0]["reason"]
    assert stats["scene_mix"]["en"] == {
        "needs_subjects": 4,
        "needs_speakers": 8,
        "subjects": 5,
        "speakers": 7,
        "fits": False,
    }
    assert main(["corpus-info", "--corpus", "folder", "--corpus-dir", str(root), "--no-eer"]) == 0
    table = capsys.readouterr().out
    assert "skipped: 1" in table and "en: 7 voices (5 subjects) < 8 voices / 4 subjects needed" in table


def test_folder_build_lists_skips_and_dropped_speakers_in_build_info_and_card(tmp_path):
    from palm_bench.export import build

    root = write_folder_corpus(tmp_path / "voices", voices(2, 2, others=[("jean", "fr")]), clips_per_speaker=3)
    (root / "n0" / "broken.wav").write_bytes(b"not audio")
    (root / "n0" / "broken.txt").write_text("x")
    cfg = load_preset(
        "small",
        {
            "speaker_count_weights": {2: 1},
            "audios_per_subject": {"train": 1, "test": 1},
            "reasoning_per_subject": {"train": 0, "test": 0},
            "enrollment": False,
            "templates_per_audio": 2,
        },
    )
    info = build(
        tmp_path / "out",
        cfg,
        corpus="folder",
        corpus_dir=str(root),
        work_dir=tmp_path / "work",
        tasks=("recognition", "captioning"),
    )
    (skip,) = info["plan"]["skipped_source"]
    assert skip["file"] == "n0/broken.wav" and "unreadable audio" in skip["reason"]
    assert json.loads((tmp_path / "out" / "build_info.json").read_text())["plan"]["dropped_speakers"]["fr"][
        "speakers"
    ] == ["jean"]
    card = (tmp_path / "out" / "README.md").read_text(encoding="utf-8")
    assert "1 source clip(s) skipped by the `folder` reader" in card and "`n0/broken.wav`: unreadable audio" in card
    assert "1 speaker(s) of language `fr` left out (language not in languages ['en', 'zh']): jean" in card
