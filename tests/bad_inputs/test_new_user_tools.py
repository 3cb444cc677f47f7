"""Round 2 of issue 20, the new user's findings about the tools around a run: the judges' and the
builders' text LLMs (``--judge``, ``--llm`` / ``--llm-option``), ``lalm-eval doctor``, ``lalm-eval
check``, ``lalm-eval train``'s recipe and setting, and ``lalm-eval make-tiny-model``'s output folder.

Every bad input is one error in the project's shape before any model is built or any answer
generated (the counting adapter below is never constructed), or, for ``doctor``, a ``FAIL`` line
and exit 1. The data: one tiny Parquet + card folder (2 test docs of 1-s tones), its task YAML,
and a stand-in model folder (config, an empty weights file, a chat template: what the cheap
checks look at); the one real tiny model is built by the make-tiny-model cases.

``doctor``'s import and codec probes (seconds, and not what these cases are about: they are
``tests/test_doctor.py``'s) answer "usable" here; its cache and model-args lines run for real.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lalm_eval import doctor
from lalm_eval.models import MODELS
from tests.bad_inputs.harness import Case, assert_error_shape, run_case, run_cli
from tests.bad_inputs.test_cli_inputs import HOOKS, TASK, Counting, write_dataset

CLI = "lalm-eval"
SH: dict = {}  # built once for the module (the `shared` fixture)
LORA_ATTN = (Path(__file__).resolve().parents[2] / "lalm_eval/training/recipes/lora_attn.yaml").read_text()


@pytest.fixture(scope="module", autouse=True)
def shared(tmp_path_factory):
    if Counting.name not in MODELS:
        MODELS.register(Counting.name, Counting)
    root = tmp_path_factory.mktemp("new_user_tools")
    SH["ds"] = write_dataset(root / "ds", {"test": 2})
    SH["cache"] = root / "cache"
    tasks = root / "tasks"
    tasks.mkdir()
    (tasks / "t.yaml").write_text(TASK.format(ds=SH["ds"]), encoding="utf-8")
    (tasks / "utils.py").write_text(HOOKS, encoding="utf-8")
    SH["tasks"] = tasks
    SH["model"] = stand_in_model(root / "model")
    with pytest.MonkeyPatch.context() as mp:
        ok = doctor.Line(doctor.OK, "", "")
        mp.setattr(doctor, "check_codec", lambda: [ok, ok])
        mp.setattr(doctor, "_import_error", lambda module: None)
        mp.setattr(doctor, "_vllm_venv", lambda: None)
        yield SH


@pytest.fixture(autouse=True)
def fresh_counts():
    Counting.built = Counting.asked = 0


def stand_in_model(folder: Path) -> Path:
    """What the cheap model-folder checks look at: config.json, a weights file, a chat template."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": "{{ messages }}"}))
    return folder


def a_file(tmp: Path) -> Path:
    path = tmp / "a_file"
    path.write_text("not a folder\n")
    return path


def no_model(tmp, result) -> None:
    """The error came before any model was built, so no model call was made."""
    assert Counting.built == 0 and Counting.asked == 0, (Counting.built, Counting.asked)


# -- F3 F4 F5: --judge and --llm-option ----------------------------------------------------------


def run_argv(tmp: Path, *extra) -> list[str]:
    argv = ["--model", Counting.name, "--tasks", "tt", "--include_path", str(SH["tasks"])]
    return argv + ["--cache_dir", str(SH["cache"]), "--no_cache"] + [str(a) for a in extra]


def judge(spec, says):
    """A run whose ``--judge`` is ``spec`` (``{tmp}`` / ``{model}`` filled in)."""
    return dict(
        make=lambda tmp: run_argv(tmp, "--judge", spec.format(tmp=tmp, model=SH["model"])),
        says=("--judge", *says),
        check=no_model,
    )


def nothing_left(name: str):
    """A build stopped by its flags leaves no folder (nor a stage) at ``--out``."""

    def check(tmp, result):
        assert not (tmp / name).exists(), sorted(p.name for p in tmp.iterdir())
        assert not list(tmp.glob(f"{name}.tmp-*")), sorted(p.name for p in tmp.iterdir())

    return check


