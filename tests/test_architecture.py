"""The architecture's rules (docs/ARCHITECTURE.md): lalm_eval never imports a benchmark and names
none outside the listed paper-metric modules; benchmarks never import each other; every benchmark
task declares a report whose layouts live under tasks/."""

import ast
import re
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


# ---------------------------------------------------------------------------------------------
# The harness names no benchmark. Benchmark knowledge reaches lalm_eval as data from tasks/
# (task YAML: metric options such as `cross_check_options: {names_field: queried}`, context
# mappings, `metadata.report`; report_layouts*.yaml: the papers' tables) — never as a doc-field
# name or a benchmark's task name in harness code. The papers' judges and rule scorer live in
# palm_bench / msu_bench and register through entry points; the exceptions left are the two
# modules listed with their reason. Docstrings and CLI help texts are prose and not checked.

#: doc fields / task-metadata keys that only the benchmarks define
BENCHMARK_FIELDS = {"n_speakers", "negative_stratum", "queried", "tier", "capability", "strategy"}
#: text naming a benchmark, its tasks or its datasets
BENCHMARK_NAME = re.compile(r"palm|msu", re.I)
#: module (or folder) → why it may name a benchmark
ALLOWED = {
    "lalm_eval/report/forgetting.py": "its heading cites PALM Table 4; the table is of any task declaring "
    "metadata.table: forgetting",
    "lalm_eval/training/data.py": "`lalm-eval train --speakers` filters rows by the PALM field n_speakers",
}


