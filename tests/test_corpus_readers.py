"""Real-corpus readers (NCSSD, speaker-per-folder) on tiny fixtures built in their on-disk layouts."""

import json
import logging

import pytest
import yaml

from lalm_eval.audio.io import write_audio
from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.readers import ReaderResult, Skip
from palm_bench.corpus.embedded import INTEREST_FIELDS, PROFILE_FIELDS
from palm_bench.corpus.folder import prepare_folder
from palm_bench.corpus.ncssd import load_speaker_map, prepare_ncssd
from palm_bench.corpus.types import Corpus
from tests.conftest import tone

SR = 16000


def write_clip(path, seconds, text=None, transcript_suffix=".lab"):
    write_audio(path, tone(seconds, sr=SR), SR)
    if text is not None:
        path.with_suffix(transcript_suffix).write_text(text + "\n", encoding="utf-8")


def write_dialogue(folder, dialog, turns, meta_key="utterents", lab=True):
    """turns: (spk, seconds, text, write .lab?, metadata entry overrides or None to omit)."""
    entries = {}
    for turn, (spk, seconds, text, has_lab, meta) in enumerate(turns):
        write_clip(folder / f"{turn}_{spk}_d{dialog}.wav", seconds, text if has_lab else None)
        if meta is not None:
            entry = {
                "index": turn,
                "duration": round(seconds, 2),
                "speaker": spk,
                "text": text,
                "sample_rate": SR,
                **meta,
            }
            entries[str(turn)] = {k: v for k, v in entry.items() if v is not None}
    (folder / "metadata.json").write_text(json.dumps({"dialog": dialog, meta_key: entries}, ensure_ascii=False))


@pytest.fixture
def ncssd_dir(tmp_path):
    root = tmp_path / "NCSSD"
    write_dialogue(
        root / "C-EN" / "0",
        0,
        [
            (0, 1.0, "Hello there.", True, {}),
            (1, 1.5, "Hi, how are you?", True, {}),
            (0, 0.5, "See you.", False, {}),  # no .lab: the metadata text is used
        ],
    )
    write_dialogue(
        root / "C-EN" / "1",
        1,
        [
            (1, 0.8, "Where is it?", True, {}),
            (0, 1.2, "Over there.", True, {}),
            (1, 0.6, "Thanks.", True, {"text": None}),  # metadata entry missing 'text' -> skipped
            (0, 0.7, "Orphan clip.", False, None),  # wav with no .lab and no metadata entry -> skipped
        ],
    )
    write_dialogue(
        root / "R-ZH" / "0",
        0,
        [
            (0, 1.1, "你好。", True, {}),
            (1, 0.9, "早上好。", True, {}),
        ],
        meta_key="utterances",
    )
    return root


def test_ncssd_counts_ids_texts_and_durations(ncssd_dir):
    corpus = prepare_ncssd(ncssd_dir)
    assert isinstance(corpus, Corpus) and isinstance(corpus, ReaderResult)
    assert [u.id for u in corpus.utterances] == [  # subsets in SUBSETS order, then dialogue, turn
        "ncssd_r-zh_d0_t0",
        "ncssd_r-zh_d0_t1",
        "ncssd_c-en_d0_t0",
        "ncssd_c-en_d0_t1",
        "ncssd_c-en_d0_t2",
        "ncssd_c-en_d1_t0",
        "ncssd_c-en_d1_t1",
    ]
    assert sorted(corpus.speakers) == [
        "ncssd_c-en_d0_s0",
        "ncssd_c-en_d0_s1",
        "ncssd_c-en_d1_s0",
        "ncssd_c-en_d1_s1",
        "ncssd_r-zh_d0_s0",
        "ncssd_r-zh_d0_s1",
    ]
    by_id = {u.id: u for u in corpus.utterances}
    assert by_id["ncssd_c-en_d0_t1"].text == "Hi, how are you?"
    assert by_id["ncssd_c-en_d0_t2"].text == "See you."
    assert by_id["ncssd_r-zh_d0_t0"].text == "你好。"
    assert by_id["ncssd_c-en_d0_t1"].duration == pytest.approx(1.5)
    assert by_id["ncssd_r-zh_d0_t1"].duration == pytest.approx(0.9)
    assert by_id["ncssd_c-en_d0_t2"].speaker == "ncssd_c-en_d0_s0"
    assert corpus.speakers["ncssd_c-en_d0_s0"].texts == ("Hello there.", "See you.")
    for u in corpus.utterances:
        assert u.audio.is_absolute() and u.audio.is_file() and u.voice == {} and u.sampling_rate == SR


