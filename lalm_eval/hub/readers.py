"""What every benchmark's corpus readers share (PALM-Bench, MSU-Bench, a third one).

- :class:`Skip` / :class:`ReaderResult`: what every corpus reader returns besides its data: the
  items it skipped, each with the item (a file, ``file:line``, or an id) and the reason. Counts
  are derived from the list (:attr:`ReaderResult.n_skipped`, :func:`skip_records`).
- :class:`SkipLog`: collects (and logs) skips while a reader runs: every reader of every
  benchmark (PALM's corpus readers, MSU's corpora, the MSU release import) uses it.
- :func:`read_corpus`: dispatch a corpus kind through the benchmark's reader
  :class:`~lalm_eval.registry.Registry` (``reader(corpus_dir, **options) -> ReaderResult``).
  The options (``--corpus-option KEY=VALUE``) are checked against the reader's signature first:
  an unknown key is a :class:`~lalm_eval.errors.ConfigError` naming ``--corpus-option KEY``, the
  close option names and all of them; a value of the wrong type (a list where the reader's
  annotation says text, text where it says a number) likewise names the option and the type.
- :func:`read_text`: a corpus text file as ``str`` without its byte-order mark (a UTF-8/16/32
  BOM picks that encoding, else the reader's ``encoding``); :func:`unreadable_text` is the skip
  reason of one that does not decode (it names ``--corpus-option encoding``).

No ``datasets`` import here: reading a corpus (``corpus-info``) does not need it.
"""

from __future__ import annotations

import codecs
import dataclasses
import difflib
import inspect
import logging
import types
import typing
from pathlib import Path
from typing import NamedTuple

from lalm_eval.errors import ConfigError
from lalm_eval.registry import Registry

logger = logging.getLogger(__name__)


class Skip(NamedTuple):
    """One item a reader could not use: ``item`` (a file, ``file:line`` or an id) and why.

    Where a reader counts entries inside its items (the MSU release's questions in a task file):
    ``within`` is the skipped entry's index in ``item`` (None: ``item`` as a whole), ``lost`` how
    many entries the skip loses (a whole file: its entries; None: they could not be counted)."""

    item: str
    reason: str
    within: int | None = None
    lost: int | None = 1


@dataclasses.dataclass
class ReaderResult:
    """Base of every corpus reader's result: the skipped items (the data is the subclass's)."""

    skips: list[Skip] = dataclasses.field(default_factory=list, kw_only=True)

    @property
    def n_skipped(self) -> int:
        return len(self.skips)


class SkipLog:
    """Collects skips while a reader runs (``items``, in order); each is logged with its item and
    reason at ``level`` (WARNING unless the reader reports its skips otherwise, e.g. in a summary)."""

    def __init__(self, log: logging.Logger = logger, level: int = logging.WARNING):
        self.items: list[Skip] = []
        self._log = log
        self._level = level

    def add(self, item, reason: str, *, within: int | None = None, lost: int | None = 1, level: int | None = None):
        """Record (and log) one skip; ``level`` overrides the log's level for this one."""
        self.items.append(Skip(str(item), reason, within, lost))
        self._log.log(self._level if level is None else level, "skipped %s: %s", item, reason)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self):
        return iter(self.items)


def skip_records(skips: list[Skip], relative=str) -> list[dict]:
    """The skips as ``build_info.json`` / card records ``{"file": item, "reason": ...}``;
    ``relative(item)`` shortens the item (e.g. a path relative to the corpus folder)."""
    return [{"file": relative(s.item), "reason": s.reason} for s in skips]


def read_corpus(readers: Registry, kind: str, corpus_dir: str | None, options: dict | None = None):
    """``readers.get(kind)(corpus_dir, **options)``; an unknown kind is a :class:`ConfigError`
    listing the registered ones, and so is an option the reader does not take or a value of the
    wrong type (:func:`check_reader_options`), before the reader runs."""
    try:
        reader = readers.get(kind)
    except KeyError as exc:  # the registry's miss (it names the close and the valid names)
        raise ConfigError(str(exc.args[0]) if exc.args else f"unknown corpus {kind!r}") from None
    options = dict(options or {})
    check_reader_options(reader, kind, options)
    return reader(corpus_dir, **options)


def check_reader_options(reader, kind: str, options: dict) -> None:
    """Raise a :class:`ConfigError` naming ``--corpus-option KEY`` when ``reader`` (called as
    ``reader(corpus_dir, **options)``) has no parameter ``KEY`` (with the close names and all the
    reader's options) or when the value does not fit the parameter's annotation."""
    try:
        params = list(inspect.signature(reader).parameters.values())[1:]  # the first is corpus_dir
    except (TypeError, ValueError):  # a builtin or C callable: nothing to check against
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    listed = ", ".join(names) if names else "none"
    for key in options:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            hint = f"did you mean --corpus-option {close[0]}=...? " if close else ""
            raise ConfigError(
                f"--corpus-option {key}: the {kind} reader has no option {key!r}; {hint}its options: {listed}"
            )
    hints = _hints(reader, params)
    for key, value in options.items():
        if key in hints and not _fits(value, hints[key]):
            raise ConfigError(
                f"--corpus-option {key}: the {kind} reader wants {_describe(hints[key])}, got "
                f"{_kind_of(value)} {value!r}; give e.g. --corpus-option {key}={_example(hints[key])} "
                "(values are read as YAML: quote text that looks like a number, a list or a boolean)"
            )


