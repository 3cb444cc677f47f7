"""The one-way dependency rule: lalm_eval never imports a benchmark; benchmarks never import each other."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "lalm_eval": {"palm_bench", "msu_bench"},
    "palm_bench": {"msu_bench"},
    "msu_bench": {"palm_bench"},
}


def imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_respects_dependency_rule(package):
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = imported_top_levels(path) & FORBIDDEN[package]
        if bad:
            offenders.append(f"{path.relative_to(ROOT)} imports {sorted(bad)}")
    assert not offenders, "\n".join(offenders)


def test_checker_detects_a_violation(tmp_path):
    f = tmp_path / "x.py"
    f.write_text("import os\nfrom palm_bench.corpus import embedded\n")
    assert "palm_bench" in imported_top_levels(f)
