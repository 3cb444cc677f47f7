"""One generic registry per kind of pluggable thing (speaker encoders, models, metrics, judges).

Entries are either objects or lazy ``"module:attr"`` strings, so registering a backend never
imports its heavy dependencies. A duplicate name is a :class:`ConfigError`; an unknown name is an
:class:`UnknownNameError` (a ``ConfigError``) that lists the valid ones and suggests close matches. Third-party packages extend a registry through the entry-point
group given at construction (``[project.entry-points."<group>"]`` in their pyproject).
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from lalm_eval.errors import ConfigError, UnknownNameError


class Registry:
    def __init__(self, kind: str, entry_point_group: str | None = None):
        self.kind = kind
        self.entry_point_group = entry_point_group
        self._entries: dict[str, Any] = {}
        self._entry_points_loaded = False

    def register(self, name: str, obj: Any = None) -> Callable:
        """``registry.register("x", "pkg.mod:Cls")`` or ``@registry.register("x")``."""
        if obj is not None:
            self._add(name, obj)
            return obj

        def decorator(target):
            self._add(name, target)
            return target

        return decorator

    def _add(self, name: str, obj: Any) -> None:
        if name in self._entries and self._entries[name] is not obj:
            raise ConfigError(f"{self.kind} {name!r} is already registered (as {self._entries[name]!r})")
        self._entries[name] = obj

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded or not self.entry_point_group:
            return
        self._entry_points_loaded = True
        for ep in entry_points(group=self.entry_point_group):
            if ep.name not in self._entries:
                self._entries[ep.name] = ep.value

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._entries)

    def get(self, name: str) -> Any:
        self._load_entry_points()
        if name not in self._entries:
            close = difflib.get_close_matches(name, self._entries, n=3)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            raise UnknownNameError(f"unknown {self.kind} {name!r}.{hint} Available: {', '.join(self.names())}")
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            entry = getattr(importlib.import_module(module), attr)
            self._entries[name] = entry
        return entry

    def __contains__(self, name: str) -> bool:
        self._load_entry_points()
        return name in self._entries