def benchmark_constants(path: Path) -> set[str]:
    """String constants of a module that name a benchmark field or a benchmark, docstrings and
    ``help=`` / ``description=`` texts left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    prose = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
        ):
            prose.add(id(body[0].value))
        if isinstance(node, ast.keyword) and node.arg in ("help", "description"):
            prose |= {id(n) for n in ast.walk(node.value)}
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in prose
        and (n.value in BENCHMARK_FIELDS or BENCHMARK_NAME.search(n.value))
    }


def _allowed(rel: str) -> bool:
    return any(rel == a or (a.endswith("/") and rel.startswith(a)) for a in ALLOWED)


def test_harness_code_names_no_benchmark_outside_the_listed_modules():
    offenders = []
    for path in sorted((ROOT / "lalm_eval").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        found = benchmark_constants(path)
        if found and not _allowed(rel):
            offenders.append(f"{rel}: {sorted(found)}")
    assert not offenders, "benchmark knowledge in harness code (move it to tasks/ as data):\n" + "\n".join(offenders)
    for rel in ALLOWED:  # the list stays honest: every entry exists and still needs its exception
        target = ROOT / rel
        files = sorted(target.rglob("*.py")) if rel.endswith("/") else [target]
        assert any(f.is_file() and benchmark_constants(f) for f in files), f"{rel} no longer needs its exception"


def test_benchmark_checker_detects_a_field_and_a_task_name(tmp_path):
    f = tmp_path / "x.py"
    f.write_text(
        '"""Docstrings may say palm."""\nrows = [r for r in rows if "tier" in r]\nname = "msu_table3"\n'
        'parser.add_argument("--x", help="e.g. palm_table1")\n'
    )
    assert benchmark_constants(f) == {"tier", "msu_table3"}


def test_every_benchmark_task_declares_a_report_the_task_folders_define():
    from lalm_eval.report.layouts import LayoutIndex
    from lalm_eval.tasks import TaskManager

    index = LayoutIndex.load()  # every report_layouts*.yaml under tasks/ loads and checks
    for layout in index.layouts.values():  # the layouts live under tasks/, not in lalm_eval
        assert (ROOT / "tasks") in layout.file.parents, layout.file
    manager = TaskManager()
    declared = {}
    for name in manager.all_tasks():
        if name.startswith(("palm_", "msu_t")):
            declared[name] = (manager.load_task(name).config.metadata or {}).get("report")
    assert declared and all(declared.values()), [n for n, r in declared.items() if not r]
    for report in set(declared.values()):
        index.report(report)  # raises for a name no layout file declares


# ---------------------------------------------------------------------------------------------
# No import circle in lalm_eval, at module level or through the lazy imports inside functions
# (tests/import_graph.py reads the source); nothing but the entry point imports the lalm-eval CLI:
# the adapter builder and the flag checks live in lalm_eval.models.build and lalm_eval.flags.


@pytest.mark.parametrize("lazy", [False, True], ids=["module_level", "with_function_imports"])
def test_lalm_eval_has_no_import_circle(lazy):
    from tests.import_graph import circles, import_graph

    found = circles(import_graph(ROOT, "lalm_eval", lazy=lazy))
    assert not found, "import circles: " + "; ".join(" -> ".join(c) for c in found)


def test_circle_checker_finds_module_level_and_lazy_circles(tmp_path):
    from tests.import_graph import circles, import_graph

    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from pkg.sub.b import B\n")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import c\n")
    (pkg / "sub" / "b.py").write_text("from . import c\nB = 1\n")
    (pkg / "sub" / "c.py").write_text("def f():\n    from ..sub.b import B\n    return B\n")
    (pkg / "c.py").write_text("import pkg.a\n")
    assert circles(import_graph(tmp_path, "pkg")) == []  # TYPE_CHECKING imports do not run
    assert circles(import_graph(tmp_path, "pkg", lazy=True)) == [["pkg.sub.b", "pkg.sub.c", "pkg.sub.b"]]
    (pkg / "a.py").write_text("import pkg.c\n")
    assert circles(import_graph(tmp_path, "pkg")) == [["pkg.a", "pkg.c", "pkg.a"]]


def test_only_the_entry_point_imports_the_lalm_eval_cli():
    from tests.import_graph import importers_of

    folders = ["lalm_eval", "palm_bench", "msu_bench", "tasks", "bench"]
    assert importers_of(ROOT, folders, "lalm_eval.cli", allowed={"lalm_eval/cli.py"}) == []


def test_cli_importer_check_finds_every_spelling(tmp_path):
    from tests.import_graph import importers_of

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "x.py").write_text(
        "from lalm_eval import cli\nimport lalm_eval.cli_support\n"
        "def f():\n    from lalm_eval.cli import build_adapter\n    import lalm_eval.cli as c\n"
    )
    assert importers_of(tmp_path, ["m"], "lalm_eval.cli") == ["m/x.py:1", "m/x.py:4", "m/x.py:5"]


# -- the evaluator's successors stay readable (issue 22) ---------------------------------------

MAX_MODULE_LINES, MAX_FUNCTION_LINES = 400, 80


def oversized(path: Path) -> list[str]:
    """``path`` over :data:`MAX_MODULE_LINES` lines, and each function (or method) of it over
    :data:`MAX_FUNCTION_LINES`, measured with ``ast`` (decorators and docstrings included)."""
    text = path.read_text(encoding="utf-8")
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    out = [f"{rel}: {len(text.splitlines())} lines"] if len(text.splitlines()) > MAX_MODULE_LINES else []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = node.end_lineno - first + 1
            if length > MAX_FUNCTION_LINES:
                out.append(f"{rel}:{node.lineno} {node.name}: {length} lines")
    return out


def test_evaluation_stages_are_small_modules_of_small_functions():
    files = sorted((ROOT / "lalm_eval" / "evaluation").glob("*.py"))
    files += [p for p in [ROOT / "lalm_eval" / "evaluator.py"] if p.is_file()]
    assert len(files) >= 8 and [f for f in files if oversized(f)] == [], [x for f in files for x in oversized(f)]


def test_msu_question_generators_are_small_functions():
    found = oversized(ROOT / "msu_bench" / "qa" / "generate.py")
    if found:
        pytest.xfail(f"engineer E's split of msu_bench/qa/generate.py is not in yet: {found}")


def test_size_measure_counts_functions_and_modules(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    (tmp_path / "m.py").write_text(f"@staticmethod\ndef long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert oversized(tmp_path / "m.py") == [f"{tmp_path / 'm.py'}:2 long: {MAX_FUNCTION_LINES + 2} lines"]
    (tmp_path / "n.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    assert oversized(tmp_path / "n.py") == [f"{tmp_path / 'n.py'}: {MAX_MODULE_LINES + 1} lines"]