def llm_build(cli: str, *options, llm: str = "openai", says=()):
    def make(tmp):
        argv = ["build", "--llm", llm, "--out", str(tmp / "built")]
        for option in options:
            argv += ["--llm-option", option.format(tmp=tmp)]
        return argv

    return dict(make=make, says=says, check=nothing_left("built"))


def no_weights(tmp: Path) -> list[str]:
    folder = tmp / "no_weights"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return run_argv(tmp, "--judge", f"hf:pretrained={folder}")


JUDGE_CASES = [
    # F3: a base_url urllib cannot open (scheme, host, port), found when the judge is built
    Case("nu-tools-judge-url-no-scheme", CLI, **judge("openai:model=x,base_url=notaurl", ("base_url", "'notaurl'"))),
    # a dry run builds the judge too (nothing is sent), so a bad spec is not found only by the real run
    Case(
        "nu-tools-judge-url-no-scheme-dry-run",
        CLI,
        make=lambda tmp: run_argv(tmp, "--dry_run", "--judge", "openai:model=x,base_url=notaurl"),
        says=("--judge", "base_url"),
        check=no_model,
    ),
    Case("nu-tools-judge-url-no-host", CLI, **judge("openai:model=x,base_url=http:///v1", ("base_url", "host"))),
    Case("nu-tools-judge-url-bad-port", CLI, **judge("openai:model=x,base_url=http://h:8o00/v1", ("base_url", "port"))),
    Case(
        "nu-tools-judge-preset-url-ftp",
        CLI,
        **judge("palm_paper:base_url=ftp://127.0.0.1/v1", ("base_url", "http:// or https://")),
    ),
    # F4: every option by type and range, named with the flag, a fix after it
    Case(
        "nu-tools-judge-temperature-text",
        CLI,
        **judge("palm_paper:base_url=http://127.0.0.1:9/v1,temperature=hot", ("temperature", "'hot'", "temperature=")),
    ),
    Case(
        "nu-tools-judge-max-tokens-text", CLI, **judge("openai:model=x,max_tokens=abc", ("max_tokens", "whole number"))
    ),
    Case("nu-tools-judge-top-p-above-one", CLI, **judge("openai:model=x,top_p=1.5", ("top_p", "at most 1"))),
    Case("nu-tools-judge-concurrency-zero", CLI, **judge("openai:model=x,concurrency=0", ("concurrency", ">= 1"))),
    Case("nu-tools-judge-timeout-nan", CLI, **judge("openai:model=x,timeout=.nan", ("timeout", "finite"))),
    Case(
        "nu-tools-judge-option-misspelt",
        CLI,
        **judge("openai:model=x,temprature=0", ("unknown option 'temprature'", "did you mean 'temperature'")),
    ),
    Case(
        "nu-tools-judge-backend-misspelt",
        CLI,
        **judge("opnai:model=x", ("unknown backend or preset 'opnai'", "did you mean 'openai'", "palm_paper")),
    ),
    Case("nu-tools-judge-model-missing", CLI, **judge("openai:base_url=http://h/v1", ("model", "required"))),
    Case("nu-tools-judge-option-twice", CLI, **judge("openai:model=x,model=y", ("model", "given twice"))),
    Case("nu-tools-judge-api-key-env-bad", CLI, **judge("openai:model=x,api_key_env=MY-KEY", ("api_key_env",))),
    Case("nu-tools-judge-hf-dtype-unknown", CLI, **judge("hf:pretrained={model},dtype=bf16", ("dtype", "'bfloat16'"))),
    Case("nu-tools-judge-hf-batch-size-zero", CLI, **judge("hf:pretrained={model},batch_size=0", ("batch_size",))),
    # F5: the hf judge's model folder checked when --judge is read, before any answer
    Case(
        "nu-tools-judge-hf-folder-missing",
        CLI,
        **judge("hf:pretrained={tmp}/nonexistent", ("pretrained '{tmp}/nonexistent'", "no such folder", "give a")),
    ),
    Case(
        "nu-tools-judge-hf-file",
        CLI,
        make=lambda tmp: run_argv(tmp, "--judge", f"hf:pretrained={a_file(tmp)}"),
        says=("--judge", "is a file"),
        check=no_model,
    ),
    Case("nu-tools-judge-hf-no-weights", CLI, make=no_weights, says=("--judge", "no weights"), check=no_model),
    # F4 in the builders: --llm-option, and --llm itself
    Case(
        "nu-tools-msu-llm-option-temperature-text",
        "msu-bench",
        **llm_build("msu-bench", "model=x", "temperature=hot", says=("--llm-option", "temperature", "'hot'")),
    ),
    Case(
        "nu-tools-msu-llm-option-url",
        "msu-bench",
        **llm_build("msu-bench", "model=x", "base_url=127.0.0.1:8000/v1", says=("--llm-option", "base_url")),
    ),
    Case(
        "nu-tools-msu-llm-option-timeout-negative",
        "msu-bench",
        **llm_build("msu-bench", "model=x", "timeout=-5", says=("--llm-option", "timeout", "> 0")),
    ),
    Case(
        "nu-tools-msu-llm-misspelt",
        "msu-bench",
        **llm_build("msu-bench", "model=x", llm="opnai", says=("--llm", "'opnai'", "did you mean 'openai'")),
    ),
    Case(
        "nu-tools-palm-llm-option-max-tokens-text",
        "palm-bench",
        **llm_build("palm-bench", "model=x", "max_tokens=many", says=("--llm-option", "max_tokens", "whole number")),
    ),
    Case(
        "nu-tools-palm-llm-option-misspelt",
        "palm-bench",
        **llm_build("palm-bench", "model=x", "concurency=4", says=("--llm-option", "did you mean 'concurrency'")),
    ),
    Case(
        "nu-tools-palm-llm-hf-folder-missing",
        "palm-bench",
        **llm_build(
            "palm-bench", "pretrained={tmp}/nope", llm="hf", says=("--llm-option", "pretrained", "no such folder")
        ),
    ),
]