def test_ncssd_skips_are_counted_and_logged(ncssd_dir, caplog):
    with caplog.at_level(logging.WARNING, logger="palm_bench.corpus.ncssd"):
        corpus = prepare_ncssd(ncssd_dir)
    assert corpus.n_skipped == 2 and all(isinstance(s, Skip) for s in corpus.skips)
    reasons = {s.item.rsplit("/", 1)[-1]: s.reason for s in corpus.skips}
    assert "'text'" in reasons["2_1_d1.wav"] and "utterents" in reasons["2_1_d1.wav"]
    assert "no transcript" in reasons["3_0_d1.wav"]
    assert sum("skipped" in r.message for r in caplog.records) == 2


def test_ncssd_unreadable_metadata_falls_back_to_lab_files(ncssd_dir):
    (ncssd_dir / "C-EN" / "0" / "metadata.json").write_text("{not json")
    corpus = prepare_ncssd(ncssd_dir, subsets=["C-EN"])
    assert corpus.n_skipped == 4  # the metadata file, its .lab-less clip, and the two above
    assert "ncssd_c-en_d0_t2" not in {u.id for u in corpus.utterances}
    assert len(corpus.utterances) == 4


def test_ncssd_language_from_subset_name_or_argument(ncssd_dir):
    corpus = prepare_ncssd(ncssd_dir)
    assert corpus.languages() == ["en", "zh"]
    assert {u.language for u in corpus.utterances if "r-zh" in u.id} == {"zh"}
    assert prepare_ncssd(ncssd_dir / "C-EN").languages() == ["en"]  # corpus_dir is one subset
    (ncssd_dir / "C-EN").rename(ncssd_dir / "tv")
    with pytest.raises(ConfigError, match="language"):
        prepare_ncssd(ncssd_dir / "tv")
    assert prepare_ncssd(ncssd_dir / "tv", language="en").languages() == ["en"]


def test_ncssd_subsets_argument(ncssd_dir):
    corpus = prepare_ncssd(ncssd_dir, subsets=["R-ZH"])
    assert len(corpus.utterances) == 2 and corpus.n_skipped == 0 and corpus.skips == []
    with pytest.raises(DataError, match="R-EN"):
        prepare_ncssd(ncssd_dir, subsets=["R-EN"])


MAP = {"R-ZH/0/0": {"id": "zh_subj01", "name": "王芳", "gender": "female"}, "R-ZH/0/1": "zh_subj02"}


def write_map(path):
    if path.suffix == ".json":
        path.write_text(json.dumps(MAP, ensure_ascii=False), encoding="utf-8")
    elif path.suffix == ".yaml":
        path.write_text(yaml.safe_dump(MAP, allow_unicode=True), encoding="utf-8")
    else:
        path.write_text(
            "key\tid\tname\tgender\n# comment\nR-ZH/0/0\tzh_subj01\t王芳\tfemale\nR-ZH/0/1\tzh_subj02\n",
            encoding="utf-8",
        )
    return path


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".tsv"])
def test_ncssd_speaker_map(ncssd_dir, tmp_path, suffix):
    corpus = prepare_ncssd(ncssd_dir, speaker_map=write_map(tmp_path / f"map{suffix}"))
    assert sorted(s.id for s in corpus.subjects()) == ["zh_subj01", "zh_subj02"]
    assert [s.id for s in corpus.subjects("en")] == []
    s1 = corpus.speakers["zh_subj01"]
    assert (s1.name, s1.gender, s1.language, s1.profile) == ("王芳", "female", "zh", None)
    assert corpus.speakers["zh_subj02"].gender == "unknown"
    assert len(corpus.negatives("en")) == 4 and corpus.negatives("zh") == []
    assert [u.id for u in corpus.utterances_of("zh_subj02")] == ["ncssd_r-zh_d0_t1"]


