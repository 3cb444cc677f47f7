"""Round 2 of issue 20, a new user's bad inputs to the benchmark command lines (area ``nu-bench-``):
``palm-bench push`` / ``export-sft`` / ``corpus-info``, ``msu-bench build --mcq-dir``, the builds'
``--num_proc`` / ``--llm``, a stray ``./palm-bench`` in the working directory, and the cascade's
enrollment folder (findings F1, F14-F17, F23, F31, F33, F36, F37 of the adversarial pass).

The data: one tiny PALM-Bench folder in the builder's real layout (``tests/test_sft_export.py``'s
rows: Parquet + card, configs recognition and captioning), the release miniature of
``tests/msu_release_fixture.py``, and 1-s tones written as the formats a user has (MP3). Each is
made once for the module. Nothing here builds a benchmark, embeds a voice or runs a model.
"""

from __future__ import annotations

import functools
import json
import logging
import shutil
import tempfile
from pathlib import Path

import datasets
import pytest
import soundfile as sf

from lalm_eval.hub import export_dataset_dict, front_matter, write_card
from palm_bench.builder import FEATURES
from tests.bad_inputs.harness import Case, assert_error_shape, run_case, run_cli
from tests.conftest import tone
from tests.msu_release_fixture import WAV_M, WAV_P, make_release
from tests.test_sft_export import TRAIN, flac, row

# -- what is built once per module -------------------------------------------------------------------


@functools.cache
def _shared() -> Path:
    return Path(tempfile.mkdtemp(prefix="lalm_new_user_bench_"))


@pytest.fixture(scope="module", autouse=True)
def _remove_shared():
    yield
    if _shared.cache_info().currsize:
        shutil.rmtree(_shared(), ignore_errors=True)


@functools.cache
def bench() -> Path:
    """A PALM-Bench folder as a build lays it out: ``<config>/<split>-*.parquet`` + ``README.md``
    card; recognition's train split has 6 rows about 4 distinct clips."""
    folder = _shared() / "palm-bench"
    rows = {
        **TRAIN,
        "recognition": TRAIN["recognition"]
        + [
            row(
                "recognition",
                language="en",
                question=f"Is Amy speaking? ({i})",
                answer="Yes.",
                audio=flac(0.2 + i / 10),
            )
            for i in range(3)
        ],
    }
    configs = {
        task: datasets.DatasetDict(
            {
                "train": datasets.Dataset.from_list(rs, features=FEATURES),
                "test": datasets.Dataset.from_list(rs[:1], features=FEATURES),
            }
        )
        for task, rs in rows.items()
    }
    files = export_dataset_dict(configs, folder)
    write_card(folder, "---\n" + front_matter(files) + "\n---\n# fixture\n")
    (folder / "build_info.json").write_text(json.dumps({"shards": {}}) + "\n", encoding="utf-8")
    return folder


@functools.cache
def release() -> Path:
    return make_release(_shared() / "release")


def release_copy(tmp: Path, name: str = "rel") -> Path:
    return Path(shutil.copytree(release(), tmp / name))


def wavs(folder: Path) -> list[str]:
    return sorted(p.name for p in (folder / "audio").glob("*.wav"))


# -- push (F14, F15) -----------------------------------------------------------------------------------


def _push(*flags):
    return lambda tmp: ["push", bench(), *flags, "--dry-run"]


def _linked_build(tmp: Path) -> Path:
    """A folder whose every entry (config sub-folders, card, build_info.json) links into the build."""
    linked = tmp / "linked"
    linked.mkdir()
    for entry in bench().iterdir():
        (linked / entry.name).symlink_to(entry)
    return linked


def _push_linked(tmp: Path) -> list:
    return ["push", _linked_build(tmp), "--repo-id", "me/palm", "--dry-run"]