# -- F7 F25: doctor --------------------------------------------------------------------------------


def doctor_line(result, name: str) -> str:
    lines = [ln for ln in result.out.splitlines() if ln[9:31].rstrip() == name]
    assert lines, f"no {name!r} line:\n{result.out}"
    return lines[-1]


def fails(name: str, *fragments: str):
    """``doctor`` printed a FAIL line ``name`` holding each fragment, and its summary names it."""

    def check(tmp, result):
        line = doctor_line(result, name)
        assert line.startswith("FAIL "), line
        for fragment in fragments:
            assert fragment.format(tmp=tmp, model=SH["model"]).lower() in line.lower(), (fragment, line)
        assert result.out.strip().splitlines()[-1].startswith("doctor: 1 problem(s)"), result.out[-500:]

    return dict(exit=1, check=check)


def passes(name: str, *fragments: str):
    def check(tmp, result):
        line = doctor_line(result, name)
        assert line.startswith("ok "), line
        for fragment in fragments:
            assert fragment.format(tmp=tmp, model=SH["model"]) in line, (fragment, line)

    return dict(exit=0, check=check)


def doctor_argv(*argv):
    return lambda tmp: ["doctor", *[str(a).format(tmp=tmp, model=SH["model"]) for a in argv]]


def with_file(*argv):
    def make(tmp):
        a_file(tmp)
        return doctor_argv(*argv)(tmp)

    return make


def soft_prompts_without_index(tmp):
    (tmp / "sp").mkdir()
    return doctor_argv("--model", "qwen2_audio", "--model_args", "pretrained={model},soft_prompts={tmp}/sp")(tmp)


