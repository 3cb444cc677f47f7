"""scripts/install_stamp.py: when scripts/install.sh installs nothing (the main job after the tests'
install, a second run), and when it must install."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "install_stamp.py"
spec = importlib.util.spec_from_file_location("install_stamp", SCRIPT)
stamp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stamp)

DIGEST, CHECKOUT = "db27386b7610a3d9", str(ROOT)


@pytest.mark.parametrize(
    ("installed", "wanted", "expected"),
    [
        (".[dev]", "train,asr", True),  # the main job after scripts/test.sh
        (".[dev]", "", True),  # the core, by smoke_core.sh's LALM_EXTRAS=
        (".[dev]", "dev", True),
        (".[train,asr]", "train,asr", True),  # a second main job
        (".[train,asr]", "asr", True),
        (".[train,asr]", "dev", False),  # scripts/test.sh after the main job: the test tools
        (".[train,asr]", "api", False),
        (".", "train", False),
        (".[dev]", "ecapa", False),  # dev leaves ecapa out
    ],
)
def test_requested_extras_against_the_installed_ones(installed, wanted, expected):
    assert stamp.covered(f"{DIGEST} {installed} {CHECKOUT}", DIGEST, wanted, CHECKOUT) is expected


def test_dev_stands_for_the_extras_pyproject_gives_it():
    assert {"api", "train", "asr", "lhotse", "track", "docs"} <= stamp.dev_extras(CHECKOUT)
    assert "ecapa" not in stamp.dev_extras(CHECKOUT)


@pytest.mark.parametrize(
    "line",
    [
        "",  # no stamp: a new environment
        f"0000000000000000 .[dev] {CHECKOUT}",  # pyproject.toml changed since
        f"{DIGEST} .[dev] /another/checkout",  # the environment of another checkout
        "garbage",
    ],
)
def test_a_missing_or_stale_stamp_covers_nothing(line):
    assert stamp.covered(line, DIGEST, "", CHECKOUT) is False


def test_the_command_line_prints_yes_or_no():
    run = lambda line, wanted: subprocess.run(  # noqa: E731
        [sys.executable, str(SCRIPT), line, DIGEST, wanted, CHECKOUT], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert run(f"{DIGEST} .[dev] {CHECKOUT}", "train,asr") == "yes"
    assert run(f"{DIGEST} . {CHECKOUT}", "train,asr") == "no"