def _lists_every_shard(tmp: Path, result) -> None:
    listed = {line.split()[0] for line in result.out.splitlines()[1:] if line.startswith("  ") and "/" in line}
    shards = {p.relative_to(bench()).as_posix() for p in bench().glob("*/*.parquet")}
    assert shards and shards <= listed, result.out
    assert "through symbolic links, followed" in result.out.splitlines()[0]


def _push_hidden_data(tmp: Path) -> list:
    """A card naming a shard inside a hidden folder, which push never uploads."""
    folder = Path(shutil.copytree(bench(), tmp / "pb"))
    (folder / ".staging").mkdir()
    shard = next((folder / "captioning").glob("train-*.parquet"))
    shard.rename(folder / ".staging" / shard.name)
    card = (folder / "README.md").read_text(encoding="utf-8")
    (folder / "README.md").write_text(card.replace(f"captioning/{shard.name}", f".staging/{shard.name}"), "utf-8")
    return ["push", folder, "--repo-id", "me/palm", "--dry-run"]


def _own_namespace(tmp: Path, result) -> None:
    assert result.out.startswith("palm: would upload"), result.out
    assert "created in the token's own namespace" in result.out
    assert "datasets/<your namespace>/palm" in result.out


# -- export-sft (F16, F17, F33) ---------------------------------------------------------------------------


def _sft(*extra):
    return lambda tmp: ["export-sft", "--format", "ms-swift", "--out", tmp / "sft", "--dataset", bench(), *extra]


def _untouched_bench() -> None:
    assert not (bench() / "audio").exists() and not list(bench().parent.glob("palm-bench.*-*"))


def _nothing_written(tmp: Path, result) -> None:
    assert not (tmp / "sft").exists() and not list(tmp.glob("sft.tmp-*"))


# -- the MCQ import (F23) -------------------------------------------------------------------------------


def _mcq_english_only(tmp: Path) -> list:
    rel = release_copy(tmp)
    shutil.rmtree(rel / "bench_cn")  # the audio lives there: every English question loses its wav
    return ["build", "--mcq-dir", rel, "--out", tmp / "mcq"]


def _mcq_beside_corpus(tmp: Path) -> list:
    """The release beside the embedded corpus: refused before the corpus is planned."""
    return [*_mcq_english_only(tmp), "--corpus", "embedded"]


def _mcq_nothing_built(tmp: Path, result) -> None:
    assert not (tmp / "mcq").exists() and not list(tmp.glob("mcq.tmp-*"))


def _mcq_no_task_known(tmp: Path) -> list:
    rel = release_copy(tmp)
    for path in rel.rglob("QA_*/*/QA_*/*/level*/*.json"):
        path.rename(path.with_name("notes.json"))  # no file name names a task
    return ["build", "--mcq-dir", rel, "--out", tmp / "mcq"]


# -- ./palm-bench in the working directory that is not a build (F31) ------------------------------------


def _eval_argv(tmp: Path, task: str) -> list:
    return [
        "--model",
        "openai_audio",
        "--model_args",
        "model=probe,base_url=http://127.0.0.1:9/v1",
        "--tasks",
        task,
        "--dry_run",
        "--cache_dir",
        tmp / "cache",
    ]


