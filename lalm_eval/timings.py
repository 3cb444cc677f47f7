"""Stage times of one ``lalm-eval`` run, written to the results JSON as its ``timings`` block.

``startup`` is the time from the process's start to :func:`lalm_eval.cli.main` (the interpreter and
the CLI's imports; Linux only, else left out); each later stage is timed where it runs. Seconds,
rounded to the millisecond; ``wall_s`` is the time from the process's start (or, without it, from
``main``) to the moment the block is written, so the stages sum to at most ``wall_s``.
"""

from __future__ import annotations

import contextlib
import os
import time


def process_age() -> float | None:
    """Seconds since this process started (``/proc``: 10 ms ticks), None where unknown."""
    try:
        with open(f"/proc/{os.getpid()}/stat", encoding="ascii") as fh:
            start_ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class Timings:
    """Seconds per stage, in the order the stages first ran."""

    def __init__(self) -> None:
        age = process_age()
        self._t0 = time.perf_counter() - (age or 0.0)
        self.stages: dict[str, float] = {}
        if age is not None:
            self.stages["startup"] = age

    def add(self, name: str, seconds: float) -> None:
        self.stages[name] = self.stages.get(name, 0.0) + max(0.0, seconds)

    @contextlib.contextmanager
    def stage(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t0)

    def block(self) -> dict:
        """The results JSON's ``timings``: ``{"stages": {name: s}, "wall_s": s}``."""
        return {
            "stages": {k: round(v, 3) for k, v in self.stages.items()},
            "wall_s": round(time.perf_counter() - self._t0, 3),
        }