DOCTOR_CASES = [
    # F7: the cache folder as a run would use it
    Case(
        "nu-tools-doctor-cache-env-is-a-file",
        CLI,
        make=with_file(),
        env={"LALM_EVAL_CACHE": "{tmp}/a_file"},
        **fails("cache directory", "{tmp}/a_file (LALM_EVAL_CACHE): is a file", "point LALM_EVAL_CACHE at"),
    ),
    Case(
        "nu-tools-doctor-cache-under-a-file",
        CLI,
        make=with_file("--cache_dir", "{tmp}/a_file/cache"),
        **fails("cache directory", "(--cache_dir): is under {tmp}/a_file, which is a file"),
    ),
    Case(
        "nu-tools-doctor-cache-unwritable",
        CLI,
        make=doctor_argv("--cache_dir", "/proc/lalm_eval_cache"),
        **fails("cache directory", "cannot write there"),
    ),
    Case(
        "nu-tools-doctor-cache-new-folder-ok",  # pins what was right: a folder not made yet is fine
        CLI,
        make=doctor_argv("--cache_dir", "{tmp}/new/cache"),
        **passes("cache directory", "not created yet"),
    ),
    # F25: --model_args read as the run reads them, and the folders they name checked
    Case(
        "nu-tools-doctor-model-args-not-key-value",
        CLI,
        make=doctor_argv("--model", "hf-audio", "--model_args", "pretrained"),
        **fails("--model_args", "'pretrained' is not key=value"),
    ),
    Case(
        "nu-tools-doctor-pretrained-missing",
        CLI,
        make=doctor_argv("--model", "qwen2_audio", "--model_args", "pretrained={tmp}/nope"),
        **fails("--model_args", "pretrained={tmp}/nope: no such folder"),
    ),
    Case(
        "nu-tools-doctor-pretrained-without-config",
        CLI,
        make=doctor_argv("--model", "qwen2_audio", "--model_args", "pretrained={tmp}"),
        **fails("--model_args", "no config.json"),
    ),
    Case(
        "nu-tools-doctor-peft-missing",
        CLI,
        make=doctor_argv("--model", "qwen2_audio", "--model_args", "pretrained={model},peft={tmp}/nope"),
        **fails("--model_args", "peft={tmp}/nope: no such folder", "adapter_config.json"),
    ),
    Case(
        "nu-tools-doctor-soft-prompts-without-index",
        CLI,
        make=soft_prompts_without_index,
        **fails("--model_args", "soft_prompts={tmp}/sp", "index.json"),
    ),
    Case(
        "nu-tools-doctor-model-arg-misspelt",
        CLI,
        make=doctor_argv("--model", "qwen2_audio", "--model_args", "pretrained={model},pft=x"),
        **fails("--model_args", "no argument 'pft'", "did you mean 'peft'"),
    ),
    Case(
        "nu-tools-doctor-model-arg-required",
        CLI,
        make=doctor_argv("--model", "qwen2_audio", "--model_args", "dtype=bfloat16"),
        **fails("--model_args", "needs pretrained="),
    ),
    Case(
        "nu-tools-doctor-model-args-ok",  # the same run's args, right: ok, exit 0
        CLI,
        make=doctor_argv("--model", "qwen2_audio", "--model_args", "pretrained={model}"),
        **passes("--model_args", "pretrained={model}"),
    ),
]


# -- F18 F19: train --recipe / --setting -----------------------------------------------------------


def train_argv(tmp: Path, recipe: str, *extra) -> list[str]:
    argv = ["train", "--model", "qwen2_audio", "--model_args", f"pretrained={SH['model']}", "--tasks", "tt"]
    argv += ["--include_path", str(SH["tasks"]), "--recipe", recipe, "--output_dir", str(tmp / "trained")]
    return argv + ["--cache_dir", str(SH["cache"]), "--max_steps", "1"] + [str(a) for a in extra]


def recipe_case(*edits: tuple[str, str], text: str | None = None, raw: bytes | None = None, says=()):
    """``train --recipe r.yaml``, the file being lora_attn.yaml with ``edits`` (or ``text`` / ``raw``):
    refused, naming the file, before the model is built or --output_dir made."""

    def make(tmp):
        path = tmp / "r.yaml"
        body = LORA_ATTN
        for old, new in edits:
            assert old in body, old
            body = body.replace(old, new)
        if raw is not None:
            path.write_bytes(raw)
        else:
            path.write_text(body if text is None else text, encoding="utf-8")
        return train_argv(tmp, str(path))

    def check(tmp, result):
        assert not (tmp / "trained").exists()

    return dict(make=make, says=("--recipe {tmp}/r.yaml", *says), check=check)


