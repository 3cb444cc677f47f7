"""The documentation is tested (docs/index.md, "How the commands on these pages are tested"):
every fenced shell block of README.md and docs/*.md is marked; `run` blocks run on the embedded
corpus and a tiny model in one shared working folder; `help` blocks' flags exist in their
command's `--help`; the MkDocs site builds with --strict."""

import os
import re
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from docs_blocks import ROOT, Block, all_blocks, invocations  # noqa: E402

BLOCKS = all_blocks()
BIN = Path(sys.executable).parent


def by_mode(*modes):
    return [pytest.param(b, id=b.id) for b in BLOCKS if b.mode in modes]


def test_every_shell_block_is_marked():
    unmarked = [b.id for b in BLOCKS if b.mode is None]
    assert not unmarked, (
        "shell blocks without a <!-- docs-test: run|help|skip: reason --> line before them: " + ", ".join(unmarked)
    )
    assert all(b.options.get("reason") for b in BLOCKS if b.mode == "skip"), "a skip needs its reason"


def test_the_readme_shows_the_quick_start_and_stays_short():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "bash scripts/main.sh" in text and "bash scripts/test.sh" in text
    assert len(text.splitlines()) <= 200
    assert len([b for b in BLOCKS if b.page == "README.md" and b.mode == "run"]) >= 4


def script(block: Block) -> str:
    text = block.text
    if "limit" in block.options:
        text = re.sub(r"--limit \d+", f"--limit {int(block.options['limit'])}", text)
    return text


def env(cache: Path | None = None) -> dict:
    """The blocks' environment: ``.venv/bin`` first on ``PATH``; with ``cache``, their own caches
    there (lalm-eval's, and Hugging Face's with the datasets one), not the user's."""
    e = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", OMP_NUM_THREADS="1")
    e.pop("LALM_EVAL_DEBUG", None)
    if cache is not None:
        e.update(
            LALM_EVAL_CACHE=str(cache / "lalm_eval"),
            HF_HOME=str(cache / "huggingface"),
            HF_DATASETS_CACHE=str(cache / "huggingface" / "datasets"),
        )
    return e


def run_block(block: Block, cwd: Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script(block)],
        cwd=cwd,
        env=env(cache),
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.fixture(scope="session")
def docs_work(tmp_path_factory):
    """One folder where the `run setup` blocks ran once, in page order: the builds, the tiny
    model and its first run, shared by every `run` block; and one cache folder beside it, the
    blocks' LALM_EVAL_CACHE and HF_HOME (the corpus a first run renders is rendered there once)."""
    work = tmp_path_factory.mktemp("docs-work")
    cache = tmp_path_factory.mktemp("docs-cache")
    results = {}
    for b in BLOCKS:
        if b.mode == "run" and b.options.get("setup"):
            results[b.id] = run_block(b, work, cache)
            if results[b.id].returncode:
                break
    return work, cache, results


def explain(block, proc):
    return f"{block.id} exited {proc.returncode}:\n{script(block)}\n--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}"


@pytest.mark.parametrize("block", by_mode("run"))
def test_run_block(block, docs_work):
    work, cache, results = docs_work
    if block.options.get("setup"):
        proc = results.get(block.id)
        assert proc is not None, f"{block.id}: an earlier setup block failed"
    else:
        proc = run_block(block, work, cache)
    assert proc.returncode == 0, explain(block, proc)


@cache
def help_text(prog: str, sub: str | None) -> str:
    exe = shutil.which(prog, path=str(BIN)) or prog
    if sub:
        proc = subprocess.run([exe, sub, "--help"], capture_output=True, text=True, env=env())
        if proc.returncode == 0:
            return proc.stdout
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True, env=env())
    assert proc.returncode == 0, f"{prog} --help exited {proc.returncode}: {proc.stderr[-2000:]}"
    return proc.stdout


@pytest.mark.parametrize("block", by_mode("help", "run"))
def test_flags_exist(block):
    missing = []
    for command in block.commands():
        for prog, sub, flags in invocations(command):
            text = help_text(prog, sub)
            missing += [
                f"{prog} {sub or ''} {f}" for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)
            ]
    assert not missing, f"{block.id}: flags its command's --help does not list: {missing}"


def test_mkdocs_build_strict(tmp_path):
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("mkdocs is not installed: pip install -e '.[docs]'")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "index.html").is_file()
