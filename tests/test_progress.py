"""Progress on the console (issue 23): a run prints how many answers it has generated out of how
many, at the start, at most every ``every`` seconds and at the end, when the console is not a
terminal; a fully cached run prints none; ``LALM_EVAL_PROGRESS=0`` silences it."""

from __future__ import annotations

import io

from lalm_eval.evaluation.progress import Progress, counted
from lalm_eval.models import MODELS
from tests.test_evaluation_stages import LIMIT, Echo, build  # noqa: F401  (the module's fixture)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_lines_at_start_every_interval_and_at_the_end():
    out, clock = io.StringIO(), Clock()
    p = Progress(100, "cascade", stream=out, every=10, clock=clock, note=" (100 docs)")
    for _ in range(10):
        clock.now += 3
        p.advance(5)  # 5 answers every 3 s
    p.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "lalm-eval: cascade: 0/100 answers generated (100 docs)"
    # 30 s in 3-s steps with a 10-s interval: lines at 12, 24 s (not at every advance)
    assert lines[1] == "lalm-eval: cascade: 20/100 answers generated (20 %), 12 s, about 48 s left"
    assert lines[2] == "lalm-eval: cascade: 40/100 answers generated (40 %), 24 s, about 36 s left"
    assert lines[3] == "lalm-eval: cascade: 50/100 answers generated (50 %), 30 s, about 30 s left"
    assert len(lines) == 4


def test_nothing_to_do_or_silenced_prints_nothing(monkeypatch):
    out = io.StringIO()
    p = Progress(0, "x", stream=out)
    p.advance(3)
    p.close()
    monkeypatch.setenv("LALM_EVAL_PROGRESS", "0")
    q = Progress(10, "x", stream=out)
    q.advance(10)
    q.close()
    assert out.getvalue() == ""


def test_counted_advances_by_the_requests_answered():
    out, clock = io.StringIO(), Clock()
    p = Progress(6, "m", stream=out, every=0, clock=clock)
    handle = counted(lambda reqs: [r * 2 for r in reqs], p)
    clock.now = 60
    assert handle([1, 2, 3, 4]) == [2, 4, 6, 8]
    assert p.done == 4 and out.getvalue().splitlines()[-1].startswith("lalm-eval: m: 4/6 answers generated (67 %)")


def test_a_run_prints_its_generation_progress_and_a_cached_rerun_none(build, tmp_path):  # noqa: F811
    from tests.test_evaluation_stages import _run

    if Echo.name not in MODELS:
        MODELS.register(Echo.name, Echo)
    first = _run(build, tmp_path / "cache")
    assert first.rc == 0, first.err[-2000:]
    assert f"lalm-eval: {Echo.name}: 0/{LIMIT} answers generated ({LIMIT} docs of 1 task(s), 0 answered" in first.err
    assert f"lalm-eval: {Echo.name}: {LIMIT}/{LIMIT} answers generated (100 %)" in first.err
    again = _run(build, tmp_path / "cache")
    assert again.rc == 0 and "answers generated" not in again.err
