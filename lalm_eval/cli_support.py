"""Pieces every benchmark command line shares: ``key=value`` options, presets, the ``push``
subcommand, text-LLM options and turning project errors into one clear line."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import io
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError, LalmEvalError


def parse_key_values(items: list[str], flag: str = "option") -> dict:
    """``["seed=3", "languages=[en]"]`` → ``{"seed": 3, "languages": ["en"]}`` (values as YAML).

    ``flag`` (``--set``, ``--corpus-option`` …) is named in the error for an item that is not
    ``key=value`` or whose value is not YAML."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {item!r}: not key=value; write it as {flag} KEY=VALUE, e.g. {flag} seed=3")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            problem = str(exc).splitlines()[0]
            raise ConfigError(
                f"{flag} {key.strip()}: value {value!r} is not valid YAML ({problem}); quote it, e.g. "
                f"{flag} {key.strip()}='\"{value}\"'"
            ) from None
    return out


def check_keys(cls, data: dict, where: str) -> None:
    """Reject keys of ``data`` that are not fields of the dataclass ``cls``, naming them."""
    import dataclasses

    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")


def load_preset_data(name_or_path: str, preset_dir: Path) -> tuple[dict, Path]:
    """The YAML of a preset given by name (a file in ``preset_dir``) or path."""
    path = Path(name_or_path)
    if not path.is_file():
        path = Path(preset_dir) / f"{name_or_path}.yaml"
    if not path.is_file():
        names = sorted(p.stem for p in Path(preset_dir).glob("*.yaml"))
        raise ConfigError(f"unknown preset {name_or_path!r}; presets: {names}, or give a YAML file")
    return yaml.safe_load(path.read_text(encoding="utf-8")) or {}, path


def add_llm_options(parser: argparse.ArgumentParser, purpose: str) -> None:
    parser.add_argument("--llm", help=f"text-LLM backend that {purpose} (e.g. openai)")
    parser.add_argument(
        "--llm-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="backend option, e.g. --llm-option model=qwen-plus --llm-option base_url=http://host/v1",
    )


def llm_from_args(args):
    if not args.llm:
        return None
    from lalm_eval.llm.options import text_llm_from_flags  # every option checked, naming --llm-option

    return text_llm_from_flags(args.llm, args.llm_option)


def add_push_command(sub) -> None:
    p = sub.add_parser(
        "push",
        help="upload a built folder to the Hugging Face Hub as a dataset "
        "(token: HF_TOKEN or the cached login, never printed)",
    )
    p.add_argument("dir", type=Path)
    p.add_argument("--repo-id", required=True)
    p.add_argument("--private", action="store_true")
    p.add_argument("--revision")
    p.add_argument("--dry-run", action="store_true", help="validate the card and list the files; upload nothing")
    p.set_defaults(func=_push)


def _push(args) -> int:
    from lalm_eval.hub.push import push_folder

    print(
        push_folder(
            args.dir, args.repo_id, private=args.private, dry_run=args.dry_run, revision=args.revision
        ).summary()
    )
    return 0


DEBUG_ENV = "LALM_EVAL_DEBUG"


