"""The bad-input suite's machinery: a table of :class:`Case` rows, each run through a real CLI.

A case says how its input is made (``make(tmp)`` writes files under the test's temporary folder
and returns the command line), which CLI runs it, and what must come out:

- ``exit=2`` with ``says``: the error is one line in the project's shape,
  ``<cli>: error: <file or flag>: <what is wrong>; <how to fix>``, no traceback, and it names the
  file / field / flag (each fragment of ``says`` is in it);
- an exit status with ``skips``: ``{reason fragment: count}`` counted in what the command printed
  (its ``--json`` output, or the text), e.g. a reader's skip list;
- ``check(ctx, result)``: anything else (an unchanged result, a file left as it was).

The CLIs run in-process (``palm_bench.cli.main``, ``msu_bench.cli.main``, ``lalm_eval.cli.main``),
so a case costs what its command costs, not an interpreter start-up; the cases that must kill a
process (``kill -9``) use :func:`run_killed`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

CLIS = {
    "palm-bench": "palm_bench.cli:main",
    "msu-bench": "msu_bench.cli:main",
    "lalm-eval": "lalm_eval.cli:main",
}
ROOT = Path(__file__).resolve().parents[2]


@dataclasses.dataclass
class Result:
    rc: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)

    @property
    def error_line(self) -> str:
        lines = [ln for ln in self.err.splitlines() if ": error: " in ln]
        return lines[-1] if lines else ""


@dataclasses.dataclass
class Case:
    """One bad or odd input and what the CLI must do with it (module docstring)."""

    id: str
    cli: str
    make: Callable[[Path], list[str]]
    exit: int = 2
    says: tuple[str, ...] = ()
    skips: dict[str, int] | None = None
    check: Callable[[Path, Result], None] | None = None
    shape: str = "project"  # "project" (`<cli>: error: where: what; fix`) or "argparse" (usage + error)
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    marks: tuple = ()

    def param(self):
        return pytest.param(self, id=self.id, marks=list(self.marks))


def run_cli(cli: str, argv: list[str], env: dict | None = None, cwd: Path | None = None) -> Result:
    """Run one of the three CLIs in this process, capturing its output (argparse's SystemExit
    becomes the status)."""
    import importlib

    module, _, attr = CLIS[cli].partition(":")
    main = getattr(importlib.import_module(module), attr)
    out, err = io.StringIO(), io.StringIO()
    saved_env = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    old_cwd = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = main([str(a) for a in argv])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        os.chdir(old_cwd)
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return Result(int(rc or 0), out.getvalue(), err.getvalue())


# `<cli>: error: <where>: <what>; <fix>` — where is a file, field or flag, the rest free text
SHAPE = r"^{cli}: error: (?P<where>\S[^;]*?): (?P<what>[^;]+?); (?P<fix>.+)$"


def assert_error_shape(cli: str, result: Result, shape: str = "project") -> re.Match | None:
    assert "Traceback" not in result.err, f"a traceback for bad input:\n{result.err}"
    if shape == "argparse":
        assert result.err.strip().splitlines()[-1].startswith(f"{cli}"), result.err
        assert ": error: " in result.err, result.err
        return None
    line = result.error_line
    match = re.match(SHAPE.format(cli=re.escape(cli)), line)
    assert match, f"not `{cli}: error: <file or flag>: <what is wrong>; <how to fix>`:\n{result.err}"
    return match


def count_skips(result: Result) -> dict[str, int]:
    """``{reason: n}`` from a command's output: the ``skips`` / ``skipped`` records of its JSON
    (any depth, each ``{"reason": ...}``), else each ``skipped <item>: <reason>`` text line."""
    counts: dict[str, int] = {}

    def walk(node):
        if isinstance(node, dict):
            if isinstance(node.get("reason"), str) and len(node) <= 4:
                counts[node["reason"]] = counts.get(node["reason"], 0) + 1
                return
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    try:
        walk(result.json())
    except ValueError:
        for m in re.finditer(r"skipped \S+: (.+)", result.out + result.err):
            counts[m.group(1)] = counts.get(m.group(1), 0) + 1
    return counts


def run_case(case: Case, tmp: Path) -> Result:
    argv = case.make(tmp)
    env = {k: v.format(tmp=tmp) for k, v in case.env.items()}
    result = run_cli(case.cli, argv, env=env or None)
    detail = f"\n--- stdout\n{result.out[-3000:]}\n--- stderr\n{result.err[-3000:]}"
    assert result.rc == case.exit, f"{case.id}: exit {result.rc}, want {case.exit}{detail}"
    if case.exit == 2:
        assert_error_shape(case.cli, result, case.shape)
        low = result.error_line.lower() if case.shape == "project" else result.err.lower()
        for fragment in case.says:
            frag = fragment.format(tmp=tmp)
            assert frag.lower() in low, f"{case.id}: {frag!r} not in the error{detail}"
    else:
        assert "Traceback" not in result.err, f"{case.id}: traceback{detail}"
    if case.skips is not None:
        found = count_skips(result)
        for fragment, n in case.skips.items():
            got = sum(v for reason, v in found.items() if fragment.lower() in reason.lower())
            assert got == n, f"{case.id}: {got} skips matching {fragment!r}, want {n}; skips: {found}{detail}"
    if case.check is not None:
        case.check(tmp, result)
    return result


def cli_command(cli: str) -> list[str]:
    """The interpreter command line that runs ``cli`` in a child process (for kill -9 cases)."""
    module = CLIS[cli].partition(":")[0]
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main(sys.argv[1:]))"]


def run_killed(cli: str, argv: list[str], when: Callable[[], bool], timeout: float = 120, env=None, cwd=None):
    """Start ``cli argv`` in a child process, wait until ``when()`` is true (polled), then
    ``kill -9`` its whole process group; returns whether it was still running when killed."""
    proc = subprocess.Popen(
        cli_command(cli) + [str(a) for a in argv],
        cwd=cwd or ROOT,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if when():
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return True
            time.sleep(0.05)
        err = proc.stderr.read().decode(errors="replace") if proc.poll() is not None else ""
        raise AssertionError(f"the command ended (rc {proc.poll()}) before the kill point was reached:\n{err[-2000:]}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
