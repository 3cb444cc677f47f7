"""Reading task YAML: safe loading plus ONE extra tag, ``!function``, and ``include:`` inheritance.

``!function module.attr`` names ``attr`` in the Python file ``<folder>/module.py`` beside the
YAML that contains the tag (``sub.module.attr`` → ``<folder>/sub/module.py``, never above the
folder). The reference is checked when a config is loaded (a path check, nothing imported) and
imported on first use, by path, under a unique module name, so two task folders may each have
their own ``utils.py``. Every other non-standard tag (``!!python/object`` …) is refused by
the safe loader (libyaml's ``CSafeLoader`` where PyYAML has it: indexing every task folder takes
0.2 s instead of 3.5 s; the pure-Python ``SafeLoader`` otherwise, with the same results).
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import hashlib
import importlib.util
import re
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from lalm_eval.errors import ConfigError

_SPEC_RE = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_MODULES: dict[tuple[Path, str], ModuleType] = {}  # (module file, source sha256) → module


@dataclasses.dataclass(frozen=True)
class FunctionRef:
    """``!function <spec>`` written in ``yaml_file``; calling it imports the hook on first use."""

    spec: str
    yaml_file: Path
    _fn: Any = dataclasses.field(default=None, compare=False, repr=False)

    @property
    def folder(self) -> Path:
        return self.yaml_file.parent

    @property
    def attr(self) -> str:
        return self.spec.rsplit(".", 1)[1]

    @property
    def module_file(self) -> Path:
        parts = self.spec.split(".")[:-1]
        return self.folder.joinpath(*parts[:-1], parts[-1] + ".py")

    @property
    def module_relpath(self) -> str:
        """The hook file relative to its task folder, e.g. ``utils.py``."""
        return "/".join(self.spec.split(".")[:-1]) + ".py"

    def check(self, line: int | None = None) -> None:
        """Refuse a reference that does not name a Python file inside the task folder."""
        where = f"{self.yaml_file}" + (f":{line}" if line else "")
        if not _SPEC_RE.match(self.spec):
            raise ConfigError(
                f"{where}: !function {self.spec!r} must be 'module.function' naming a Python file "
                f"beside the YAML (dotted submodules only below {self.folder}); paths are not allowed"
            )
        file, folder = self.module_file, self.folder.resolve()
        if not file.is_file():
            raise ConfigError(
                f"{where}: !function {self.spec!r}: {self.module_relpath} is not a file in the task "
                f"folder {folder}; hooks are Python files beside the YAML, not importable modules"
            )
        if not file.resolve().is_relative_to(folder):
            raise ConfigError(
                f"{where}: !function {self.spec!r}: {file} resolves outside the task folder {folder}; "
                "put the hook file in the task folder"
            )

    def source_text(self) -> str:
        try:
            return self.module_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(
                f"{self.yaml_file}: !function {self.spec!r}: cannot read {self.module_file} ({exc.strerror}); "
                "make the hook file readable"
            ) from exc

    def resolve(self) -> Callable:
        if self._fn is None:
            self.check()
            module = _load_module(self.module_file, self.yaml_file)
            if not hasattr(module, self.attr):
                names = sorted(n for n in vars(module) if not n.startswith("_"))
                close = difflib.get_close_matches(self.attr, names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigError(
                    f"{self.yaml_file}: !function {self.spec!r}: {self.module_file} has no "
                    f"function {self.attr!r}{hint}; it defines: {', '.join(names) or 'nothing public'}"
                )
            object.__setattr__(self, "_fn", getattr(module, self.attr))
        return self._fn

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __str__(self) -> str:
        return f"!function {self.spec}"


def _load_module(file: Path, yaml_file: Path) -> ModuleType:
    file = file.resolve()
    source = file.read_bytes()
    key = (file, hashlib.sha256(source).hexdigest())
    if key in _MODULES:
        return _MODULES[key]
    path_id = hashlib.sha256(str(file).encode()).hexdigest()[:12]
    name = f"_lalm_task_hook_{file.stem}_{path_id}_{key[1][:8]}"
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(
            f"{yaml_file}: importing hook module {file} failed ({exc!r}); fix the hook file "
            "(--verbose shows the traceback)"
        ) from exc
    _MODULES[key] = module
    return module


class TaskYamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """The safe loader + ``!function``. Set ``yaml_file`` (and ``check_functions``) per file."""

    yaml_file: Path = Path("<string>")
    check_functions: bool = True

    def construct_mapping(self, node, deep=False):
        """A key written twice in one mapping is a mistake (YAML would keep the last silently)."""
        seen: dict[str, int] = {}
        for key_node, _ in node.value if isinstance(node, yaml.MappingNode) else ():
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                line = key_node.start_mark.line + 1
                if key_node.value in seen:
                    raise ConfigError(
                        f"{self.yaml_file}:{line}: key {key_node.value!r} is written twice (first "
                        f"on line {seen[key_node.value]}); keep one (a base file's keys are overridden with include:)"
                    )
                seen[key_node.value] = line
        return super().construct_mapping(node, deep)


def _construct_function(loader: TaskYamlLoader, node: yaml.Node) -> FunctionRef:
    if not isinstance(node, yaml.ScalarNode):
        raise ConfigError(
            f"{loader.yaml_file}:{node.start_mark.line + 1}: !function takes one 'module.function' string; "
            "write e.g. !function utils.doc_to_text"
        )
    ref = FunctionRef(str(loader.construct_scalar(node)).strip(), loader.yaml_file)
    if loader.check_functions:
        ref.check(line=node.start_mark.line + 1)
    return ref


TaskYamlLoader.add_constructor("!function", _construct_function)


#: unchecked parses (``check_functions=False``: what indexing reads) by (file, content hash), so
#: that every ``TaskManager`` of a process indexes the task folders without parsing them again
_PARSED: dict[tuple[Path, str], Any] = {}


def parse_yaml(path: Path, check_functions: bool = True) -> Any:
    """One YAML file, safely, with ``!function`` references (not followed: no ``include``). The
    text is read as UTF-8, a byte-order mark dropped."""
    return _parse(Path(path).resolve(), check_functions)


def _parse(path: Path, check_functions: bool) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ConfigError(f"{path}: cannot read task YAML ({why or exc}); save it as UTF-8 text") from exc
    key = (path, hashlib.sha256(text.encode()).hexdigest())
    if not check_functions and key in _PARSED:  # indexing only reads it: a copy of the top level will do
        data = _PARSED[key]
        return dict(data) if isinstance(data, dict) else data
    loader = TaskYamlLoader(text)
    loader.yaml_file, loader.check_functions = path, check_functions
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError(_yaml_error(path, exc)) from None
    finally:
        loader.dispose()
    if not check_functions:
        _PARSED[key] = copy.deepcopy(data)
        return dict(data) if isinstance(data, dict) else data
    return data


def _yaml_error(path: Path, exc: yaml.YAMLError) -> str:
    """``<file>:<line>: invalid task YAML: <problem>; <fix>``, one line (PyYAML's own text spans several)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
    what = " ".join(str(x) for x in (getattr(exc, "context", None), getattr(exc, "problem", None)) if x) or str(exc)
    if mark is not None:
        what += f" (column {mark.column + 1})"
    what = " ".join(what.replace(";", ",").split())
    if isinstance(exc, yaml.constructor.ConstructorError) and "tag" in what:
        fix = "only plain YAML and the !function tag are allowed in task files"
    else:
        fix = "fix the YAML syntax there (only plain YAML and !function are allowed)"
    return f"{where}: invalid task YAML: {what}; {fix}"


def load_yaml(path: Path, check_functions: bool = True, _stack: tuple[Path, ...] = ()) -> dict:
    """A task/group YAML as a dict with its ``include:`` chain merged in (the includer wins)."""
    path = Path(path).resolve()
    if path in _stack:
        chain = " -> ".join(str(p) for p in (*_stack, path))
        raise ConfigError(f"{_stack[-1]}: include cycle: {chain}; remove one of these includes")
    data = _parse(path, check_functions)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{path}: a task or group YAML must be a mapping of keys, got {type(data).__name__}; "
            "write key: value lines (task:, dataset_path:, ...)"
        )
    includes = data.pop("include", None)
    if includes is None:
        return data
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list) or not all(isinstance(i, str) for i in includes):
        raise ConfigError(
            f"{path}: 'include' must be a file name or a list of file names, got {includes!r}; write include: base.yaml"
        )
    merged: dict = {}
    for name in includes:
        target = path.parent / name
        if not target.is_file():
            raise ConfigError(f"{path}: include {name!r}: no such file {target}; name a YAML file beside this one")
        merged.update(load_yaml(target, check_functions, (*_stack, path)))
    merged.update(data)
    return merged


def index_names(path: Path) -> dict | None:
    """The ``task`` / ``group`` / ``tag`` keys of a YAML (includes followed, nothing imported or
    checked), or None when the file is not a task or group (data files may sit in task folders)."""
    path = Path(path).resolve()
    top = _parse(path, check_functions=False)
    if not isinstance(top, dict):
        return None
    data = load_yaml(path, check_functions=False) if "include" in top else top
    if "task" not in data and "group" not in data:
        return None
    return {k: data[k] for k in ("task", "group", "tag") if k in data}