CASES = [
    # F14: --repo-id / --revision checked by huggingface_hub's and git's rules, even in a dry run
    Case(
        "nu-bench-push-repo-id-spaces",
        "palm-bench",
        _push("--repo-id", "not a repo id"),
        says=("--repo-id 'not a repo id'", "not a hub repository id", "namespace/name"),
    ),
    Case(
        "nu-bench-push-repo-id-dotdot",
        "msu-bench",
        _push("--repo-id", "me/palm..bench"),
        says=("--repo-id 'me/palm..bench'", "cannot have -- or .."),
    ),
    Case(
        "nu-bench-push-repo-id-three-parts",
        "palm-bench",
        _push("--repo-id", "datasets/me/palm"),
        says=("--repo-id 'datasets/me/palm'", "not a hub repository id"),
    ),
    Case(
        "nu-bench-push-revision-bad",
        "palm-bench",
        _push("--repo-id", "me/palm", "--revision", "a b..c"),
        says=("--revision 'a b..c'", "not a valid branch name", "leave the flag out"),
    ),
    Case(
        "nu-bench-push-revision-lock",
        "palm-bench",
        _push("--repo-id", "me/palm", "--revision", "release.lock"),
        says=("--revision 'release.lock'", "not a valid branch name"),
    ),
    # a name without a namespace is what create_repo takes (the token's own namespace): accepted, said
    Case("nu-bench-push-repo-id-no-namespace", "palm-bench", _push("--repo-id", "palm"), exit=0, check=_own_namespace),
    # F15: linked config folders are followed (what the card names is uploaded), a hidden shard refused
    Case("nu-bench-push-symlinked-configs", "palm-bench", _push_linked, exit=0, check=_lists_every_shard),
    Case(
        "nu-bench-push-card-names-hidden-file",
        "palm-bench",
        _push_hidden_data,
        says=("readme.md", ".staging/", "not among the files push uploads"),
    ),
    # F16: a task of another benchmark
    Case(
        "nu-bench-sft-msu-task",
        "palm-bench",
        _sft("--tasks", "msu_t1_sac_age_recognition", "--limit", "1"),
        says=("--tasks msu_t1_sac_age_recognition", "not a palm-bench task", "recognition, captioning"),
        check=_nothing_written,
    ),
    # F17: --limit and --tasks that ask for nothing
    Case(
        "nu-bench-sft-limit-zero",
        "palm-bench",
        _sft("--limit", "0"),
        says=("--limit", "whole number >= 1, got 0"),
        check=_nothing_written,
    ),
    Case(
        "nu-bench-sft-limit-negative",
        "palm-bench",
        _sft("--limit", "-3"),
        says=("--limit", "got -3"),
        check=_nothing_written,
    ),
    Case(
        "nu-bench-sft-tasks-comma",
        "palm-bench",
        _sft("--tasks", ","),
        says=("--tasks", "names no task"),
        check=_nothing_written,
    ),
    Case(
        "nu-bench-sft-tasks-twice",
        "palm-bench",
        _sft("--tasks", "recognition,palm_recognition"),
        says=("--tasks", "same task (palm_recognition)"),
        check=_nothing_written,
    ),
    # the export pointed into a dataset build (it would be mixed into its files): refused, the build untouched
    Case(
        "nu-bench-sft-out-is-a-build",
        "palm-bench",
        lambda tmp: ["export-sft", "--format", "ms-swift", "--out", bench(), "--dataset", bench()],
        says=("--out", "holds build_info.json", "give a folder of its own"),
        check=lambda tmp, result: _untouched_bench(),
    ),
    # F23: an import that keeps no question
    Case(
        "nu-bench-mcq-english-half-only",
        "msu-bench",
        _mcq_english_only,
        says=("--mcq-dir", "no question kept of the 7 read", "no source audio: 7"),
        check=_mcq_nothing_built,
    ),
    Case(
        "nu-bench-mcq-beside-corpus-keeps-none",
        "msu-bench",
        _mcq_beside_corpus,
        says=("--mcq-dir", "no question kept of the 7 read"),
        check=_mcq_nothing_built,
    ),
    Case(
        "nu-bench-mcq-no-task-file-named",
        "msu-bench",
        _mcq_no_task_known,
        says=("--mcq-dir", "no question kept", "unknown task"),
        check=_mcq_nothing_built,
    ),
    # F36: --num_proc and --llm name their flag and a fix
    Case(
        "nu-bench-palm-num-proc-negative",
        "palm-bench",
        lambda tmp: ["build", "--out", tmp / "pb", "--num_proc", "-2"],
        says=("--num_proc", "got -2", "--num_proc 4"),
        check=lambda tmp, result: _no_folder(tmp / "pb"),
    ),
    Case(
        "nu-bench-msu-num-proc-zero",
        "msu-bench",
        lambda tmp: ["build", "--out", tmp / "mb", "--num_proc", "0"],
        says=("--num_proc", "got 0"),
        check=lambda tmp, result: _no_folder(tmp / "mb"),
    ),
    Case(
        "nu-bench-msu-llm-unknown",
        "msu-bench",
        lambda tmp: ["build", "--out", tmp / "mb", "--llm", "opnai"],
        says=("--llm opnai", "did you mean 'openai'", "available: hf, openai"),
        check=lambda tmp, result: _no_folder(tmp / "mb"),
    ),
    Case(
        "nu-bench-palm-llm-unknown",
        "palm-bench",
        lambda tmp: ["build", "--out", tmp / "pb", "--llm", "foo"],
        says=("--llm foo", "unknown text llm 'foo'"),
        check=lambda tmp, result: _no_folder(tmp / "pb"),
    ),
]