def test_ncssd_one_subject_over_several_dialogues(ncssd_dir, tmp_path):
    path = tmp_path / "map.json"
    path.write_text(json.dumps({"0/0": "en_subj01", "1/0": {"id": "en_subj01", "name": "Ann"}}))
    corpus = prepare_ncssd(ncssd_dir, subsets=["C-EN"], speaker_map=path)
    assert [s.id for s in corpus.subjects()] == ["en_subj01"]
    assert corpus.speakers["en_subj01"].name == "Ann"
    assert [u.id for u in corpus.utterances_of("en_subj01")] == [
        "ncssd_c-en_d0_t0",
        "ncssd_c-en_d0_t2",
        "ncssd_c-en_d1_t1",
    ]


@pytest.mark.parametrize(
    "content, field",
    [
        ({"dialogue-3": "x"}, "dialogue-3"),
        ({"3/0": {"name": "no id"}}, "3/0"),
        ({"3/0": {"id": "a", "age": 3}}, "3/0"),
        ({"3/0": {"id": "a", "name": "A"}, "4/1": {"id": "a", "name": "B"}}, "4/1"),
    ],
)
def test_speaker_map_errors_name_file_and_key(tmp_path, content, field):
    path = tmp_path / "map.json"
    path.write_text(json.dumps(content))
    with pytest.raises(DataError) as err:
        load_speaker_map(path)
    assert err.value.field == field and "map.json" in str(err.value)
    with pytest.raises(DataError, match="not found"):
        load_speaker_map(tmp_path / "missing.json")


def test_ncssd_unusable_corpus_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="not found"):
        prepare_ncssd(tmp_path / "nowhere")
    (tmp_path / "C-EN").mkdir()
    with pytest.raises(DataError, match="no usable utterances"):
        prepare_ncssd(tmp_path)
    write_clip(tmp_path / "C-EN" / "0" / "0_0_d0.wav", 0.5)  # no transcript anywhere
    with pytest.raises(DataError, match="no transcript") as err:
        prepare_ncssd(tmp_path)
    assert str(tmp_path) in str(err.value)


def test_ncssd_corpus_converts_to_lhotse(ncssd_dir):
    recordings, supervisions = prepare_ncssd(ncssd_dir).to_lhotse()
    assert len(recordings) == len(supervisions) == 7


# ---- speaker-per-folder ----------------------------------------------------------------------

PROFILE = {**{f: "x" for f in PROFILE_FIELDS}, "interests": {f: "y" for f in INTEREST_FIELDS}}


