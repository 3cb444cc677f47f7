"""The task index: which task, group and tag names exist, and in which YAML file.

Indexing is cheap and lazy: each ``*.yaml`` under the built-in ``tasks/`` folder and the include
paths is parsed for its ``task`` / ``group`` / ``tag`` keys only (``include:`` followed, no hook
imported, nothing validated beyond that). A config is fully loaded when asked for.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable
from pathlib import Path

from lalm_eval.errors import ConfigError, UnknownNameError
from lalm_eval.resources import task_folders
from lalm_eval.tasks.config import GroupConfig
from lalm_eval.tasks.loader import index_names, load_yaml
from lalm_eval.tasks.task import Task


class UnknownTaskError(UnknownNameError):
    """A task, group or tag name that no indexed YAML defines."""


@dataclasses.dataclass(frozen=True)
class _Entry:
    kind: str  # "task" | "group"
    file: Path


class TaskManager:
    """``TaskManager(include_paths=[...])``: the built-in tasks plus user folders (or files)."""

    def __init__(self, include_paths: str | Path | Iterable[str | Path] | None = None, include_defaults: bool = True):
        if isinstance(include_paths, (str, Path)):
            include_paths = [include_paths]
        for p in include_paths or []:
            if isinstance(p, str) and not p.strip():  # an unset shell variable: not the current folder
                raise ConfigError(
                    "--include_path: empty; give a folder of task YAML files (or one YAML file), or leave the flag out"
                )
        paths = [Path(str(p).strip()).expanduser() for p in include_paths or []]
        for p in paths:
            if not p.exists():
                raise ConfigError(
                    f"--include_path {p}: no such file or folder; give a folder of task YAML files (or one YAML file)"
                )
        self.paths = (task_folders() if include_defaults else []) + paths
        self._entries: dict[str, _Entry] = {}
        self._tags: dict[str, list[str]] = {}
        self._tag_files: dict[str, Path] = {}
        for file in self._yaml_files():
            self._index(file)
        for tag, file in self._tag_files.items():
            if tag in self._entries:
                other = self._entries[tag]
                raise ConfigError(
                    f"{file}: name {tag!r} is a tag here and a {other.kind} in {other.file}; rename one of them"
                )

    def _yaml_files(self) -> list[Path]:
        files: dict[Path, None] = {}
        for root in self.paths:
            found = [root] if root.is_file() else sorted(root.rglob("*.yaml"))
            for f in found:
                rel = f.relative_to(root).parts if f != root else ()
                if any(part.startswith(".") or part == "__pycache__" for part in rel):
                    continue
                files.setdefault(f.resolve(), None)
        return list(files)

    def _index(self, file: Path) -> None:
        names = index_names(file)
        if names is None:
            return
        kind = "group" if "group" in names else "task"
        name = names[kind]
        if not isinstance(name, str) or not name:
            if kind == "task" and isinstance(name, list):
                raise ConfigError(
                    f"{file}: 'task' is a list but there is no 'group' key; a group YAML needs 'group: <name>'"
                )
            raise ConfigError(f"{file}: {kind!r} must be a name, got {name!r}; write {kind}: <name>")
        if name in self._entries:
            other = self._entries[name]
            raise ConfigError(
                f"{file}: duplicate name {name!r} ({kind} here, {other.kind} in {other.file}); rename one of them"
            )
        self._entries[name] = _Entry(kind, file)
        if kind == "task":
            tags = names.get("tag") or []
            for tag in [tags] if isinstance(tags, str) else tags:
                if not isinstance(tag, str):
                    raise ConfigError(f"{file}: tag must be a name or a list of names, got {tags!r}; write tag: [a, b]")
                self._tags.setdefault(tag, []).append(name)
                self._tag_files.setdefault(tag, file)

    # -- what exists ----------------------------------------------------------------------------

    def all_tasks(self) -> list[str]:
        return sorted(n for n, e in self._entries.items() if e.kind == "task")

    def all_groups(self) -> list[str]:
        return sorted(n for n, e in self._entries.items() if e.kind == "group")

    def all_tags(self) -> list[str]:
        return sorted(self._tags)

    def file_of(self, name: str) -> Path:
        """The YAML that defines task or group ``name``."""
        return self._entry(name).file

    def _unknown(self, name: str, kind: str = "task, group or tag", where: str = "--tasks") -> UnknownTaskError:
        """``<where>: unknown <kind> <name> (did you mean …?); <how to find or add it>`` (``where``:
        the flag that named it, or the group file that lists it)."""
        known = sorted({*self._entries, *self._tags})
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        searched = ", ".join(map(str, self.paths)) or "no folders"
        return UnknownTaskError(
            f"{where}: unknown {kind} {name!r}{hint}; `lalm-eval tasks` lists the {len(known)} known names, "
            f"--include_path adds a folder of task YAML files (searched {searched})"
        )

    def _entry(self, name: str, kind: str | None = None) -> _Entry:
        entry = self._entries.get(name)
        if entry is None:
            raise self._unknown(name, kind or "task or group")
        if kind is not None and entry.kind != kind:
            raise ConfigError(
                f"{entry.file}: {name!r} is a {entry.kind}, not a {kind}; use resolve() to expand groups and tags"
            )
        return entry

    # -- loading --------------------------------------------------------------------------------

    def load_task(self, name: str) -> Task:
        if name in self._tags and name not in self._entries:
            raise ConfigError(
                f"{self._tag_files[name]}: {name!r} is a tag ({len(self._tags[name])} tasks), not a task; use resolve()"
            )
        file = self._entry(name, "task").file
        task = Task.from_yaml(file)
        if task.name != name:  # the file changed since it was indexed
            raise ConfigError(f"{file}: defines task {task.name!r} now, not {name!r}; run the command again")
        return task

    def load_group(self, name: str) -> GroupConfig:
        file = self._entry(name, "group").file
        return GroupConfig.from_dict(load_yaml(file), file)

    def resolve(self, names: str | Iterable[str]) -> list[str]:
        """Task names for ``names`` (tasks, groups, tags), groups and tags expanded recursively,
        de-duplicated, first occurrence kept."""
        if isinstance(names, str):
            names = [names]
        out: dict[str, None] = {}
        for name in names:
            self._expand(name, out, ())
        return list(out)

    def _expand(self, name: str, out: dict[str, None], stack: tuple[str, ...]) -> None:
        if name in stack:
            raise ConfigError(
                f"{self._entries[name].file}: group cycle: {' -> '.join((*stack, name))}; "
                "remove the group from its own members"
            )
        entry = self._entries.get(name)
        if entry is not None and entry.kind == "task":
            out.setdefault(name, None)
        elif entry is not None:
            group = self.load_group(name)
            for member in group.task:
                if member not in self._entries and member not in self._tags:
                    raise self._unknown(member, where=f"{entry.file}: group {name!r}")
                self._expand(member, out, (*stack, name))
        elif name in self._tags:
            for task in self._tags[name]:
                out.setdefault(task, None)
        else:
            raise self._unknown(name)
