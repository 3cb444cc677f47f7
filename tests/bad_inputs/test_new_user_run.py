"""Round 2 of issue 20, the evaluation run as a new user meets it (findings F2 F6 F20 F21 F22 F24
F26 F28 F34 F35 of the adversarial pass): a model that cannot load, where a cache folder came
from, Ctrl-C, a console that is not UTF-8 or is a closed pipe, a clip too short for the model,
``~`` in paths, model args, and empty flag values.

Nothing here loads a real model: the model folders are what a user would point ``pretrained=``
at (a ``config.json`` and the files beside it), the Hugging Face adapters' checks read them
without transformers, and the runs that generate use :class:`StandIn`, an
:class:`~lalm_eval.models.hf_base.HFAudioAdapter` whose model is a stand-in (its batching, the
response cache in front of it and the CLI around it are the real ones). The one case that needs
a real processor (``nu-run-model-weights-damaged``) borrows the tiny Qwen2-Audio of
``test_cli_inputs`` when that module ran first.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys
from pathlib import Path

import datasets
import pytest

from lalm_eval.hub.card import front_matter, write_card
from lalm_eval.hub.parquet import export_dataset_dict
from lalm_eval.models import MODELS
from lalm_eval.models.hf_base import HFAudioAdapter
from tests.bad_inputs import test_cli_inputs
from tests.bad_inputs.harness import Case, assert_error_shape, run_case, run_cli
from tests.bad_inputs.test_cli_inputs import TASK, write_dataset
from tests.test_training import flac

CLI = "lalm-eval"
SHARED: dict = {}


class StandIn(HFAudioAdapter):
    """A Hugging Face adapter whose model is a stand-in: each batch answers ``answer <doc id>``;
    a Ctrl-C arrives at batch ``interrupt_at`` (1-based, None: never). Counts its batches."""

    name = "nu_run_stand_in"
    #: the audio limit is read from the loaded processor (issue 21); a stand-in folder has none
    AUDIO_LIMIT_S = None
    interrupt_at: int | None = None
    batches = 0

    def generate_batch(self, requests):
        type(self).batches += 1
        if type(self).batches == type(self).interrupt_at:
            raise KeyboardInterrupt
        return [f"answer {r.doc_id}" for r in requests]


def model_folder(folder: Path, config: dict | None, weights: bool = True) -> Path:
    """A model folder as a user points ``pretrained=`` at it: ``config.json`` (None: none) and,
    with ``weights``, a weights file (its bytes are hashed into the identity, never loaded here)."""
    folder.mkdir(parents=True, exist_ok=True)
    if config is not None:
        (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    if weights:
        (folder / "model.safetensors").write_bytes(b"stand-in weights")
    return folder


QWEN2_AUDIO = {"model_type": "qwen2_audio", "architectures": ["Qwen2AudioForConditionalGeneration"]}


def short_clip_dataset(folder: Path) -> Path:
    """One test doc whose clip is 0.05 s (FLAC in the Parquet, as a build writes audio)."""
    features = datasets.Features(
        {"question": datasets.Value("string"), "answer": datasets.Value("string"), "audio": datasets.Audio(16000)}
    )
    rows = {"question": ["Is Alice speaking?"], "answer": ["Yes."], "audio": [{"bytes": flac(0.05, 300), "path": None}]}
    files = export_dataset_dict(
        {"main": datasets.DatasetDict({"test": datasets.Dataset.from_dict(rows, features=features)})}, folder
    )
    write_card(folder, f"---\n{front_matter(files)}\n---\n")
    return folder


@pytest.fixture(scope="module", autouse=True)
def shared(tmp_path_factory):
    if StandIn.name not in MODELS:
        MODELS.register(StandIn.name, StandIn)
    root = tmp_path_factory.mktemp("new_user_run")
    SHARED["ds"] = write_dataset(root / "ds", {"test": 5})
    SHARED["short"] = short_clip_dataset(root / "short")
    SHARED["cache"] = root / "cache"  # datasets prepared once for every case
    SHARED["stand_in"] = model_folder(root / "stand_in", {"model_type": "stand_in"})
    SHARED["qwen2_audio"] = model_folder(root / "qwen2_audio", QWEN2_AUDIO)
    return SHARED


@pytest.fixture(autouse=True)
def fresh_counts():
    StandIn.batches = 0
    StandIn.interrupt_at = None


def tasks(tmp: Path, ds: Path | None = None, name: str = "tasks", extra: str = "") -> Path:
    folder = tmp / name
    folder.mkdir(exist_ok=True)
    (folder / "t.yaml").write_text(TASK.format(ds=ds or SHARED["ds"]) + extra, encoding="utf-8")
    return folder


def argv(tmp: Path, *extra, model: str = StandIn.name, model_args: str | None = None, folder=None) -> list[str]:
    """A run of task ``tt`` (5 docs of 1-s tones) on ``model``, the stand-in by default."""
    if model_args is None:
        model_args = f"pretrained={SHARED['stand_in']}"
    out = ["--model", model, "--model_args", model_args, "--tasks", "tt"]
    out += ["--include_path", str(tasks(tmp) if folder is None else folder)]
    if "--cache_dir" not in extra:
        out += ["--cache_dir", str(SHARED["cache"])]
    return out + [str(a) for a in extra]


def nothing_ran(tmp, result) -> None:
    """The error came before any batch: no doc was answered."""
    assert StandIn.batches == 0, StandIn.batches


def broken_tasks(tmp: Path) -> Path:
    """A task folder whose YAML is broken: an error about the model args shows first if they are
    checked before the tasks load."""
    folder = tasks(tmp)
    (folder / "t.yaml").write_text("task: tt\nmetadata: {version: 1\n", encoding="utf-8")
    return folder


def model_case(model: str, folder, *extra, says=(), before_tasks=True, **kw) -> dict:
    """A run of ``--model model`` on a model folder made by ``folder(tmp)``; with ``before_tasks``
    the task YAML is broken, so the model's error must come before the tasks are read."""

    def make(tmp):
        path = folder(tmp) if callable(folder) else folder
        args = path if isinstance(path, str) else f"pretrained={path}"
        return argv(tmp, *extra, model=model, model_args=args, folder=broken_tasks(tmp) if before_tasks else None)

    return dict(make=make, says=says, check=nothing_ran, **kw)


