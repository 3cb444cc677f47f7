"""Pieces every benchmark command line shares: ``key=value`` options, presets, the ``push``
subcommand, text-LLM options and turning project errors into one clear line."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
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


def guard(prog: str, fn, verbose: bool = False) -> int:
    """``fn()``; a :class:`LalmEvalError` becomes one line and exit 2 (:func:`report_error`);
    anything else is a bug: its traceback stays, with a line saying so."""
    try:
        return fn()
    except LalmEvalError as exc:
        return report_error(prog, exc, verbose)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted; what was written so far is kept (a rerun resumes)", file=sys.stderr)
        return 130
    except Exception:
        print(
            f"{prog}: internal error (a bug in lalm-eval, not in your input): please report it with the "
            "traceback below",
            file=sys.stderr,
        )
        raise


def run(parser: argparse.ArgumentParser, argv=None) -> int:
    """Parse and dispatch to ``args.func``; project errors (:class:`LalmEvalError`) print one line
    and exit 2 (:func:`report_error`); anything else is a bug and shows its traceback."""
    argv, verbose = pop_verbose(argv)
    args = parser.parse_args(argv)
    return guard(parser.prog, lambda: args.func(args), verbose)
