"""Start-up stays light (issue 23): the CLI's ``--help`` path imports none of the heavy libraries,
and checking a PALM build config (what the ``prepare_dataset`` hook does on every run) does not
import ``scipy.signal``; :class:`lalm_eval.timings.Timings` adds up its stages."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from lalm_eval.timings import Timings, process_age

HEAVY = ("torch", "transformers", "datasets", "matplotlib", "jinja2", "sacrebleu", "scipy.signal", "pyarrow")


def _imported_after(code: str) -> list[str]:
    probe = f"import json, sys\n{code}\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_cli_help_imports_no_heavy_library():
    code = (
        "import contextlib, io\nfrom lalm_eval import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        cli.main(['--help'])\n    except SystemExit:\n        pass"
    )
    assert _imported_after(code) == []


def test_build_config_check_imports_no_scipy_signal():
    assert "scipy.signal" not in _imported_after("from palm_bench.config import load_preset\nload_preset('small')")


def test_timings_block_sums_to_at_most_the_wall_time():
    timings = Timings()
    with timings.stage("a"):
        time.sleep(0.02)
    with timings.stage("b"):
        time.sleep(0.01)
    timings.add("b", -5)  # a negative duration counts as nothing
    block = timings.block()
    assert block["stages"]["a"] >= 0.02 and 0.01 <= block["stages"]["b"] < 0.5
    assert sum(block["stages"].values()) <= block["wall_s"] + 0.002  # rounding to the millisecond
    if sys.platform.startswith("linux"):
        assert "startup" in block["stages"] and 0 <= process_age() < 3600