def pop_verbose(argv) -> tuple[list[str], bool]:
    """``argv`` without ``--verbose`` (accepted anywhere on every command line), and whether it or
    ``LALM_EVAL_DEBUG=1`` asks for tracebacks beside the one-line errors."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv
    return [a for a in argv if a != "--verbose"], verbose or os.environ.get(DEBUG_ENV, "") not in ("", "0")


def report_error(prog: str, exc: BaseException, verbose: bool = False) -> int:
    """Print a project error the one way every CLI does, ``<prog>: error: <file or flag>: <what is
    wrong>; <how to fix>`` (the message supplies all but the prefix), and return exit status 2.
    The traceback follows only under ``--verbose`` / ``LALM_EVAL_DEBUG=1``."""
    from lalm_eval.redaction import redact

    if verbose:
        traceback.print_exception(exc, file=sys.stderr)
    print(f"{prog}: error: {redact(str(exc))}", file=sys.stderr)  # never an API key, whatever the message quotes
    return 2


class ConsoleStream:
    """``sys.stdout`` / ``sys.stderr`` as the CLIs write to them: text the console's encoding cannot
    show is written with ``?`` in its place (a non-UTF-8 locale such as ``LC_ALL=C`` with
    ``PYTHONUTF8=0``), never an error; once the reader has gone (``| head -1``, ``| true``: a
    broken pipe) the rest is dropped quietly, the stream pointed at ``os.devnull`` so that the
    interpreter's last flush does not complain either, and the command runs on to its end (its
    outputs are files, its exit status says how it went)."""

    def __init__(self, stream):
        self._stream, self.broken = stream, False

    def write(self, text: str) -> int:
        if self.broken:
            return len(text)
        try:
            try:
                return self._stream.write(text)
            except UnicodeEncodeError:
                encoding = getattr(self._stream, "encoding", None) or "ascii"
                self._stream.write(text.encode(encoding, "replace").decode(encoding, "replace"))
                return len(text)
        except BrokenPipeError:
            self._drop()
            return len(text)

    def flush(self) -> None:
        if self.broken:
            return
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextlib.contextmanager
def console_streams():
    """``sys.stdout`` and ``sys.stderr`` wrapped in :class:`ConsoleStream` while a command runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = ConsoleStream(sys.stdout), ConsoleStream(sys.stderr)
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def interrupt_note(describe: Callable[[], str | None]):
    """What a Ctrl-C while this block runs leaves behind, told by :func:`guard`: ``describe()`` is
    called when the interrupt passes (the innermost note wins) and its text follows
    ``<prog>: interrupted; ``, e.g. how many answers the response cache kept."""
    try:
        yield
    except KeyboardInterrupt as exc:
        if not getattr(exc, "lalm_kept", None):
            try:
                exc.lalm_kept = describe()
            except Exception:  # noqa: BLE001 - a note that fails must not hide the interrupt
                exc.lalm_kept = None
        raise


def _locale_error(exc: UnicodeError) -> str | None:
    """The one-line error for text (a path, a name) this system's non-UTF-8 locale cannot encode
    or decode; None when the locale is UTF-8 (then it is a bug, not the locale)."""
    encoding = codecs.lookup(sys.getfilesystemencoding()).name
    if encoding == "utf-8" or codecs.lookup(getattr(exc, "encoding", "") or "utf-8").name != encoding:
        return None
    value = getattr(exc, "object", "")
    shown = value if isinstance(value, str) else bytes(value).decode("utf-8", "replace")
    shown = " ".join(shown.replace(";", ",").split())[:120] or "a name"
    return (
        f"{shown}: cannot be {'encoded' if isinstance(exc, UnicodeEncodeError) else 'decoded'} in this "
        f"system's {encoding} locale (it has characters outside it); run under a UTF-8 locale, e.g. "
        "LC_ALL=C.UTF-8, or set PYTHONUTF8=1"
    )


def guard(prog: str, fn, verbose: bool = False) -> int:
    """``fn()``; a :class:`LalmEvalError` becomes one line and exit 2 (:func:`report_error`), and so
    does a name a non-UTF-8 locale cannot encode; a Ctrl-C is exit 130 with what it left behind
    (:func:`interrupt_note`); anything else is a bug: its traceback stays, with a line saying so.
    Output goes through :class:`ConsoleStream` (no error for a character the console cannot show,
    nothing but silence once a pipe's reader has gone)."""
    with console_streams():
        try:
            return fn()
        except LalmEvalError as exc:
            return report_error(prog, exc, verbose)
        except KeyboardInterrupt as exc:
            note = getattr(exc, "lalm_kept", None)
            print(f"{prog}: interrupted" + (f"; {note}" if note else ""), file=sys.stderr)
            return 130
        except (UnicodeEncodeError, UnicodeDecodeError) as exc:
            message = _locale_error(exc)
            if message is None:
                _internal(prog)
                raise
            if verbose:
                traceback.print_exception(exc, file=sys.stderr)
            print(f"{prog}: error: {message}", file=sys.stderr)
            return 2
        except Exception:
            _internal(prog)
            raise


def _internal(prog: str) -> None:
    print(
        f"{prog}: internal error (a bug in lalm-eval, not in your input): please report it with the traceback below",
        file=sys.stderr,
    )


def run(parser: argparse.ArgumentParser, argv=None) -> int:
    """Parse and dispatch to ``args.func``; project errors (:class:`LalmEvalError`) print one line
    and exit 2 (:func:`report_error`); anything else is a bug and shows its traceback."""
    argv, verbose = pop_verbose(argv)

    def dispatch() -> int:  # parsed inside the guard: argparse's messages reach the console as any other
        args = parser.parse_args(argv)
        return args.func(args)

    return guard(parser.prog, dispatch, verbose)
