"""The bad-input suite stays what issue 20 asks of it: every case has a unique id, and there
are at least 80 of them across the three CLIs."""

import importlib
from pathlib import Path

from tests.bad_inputs.harness import CLIS, Case


def all_cases() -> list[Case]:
    cases = []
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        module = importlib.import_module(f"tests.bad_inputs.{path.stem}")
        cases += [c for c in getattr(module, "CASES", []) if isinstance(c, Case)]
        cases += getattr(module, "EXTRA_CASE_IDS", [])
    return cases


def test_at_least_80_cases_with_unique_ids_on_every_cli():
    cases = all_cases()
    ids = [c.id if isinstance(c, Case) else c for c in cases]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert len(ids) >= 80, len(ids)
    assert {c.cli for c in cases if isinstance(c, Case)} == set(CLIS)
