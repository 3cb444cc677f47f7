"""The project's exceptions: one base class, each error names the file, field or value at fault."""

from __future__ import annotations


class LalmEvalError(Exception):
    """Base class of every error this project raises on purpose."""


class ConfigError(LalmEvalError, ValueError):
    """A configuration (YAML, CLI argument, recipe) is invalid."""


class UnknownNameError(ConfigError, KeyError):
    """A name no registry (or task index) holds; the message lists the valid names.

    Also a ``KeyError``, so ``name in registry``-style callers that catch it keep working.
    """

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class DataError(LalmEvalError, ValueError):
    """A data file (manifest, profile, annotation) is invalid.

    Built with the file and the field so the message always says where to look.
    """

    def __init__(self, file, message: str, field: str | None = None, line: int | None = None):
        self.file, self.field, self.line = str(file), field, line
        where = self.file + (f":{line}" if line is not None else "")
        what = f" field {field!r}:" if field else ""
        super().__init__(f"{where}:{what} {message}")


class AudioError(LalmEvalError, OSError):
    """An audio file is missing, empty or cannot be decoded."""
