"""Build folders that are never half-written under their final name (shared by every benchmark).

A build (``palm-bench build``, ``msu-bench build``, the MCQ import) writes into a temporary sibling,
``<out>.tmp-<pid>``, and renames it into place only once it is complete (:func:`staged_build`).
Replacing an earlier build keeps that build until the new one is complete: the old folder is
renamed aside (``<out>.old-<pid>``), the new one renamed in, the old one removed. So whatever kills
a build (``kill -9``, a full disk, a power cut), the final name holds either the previous complete
build or nothing; what is left beside it is recognised and cleaned up by the next build into the
same place, and a load says what happened (:func:`check_loadable`, called by
:func:`lalm_eval.hub.load.load_dataset_fresh`). A user's own ``datasets.load_dataset(folder)``
cannot be hooked; it is protected by the rename alone: it never sees a half-built folder under
the final name, only (at worst) no folder.

A build replaces its own files completely: every file a previous build wrote (the shards its
``build_info.json`` lists, any ``<config>/<split>-NNNNN-of-NNNNN.parquet`` shard or partial
shard, ``README.md`` and ``build_info.json``) is gone afterwards, so no stale config or shard
survives a rebuild. Other files (a user's notes, a ``.git`` folder of a Hub clone) are carried into
the new folder and listed (``build_info.json`` ``kept_files``). A folder that holds files but no
build at all is refused (``--out ~/Documents`` must not become a dataset).

Other tools that write a folder of their own files use the same machinery with another
:class:`FolderKind` (which files are theirs, which file records them): ``palm-bench export-sft``
(:data:`SFT_EXPORT`) replaces its earlier export's JSONL, audio and info files, and keeps (and
lists) every other file, a folder of other files included.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import json
import logging
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

from lalm_eval.errors import ConfigError, DataError

log = logging.getLogger(__name__)

BUILD_FILES = ("README.md", "build_info.json")
#: the shard names :mod:`lalm_eval.hub.parquet` writes, and its partial shards while it writes them
SHARD_RE = re.compile(r"^[^/]+/[^/]+-\d{5}-of-\d{5}\.parquet$")
PARTIAL_RE = re.compile(r"^[^/]+/\.[^/]+-\d{5}\.parquet\.partial$")
TMP_TAG, OLD_TAG = ".tmp-", ".old-"
_OPEN: dict[Path, Stage] = {}  # the stages of this process, by final folder (nested calls share one)


@dataclasses.dataclass(frozen=True)
class FolderKind:
    """What a tool writes into its output folder, so that a rerun can tell its own files (replaced)
    from everyone else's (kept and listed)."""

    what: str  # "build", "export": how messages name the tool's output
    info_file: str  # written last; its presence says a complete output is there
    own_files: tuple[str, ...]  # fixed names it writes (relative posix paths), ours beside an output of ours
    own_patterns: tuple[re.Pattern, ...]  # names of the files it writes, ours in any case
    own_globs: tuple[str, ...]  # globs that find those files cheaply (a half-written output)
    recorded_keys: tuple[str, ...]  # keys of info_file whose value (a path, a list or a mapping) names its files
    foreign: str = "refuse"  # a folder of other files only: "refuse" (an error) or "keep" (carried over, listed)
    not_into: tuple[str, ...] = ()  # files that say the folder is another tool's output: refused


BUILD = FolderKind(
    "build",
    "build_info.json",
    BUILD_FILES,
    (SHARD_RE, PARTIAL_RE),
    ("*/*.parquet", "*/.*.parquet.partial"),
    ("shards",),
)
#: ``palm-bench export-sft``: ``audio/<content id>.wav``, ``<split>.jsonl``, ``dataset_info.json``
SFT_EXPORT = FolderKind(
    "export",
    "export_info.json",
    ("export_info.json", "dataset_info.json"),
    (re.compile(r"^audio/[0-9a-f]{16}\.wav$"),),
    ("audio/*.wav",),
    ("jsonl",),
    foreign="keep",
    not_into=("build_info.json",),  # a dataset build: the export does not go inside it
)


@dataclasses.dataclass
class Stage:
    """A build in progress: write everything into ``path``; on success it becomes ``final``."""

    final: Path  # the output folder (symbolic links resolved)
    path: Path  # the temporary sibling the build writes into
    previous: str  # what was under the final name: "none", "empty", "build", "half-built" or "other" (files only)
    kept: list[str]  # files (and hidden folders, "name/") no build wrote, carried into the new folder
    notes: list[str]  # what was found and cleaned up beside it (interrupted builds)
    kind: FolderKind = BUILD
    replaced: list[str] = dataclasses.field(default_factory=list)  # kept files the new output wrote over

    def summary(self) -> str:
        """One line for the command's report ('' when there is nothing to say)."""
        parts = list(self.notes)
        if self.previous == "half-built":
            parts.append("replaced the half-built folder that was there")
        if self.kept:
            shown = ", ".join(self.kept[:5]) + (f" and {len(self.kept) - 5} more" if len(self.kept) > 5 else "")
            parts.append(
                f"kept {len(self.kept)} file(s) no {self.kind.what} wrote: {shown} ({self.kind.info_file} kept_files)"
            )
        if self.replaced:
            parts.append(f"replaced {len(self.replaced)} file(s) of that folder by its own: {', '.join(self.replaced)}")
        return "; ".join(parts)


