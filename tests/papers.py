"""The papers' full text, for the tests that compare a transcribed template, rubric or taxonomy
with it: read from the folder that ``LALM_EVAL_PAPERS`` names (one plain-text file per paper, found
by its title on the first line). Where the variable is unset or the folder lacks the paper, the
test skips and says why; CI sets it (``.ci/run``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PAPERS_ENV = "LALM_EVAL_PAPERS"
PALM_TITLE = "PALM-Bench: A Comprehensive Benchmark for Personalized Audio-Language Models"
MSU_TITLE = "MSU-Bench: Towards Understanding the Conversational Multi-talker Scenarios"


def find_paper(title: str, folder: str | os.PathLike | None = None) -> Path | None:
    """The ``*.txt`` file in ``folder`` (default: ``$LALM_EVAL_PAPERS``) whose first line is ``title``."""
    folder = folder if folder is not None else os.environ.get(PAPERS_ENV, "").strip()
    if not folder or not Path(folder).is_dir():
        return None
    for path in sorted(Path(folder).glob("*.txt")):
        with path.open(encoding="utf-8", errors="replace") as f:
            if f.readline().strip().lstrip("\ufeff") == title:
                return path
    return None


def paper_text(title: str) -> str:
    """The paper's text, or a pytest skip naming the variable to set."""
    path = find_paper(title)
    if path is None:
        where = os.environ.get(PAPERS_ENV, "").strip()
        pytest.skip(
            f"{PAPERS_ENV} is unset: set it to a folder with the papers' text to compare with {title!r}"
            if not where
            else f"{PAPERS_ENV}={where} has no .txt file whose first line is {title!r}"
        )
    return path.read_text(encoding="utf-8")


def has_paper(title: str) -> bool:
    return find_paper(title) is not None