def shards_missing(tmp: Path) -> Path:
    folder = model_folder(tmp / "sharded", QWEN2_AUDIO, weights=False)
    index = {
        "weight_map": {"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors"}
    }
    (folder / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    (folder / "model-00001-of-00002.safetensors").write_bytes(b"part one")
    return folder


def config_not_json(folder: Path) -> Path:
    model_folder(folder, None)
    (folder / "config.json").write_text("{'model_type': 'qwen2_audio'", encoding="utf-8")
    return folder


def without_cache_dir(tmp: Path) -> list[str]:
    """A run with no ``--cache_dir`` (``LALM_EVAL_CACHE`` sets it), a file where the cache would go."""
    (tmp / "a_file").write_text("not a folder\n")
    args = argv(tmp)
    i = args.index("--cache_dir")
    return args[:i] + args[i + 2 :]


def results_of(out: Path) -> dict:
    (path,) = out.glob("results_*.json")
    return json.loads(path.read_text(encoding="utf-8"))


def short_clip_refused(tmp: Path, result) -> None:
    """The 0.05 s clip is counted as ``audio_too_short`` with its length and the model's minimum,
    and the model was never loaded for it."""
    info = results_of(tmp / "out")["sample_info"]["tt"]
    assert info["failures"] == {"audio_too_short": 1}, info
    (row,) = [json.loads(x) for x in next((tmp / "out").glob("samples_tt_*.jsonl")).read_text().splitlines()]
    assert row["failure"] == "audio_too_short" and "audio 1 is 0.050 s" in row["error"], row
    assert "shorter than qwen2_audio's minimum of 0.060 s" in row["error"], row


CASES = [
    # -- F2: a model that cannot load is one error before any doc (was: one failed doc per doc, exit 4)
    Case(
        "nu-run-model-no-weights",
        CLI,
        **model_case(
            "qwen2_audio",
            lambda tmp: model_folder(tmp / "noweights", QWEN2_AUDIO, weights=False),
            says=("--model_args pretrained={tmp}/noweights", "no model weights there", "copy the weights"),
        ),
    ),
    Case(
        "nu-run-model-shard-missing",
        CLI,
        **model_case(
            "qwen2_audio",
            shards_missing,
            says=("pretrained={tmp}/sharded", "1 of the 2 weight files", "model-00002-of-00002.safetensors"),
        ),
    ),
    Case(
        "nu-run-model-config-empty",
        CLI,
        **model_case(
            "hf-audio",
            lambda tmp: model_folder(tmp / "empty_config", {}),
            says=("pretrained={tmp}/empty_config", "config.json names no model_type or architectures"),
        ),
    ),
    Case(
        "nu-run-model-config-not-json",
        CLI,
        **model_case(
            "qwen2_audio",
            lambda tmp: config_not_json(tmp / "bad_json"),
            says=("pretrained={tmp}/bad_json", "config.json cannot be read"),
        ),
    ),
    Case(
        "nu-run-model-wrong-architecture",
        CLI,
        **model_case(
            "qwen2_5_omni",
            lambda tmp: SHARED["qwen2_audio"],
            says=("--model qwen2_5_omni", "holds a 'qwen2_audio' model", "give --model qwen2_audio"),
        ),
    ),
    Case(
        "nu-run-device-mps-off-macos",
        CLI,
        **model_case(
            "qwen2_audio",
            lambda tmp: SHARED["qwen2_audio"],
            "--device",
            "mps",
            says=("--device mps", "no mps device", "use cpu"),
        ),
        marks=(pytest.mark.skipif(sys.platform == "darwin", reason="MPS may exist on macOS"),),
    ),
    Case(
        "nu-run-model-args-device-mps",
        CLI,
        **model_case(
            "qwen2_audio",
            lambda tmp: f"pretrained={SHARED['qwen2_audio']},device=mps",
            says=("--model_args device=mps", "no mps device"),
        ),
        marks=(pytest.mark.skipif(sys.platform == "darwin", reason="MPS may exist on macOS"),),
    ),
    # -- F28: model args checked when the adapter is built, before the tasks, naming --model_args
    Case(
        "nu-run-max-audio-seconds-text",
        CLI,
        **model_case(
            StandIn.name,
            lambda tmp: f"pretrained={SHARED['stand_in']},max_audio_seconds_per_batch=abc",
            says=("--model_args max_audio_seconds_per_batch=abc", "not a number of seconds > 0", "=300"),
        ),
    ),
    Case(
        "nu-run-max-audio-seconds-negative",
        CLI,
        **model_case(
            StandIn.name,
            lambda tmp: f"pretrained={SHARED['stand_in']},max_audio_seconds_per_batch=-5",
            says=("--model_args max_audio_seconds_per_batch=-5", "> 0"),
        ),
    ),
    Case(
        "nu-run-max-audio-seconds-zero",
        CLI,
        **model_case(
            StandIn.name,
            lambda tmp: f"pretrained={SHARED['stand_in']},max_audio_seconds_per_batch=0",
            says=("--model_args max_audio_seconds_per_batch=0",),
        ),
    ),
    Case(
        "nu-run-trust-remote-code-not-bool",
        CLI,
        **model_case(
            StandIn.name,
            lambda tmp: f"pretrained={SHARED['stand_in']},trust_remote_code=maybe",
            says=("--model_args trust_remote_code=maybe", "not true or false"),
        ),
    ),
    Case(
        "nu-run-dtype-unknown",
        CLI,
        **model_case(
            StandIn.name,
            lambda tmp: f"pretrained={SHARED['stand_in']},dtype=float17",
            says=("--model_args dtype=float17", "bfloat16"),
        ),
    ),
    Case(
        "nu-run-long-audio-unknown",
        CLI,
        **model_case(
            StandIn.name,
            lambda tmp: f"pretrained={SHARED['stand_in']},long_audio=chunky",
            says=("--model_args long_audio=chunky", "truncate"),
        ),
    ),
    # -- F6: a cache folder set by LALM_EVAL_CACHE is named as that, not as --cache_dir
    Case(
        "nu-run-env-cache-is-a-file",
        CLI,
        make=without_cache_dir,
        env={"LALM_EVAL_CACHE": "{tmp}/a_file"},
        says=("LALM_EVAL_CACHE={tmp}/a_file", "is a file", "unset it or point it at a folder"),
        check=nothing_ran,
    ),
    # -- F24: a clip too short for the model is a counted failure of its own kind, not a TypeError
    Case(
        "nu-run-audio-too-short",
        CLI,
        make=lambda tmp: argv(
            tmp,
            "--output_path",
            tmp / "out",
            "--log_samples",
            "--no_cache",
            model="qwen2_audio",
            model_args=f"pretrained={SHARED['qwen2_audio']}",
            folder=tasks(tmp, SHARED["short"]),
        ),
        exit=4,
        check=short_clip_refused,
    ),
    # -- F34 / F35: empty flag values (an unset shell variable) are errors, not "nothing" or "."
    Case(
        "nu-run-output-path-empty",
        CLI,
        make=lambda tmp: argv(tmp, "--output_path", ""),
        says=("--output_path: empty", "leave the flag out"),
        check=nothing_ran,
    ),
    Case(
        "nu-run-cache-dir-empty",
        CLI,
        make=lambda tmp: argv(tmp, "--cache_dir", ""),
        says=("--cache_dir: empty",),
        check=nothing_ran,
    ),
    Case(
        "nu-run-include-path-empty",
        CLI,
        make=lambda tmp: argv(tmp, folder=""),
        says=("--include_path: empty", "folder of task yaml files"),
        check=nothing_ran,
    ),
    Case(
        "nu-run-tasks-include-path-empty",
        CLI,
        make=lambda tmp: ["tasks", "--include_path", ""],
        says=("--include_path: empty",),
    ),
]

EXTRA_CASE_IDS = [
    "nu-run-model-weights-damaged",
    "nu-run-audio-min-length-matches-processor",
    "nu-run-sigint-keeps-answers",
    "nu-run-sigint-no-cache",
    "nu-run-sigint-train-without-checkpoint",
    "nu-run-console-ascii",
    "nu-run-path-not-encodable",
    "nu-run-stdout-closed",
    "nu-run-tilde-output-and-cache",
    "nu-run-tilde-include-path-and-model",
]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def error_of(result) -> str:
    assert result.rc == 2, (result.rc, result.err[-2000:])
    assert_error_shape(CLI, result)
    return result.error_line


# -- F2: a real processor, weights that do not load: one error, no results, no doc answered ----


def test_model_weights_damaged(tmp_path):
    """A copy of the tiny Qwen2-Audio whose weights file is cut short: the load fails once, as an
    error naming ``pretrained=`` (was: every doc failed with the load's error, exit 4, results written)."""
    import shutil

    tiny = test_cli_inputs.SHARED.get("tiny")
    if tiny is None or not Path(tiny).is_dir():  # test_cli_inputs did not run first in this session
        from lalm_eval.models.tiny import make_tiny_model

        tiny = make_tiny_model("qwen2_audio", tmp_path / "tiny")
    damaged = tmp_path / "damaged"
    shutil.copytree(tiny, damaged)
    (damaged / "model.safetensors").write_bytes((Path(tiny) / "model.safetensors").read_bytes()[:1000])
    out = tmp_path / "out"
    result = run_cli(
        CLI, argv(tmp_path, "--output_path", out, "--no_cache", model="qwen2_audio", model_args=f"pretrained={damaged}")
    )
    line = error_of(result)
    assert f"--model_args pretrained={damaged}: its model does not load with qwen2_audio" in line, line
    assert "SafetensorError" in line and "failed" not in result.err, result.err[-2000:]
    assert not list(out.glob("results_*.json"))


def test_audio_min_length_matches_processor():
    """``MIN_AUDIO_SAMPLES`` is where the processors' audio token count reaches what the models
    need: Qwen2-Audio 2 tokens (961 samples), Qwen2.5-Omni 1 token (321 samples)."""
    import torch

    from lalm_eval.models.qwen2_audio import Qwen2AudioAdapter
    from lalm_eval.models.qwen_omni import Qwen25OmniThinkerAdapter

    def frames(n):  # the Whisper feature extractor's attention mask: one frame per 160 samples, rounded up
        return -(-n // 160)

    def qwen2(n):  # Qwen2AudioProcessor's num_audio_tokens
        return (((frames(n) - 1) // 2 + 1) - 2) // 2 + 1

    n = Qwen2AudioAdapter.MIN_AUDIO_SAMPLES
    assert (qwen2(n - 1), qwen2(n)) == (1, 2)
    n = Qwen25OmniThinkerAdapter.MIN_AUDIO_SAMPLES
    lengths = Qwen25OmniThinkerAdapter.output_lengths(torch.tensor([frames(n - 1), frames(n)])).tolist()
    assert lengths == [0, 1]


# -- F20: Ctrl-C keeps each finished batch and says what was kept --------------------------------


def _interrupted(tmp: Path, *extra) -> tuple:
    StandIn.interrupt_at = 3  # batches 1 and 2 answered, a Ctrl-C during the third
    first = run_cli(CLI, argv(tmp, "--batch_size", "1", "--cache_dir", tmp / "cache", *extra))
    StandIn.interrupt_at = None
    again = run_cli(CLI, argv(tmp, "--batch_size", "1", "--cache_dir", tmp / "cache", *extra))
    return first, again


def test_sigint_keeps_answers(tmp_path):
    """A Ctrl-C in the third batch: the two finished answers are in the response cache (committed
    per batch, was: per chunk of 64, so none), the message counts them, and the rerun serves them."""
    first, again = _interrupted(tmp_path)
    assert first.rc == 130 and "Traceback" not in first.err, first.err[-2000:]
    line = first.err.strip().splitlines()[-1]
    assert line.startswith("lalm-eval: interrupted; 2 of the 5 docs' answers are in the response cache"), line
    assert str(tmp_path / "cache" / "responses.sqlite") in line and "it generates the 3 not cached" in line
    assert again.rc == 0, again.err[-2000:]
    assert "cache: 2 hits, 3 misses; model calls: 3" in again.out, again.out[-500:]


def test_sigint_no_cache(tmp_path):
    """Under ``--no_cache`` the message says that nothing is kept (was: "a rerun resumes")."""
    first, again = _interrupted(tmp_path, "--no_cache")
    assert first.rc == 130
    line = first.err.strip().splitlines()[-1]
    assert "--no_cache: the 2 answers generated so far are not kept; a rerun starts over" in line, line
    assert "cache: 0 hits, 5 misses" in again.out


def test_sigint_train_without_checkpoint(tmp_path):
    """``lalm-eval train`` interrupted before its first checkpoint: the message says there is none
    and the steps are lost (was: "what was written so far is kept (a rerun resumes)"); with a
    checkpoint it names it and ``--resume_from_checkpoint``."""
    from lalm_eval.cli_support import guard, interrupt_note
    from lalm_eval.training.trainer import TrainOptions, interrupted_training

    opts = TrainOptions(["tt"], "lora_attn", tmp_path, tmp_path / "cache", save_steps=500)
    checkpoints = tmp_path / "checkpoints"

    def train():
        with interrupt_note(lambda: interrupted_training(checkpoints, 188, 2000, opts)):
            raise KeyboardInterrupt

    err = io.StringIO()
    with __import__("contextlib").redirect_stderr(err):
        assert guard("lalm-eval", train) == 130
    assert (
        "lalm-eval: interrupted; stopped at step 188 of 2000 with no checkpoint saved yet "
        "(one every --save_steps 500 steps), so nothing can resume" in err.getvalue()
    ), err.getvalue()
    (checkpoints / "checkpoint-100").mkdir(parents=True)
    (checkpoints / "checkpoint-100" / "trainer_state.json").write_text('{"global_step": 100}')
    note = interrupted_training(checkpoints, 188, 2000, opts)
    assert "checkpoint-100" in note and "--resume_from_checkpoint" in note, note


# -- F21 / F22: the console: results first, then what the console can take ---------------------


def _run_with_stdout(stdout, tmp: Path, *extra, folder=None) -> tuple[int, str]:
    from lalm_eval.cli import main

    err = io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, err
    try:
        rc = main([str(a) for a in argv(tmp, "--output_path", tmp / "out", "--no_cache", *extra, folder=folder)])
    finally:
        sys.stdout, sys.stderr = saved
    return rc, err.getvalue()


def test_console_ascii(tmp_path):
    """A console whose encoding is ASCII (``LC_ALL=C PYTHONUTF8=0``): the report's ``—`` and other
    characters print as ``?``, the results are written (was: UnicodeEncodeError before writing)."""
    raw = io.BytesIO()
    console = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    folder = tasks(tmp_path)  # a breakdown by two fields: its heading says "by n_speakers × answer"
    text = (folder / "t.yaml").read_text().replace("{version: 1}", "{version: 1, breakdown: [[n_speakers, answer]]}")
    (folder / "t.yaml").write_text(text, encoding="utf-8")
    rc, err = _run_with_stdout(console, tmp_path, folder=folder)
    console.flush()
    assert rc == 0 and "Traceback" not in err, err[-2000:]
    assert results_of(tmp_path / "out")["n-samples"]["tt"]["scored"] == 5
    text = raw.getvalue().decode("ascii")
    assert "### tt by n_speakers ? answer" in text and "wrote " in text and "cache: 0 hits, 5 misses" in text


def test_stdout_closed(tmp_path):
    """stdout a pipe whose reader has gone (``| head -1``, ``| true``): the run finishes, its files
    are written, no traceback, exit 0 (was: BrokenPipeError, the output folder empty)."""
    read, write = os.pipe()
    os.close(read)
    pipe = io.TextIOWrapper(os.fdopen(write, "wb", buffering=0), encoding="utf-8", write_through=True)
    try:
        rc, err = _run_with_stdout(pipe, tmp_path)
    finally:
        pipe.close()
    assert rc == 0 and "Traceback" not in err and "Broken" not in err, err[-2000:]
    assert len(list((tmp_path / "out").glob("results_*.json"))) == 1
    assert len(list((tmp_path / "out").glob("report_*.md"))) == 1


def test_path_not_encodable(tmp_path, monkeypatch):
    """A path the system's locale cannot encode (here: ``王芳`` under an ASCII file-system
    encoding, as soundfile encodes it): exit 2 naming the path and a UTF-8 locale (was: a
    UnicodeEncodeError traceback)."""
    import shutil

    import soundfile

    folder = tmp_path / "王芳"
    folder.mkdir()
    clip = folder / "a.wav"
    soundfile.write(clip, __import__("numpy").zeros(16000, "float32"), 16000)
    hooks = tasks(tmp_path, name="tasks_paths")
    text = (hooks / "t.yaml").read_text().replace('doc_to_audio: "{{ audio }}"', "doc_to_audio: !function utils.clip")
    (hooks / "t.yaml").write_text(text, encoding="utf-8")
    (hooks / "utils.py").write_text(f"def clip(doc):\n    return {{'path': {str(clip)!r}, 'bytes': None}}\n", "utf-8")
    monkeypatch.setattr(sys, "getfilesystemencoding", lambda: "ascii")
    result = run_cli(CLI, argv(tmp_path, "--no_cache", folder=hooks))
    shutil.rmtree(folder)
    line = error_of(result)
    assert line.startswith(f"lalm-eval: error: {clip}: cannot be encoded in this system's ascii locale"), line
    assert "LC_ALL=C.UTF-8" in line


# -- F26: `~` expanded once, the expanded path used by every writer -----------------------------


def _home(tmp: Path) -> tuple[Path, Path]:
    home, work = tmp / "home", tmp / "work"
    work.mkdir()
    home.mkdir()
    return home, work


def test_tilde_output_and_cache(tmp_path):
    """``--output_path=~/x`` and ``--cache_dir=~/c`` (the shell leaves a ``~`` after ``=``): the files
    land under the home folder, none in a folder named ``~`` (was: results in ``./~/x`` and an empty
    ``~/x``; the cache split between ``./~/c`` and ``~/c``)."""
    home, work = _home(tmp_path)
    args = argv(tmp_path, "--output_path=~/x", "--cache_dir=~/c")
    result = run_cli(CLI, args, env={"HOME": str(home)}, cwd=work)
    assert result.rc == 0, result.err[-2000:]
    assert not (work / "~").exists()
    assert results_of(home / "x")["n-samples"]["tt"]["scored"] == 5
    assert (home / "c" / "responses.sqlite").is_file()
    assert re.search(r"wrote \S*" + re.escape(str(home / "x")), result.out), result.out[-500:]


def test_tilde_include_path_and_model(tmp_path):
    """``--include_path ~/t`` and ``--model_args pretrained=~/m``: both read from the home folder,
    and the model's identity records the expanded folder (was: ``--include_path ~/t``: no such
    folder; ``pretrained=~/m`` hashed from the home folder but handed to transformers as a Hub id)."""
    import shutil

    home, work = _home(tmp_path)
    shutil.copytree(SHARED["stand_in"], home / "m")
    tasks(home, name="t")
    args = ["--model", StandIn.name, "--model_args", "pretrained=~/m", "--tasks", "tt", "--include_path", "~/t"]
    args += ["--cache_dir", str(SHARED["cache"]), "--no_cache", "--output_path", str(tmp_path / "out")]
    result = run_cli(CLI, args, env={"HOME": str(home)}, cwd=work)
    assert result.rc == 0, result.err[-2000:]
    assert results_of(tmp_path / "out")["model_identity"]["pretrained"] == str(home / "m")