def _no_folder(path: Path) -> None:
    assert not path.exists() and not list(path.parent.glob(f"{path.name}.tmp-*")), f"{path} was made"


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


EXTRA_CASE_IDS = [
    "nu-bench-sft-rerun-smaller",
    "nu-bench-sft-user-files-kept",
    "nu-bench-mcq-upper-wav",
    "nu-bench-mcq-flac-source",
    "nu-bench-cwd-palm-bench-empty",
    "nu-bench-cwd-palm-bench-readme-only",
    "nu-bench-cwd-msu-bench-empty",
    "nu-bench-info-symlinked-speaker",
    "nu-bench-enroll-mp3-and-odd-files",
    "nu-bench-enroll-trailing-space",
    "nu-bench-enroll-unenrolled-subject",
]


# -- F33: a rerun replaces its own files --------------------------------------------------------------


def test_sft_rerun_smaller_replaces_its_audio(tmp_path):
    """``--limit 6`` (5 audio files) then ``--limit 1`` into the same folder: 1 audio file left."""
    out = tmp_path / "sft"
    first = run_cli("palm-bench", _sft("--tasks", "recognition", "--limit", "6")(tmp_path))
    assert first.rc == 0, first.err
    assert "5 audio files" in first.out and len(wavs(out)) == 5
    second = run_cli("palm-bench", _sft("--tasks", "recognition", "--limit", "1")(tmp_path))
    assert second.rc == 0, second.err
    assert "1 audio files" in second.out and len(wavs(out)) == 1
    (line,) = [json.loads(x) for x in (out / "train.jsonl").read_text(encoding="utf-8").splitlines()]
    assert Path(line["audios"][0]).is_file() and Path(line["audios"][0]).parent == out.resolve() / "audio"
    assert json.loads((out / "export_info.json").read_text(encoding="utf-8"))["audio_files"] == 1
    assert not list(tmp_path.glob("sft.*-*")), "a stage or an old folder was left beside it"


def test_sft_keeps_and_lists_the_users_files(tmp_path):
    """A folder of the user's files: kept, listed (stderr and export_info.json), never replaced silently."""
    out = tmp_path / "sft"
    (out / "notes").mkdir(parents=True)
    (out / "README.txt").write_text("mine\n", encoding="utf-8")
    (out / "notes" / "a.md").write_text("mine too\n", encoding="utf-8")
    for _ in range(2):  # the second run replaces the first export, the user's files stay
        result = run_cli("palm-bench", _sft("--tasks", "captioning", "--format", "llamafactory")(tmp_path))
        assert result.rc == 0, result.err
        assert "kept 2 file(s) no export wrote" in result.err and "README.txt, notes/a.md" in result.err
    assert (out / "README.txt").read_text(encoding="utf-8") == "mine\n" and (out / "notes" / "a.md").is_file()
    info = json.loads((out / "export_info.json").read_text(encoding="utf-8"))
    assert info["kept_files"] == ["README.txt", "notes/a.md"] and info["format"] == "llamafactory"
    assert (out / "dataset_info.json").is_file() and len(wavs(out)) == 1


