"""The import graph of a package folder, read from the source (nothing imported), and its circles.

``import_graph(root, "lalm_eval")`` maps every module of ``root/lalm_eval`` to the modules of that
package it imports: at module level only (``lazy=False``; imports under ``if TYPE_CHECKING:`` do
not run and are left out), or also inside functions and classes (``lazy=True``). An import names
the most specific module that exists (``from a.b import c`` is ``a.b.c`` when that is a module,
else ``a.b``); relative imports are resolved. ``circles(graph)`` is every strongly connected
group of two or more modules (or one importing itself), each as one closed path through it.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path


def module_names(root: Path, package: str) -> dict[str, Path]:
    """``{"pkg.sub.mod": path}`` for every ``.py`` file under ``root/package`` (``__init__`` is the package)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@functools.cache
def _parse(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(tree: ast.Module, lazy: bool):
    """The import statements that run: module level (through ``if`` / ``try`` / ``with``), and with
    ``lazy`` also those inside functions and classes; never those under ``if TYPE_CHECKING:``."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            if lazy:
                stack.extend(ast.iter_child_nodes(node))
        else:
            stack.extend(ast.iter_child_nodes(node))


def _targets(node, module: str, is_package: bool, known) -> set[str]:
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            anchor = module.split(".")
            anchor = anchor if is_package else anchor[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join([*anchor, *([base] if base else [])])
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    out = set()
    for name in names:
        while name and name not in known:  # `import a.b.c` of an attribute path: the module it is in
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


def import_graph(root: Path, package: str, lazy: bool = False) -> dict[str, set[str]]:
    """``{module: {imported modules of the package}}`` for every module under ``root/package``."""
    modules = module_names(root, package)
    graph = {}
    for module, path in modules.items():
        tree = _parse(path, path.stat().st_mtime_ns)  # parsed once for both levels
        is_package = path.name == "__init__.py"
        edges = set()
        for node in _import_nodes(tree, lazy):
            edges |= _targets(node, module, is_package, modules)
        graph[module] = edges - ({module} if is_package else set())
    return graph


def _strong_groups(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components, iteratively, in a stable order."""
    index, low, on_stack, stack, groups = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                groups.append(sorted(group))
    return groups


def _closed_path(graph: dict[str, set[str]], group: list[str]) -> list[str]:
    """A shortest closed path from the group's first module back to it, within the group."""
    members, start = set(group), group[0]
    came_from, frontier = {start: None}, [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph.get(node, ())):
                if child == start:
                    path = [node]
                    while came_from[path[-1]] is not None:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if child in members and child not in came_from:
                    came_from[child] = node
                    following.append(child)
        frontier = following
    return [start, start]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle, as a closed path ``[a, b, …, a]`` through its strongly connected group."""
    out = []
    for group in _strong_groups(graph):
        if len(group) > 1 or group[0] in graph.get(group[0], ()):
            out.append(_closed_path(graph, group))
    return out


def importers_of(root: Path, folders, target: str, allowed=()) -> list[str]:
    """``"file:line"`` of every import of ``target`` (or a submodule, or ``from <parent> import
    <last part>``), at any level, in the ``.py`` files under ``root/<folder>``; ``allowed``: the
    files (relative to ``root``) that may."""
    parent = target.rpartition(".")[0]
    hits = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            if rel in allowed or target.rpartition(".")[2] not in text:  # cannot import it: not parsed
                continue
            for node in ast.walk(ast.parse(text, filename=str(path))):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if node.module == parent]
                else:
                    continue
                if any(n == target or n.startswith(target + ".") for n in names):
                    hits.append(f"{rel}:{node.lineno}")
    return hits