def setting_case(recipe: str, setting: str, says=()):
    def check(tmp, result):
        assert not (tmp / "trained").exists()

    return dict(make=lambda tmp: train_argv(tmp, recipe, "--setting", setting), says=says, check=check)


TRAIN_CASES = [
    # F18: the recipe file read and checked like task YAML
    Case("nu-tools-recipe-yaml-syntax", CLI, **recipe_case(text="foo: [\n", says=("r.yaml:2", "invalid yaml"))),
    Case("nu-tools-recipe-not-a-mapping", CLI, **recipe_case(text="- a\n- b\n", says=("a list, not a mapping",))),
    Case("nu-tools-recipe-empty", CLI, **recipe_case(text="# nothing\n", says=("is empty", "name, method"))),
    Case("nu-tools-recipe-not-utf8", CLI, **recipe_case(raw="name: é\n".encode("latin-1"), says=("not utf-8",))),
    Case(
        "nu-tools-recipe-unknown-key",
        CLI,
        **recipe_case(("optim: adamw_torch", "optim: adamw_torch\nepochs: 3"), says=("unknown recipe key 'epochs'",)),
    ),
    Case(
        "nu-tools-recipe-training-unknown-key",
        CLI,
        **recipe_case(
            ("  optim: adamw_torch", "  optim: adamw_torch\n  weight_decay: 0.1"),
            says=("training", "unknown key 'weight_decay'"),
        ),
    ),
    Case(
        "nu-tools-recipe-learning-rate-text",
        CLI,
        **recipe_case(("learning_rate: 1.0e-5", "learning_rate: fast"), says=("learning_rate", "'fast'")),
    ),
    Case(
        "nu-tools-recipe-learning-rate-missing",
        CLI,
        **recipe_case(("  learning_rate: 1.0e-5\n", ""), says=("learning_rate", "required")),
    ),
    Case("nu-tools-recipe-lora-rank-zero", CLI, **recipe_case(("r: 8", "r: 0"), says=("lora", "r: must be"))),
    Case(
        "nu-tools-recipe-placement-misspelt",
        CLI,
        **recipe_case(("placement: attn", "placement: atn"), says=("placement 'atn'", "did you mean 'attn'")),
    ),
    Case(
        "nu-tools-recipe-method-unknown",
        CLI,
        **recipe_case(("method: lora", "method: qlora"), says=("method", "full, lora, prompt_tuning")),
    ),
    Case(
        "nu-tools-recipe-setting-not-a-mapping",
        CLI,
        **recipe_case(
            ("multi_speaker: {learning_rate: 1.0e-4, num_train_epochs: 5}", "multi_speaker: 3"),
            says=("settings.multi_speaker", "not a mapping"),
        ),
    ),
    Case(
        "nu-tools-recipe-setting-value-wrong",
        CLI,
        **recipe_case(
            ("{learning_rate: 1.0e-4, num_train_epochs: 5}", "{learning_rate: -1, num_train_epochs: 5}"),
            says=("settings.multi_speaker", "learning_rate"),
        ),
    ),
    Case(
        "nu-tools-recipe-key-of-another-method",
        CLI,
        **recipe_case(("method: lora", "method: full"), says=("placement applies to method lora", "method: lora")),
    ),
    # F19: a setting the recipe does not have
    Case(
        "nu-tools-train-setting-unknown",
        CLI,
        **setting_case("lora_attn", "bogus", says=("--setting", "no setting 'bogus'", "its settings: multi_speaker")),
    ),
    Case(
        "nu-tools-train-setting-misspelt",
        CLI,
        **setting_case("lora_attn", "multi-speaker", says=("--setting", "did you mean 'multi_speaker'")),
    ),
    Case(
        "nu-tools-train-setting-grid",  # a sweep grid trains every point (issue 21): one --learning_rate for all refused
        CLI,
        **{
            **setting_case("full", "grid"),
            "make": lambda tmp: train_argv(tmp, "full", "--setting", "grid", "--learning_rate", "1e-4"),
            "says": ("--learning_rate: --setting grid sweeps the learning rate", "leave out --learning_rate"),
        },
    ),
]