def _hints(reader, params) -> dict:
    """``{parameter: annotation}``, each string annotation evaluated on its own in the reader's
    module (one that does not resolve is left unchecked: the reader checks its own values)."""
    out = {}
    namespace = getattr(inspect.unwrap(reader), "__globals__", {})
    for p in params:
        hint = p.annotation
        if hint is inspect.Parameter.empty:
            continue
        if isinstance(hint, str):
            try:
                hint = eval(hint, dict(namespace))  # noqa: S307 - the reader's own annotation
            except Exception:  # noqa: BLE001
                continue
        out[p.name] = hint
    return out


def _options(hint) -> tuple:
    """The alternatives of a ``Union`` / ``X | Y`` hint, else ``(hint,)``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return typing.get_args(hint)
    return (hint,)


def _fits(value, hint) -> bool:
    for option in _options(hint):
        origin = typing.get_origin(option) or option
        if option is type(None):
            if value is None:
                return True
        elif option is typing.Any:
            return True
        elif origin is bool:
            if isinstance(value, bool):
                return True
        elif origin is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return True
        elif origin is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return True
        elif origin is str:
            if isinstance(value, str):
                return True
        elif origin is Path or (isinstance(origin, type) and issubclass(origin, Path)):
            if isinstance(value, (str, Path)):
                return True
        elif origin in (list, tuple, set, frozenset) or origin is typing.Sequence:
            if isinstance(value, (list, tuple)):
                args = [a for a in typing.get_args(option) if a is not Ellipsis]
                if not args or all(_fits(v, args[0]) for v in value):
                    return True
        elif origin is dict:
            if isinstance(value, dict):
                return True
        elif not isinstance(origin, type):  # Literal, TypeVar ...: the reader checks the value
            return True
        elif isinstance(value, origin):
            return True
    return False


_DESCRIPTIONS = {str: "text", int: "a whole number", float: "a number", bool: "true or false", dict: "a mapping"}


def _describe(hint) -> str:
    out = []
    for option in _options(hint):
        origin = typing.get_origin(option) or option
        if option is type(None):
            continue
        if origin in (list, tuple, set, frozenset):
            args = [a for a in typing.get_args(option) if a is not Ellipsis]
            out.append("a list" + (f" of {_describe(args[0])}" if args else ""))
        elif origin is Path:
            out.append("a path")
        else:
            out.append(_DESCRIPTIONS.get(origin, getattr(origin, "__name__", str(origin))))
    return " or ".join(dict.fromkeys(out)) or "nothing"


def _example(hint) -> str:
    origin = typing.get_origin(_options(hint)[0]) or _options(hint)[0]
    return {str: "TEXT", int: "3", float: "1.5", bool: "true", dict: "{key: value}", Path: "PATH"}.get(
        origin, "[A, B]" if origin in (list, tuple, set, frozenset) else "VALUE"
    )


def _kind_of(value) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "the number"
    if isinstance(value, (list, tuple)):
        return "the list"
    if isinstance(value, dict):
        return "the mapping"
    if value is None:
        return "an empty value"
    return "the text"


def require_corpus_dir(kind: str, corpus_dir) -> str:
    """``corpus_dir``, or a :class:`ConfigError` saying that corpus ``kind`` needs one."""
    if not corpus_dir:
        raise ConfigError(f"--corpus-dir: corpus {kind!r} needs a corpus folder; pass --corpus-dir DIR")
    return str(corpus_dir)


# ---- text files of a corpus ------------------------------------------------------------------

#: byte-order marks, longest first (a UTF-32-LE mark starts like a UTF-16-LE one)
BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def read_text(path, encoding: str = "utf-8") -> str:
    """The text of a corpus file without its byte-order mark: a UTF-8/16/32 BOM picks that
    encoding (and is dropped); else UTF-8, and a file that is not valid UTF-8 is decoded as
    ``encoding`` (so a corpus mixing UTF-8 and GBK files reads with ``encoding=gbk``, each file
    decoded as what it is). A stray BOM inside the text is dropped too. Raises ``OSError`` /
    ``UnicodeDecodeError``."""
    raw = Path(path).read_bytes()
    for bom, name in BOMS:
        if raw.startswith(bom):
            return raw[len(bom) :].decode(name).replace("\ufeff", "")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        if codecs.lookup(encoding).name == "utf-8":
            raise
        text = raw.decode(encoding)
    return text.replace("\ufeff", "")


def unreadable_text(what: str, exc: Exception, encoding: str = "utf-8") -> str:
    """The skip reason of a text file that could not be read; a decoding error names the option
    that reads the file (``--corpus-option encoding=gbk`` for GBK, the usual culprit)."""
    if isinstance(exc, UnicodeDecodeError):
        name = codecs.lookup(encoding).name
        hint = (
            "if it is GBK (common in Chinese corpora) or Latin-1, save it as UTF-8 or read it with "
            "--corpus-option encoding=gbk (or latin-1)"
            if name not in ("gbk", "gb18030")
            else "give its encoding with --corpus-option encoding=NAME"
        )
        return f"unreadable {what}: not {encoding} text ({exc.reason} at byte {exc.start}); {hint}"
    return f"unreadable {what} ({type(exc).__name__}: {exc})"


def check_encoding(encoding) -> str:
    """``encoding`` if Python has a codec of that name, else a :class:`ConfigError`."""
    try:
        codecs.lookup(str(encoding))
    except LookupError:
        raise ConfigError(
            f"--corpus-option encoding: {encoding!r} is not a text encoding Python knows; "
            "use a codec name such as utf-8, gbk, gb18030 or latin-1"
        ) from None
    return str(encoding)
