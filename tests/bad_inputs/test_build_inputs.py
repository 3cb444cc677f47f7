"""Bad inputs of the build commands' output folders (area ``build-``): atomic builds, rebuilds,
half-built folders, ``--out`` paths, and loading what an interrupted build left.

Inputs are real: one PALM folder-corpus build (``tests/real_layouts.py``'s voices, the smallest
settings a build accepts) and one MCQ import of the release miniature
(``tests/msu_release_fixture.py``), each made once per module and copied for the cases that break
them. The MCQ import is the cheapest complete build (well under a second), so the folder
mechanics every build shares (:mod:`lalm_eval.hub.atomic`) are pinned on it; the PALM build gets
the cases the issue names. ``kill -9`` cases run their children at the same time.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from tests.bad_inputs.harness import ROOT, Case, assert_error_shape, run_case, run_cli, run_killed
from tests.msu_release_fixture import make_release
from tests.real_layouts import write_folder_corpus

DEAD_PID = 99_999_999  # above Linux's largest pid (4194304): never a running process
VOICES = {
    **{f"s{i}": {"language": "en", "role": "subject", "name": f"Subject{i}"} for i in range(2)},
    **{f"n{i}": {"language": "en", "role": "negative"} for i in range(2)},
}
# the smallest PALM build that writes recognition and captioning (reasoning: no profiles, so none)
PALM_SETTINGS = [
    "--set",
    "speaker_count_weights={2: 1}",
    "--set",
    "audios_per_subject={train: 2, test: 2}",
    "--set",
    "reasoning_per_subject={train: 0, test: 0}",
    "--set",
    "enrollment=false",
    "--set",
    "templates_per_audio=1",
    "--no-cache",
]


# -- what is built once per module (lazily: a case's make() has only its own tmp) ----------------


@functools.cache
def _shared() -> Path:
    return Path(tempfile.mkdtemp(prefix="lalm_build_inputs_"))


@pytest.fixture(scope="module", autouse=True)
def _remove_shared():
    yield
    if _shared.cache_info().currsize:
        shutil.rmtree(_shared(), ignore_errors=True)


@functools.cache
def corpus_root() -> Path:
    return write_folder_corpus(_shared() / "voices", VOICES, clips_per_speaker=3)


def palm_argv(out) -> list:
    return ["build", "--out", out, "--corpus", "folder", "--corpus-dir", corpus_root(), *PALM_SETTINGS]


@functools.cache
def palm_build() -> Path:
    out = _shared() / "palm"
    result = run_cli("palm-bench", palm_argv(out))
    assert result.rc == 0, result.err[-3000:]
    return out


@functools.cache
def release() -> Path:
    return make_release(_shared() / "release")


def mcq_argv(out) -> list:
    return ["build", "--mcq-dir", release(), "--out", out]


@functools.cache
def mcq_build() -> Path:
    out = _shared() / "mcq"
    result = run_cli("msu-bench", mcq_argv(out))
    assert result.rc == 0, result.err[-3000:]
    return out


def copy_of(build: Path, dst: Path) -> Path:
    shutil.copytree(build, dst, symlinks=True)
    return dst


def half_built(dst: Path) -> Path:
    """A PALM build as the layout before atomic builds left it when killed: shards, no card, no build_info."""
    copy_of(palm_build(), dst)
    (dst / "README.md").unlink()
    (dst / "build_info.json").unlink()
    return dst


def files_of(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def siblings(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.parent.iterdir() if p.name.startswith(folder.name + "."))


def rows(folder: Path, config: str) -> list[str]:
    from lalm_eval.hub.load import load_dataset_fresh

    ds = load_dataset_fresh(folder, config, split="test", cache_root=folder.parent / "hf_cache")
    return list(ds["id"])


def probe_task(tmp: Path, dataset_path, **keys) -> list:
    """``lalm-eval`` on a task that is ``palm_recognition`` with another ``dataset_path`` (and
    ``keys``), dry run against an adapter that is never called: argv."""
    folder = tmp / "tasks"
    folder.mkdir(exist_ok=True)
    lines = [
        f"include: {ROOT / 'tasks' / 'palm' / 'palm_recognition.yaml'}",
        "task: build_probe",
        "tag: []",
        f"dataset_path: {dataset_path}",
        *(f"{k}: {v}" for k, v in keys.items()),
    ]
    (folder / "build_probe.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return eval_argv(tmp, "build_probe", include=folder)


def eval_argv(tmp: Path, tasks: str, include=None) -> list:
    argv = ["--model", "openai_audio", "--model_args", "model=probe,base_url=http://127.0.0.1:9/v1"]
    argv += ["--tasks", tasks, "--dry_run", "--cache_dir", tmp / "cache"]
    return argv + (["--include_path", include] if include else [])


def a_file(tmp: Path) -> Path:
    path = tmp / "taken.txt"
    path.write_text("a file, not a folder\n", encoding="utf-8")
    return path


def nothing_built(where: str):
    """check: no folder at ``tmp/where`` and no temporary sibling beside it (the error came first)."""

    def check(tmp: Path, result):
        target = tmp / where
        assert not target.exists() or target.is_file(), f"{target} was created"
        assert not list(tmp.glob(f"{Path(where).name}.tmp-*")), "a temporary sibling was left"

    return check


# -- the cases -------------------------------------------------------------------------------------


def _user_folder(tmp: Path) -> list:
    out = tmp / "Documents"
    (out / "drafts").mkdir(parents=True)
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    (out / "drafts" / "a.md").write_text("mine too\n", encoding="utf-8")
    return palm_argv(out)


def _user_folder_untouched(tmp: Path, result) -> None:
    assert files_of(tmp / "Documents") == ["drafts/a.md", "notes.txt"]
    assert siblings(tmp / "Documents") == []


def _readonly_parent(tmp: Path) -> list:
    parent = tmp / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    return palm_argv(parent / "out")


def _push_bad_card(tmp: Path) -> list:
    folder = copy_of(mcq_build(), tmp / "mcq")
    (folder / "README.md").write_text("---\nlicense: mit\n---\n# no configs\n", encoding="utf-8")
    return ["push", folder, "--repo-id", "me/mcq", "--dry-run"]


def _interrupted_swap(tmp: Path) -> Path:
    """What a kill between the two renames of a replacement leaves: no final folder, the old
    complete build aside (``.old-<pid>``), the new complete one in its stage (``.tmp-<pid>``)."""
    out = tmp / "mcq"
    copy_of(mcq_build(), out.with_name(f"mcq.old-{DEAD_PID}"))
    copy_of(mcq_build(), out.with_name(f"mcq.tmp-{DEAD_PID}"))
    return out


def _push_interrupted_swap(tmp: Path) -> list:
    out = tmp / "pb"
    copy_of(palm_build(), out.with_name(f"pb.old-{DEAD_PID}"))
    return ["push", out, "--repo-id", "me/pb", "--dry-run"]


def _sft_stale_tmp(tmp: Path) -> list:
    out = tmp / "pb"
    half_built(out.with_name(f"pb.tmp-{DEAD_PID}"))
    return ["export-sft", "--format", "ms-swift", "--out", tmp / "sft", "--dataset", out, "--split", "test"]


def _rebuild_half_built(tmp: Path) -> list:
    out = half_built(tmp / "pb")
    (out / "notes.txt").write_text("keep me\n", encoding="utf-8")
    (out / "recognition" / ".test-00000.parquet.partial").write_bytes(b"PAR1 cut short")
    half_built(tmp / f"pb.tmp-{DEAD_PID}")  # and the stage of another interrupted build beside it
    return palm_argv(out)


def _rebuilt_from_half_built(tmp: Path, result) -> None:
    out = tmp / "pb"
    info = json.loads((out / "build_info.json").read_text(encoding="utf-8"))
    assert files_of(out) == sorted([*info["shards"], "README.md", "build_info.json", "notes.txt"])
    assert info["kept_files"] == ["notes.txt"] and (out / "notes.txt").read_text() == "keep me\n"
    assert siblings(out) == []
    assert "replaced the half-built folder" in result.err and f"removed pb.tmp-{DEAD_PID}" in result.err
    assert rows(out, "recognition") == rows(palm_build(), "recognition")  # loads, the same rows


def _rebuild_stale(tmp: Path) -> list:
    """An earlier, bigger MCQ build with a config this one does not write, a stray shard of an
    earlier shard count, a Hub clone's .git and .gitattributes, a user's notes."""
    out = copy_of(mcq_build(), tmp / "mcq")
    shard = out / "mcq" / "test-00000-of-00001.parquet"
    (out / "old_config").mkdir()
    shutil.copy(shard, out / "old_config" / "test-00000-of-00001.parquet")
    shutil.copy(shard, out / "mcq" / "test-00001-of-00002.parquet")
    info = json.loads((out / "build_info.json").read_text(encoding="utf-8"))
    info["shards"]["old_config/test-00000-of-00001.parquet"] = "0" * 64
    (out / "build_info.json").write_text(json.dumps(info), encoding="utf-8")
    (out / ".git" / "objects").mkdir(parents=True)
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
    (out / ".gitattributes").write_text("*.parquet filter=lfs\n", encoding="utf-8")
    (out / "mcq" / "NOTES.md").write_text("about this config\n", encoding="utf-8")
    return mcq_argv(out)


def _rebuilt_without_stale(tmp: Path, result) -> None:
    out = tmp / "mcq"
    info = json.loads((out / "build_info.json").read_text(encoding="utf-8"))
    assert list(info["shards"]) == ["mcq/test-00000-of-00001.parquet"]
    assert not (out / "old_config").exists() and not (out / "mcq" / "test-00001-of-00002.parquet").exists()
    assert info["kept_files"] == [".git/", ".gitattributes", "mcq/NOTES.md"]
    assert (out / ".git" / "HEAD").is_file() and (out / "mcq" / "NOTES.md").is_file()
    assert "old_config" not in (out / "README.md").read_text(encoding="utf-8")
    assert "kept 3 file(s)" in result.err
    assert rows(out, "mcq") == rows(mcq_build(), "mcq")


def _restored(tmp: Path, result) -> None:
    out = tmp / "mcq"
    assert siblings(out) == [] and (out / "build_info.json").is_file()
    assert f"restored the previous build from mcq.old-{DEAD_PID}" in result.err
    assert f"removed mcq.tmp-{DEAD_PID}" in result.err


def _concurrent(tmp: Path) -> list:
    out = tmp / "mcq"
    (tmp / "mcq.tmp-1").mkdir()  # process 1 (init) always runs: another build at work
    return mcq_argv(out)


def _untouched_by_second_build(tmp: Path) -> None:
    assert (tmp / "mcq.tmp-1").is_dir() and not (tmp / "mcq").exists()


CASES = [
    # --out: a file, under a file, unwritable, a folder of the user's: refused before any work
    Case(
        "build-palm-out-is-file",
        "palm-bench",
        lambda tmp: palm_argv(a_file(tmp)),
        says=("--out {tmp}/taken.txt", "is a file"),
        check=nothing_built("taken.txt"),
    ),
    Case(
        "build-palm-out-under-file",
        "palm-bench",
        lambda tmp: palm_argv(a_file(tmp) / "out"),
        says=("--out {tmp}/taken.txt/out", "is a file, so no folder can be made under it"),
    ),
    Case(
        "build-palm-out-unwritable-fs",  # root passes os.access everywhere: a file system that refuses
        "palm-bench",
        lambda tmp: palm_argv("/sys/lalm_eval_build_probe/out"),
        says=("--out /sys/lalm_eval_build_probe/out", "cannot create"),
    ),
    Case(
        "build-palm-out-readonly-parent",
        "palm-bench",
        _readonly_parent,
        says=("--out {tmp}/ro/out", "not writable"),
        marks=(pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder"),),
    ),
    Case(
        "build-palm-out-user-folder",
        "palm-bench",
        _user_folder,
        says=("--out {tmp}/Documents", "no build wrote", "notes.txt", "new or empty folder"),
        check=_user_folder_untouched,
    ),
    Case(
        "build-msu-out-is-file",
        "msu-bench",
        lambda tmp: ["build", "--out", a_file(tmp), "--set", "languages=[en]"],
        says=("--out {tmp}/taken.txt", "is a file"),
    ),
    Case(
        "build-mcq-out-under-file",
        "msu-bench",
        lambda tmp: mcq_argv(a_file(tmp) / "mcq"),
        says=("--out {tmp}/taken.txt/mcq", "is a file, so no folder"),
    ),
    Case(
        "build-sft-out-is-file",
        "palm-bench",
        lambda tmp: ["export-sft", "--format", "ms-swift", "--out", a_file(tmp), "--dataset", palm_build()],
        says=("--out {tmp}/taken.txt", "is a file"),
    ),
    Case(
        "build-sft-out-under-file",
        "palm-bench",
        lambda tmp: ["export-sft", "--format", "llamafactory", "--out", a_file(tmp) / "x", "--dataset", palm_build()],
        says=("--out {tmp}/taken.txt/x", "no folder can be made"),
    ),
    # what an interrupted build left, met by the commands that read a build
    Case(
        "build-eval-half-built",
        "lalm-eval",
        lambda tmp: probe_task(tmp, half_built(tmp / "pb")),
        says=("{tmp}/pb", "half-built", "run the build again"),
    ),
    Case(
        "build-push-half-built",
        "palm-bench",
        lambda tmp: ["push", half_built(tmp / "pb"), "--repo-id", "me/pb", "--dry-run"],
        says=("{tmp}/pb", "half-built"),
    ),
    Case(
        "build-sft-half-built",
        "palm-bench",
        lambda tmp: [
            "export-sft",
            "--format",
            "ms-swift",
            "--out",
            tmp / "sft",
            "--dataset",
            half_built(tmp / "pb"),
            "--tasks",
            "recognition",
            "--split",
            "test",
        ],
        says=("{tmp}/pb", "half-built"),
    ),
    Case(
        "build-sft-stale-tmp-only",
        "palm-bench",
        _sft_stale_tmp,
        says=("{tmp}/pb", f"pb.tmp-{DEAD_PID}", "interrupted build", "run the build again"),
    ),
    Case(
        "build-push-interrupted-swap",
        "palm-bench",
        _push_interrupted_swap,
        says=("{tmp}/pb", f"pb.old-{DEAD_PID}", "previous complete build", "rename"),
    ),
    # a built folder without what the task asks for
    Case(
        "build-eval-missing-split",
        "lalm-eval",
        lambda tmp: probe_task(tmp, palm_build(), test_split="validation"),
        says=("no split 'validation'", "its splits: train, test", "test_split"),
    ),
    Case(
        "build-eval-no-such-folder",
        "lalm-eval",
        lambda tmp: probe_task(tmp, tmp / "nowhere" / "pb"),
        says=("{tmp}/nowhere/pb", "no such folder"),
    ),
    Case(
        "build-push-no-such-folder",
        "palm-bench",
        lambda tmp: ["push", tmp / "nowhere", "--repo-id", "me/pb", "--dry-run"],
        says=("{tmp}/nowhere", "no such folder"),
    ),
    Case(
        "build-push-card-without-configs",
        "msu-bench",
        _push_bad_card,
        says=("{tmp}/mcq/README.md", "configs", "rebuild"),
    ),
    # rebuilding: a build replaces its own files, keeps (and lists) the others, cleans up leftovers
    Case(
        "build-palm-rebuild-half-built",
        "palm-bench",
        _rebuild_half_built,
        exit=0,
        check=_rebuilt_from_half_built,
    ),
    Case("build-mcq-rebuild-stale-files", "msu-bench", _rebuild_stale, exit=0, check=_rebuilt_without_stale),
    Case(
        "build-mcq-restores-interrupted-swap",
        "msu-bench",
        lambda tmp: mcq_argv(_interrupted_swap(tmp)),
        exit=0,
        check=_restored,
    ),
    Case(
        "build-mcq-another-build-running",
        "msu-bench",
        _concurrent,
        says=("--out {tmp}/mcq", "another build (process 1)", "mcq.tmp-1"),
        check=lambda tmp, result: _untouched_by_second_build(tmp),
    ),
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


# -- tests that cannot be a Case row ---------------------------------------------------------------

EXTRA_CASE_IDS = [
    "build-eval-palm-group-no-reasoning",
    "build-swap-fails-keeps-old",
    "build-palm-out-is-cwd",
    "build-once-removes-stale-stage",
    "build-load-fresh-half-built",
    "build-kill-palm-replacing",
    "build-kill-msu-fresh",
    "build-kill-mcq-replacing",
]


def test_palm_group_on_a_build_without_reasoning(tmp_path):
    """``lalm-eval --tasks palm`` in a folder whose ``palm-bench/`` (a folder-corpus build: no
    profiles, so no reasoning config) is what the tasks open: the error names the folder, the
    config, why it is missing and what the folder has (was: ``BuilderConfig 'reasoning' not found``)."""
    copy_of(palm_build(), tmp_path / "palm-bench")
    result = run_cli("lalm-eval", eval_argv(tmp_path, "palm"), cwd=tmp_path)
    assert result.rc == 2, result.err[-3000:]
    assert_error_shape("lalm-eval", result)
    line = result.error_line
    assert "palm-bench: no config 'reasoning'" in line and "its configs: recognition, captioning, all" in line


def test_out_is_the_current_folder(tmp_path):
    """``--out .``: a build replaces its folder as a whole, which the current folder cannot be
    (was: the shards and the card written among the user's files)."""
    result = run_cli("palm-bench", palm_argv("."), cwd=tmp_path)
    assert result.rc == 2, result.err[-3000:]
    assert_error_shape("palm-bench", result)
    assert "--out .: is the current folder" in result.error_line and list(tmp_path.iterdir()) == []


def test_a_failed_swap_keeps_the_old_build(tmp_path, monkeypatch):
    """The finished stage cannot be renamed into place (permissions changed, a full disk): the old
    build stays whole under its name, no stage is left, and the error names ``--out``."""
    out = copy_of(mcq_build(), tmp_path / "mcq")
    before = files_of(out)
    rename = os.rename

    def failing(src, dst, *args, **kwargs):
        if ".tmp-" in Path(src).name:
            raise PermissionError(13, "Permission denied")
        return rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", failing)
    result = run_cli("msu-bench", mcq_argv(out))
    monkeypatch.undo()
    assert result.rc == 2, result.err[-3000:]
    assert_error_shape("msu-bench", result)
    assert f"--out {out}: the finished build could not be moved into place" in result.error_line
    assert files_of(out) == before and siblings(out) == []
    assert rows(out, "mcq") == rows(mcq_build(), "mcq")


def test_load_dataset_fresh_on_a_half_built_folder(tmp_path):
    """The loader every command opens datasets through names the half-built folder itself (was:
    ``ValueError: BuilderConfig 'recognition' not found. Available: ['default']``)."""
    from lalm_eval.errors import DataError
    from lalm_eval.hub.load import load_dataset_fresh

    folder = half_built(tmp_path / "pb")
    with pytest.raises(DataError, match="a half-built folder") as err:
        load_dataset_fresh(folder, "recognition", split="test", cache_root=tmp_path / "cache")
    assert err.value.file == str(folder) and not (tmp_path / "cache").exists()


def test_build_once_removes_the_stage_of_a_killed_build(tmp_path):
    """The tasks' cached builds (``build_once``): the stage a killed run left is removed by the next."""
    from lalm_eval.hub.build_once import build_once

    out = tmp_path / "datasets" / "bench-small"
    stale = out.with_name(f"bench-small.tmp-{DEAD_PID}")
    (stale / "recognition").mkdir(parents=True)
    (stale / "recognition" / ".test-00000.parquet.partial").write_bytes(b"PAR1")

    def run_build(folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "build_info.json").write_text(json.dumps({"config": {"seed": 0}}), encoding="utf-8")

    assert build_once(out, {"seed": 0}, run_build) == out
    assert (out / "build_info.json").is_file() and not stale.exists()


def _writing(out: Path):
    """The kill point: the build's stage exists, or (a build writing in place, as before atomic
    builds) a file under ``out`` appears or changes."""

    def stamps() -> dict:
        return {p: p.stat().st_mtime_ns for p in out.glob("**/*") if p.is_file()} if out.is_dir() else {}

    before = stamps()

    def started() -> bool:
        if any(p.name.startswith(out.name + ".tmp-") for p in out.parent.iterdir()):
            return True
        try:
            return stamps() != before
        except FileNotFoundError:  # a partial shard renamed while it was listed
            return True

    return started


def contents(folder: Path) -> dict:
    """``{relative path: sha256}`` of every file under ``folder``."""
    from lalm_eval.hub.parquet import file_sha256

    return {rel: file_sha256(folder / rel) for rel in files_of(folder)}


@pytest.fixture(scope="module")
def killed(tmp_path_factory):
    """Three builds killed with ``kill -9`` as soon as their stage (the temporary sibling) exists,
    run side by side: a PALM build over a complete build, an MSU build into a new folder, an MCQ
    import over a complete import."""
    root = tmp_path_factory.mktemp("killed")
    palm, msu, mcq = root / "palm" / "pb", root / "msu" / "msu", root / "mcq" / "mcq"
    runs = {
        "palm-replacing": ("palm-bench", [*palm_argv(palm), "--set", "seed=1"], palm),  # other rows than the old
        "msu-fresh": ("msu-bench", ["build", "--out", msu, "--set", "languages=[en]"], msu),
        "mcq-replacing": ("msu-bench", mcq_argv(mcq), mcq),
    }
    for _, _, out in runs.values():
        out.parent.mkdir(parents=True)
    copy_of(palm_build(), palm)
    copy_of(mcq_build(), mcq)
    outcome, env = {}, {"LALM_EVAL_CACHE": str(root / "cache")}

    def one(name, cli, argv, out):
        try:
            outcome[name] = run_killed(cli, argv, _writing(out), timeout=120, env=env)
        except BaseException as exc:  # reported by the test that reads it
            outcome[name] = exc

    threads = [threading.Thread(target=one, args=(name, *spec)) for name, spec in runs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {name: (outcome[name], out) for name, (_, _, out) in runs.items()}


def _killed(killed, name) -> Path:
    result, out = killed[name]
    if isinstance(result, BaseException):
        raise result
    assert result is True
    return out


def stages(out: Path) -> list[str]:
    return [p.name for p in out.parent.iterdir() if p.name.startswith(out.name + ".tmp-")]


def test_kill_palm_build_over_a_complete_build(killed):
    """The old build stays whole under its name and gives its rows (was: a folder of new shards,
    no card, on which lalm-eval failed with ``BuilderConfig 'recognition' not found``)."""
    out = _killed(killed, "palm-replacing")
    assert contents(out) == contents(palm_build())
    assert rows(out, "recognition") == rows(palm_build(), "recognition")
    assert len(stages(out)) == 1  # what the kill left, beside it


def test_kill_msu_build_into_a_new_folder(killed, tmp_path):
    """Nothing under the final name; ``lalm-eval`` on it names the stage the kill left."""
    out = _killed(killed, "msu-fresh")
    assert not out.exists() and len(stages(out)) == 1
    result = run_cli("lalm-eval", probe_task(tmp_path, out))
    assert result.rc == 2, result.err[-3000:]
    assert_error_shape("lalm-eval", result)
    assert f"{out}: not built: only msu.tmp-" in result.error_line and "interrupted build" in result.error_line


def test_kill_mcq_import_over_a_complete_one_then_rebuild(killed):
    """The old import still loads; the next import removes the stage, says so, and replaces it."""
    out = _killed(killed, "mcq-replacing")
    assert contents(out) == contents(mcq_build())
    (stage,) = stages(out)
    result = run_cli("msu-bench", mcq_argv(out))
    assert result.rc == 0, result.err[-3000:]
    assert f"removed {stage}" in result.err and siblings(out) == []
    assert rows(out, "mcq") == rows(mcq_build(), "mcq")