# -- F27: check, both models before anything runs ---------------------------------------------------


def check_argv(*extra):
    def make(tmp):
        argv = ["check", "--model", Counting.name, "--tasks", "tt", "--include_path", str(SH["tasks"])]
        return argv + ["--cache_dir", str(SH["cache"]), "--limit", "2"] + [str(a).format(tmp=tmp) for a in extra]

    return make


CHECK_CASES = [
    Case(
        "nu-tools-check-model-b-unknown",
        CLI,
        make=check_argv("--model_b", "qwen3_audio"),
        says=("--model_b: unknown model 'qwen3_audio'", "did you mean"),
        check=no_model,
    ),
    Case(
        "nu-tools-check-model-args-b-misspelt",
        CLI,
        make=check_argv("--model_b", Counting.name, "--model_args_b", "anwser=B"),
        says=("--model_args_b", "did you mean 'answer'"),
        check=no_model,
    ),
    Case(
        "nu-tools-check-model-b-pretrained-missing",
        CLI,
        make=check_argv("--model_b", "qwen2_audio", "--model_args_b", "pretrained={tmp}/nope"),
        says=("--model_args_b", "pretrained={tmp}/nope", "no such folder"),
        check=no_model,
    ),
    Case(
        "nu-tools-check-model-b-inherits-args",
        CLI,
        make=check_argv("--model_args", "answer=A", "--model_b", "qwen2_audio"),
        says=("--model_args (--model_b takes them too", "no argument 'answer'"),
        check=no_model,
    ),
    Case(
        "nu-tools-check-model-args-b-without-model-b",
        CLI,
        make=check_argv("--model_args_b", "answer=B"),
        says=("--model_args_b", "without --model_b"),
        check=no_model,
    ),
    Case(
        "nu-tools-check-model-a-args-misspelt",
        CLI,
        make=check_argv("--model_args", "anwser=A", "--batch_sizes", "1,2"),
        says=("--model_args", "did you mean 'answer'"),
        check=no_model,
    ),
]


# -- F32: make-tiny-model never overwrites a user's files, never leaves a half model ---------------


def user_folder(tmp: Path, *files: str) -> dict[str, str]:
    folder = tmp / "userdir"
    folder.mkdir()
    for name in files:
        (folder / name).write_text(f"the user's {name}\n")
    return {p.name: p.read_text() for p in folder.iterdir()}


def untouched(tmp, result) -> None:
    folder = tmp / "userdir"
    assert {p.name: p.read_text() for p in folder.iterdir()} == SH[f"before-{tmp.name}"]
    assert sorted(p.name for p in tmp.iterdir() if p.name.startswith("userdir")) == ["userdir"]


def into_user_folder(*files: str):
    def make(tmp):
        SH[f"before-{tmp.name}"] = user_folder(tmp, *files)
        return ["make-tiny-model", "qwen2_audio", str(tmp / "userdir")]

    return make


def fake_tiny_model(folder: Path, *extra: str) -> None:
    """An earlier tiny model as this command leaves it (its files listed in tiny_model.json), and ``extra`` files beside them."""
    from lalm_eval.models.tiny import MADE_BY, MARKER

    folder.mkdir(parents=True)
    for name in ("config.json", "old_weights.safetensors", *extra):
        (folder / name).write_text("{}")
    made = {"made_by": MADE_BY, "arch": "qwen2_audio", "files": ["config.json", "old_weights.safetensors"]}
    (folder / MARKER).write_text(json.dumps(made))


def tiny_model_with_user_file(tmp):
    fake_tiny_model(tmp / "userdir", "mine.txt")
    SH[f"before-{tmp.name}"] = {p.name: p.read_text() for p in (tmp / "userdir").iterdir()}
    return ["make-tiny-model", "qwen2_audio", str(tmp / "userdir")]


def over_earlier_tiny_model(tmp):
    fake_tiny_model(tmp / "tiny")
    return ["make-tiny-model", "qwen2_audio", str(tmp / "tiny")]