# -- F23: audio suffixes in any case, and the right reason for audio in another format --------------------


def test_mcq_upper_case_wav_is_found(tmp_path):
    from msu_bench.mcq import import_summary, read_mcq_release

    rel = release_copy(tmp_path)
    for wav in rel.rglob("*.wav"):
        wav.rename(wav.with_suffix(".WAV"))
    summary = import_summary(read_mcq_release(rel))
    assert summary["questions_kept"] == 16 and summary["audio_found_by_search"] == 0
    assert not [s for s in summary["skips"] if s["reason"].startswith("no source audio")]


def test_mcq_source_audio_in_another_format_says_so(tmp_path):
    from msu_bench.mcq import import_summary, read_mcq_release

    rel = release_copy(tmp_path)
    wav = next(rel.rglob(WAV_P))
    data, sr = sf.read(wav)
    sf.write(wav.with_suffix(".flac"), data, sr)
    wav.unlink()
    reasons = [s["reason"] for s in import_summary(read_mcq_release(rel))["skips"]]
    flac_reasons = [r for r in reasons if "podcast/ep01__seg0001__0.00-3.00.flac is there" in r]
    assert flac_reasons and all("convert it to WAV" in r for r in flac_reasons), reasons
    assert WAV_M not in " ".join(reasons)


# -- F31: a ./palm-bench (or ./msu-bench) that is not a build ---------------------------------------------


@pytest.mark.parametrize(
    "folder, task, content",
    [
        ("palm-bench", "palm_recognition", None),
        ("palm-bench", "palm_captioning", "# my notes, no front matter\n"),
        ("msu-bench", "msu_t1_sr_speaker_counting", None),
    ],
    ids=["nu-bench-cwd-palm-bench-empty", "nu-bench-cwd-palm-bench-readme-only", "nu-bench-cwd-msu-bench-empty"],
)
def test_cwd_folder_that_is_not_a_build(tmp_path, folder, task, content):
    (tmp_path / folder).mkdir()
    if content is not None:
        (tmp_path / folder / "README.md").write_text(content, encoding="utf-8")
    result = run_cli("lalm-eval", _eval_argv(tmp_path, task), cwd=tmp_path)
    assert result.rc == 2, result.err[-3000:]
    assert_error_shape("lalm-eval", result)
    line = result.error_line
    assert f"{folder}: in {tmp_path}: not a dataset build" in line, line
    assert ("README.md has no configs block" if content else "no README.md card") in line
    assert "remove or rename it" in line and f"{folder} build --out {folder}" in line


# -- F37: corpus-info's size follows links -----------------------------------------------------------------


def test_corpus_size_follows_symlinked_speaker_folders(tmp_path):
    from palm_bench.corpus_info import folder_size_bytes

    plain = tmp_path / "plain"
    for speaker in ("Mary Ann", "neg one"):
        (plain / speaker).mkdir(parents=True)
        for i in range(2):
            sf.write(plain / speaker / f"c{i}.wav", tone(0.5 + i / 4), 16000)
            (plain / speaker / f"c{i}.txt").write_text("hello there\n", encoding="utf-8")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "Mary Ann").symlink_to(plain / "Mary Ann")  # a whole speaker folder linked
    (linked / "neg one").mkdir()
    for clip in (plain / "neg one").iterdir():  # each clip linked
        (linked / "neg one" / clip.name).symlink_to(clip)
    (linked / "loop").symlink_to(linked)  # a loop is not followed twice
    assert folder_size_bytes(linked) == folder_size_bytes(plain) > 30_000


# -- F1: the cascade's enrollment folder --------------------------------------------------------------------