def check_out_path(out, flag: str = "--out") -> Path:
    """A :class:`ConfigError` naming ``flag`` unless ``out`` is (or can become) a folder: not a file,
    not under a file, its nearest existing parent writable. Cheap: call it before any work."""
    given = Path(out)
    if given.exists() and not given.is_dir():
        raise ConfigError(f"{flag} {out}: is a file, not a folder; give a folder path (it is made if missing)")
    parent = Path(os.path.abspath(given))
    while not parent.exists() and parent.parent != parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ConfigError(
            f"{flag} {out}: {parent} is a file, so no folder can be made under it; give a path whose parents are folders"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag} {out}: {parent} is not writable; choose a folder you can write to")
    return given


def make_out_dir(out, flag: str = "--out") -> Path:
    """:func:`check_out_path`, then create the folder (an :class:`OSError` becomes a
    :class:`ConfigError` naming ``flag``: what root's permissions let through, a read-only or
    virtual file system stops here)."""
    path = check_out_path(out, flag)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{flag} {out}: cannot create it ({exc.strerror or exc}); choose a folder you can write to"
        ) from None
    return path


@contextlib.contextmanager
def staged_build(out, flag: str = "--out", kind: FolderKind = BUILD) -> Iterator[Stage]:
    """Check ``out``, clean up what interrupted builds left beside it, and yield a :class:`Stage`
    whose ``path`` (a fresh temporary sibling) the build writes into; when the block ends without
    an error, the files no build wrote are carried over from the old folder and the stage replaces
    it (module docstring). On an error the stage is removed and the old folder is untouched.

    Everything that can refuse ``out`` happens before the block runs, so call it before any work
    (planning, rendering). Nested calls for the same folder share the outer stage (a command line
    opens it first thing, the library's build function then finds it open): the outer one swaps.
    ``kind`` says which files are the tool's own (:class:`FolderKind`; default: a build's).
    """
    check_out_path(out, flag)
    final = Path(os.path.realpath(out))
    if final in _OPEN:
        yield _OPEN[final]
        return
    here = Path(os.path.realpath(os.getcwd()))
    if final == here or final in here.parents:
        raise ConfigError(
            f"{flag} {out!s}: is the current folder (or holds it), which the {kind.what} replaces as a whole; "
            f"give a folder of its own, e.g. {flag} ./{here.name}-build"
        )
    notes = _recover(final, out, flag)
    for note in notes:  # the command lines print them with their report (print_folder_report)
        log.info("%s: %s", out, note)
    previous, kept = _previous(final, out, flag, kind)
    stage = Stage(final, final.with_name(f"{final.name}{TMP_TAG}{os.getpid()}"), previous, kept, notes, kind)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        stage.path.mkdir()
    except OSError as exc:
        raise ConfigError(
            f"{flag} {out}: cannot create {stage.path.name} beside it ({exc.strerror or exc}); "
            "choose a folder you can write to"
        ) from None
    _OPEN[final] = stage
    try:
        yield stage
        try:
            stage.replaced[:] = _carry_over(final, stage.path, kept)
            _swap_in(stage.path, final)
        except OSError as exc:  # a full disk, permissions changed while it ran: the old folder is whole
            raise ConfigError(
                f"{flag} {out}: the finished build could not be moved into place ({exc.strerror or exc}), "
                f"what was there before is unchanged; free space or fix the permissions of {final.parent}, "
                "then build again"
            ) from exc
    finally:
        del _OPEN[final]
        shutil.rmtree(stage.path, ignore_errors=True)


def stage_report(stage: Stage) -> dict:
    """What a build command returns (and prints) about its output folder."""
    return {
        "previous": stage.previous,
        "kept_files": list(stage.kept),
        "replaced_files": list(stage.replaced),
        "notes": list(stage.notes),
        "summary": stage.summary(),
        "what": stage.kind.what,
        "info_file": stage.kind.info_file,
    }