@pytest.fixture
def folder_dir(tmp_path):
    root = tmp_path / "corpus"
    write_clip(root / "alice" / "a1.wav", 1.0, "First line.", ".txt")
    write_clip(root / "alice" / "a2.flac", 0.75, "Second line.", ".lab")
    write_clip(root / "bob" / "b1.opus", 1.0, "Bob speaks.", ".txt")
    write_clip(root / "bob" / "b2.wav", 0.5)  # no transcript -> skipped
    (root / "bob" / "b3.wav").write_bytes(b"not audio at all")  # unreadable -> skipped
    (root / "bob" / "b3.txt").write_text("Broken.")
    write_clip(root / "carol" / "sub" / "c1.ogg", 0.6, "你好。", ".txt")
    (root / "speakers.yaml").write_text(
        yaml.safe_dump(
            {
                "alice": {"name": "Alice", "gender": "female", "profile": PROFILE},
                "bob": {"role": "negative", "gender": "male", "persona": "talks about trains"},
                "carol": {"language": "zh"},
            },
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    return root


def test_folder_reader(folder_dir):
    corpus = prepare_folder(folder_dir, language="en")
    assert isinstance(corpus, Corpus)
    assert [u.id for u in corpus.utterances] == ["alice-a1", "alice-a2", "bob-b1", "carol-sub-c1"]
    assert [s.id for s in corpus.subjects()] == ["alice", "carol"]
    assert [s.id for s in corpus.negatives()] == ["bob"]
    alice, carol = corpus.speakers["alice"], corpus.speakers["carol"]
    assert (alice.name, alice.gender, alice.profile, alice.language) == ("Alice", "female", PROFILE, "en")
    assert (carol.gender, carol.profile, carol.language) == ("unknown", None, "zh")
    assert corpus.speakers["bob"].persona == "talks about trains"
    by_id = {u.id: u for u in corpus.utterances}
    assert by_id["alice-a2"].text == "Second line." and by_id["carol-sub-c1"].text == "你好。"
    assert by_id["alice-a1"].duration == pytest.approx(1.0)
    assert by_id["alice-a2"].duration == pytest.approx(0.75)
    assert by_id["bob-b1"].duration == pytest.approx(1.0, abs=0.05)
    assert all(u.voice == {} and u.audio.is_absolute() for u in corpus.utterances)
    assert corpus.n_skipped == 2
    reasons = {s.item.rsplit("/", 1)[-1]: s.reason for s in corpus.skips}
    assert "no transcript" in reasons["b2.wav"] and "unreadable audio" in reasons["b3.wav"]


def test_folder_reader_without_speakers_file(folder_dir):
    (folder_dir / "speakers.yaml").unlink()
    corpus = prepare_folder(folder_dir, language="en", role="negative")
    assert corpus.subjects() == [] and len(corpus.negatives("en")) == 3


@pytest.mark.parametrize(
    "entry, field",
    [
        ({"alice": {"profile": {"age": 30}}}, "occupation"),
        ({"alice": {"nickname": "Al"}}, "alice.nickname"),
        ({"alice": {"role": "boss"}}, "alice.role"),
    ],
)
def test_folder_speakers_file_errors(folder_dir, entry, field):
    (folder_dir / "speakers.yaml").write_text(yaml.safe_dump(entry))
    with pytest.raises(DataError) as err:
        prepare_folder(folder_dir, language="en")
    assert err.value.field == field and "speakers.yaml" in str(err.value)


def test_folder_unusable_corpus_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="not found"):
        prepare_folder(tmp_path / "nowhere", language="en")
    with pytest.raises(DataError, match="no usable utterances"):
        prepare_folder(tmp_path, language="en")
    write_clip(tmp_path / "spk" / "x.wav", 0.5)
    with pytest.raises(DataError, match="no transcript"):
        prepare_folder(tmp_path, language="en")
    with pytest.raises(ConfigError, match="role"):
        prepare_folder(tmp_path, language="en", role="judge")


def test_folder_languages_come_from_speakers_yaml_without_a_language_option(tmp_path):
    from tests.real_layouts import write_folder_corpus

    root = write_folder_corpus(tmp_path / "voices", {"ann": {"language": "en"}, "li": {"language": "zh"}})
    corpus = prepare_folder(root)  # was: TypeError (missing 'language')
    assert {s.id: s.language for s in corpus.speakers.values()} == {"ann": "en", "li": "zh"}
    assert {u.language for u in corpus.utterances if u.speaker == "li"} == {"zh"}


def test_folder_speaker_without_any_language_is_a_data_error_naming_it(tmp_path):
    from tests.real_layouts import write_folder_corpus

    root = write_folder_corpus(tmp_path / "voices", {"ann": {"language": "en"}, "bo": {"gender": "male"}})
    with pytest.raises(DataError) as err:
        prepare_folder(root)
    assert err.value.field == "bo.language" and "speakers.yaml" in str(err.value)
    assert "--corpus-option language=en" in str(err.value)
    assert prepare_folder(root, language="en").speakers["bo"].language == "en"
