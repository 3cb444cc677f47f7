"""palm_bench.plan._beside: the acoustic descriptions measured in a second process while the plan
embeds, with the same result as a call in the process itself, whatever happens to the second one."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest

from lalm_eval.errors import DataError
from palm_bench.plan import _beside


def where(tag: str) -> tuple[str, int]:
    return tag, os.getpid()


def fails_in_a_child(tag: str) -> str:
    if multiprocessing.parent_process() is not None:
        raise RuntimeError("only in the second process")
    return f"{tag} here"


def bad_data(path: str) -> None:
    raise DataError(path, "field x has no value; add it", field="x")


def sleeps(seconds: float) -> None:
    time.sleep(seconds)


def test_the_call_runs_in_a_second_process_and_returns_its_result():
    with _beside(where, "a") as result:
        tag, pid = result()
    assert tag == "a"
    assert pid != os.getpid()


def test_a_failure_in_the_second_process_is_made_again_here():
    with _beside(fails_in_a_child, "b") as result:
        assert result() == "b here"


def test_an_error_of_the_call_itself_is_raised_here_with_its_own_message():
    with _beside(bad_data, "corpus/manifest.jsonl") as result, pytest.raises(DataError) as info:
        result()
    assert "corpus/manifest.jsonl" in str(info.value)
    assert "field x has no value" in str(info.value)


def test_leaving_the_block_early_stops_the_second_process():
    t0 = time.perf_counter()
    with pytest.raises(KeyError), _beside(sleeps, 60):
        raise KeyError("the plan failed before it needed the result")
    assert time.perf_counter() - t0 < 20  # not the 60 s the call would have slept