def _speaker(root: Path, name: str, fmt: str = "WAV", n: int = 2) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    for i in range(n):
        sf.write(folder / f"{name.strip().lower()}_{i}.{fmt.lower()}", tone(1.0, 200 + 40 * i), 16000, format=fmt)
    return folder


def test_enrollment_reads_mp3_and_lists_what_it_cannot_use(tmp_path):
    from lalm_eval.models.cascade_parts.enrollment import load_enrollment, looks_like_audio

    root = tmp_path / "enroll"
    _speaker(root, "Alice")
    _speaker(root, "Karen", "MP3")  # the finding: .mp3 clips were skipped without a word
    (root / "Karen" / "notes.txt").write_text("recorded 2024\n", encoding="utf-8")
    (root / "Karen" / "broken.wav").write_bytes(b"RIFF\0\0\0\0WAVEnot audio")
    (root / "Karen" / "old").mkdir()
    (root / "Bob").mkdir()
    (root / "Bob" / "empty.flac").write_bytes(b"")
    (root / "list.csv").write_text("name\n", encoding="utf-8")
    clips = load_enrollment(root)
    assert sorted({c.name for c in clips}) == ["Alice", "Karen"]
    assert [c.clip_id for c in clips if c.name == "Karen"] == ["Karen/karen_0", "Karen/karen_1"]
    reasons = {s["item"]: s["reason"] for s in clips.skips}
    assert set(reasons) == {"Bob/", "Bob/empty.flac", "Karen/broken.wav", "Karen/notes.txt", "Karen/old/", "list.csv"}
    assert "subject 'Bob' is not enrolled" in reasons["Bob/"] and "not an audio file" in reasons["Karen/notes.txt"]
    assert reasons["Bob/empty.flac"].startswith("empty file")
    assert "cannot decode" in reasons["Karen/broken.wav"] or "no samples" in reasons["Karen/broken.wav"]
    assert all(looks_like_audio(Path(f"x.{s}")) for s in ("m4a", "aac", "webm", "opus", "mp3", "WAV"))


def test_enrollment_folder_names_lose_their_spaces(tmp_path):
    from lalm_eval.errors import ConfigError
    from lalm_eval.models.cascade_parts.enrollment import load_enrollment

    root = tmp_path / "enroll"
    _speaker(root, "Karen ")  # a trailing space: the questions say "Karen"
    _speaker(root, "Alice")
    assert sorted({c.name for c in load_enrollment(root)}) == ["Alice", "Karen"]
    _speaker(root, "Karen")
    with pytest.raises(ConfigError, match="both name subject 'Karen'"):
        load_enrollment(root)


def test_cascade_reports_a_subject_without_enrollment(caplog):
    """A question about someone not enrolled (``Request.subjects``) is counted per name and warned about
    once, with the enrolled folder that differs only in case."""
    import collections

    import numpy as np

    from lalm_eval.api import Request
    from lalm_eval.models.cascade import CascadeAdapter
    from lalm_eval.models.cascade_parts.enrollment import Enrollment

    adapter = CascadeAdapter.__new__(CascadeAdapter)  # the enrolled names are all this needs
    adapter.enrollment = Enrollment(["Alice", "karen"], np.zeros((2, 4)), np.zeros(0), np.zeros((0, 4)), "", {})
    adapter.counters, adapter._unenrolled = collections.Counter(), set()
    caplog.set_level(logging.WARNING, logger="lalm_eval.models.cascade")
    for doc_id in range(3):
        adapter._check_subjects(Request("palm_recognition", doc_id, (), (), {}, subjects=("Karen", "Alice")))
    assert adapter.counters == {"unenrolled_subject:Karen": 3}
    (warning,) = [r.getMessage() for r in caplog.records]
    assert "asks about 'Karen', who has no enrollment clips" in warning
    assert "the enrolled 'karen' differs only in case or spaces: rename its folder to 'Karen'" in warning
