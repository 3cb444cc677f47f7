"""The registry of MSU template QA generators: one function per task id of ``taxonomy.yaml``.

A generator takes a segment's :class:`~msu_bench.qa.facts.Facts` and its task's
:class:`Wording` (``templates.yaml`` ``tasks.<task id>.<language>``) and returns the
:class:`Candidate` questions the segment's annotation supports, in a fixed order; it registers
itself with ``@generator("<task id>")``. All wording comes from the YAML: a generator only
chooses the facts and the placeholder values.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from lalm_eval.errors import UnknownNameError
from msu_bench.qa.facts import Facts


class Candidate(NamedTuple):
    question: str
    answer: str
    evidence: dict  # turn ids and annotation fields the answer rests on


@dataclass(frozen=True)
class Wording:
    """One task's wording in one language, and the generator that picks among its phrasings."""

    text: Mapping
    rng: np.random.Generator

    def question(self, key: str = "q", **values) -> str:
        """One of the phrasings under ``key``, picked by ``rng`` (one draw per question)."""
        phrasings = self.text[key]
        return phrasings[int(self.rng.integers(len(phrasings)))].format(**values)

    def answer(self, key: str = "a", **values) -> str:
        """The answer wording under ``key``; the values the language lists under ``capitalize``
        are capitalised."""
        capitalized = self.text.get("capitalize", ())
        return self.text[key].format(**{k: v.capitalize() if k in capitalized else v for k, v in values.items()})

    def part(self, key: str, **values) -> str:
        """A piece of an answer (one step of an evolution, one quoted utterance)."""
        return self.text[key].format(**values)

    def join(self, key: str, pieces) -> str:
        """``pieces`` joined by the separator under ``key``."""
        return self.text[key].join(pieces)


Generator = Callable[[Facts, Wording], list[Candidate]]
GENERATORS: dict[str, Generator] = {}


def generator(*task_ids: str) -> Callable[[Generator], Generator]:
    """``@generator("t1_sr_speaker_counting")``: register the function for these task ids."""

    def register(make: Generator) -> Generator:
        for task_id in task_ids:
            if task_id in GENERATORS:
                raise ValueError(f"two QA generators for MSU task {task_id!r}: {GENERATORS[task_id]} and {make}")
            GENERATORS[task_id] = make
        return make

    return register


def generator_for(task_id: str) -> Generator:
    """The generator of ``task_id``; an :class:`UnknownNameError` naming it when none is registered."""
    if task_id not in GENERATORS:
        close = difflib.get_close_matches(task_id, GENERATORS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownNameError(
            f"MSU task {task_id!r}: no QA generator; {hint}register one with @generator({task_id!r}) "
            "in a module of msu_bench/qa/tasks/"
        )
    return GENERATORS[task_id]