def print_folder_report(prog: str, out, info: dict) -> None:
    """A build command's lines about its output folder (stderr): what interrupted builds left
    and what was done with it, a replaced half-built folder, the files carried over."""
    import sys

    folder = info.get("folder") or {}
    what, info_file = folder.get("what", "build"), folder.get("info_file", "build_info.json")
    for note in folder.get("notes", []):
        print(f"{prog}: {out}: {note}", file=sys.stderr)
    if folder.get("previous") == "half-built":
        print(f"{prog}: {out}: replaced the half-built folder that was there", file=sys.stderr)
    kept = folder.get("kept_files") or []
    if kept:
        print(
            f"{prog}: {out}: kept {len(kept)} file(s) no {what} wrote (listed in {info_file} kept_files): "
            + ", ".join(kept),
            file=sys.stderr,
        )
    replaced = folder.get("replaced_files") or []
    if replaced:
        print(
            f"{prog}: {out}: replaced {len(replaced)} file(s) that were there by the {what}'s own: "
            + ", ".join(replaced),
            file=sys.stderr,
        )


def check_loadable(path) -> None:
    """A :class:`DataError` naming ``path`` when it is, or stands for, an interrupted build: a folder
    with Parquet shards but neither a ``README.md`` card nor ``build_info.json`` (a build of the
    layout before :func:`staged_build`, killed before it finished), or no folder but the
    ``.tmp-<pid>`` / ``.old-<pid>`` sibling a build leaves when interrupted. Anything else passes
    (other datasets, Hub ids): ``datasets`` says what is wrong with those."""
    folder = Path(path)
    if folder.is_dir():
        if not any((folder / name).is_file() for name in BUILD_FILES) and _our_files(folder):
            raise DataError(
                folder,
                "a half-built folder: Parquet shards but no README.md card and no build_info.json "
                "(a build was interrupted before it finished, or the folder was copied while it was written); "
                "run the build again with this folder as --out (it replaces the half-built files), "
                "or give a Parquet folder of your own a README.md card with a configs block",
            )
        return
    if folder.exists():
        raise DataError(folder, "is a file, not a dataset folder; give the folder a build wrote, or a Hub id")
    final = Path(os.path.abspath(folder))
    olds, tmps = _siblings(final, OLD_TAG), _siblings(final, TMP_TAG)
    running = [(p, pid) for p, pid in olds + tmps if _alive(pid)]
    if running:
        sibling, pid = running[0]
        raise DataError(
            folder,
            f"not there yet: a build (process {pid}) is writing it now, into {sibling.name}; "
            f"wait for it to finish (or remove {sibling.name} if no build is running)",
        )
    if olds:
        old = olds[0][0]
        raise DataError(
            folder,
            f"missing, but {old.name} beside it holds the previous complete build "
            "(a build was interrupted while replacing it); run the same build again (it restores "
            f"{old.name} first), or rename {old.name} to {final.name}",
        )
    if tmps:
        tmp = tmps[0][0]
        raise DataError(
            folder,
            f"not built: only {tmp.name} is there, what an interrupted build left half-written; "
            f"run the build again (it removes {tmp.name})",
        )


# -- internals ---------------------------------------------------------------------------------


def _alive(pid: int | None) -> bool:
    """Whether another process of that id runs (a dead or unparsable id is not)."""
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    except OSError:
        return False
    return True


def _siblings(final: Path, tag: str) -> list[tuple[Path, int | None]]:
    """``(path, pid)`` of ``<final><tag><pid>`` beside ``final``, sorted by name."""
    out = []
    for name in sorted(glob.glob(glob.escape(str(final)) + glob.escape(tag) + "*")):
        suffix = name[len(str(final)) + len(tag) :]
        out.append((Path(name), int(suffix) if suffix.isdigit() else None))
    return out


def _recover(final: Path, given, flag: str) -> list[str]:
    """Clean up what interrupted builds left beside ``final``: a ``.old-<pid>`` with no final
    folder is restored (the swap was cut between its two renames), other ``.old-`` / ``.tmp-``
    siblings are removed; a sibling whose process still runs is another build at work: refused."""
    olds, tmps = _siblings(final, OLD_TAG), _siblings(final, TMP_TAG)
    for sibling, pid in olds + tmps:
        if _alive(pid):
            raise ConfigError(
                f"{flag} {given}: another build (process {pid}) is writing it now, into {sibling.name}; "
                f"wait for it to finish, or remove {sibling.name} if no build is running"
            )
    notes = []
    if olds and not final.exists():
        restore = max((p for p, _ in olds), key=lambda p: p.stat().st_mtime)
        os.rename(restore, final)
        olds = [(p, pid) for p, pid in olds if p != restore]
        notes.append(f"restored the previous build from {restore.name} (a build was interrupted while replacing it)")
    for sibling, _ in olds:
        shutil.rmtree(sibling)
        notes.append(f"removed {sibling.name}, an old build an interrupted replacement left behind")
    for sibling, _ in tmps:
        shutil.rmtree(sibling)
        notes.append(f"removed {sibling.name}, the half-written folder of an interrupted build")
    return notes