def replaced_whole(tmp, result):
    """The earlier tiny model replaced by a complete new one: its old files gone, the new one's listed."""
    folder = tmp / "tiny"
    made = json.loads((folder / "tiny_model.json").read_text())
    assert made["arch"] == "qwen2_audio" and "model.safetensors" in made["files"]
    assert sorted(p.name for p in folder.iterdir()) == sorted([*made["files"], "tiny_model.json"])
    assert json.loads((folder / "config.json").read_text())["model_type"] == "qwen2_audio"
    assert sorted(p.name for p in tmp.iterdir()) == ["tiny"]  # no stage, no old copy beside it


def after_a_killed_make(tmp):
    """What ``kill -9`` during a make leaves beside the folder: its stage, named by a pid that is gone."""
    dead = 2**22 + 12345  # above any pid_max default: no such process
    stage = tmp / f"tiny.tiny-tmp-{dead}"
    stage.mkdir()
    (stage / "config.json").write_text("{half")
    return ["make-tiny-model", "qwen2_audio", str(tmp / "tiny")]


TINY_CASES = [
    Case(
        "nu-tools-tiny-into-user-folder",
        CLI,
        make=into_user_folder("notes.txt", "config.json"),
        says=("make-tiny-model OUT_DIR {tmp}/userdir", "not empty (config.json, notes.txt)", "nothing was written"),
        check=untouched,
    ),
    Case(
        "nu-tools-tiny-into-real-model-folder",
        CLI,
        make=into_user_folder("config.json", "model.safetensors", "tokenizer.json"),
        says=("{tmp}/userdir", "not a tiny model this command made"),
        check=untouched,
    ),
    Case(
        "nu-tools-tiny-model-with-user-file",
        CLI,
        make=tiny_model_with_user_file,
        says=("{tmp}/userdir", "files the model did not write (mine.txt)"),
        check=untouched,
    ),
    Case("nu-tools-tiny-over-earlier-tiny-model", CLI, make=over_earlier_tiny_model, exit=0, check=replaced_whole),
    Case("nu-tools-tiny-after-killed-make", CLI, make=after_a_killed_make, exit=0, check=replaced_whole),
]

CASES = JUDGE_CASES + DOCTOR_CASES + TRAIN_CASES + CHECK_CASES + TINY_CASES
EXTRA_CASE_IDS = ["nu-tools-tiny-into-cwd", "nu-tools-tiny-crash-keeps-the-earlier-model"]


@pytest.mark.parametrize("case", [c.param() for c in CASES])
def test_bad_input(case, tmp_path):
    run_case(case, tmp_path)


def test_tiny_into_the_current_folder(tmp_path):
    """``make-tiny-model qwen2_audio .`` in a folder of the user's: refused (the model is renamed
    into place, which the current folder cannot be), the files there untouched."""
    cwd = tmp_path / "cwdtest"
    cwd.mkdir()
    (cwd / "mine.txt").write_text("keep\n")
    result = run_cli(CLI, ["make-tiny-model", "qwen2_audio", "."], cwd=cwd)
    assert result.rc == 2, result.err[-2000:]
    assert_error_shape(CLI, result)
    assert "OUT_DIR .: is the current folder" in result.error_line, result.error_line
    assert sorted(p.name for p in cwd.iterdir()) == ["mine.txt"] and (cwd / "mine.txt").read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwdtest"]


def test_tiny_crash_keeps_the_earlier_model(tmp_path, monkeypatch):
    """A make that dies half-way (here: interrupted after its first file) leaves the earlier tiny
    model whole under its name and nothing beside it: the new one is staged, renamed in only when
    complete."""
    from lalm_eval.models import tiny

    fake_tiny_model(tmp_path / "tiny")
    before = {p.name: p.read_text() for p in (tmp_path / "tiny").iterdir()}

    def half(out, **_):
        (Path(out) / "config.json").write_text('{"half": true}')
        raise KeyboardInterrupt

    monkeypatch.setitem(tiny._BUILDERS, "qwen2_audio", half)
    result = run_cli(CLI, ["make-tiny-model", "qwen2_audio", str(tmp_path / "tiny")])
    assert result.rc == 130, result.err[-2000:]
    assert {p.name: p.read_text() for p in (tmp_path / "tiny").iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny"], os.listdir(tmp_path)
