"""A non-editable wheel install carries tasks/ and hub_cards/ and finds them."""

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
                   cwd=ROOT, check=True, capture_output=True)
    (whl,) = out.glob("lalm_eval-*.whl")
    return whl


def test_wheel_contains_resources_and_corpus(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "lalm_eval/_resources/tasks/README.md" in names
    assert "lalm_eval/_resources/hub_cards/README.md" in names
    assert "palm_bench/corpus/data/manifest.jsonl" in names
    assert "msu_bench/conversations/data/manifest.jsonl" in names
    assert "msu_bench/taxonomy.yaml" in names and "palm_bench/templates/multi_speaker.yaml" in names
    assert sum(n.endswith(".opus") for n in names) >= 700 + 16


def test_fresh_venv_install_resolves_tasks_and_cards(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    # system site-packages provide the heavy dependencies; the package itself comes from the wheel
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
                   check=True, capture_output=True)
    probe = ("import json, lalm_eval, palm_bench.corpus.embedded as e;"
             "from lalm_eval.resources import tasks_dir, hub_cards_dir;"
             "print(json.dumps({'pkg': lalm_eval.__file__, 'tasks': str(tasks_dir()),"
             "'cards': str(hub_cards_dir()), 'n': len(e.load_embedded_corpus().utterances)}))")
    out = subprocess.run([str(py), "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["pkg"].startswith(str(env_dir))
    assert got["tasks"].startswith(str(env_dir)) and Path(got["tasks"], "README.md").is_file()
    assert got["cards"].startswith(str(env_dir)) and Path(got["cards"], "README.md").is_file()
    assert got["n"] >= 500
    cli = subprocess.run([str(env_dir / "bin" / "lalm-eval"), "paths"], cwd=tmp_path,
                         capture_output=True, text=True, check=True)
    assert json.loads(cli.stdout)["tasks"] == got["tasks"]
