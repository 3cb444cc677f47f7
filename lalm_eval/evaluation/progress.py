"""Progress of a long step on the console, whether or not it is a terminal.

On a terminal: a tqdm bar. Otherwise (a log file, a pipe, CI): one line to stderr at most every
``every`` seconds, one at the start and one at the end, each starting with the program's name so that a wrapper
(``scripts/main.sh``) can show these lines and keep the rest in its log::

    lalm-eval: cascade: 128/790 answers generated (16 %), 41 s, about 3.5 min left

Used for the generation stage of a run (the answers the response cache does not hold) and the
training steps of ``lalm-eval train``. ``LALM_EVAL_PROGRESS=0`` silences it.
"""

from __future__ import annotations

import os
import sys
import time

#: seconds between two progress lines when the console is not a terminal
DEFAULT_EVERY = 15.0
PROGRESS_ENV = "LALM_EVAL_PROGRESS"


def announce(prog: str, message: str, stream=None) -> None:
    """One stage of a long step on the console: ``<prog>: <message>`` on stderr, at once (silenced
    by ``LALM_EVAL_PROGRESS=0``, like the counters)."""
    if os.environ.get(PROGRESS_ENV, "1") != "0":
        print(f"{prog}: {message}", file=stream if stream is not None else sys.stderr, flush=True)


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


class Progress:
    """``total`` units of work named ``unit``, counted by :meth:`advance`; ``label`` says whose
    (e.g. the adapter's name). :meth:`close` prints the last line (or closes the bar)."""

    def __init__(
        self,
        total: int,
        label: str,
        unit: str = "answers generated",
        prog: str = "lalm-eval",
        stream=None,
        every: float = DEFAULT_EVERY,
        clock=time.monotonic,
        note: str = "",
    ):
        self.total, self.label, self.unit, self.prog = int(total), label, unit, prog
        self.stream = stream if stream is not None else sys.stderr
        self.every, self.clock = every, clock
        self.done = 0
        self.start = self.last = clock()
        self.enabled = self.total > 0 and os.environ.get(PROGRESS_ENV, "1") != "0"
        self.bar = None
        if self.enabled and getattr(self.stream, "isatty", lambda: False)():
            from tqdm.auto import tqdm

            self.bar = tqdm(total=self.total, desc=f"{label}: {unit}", file=self.stream, leave=False)
        elif self.enabled:
            print(f"{prog}: {label}: 0/{self.total} {unit}{note}", file=self.stream, flush=True)

    def line(self) -> str:
        elapsed = self.clock() - self.start
        text = (
            f"{self.prog}: {self.label}: {self.done}/{self.total} {self.unit} "
            f"({100 * self.done / self.total:.0f} %), {_minutes(elapsed)}"
        )
        if 0 < self.done < self.total:
            text += f", about {_minutes(elapsed * (self.total - self.done) / self.done)} left"
        return text

    def advance(self, n: int = 1) -> None:
        if not self.enabled or n <= 0:
            return
        self.done = min(self.total, self.done + n)
        if self.bar is not None:
            self.bar.update(n)
            return
        now = self.clock()
        if now - self.last >= self.every and self.done < self.total:
            self.last = now
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.close()
        else:
            print(self.line(), file=self.stream, flush=True)
        self.enabled = False


def counted(handle, progress: Progress):
    """``handle`` (requests → results) that advances ``progress`` by the requests it answered."""

    def run(requests):
        results = handle(requests)
        progress.advance(len(requests))
        return results

    return run