def _our_files(folder: Path, kind: FolderKind = BUILD) -> bool:
    """Whether ``folder`` holds a file of ``kind``'s own names (a build: a shard or partial shard of
    :mod:`lalm_eval.hub.parquet`'s layout)."""
    return any(
        any(p.fullmatch(f.relative_to(folder).as_posix()) for p in kind.own_patterns)
        for pattern in kind.own_globs
        for f in folder.glob(pattern)
    )


def _recorded(info: Path, kind: FolderKind) -> set[str]:
    """The files ``kind``'s info file says it wrote (nothing when it is missing or unreadable)."""
    try:
        data = json.loads(info.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    out: set[str] = set()
    for key in kind.recorded_keys:
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str):
            out.add(value)
        elif isinstance(value, (list, dict)):
            out |= {str(v) for v in value}
    return out


def _previous(final: Path, given, flag: str, kind: FolderKind = BUILD) -> tuple[str, list[str]]:
    """What is under the final name ("none", "empty", "build", "half-built", "other") and the files
    in it that no build wrote (sorted; a hidden folder such as ``.git`` as one entry, ``name/``).
    A folder with files but no build in it is refused (a :class:`FolderKind` with ``foreign="keep"``:
    carried over whole, "other")."""
    if not final.exists():
        return "none", []
    entries = sorted(final.iterdir())
    if not entries:
        return "empty", []
    other = next((name for name in kind.not_into if (final / name).is_file()), None)
    if other is not None:
        raise ConfigError(
            f"{flag} {given}: holds {other}, the output of another tool (a dataset build), which the "
            f"{kind.what} would be mixed into; give a folder of its own, e.g. {flag} {final.name}-{kind.what}"
        )
    info = final / kind.info_file
    has_info, has_own = info.is_file(), _our_files(final, kind)
    if not has_info and not has_own and kind.foreign == "refuse":
        shown = ", ".join(p.name + ("/" if p.is_dir() else "") for p in entries[:3])
        more = f" and {len(entries) - 3} more" if len(entries) > 3 else ""
        raise ConfigError(
            f"{flag} {given}: holds files no {kind.what} wrote ({shown}{more}) and no {kind.info_file}; "
            f"give a new or empty folder, or the folder of an earlier {kind.what} (its files that no "
            f"{kind.what} wrote are kept)"
        )
    recorded = _recorded(info, kind) if has_info else set()
    own_files = set(kind.own_files) if has_info or has_own else set()  # else a user's file of that name

    def ours(rel: str) -> bool:
        return rel in own_files or rel in recorded or any(p.fullmatch(rel) for p in kind.own_patterns)

    kept = []
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            if entry.name.startswith("."):  # .git, .cache: the user's, kept whole
                kept.append(entry.name + "/")
                continue
            for sub in sorted(entry.rglob("*")):
                rel = sub.relative_to(final).as_posix()
                if (sub.is_file() or sub.is_symlink()) and not ours(rel):
                    kept.append(rel)
        elif not ours(entry.name):
            kept.append(entry.name)
    return ("build" if has_info else "half-built" if has_own else "other"), kept


def _link_or_copy(src, dst) -> None:
    """A hard link (instant, no extra space: the old folder is removed right after), else a copy."""
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError:
        shutil.copy2(src, dst, follow_symlinks=False)


def _carry_over(old: Path, new: Path, kept: list[str]) -> list[str]:
    """Copy the kept files of ``old`` into ``new`` (the old folder stays whole until the swap);
    returns the kept ones not carried over because the new output wrote a file of that name."""
    replaced = []
    for rel in kept:
        src, dst = old / rel.rstrip("/"), new / rel.rstrip("/")
        if dst.exists() or dst.is_symlink():
            log.warning("%s: not carried over, the new output wrote a file of that name", src)
            replaced.append(rel)
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):
            shutil.copytree(src, dst, symlinks=True, copy_function=_link_or_copy)
        else:
            _link_or_copy(src, dst)
    return replaced


def _swap_in(stage: Path, final: Path) -> None:
    """Rename ``stage`` to ``final``; an existing ``final`` is renamed aside first and removed
    after. A kill between the two renames leaves ``final`` missing and ``<final>.old-<pid>``
    complete: the next build restores it (:func:`_recover`), a load says so (:func:`check_loadable`)."""
    if not final.exists():
        os.rename(stage, final)
        return
    aside = final.with_name(f"{final.name}{OLD_TAG}{os.getpid()}")
    os.rename(final, aside)
    try:
        os.rename(stage, final)
    except BaseException:
        os.rename(aside, final)
        raise
    shutil.rmtree(aside, ignore_errors=True)
