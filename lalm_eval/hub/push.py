"""Publish an exported folder (Parquet shards + ``README.md`` card) as a Hub dataset repository.

``push_folder`` checks ``--repo-id`` and ``--revision`` (huggingface_hub's own
``validate_repo_id``; git's ref-name rules, which huggingface_hub does not check locally) and the
card first, then either lists what would be uploaded (``dry_run``, no network) or creates the
repository (if needed) and uploads those files in one commit.

Symbolic links are followed (a folder whose config sub-folders link to another build uploads what
the card names): the files are listed here (:func:`upload_files`) and committed as they are listed,
because ``HfApi.upload_folder`` lists with ``Path.glob("**/*")``, which does not enter linked
folders (measured, huggingface_hub 2.4, Python 3.11). The card check then requires every file the
card's ``data_files`` name to be among the listed files (a hidden file is not uploaded). A
``--repo-id`` without a namespace is accepted as ``create_repo`` takes it (the token's own
namespace); the upload then goes to the id ``create_repo`` returns.
The token is the explicit argument or, when ``None``, whatever huggingface_hub resolves
(``HF_TOKEN``, then the cached ``hf auth login`` token); it is handed to ``HfApi`` and never
printed, logged or stored in the report.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import HfApi

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.card import CardError, card_data_files, check_card

logger = logging.getLogger(__name__)

HUB_URL = "https://huggingface.co"
# Hidden files and folders (.git/, .cache/, editor droppings) are neither listed nor uploaded (_walk).


@dataclass(frozen=True)
class PushReport:
    """What was (or, for a dry run, would be) uploaded."""

    repo_id: str
    repo_url: str
    files: list[tuple[str, int]] = field(default_factory=list)  # (posix path in repo, bytes)
    total_bytes: int = 0
    dry_run: bool = False
    commit_url: str | None = None
    revision: str | None = None
    linked: int = 0  # files reached through a symbolic link (followed)

    def summary(self) -> str:
        """A few human-readable lines (no token, ever)."""
        verb = "would upload" if self.dry_run else "uploaded"
        via = f" ({self.linked} through symbolic links, followed)" if self.linked else ""
        lines = [f"{self.repo_id}: {verb} {len(self.files)} files, {self.total_bytes:,} bytes{via}"]
        if "/" not in self.repo_id:
            lines.append(
                f"  (no namespace in {self.repo_id!r}: the repository is created in the token's own namespace)"
            )
        lines += [f"  {path}  {size:,}" for path, size in self.files]
        lines.append(f"  {self.commit_url or self.repo_url}")
        return "\n".join(lines)


def _walk(out_dir: Path):
    """``(relative posix path, absolute path, through a link)`` of every non-hidden file under
    ``out_dir``, following symbolic links (a linked folder already on the current path, a loop,
    is not entered twice), sorted by path."""
    out = []

    def visit(folder: Path, rel: str, linked: bool, chain: frozenset) -> None:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name.startswith("."):
                continue
            path, sub = Path(entry.path), f"{rel}{entry.name}"
            via = linked or entry.is_symlink()
            if entry.is_dir(follow_symlinks=True):
                real = os.path.realpath(path)
                if real not in chain:
                    visit(path, sub + "/", via, chain | {real})
            elif entry.is_file(follow_symlinks=True):
                out.append((sub, path, via))

    visit(out_dir, "", False, frozenset({os.path.realpath(out_dir)}))
    return out


def upload_files(out_dir) -> list[tuple[str, int]]:
    """``(relative posix path, size)`` of the files ``push_folder`` uploads, sorted by path
    (symbolic links followed, hidden files and folders left out)."""
    return [(rel, path.stat().st_size) for rel, path, _ in _walk(Path(out_dir))]


#: git's rules for a ref name (``git check-ref-format``), which a Hub revision (a branch) follows
_BAD_REF = re.compile(r"^-|(^|/)\.|\.\.|[\x00-\x20\x7f~^:?*\[\\]|@\{|//|^/|/$|\.lock(/|$)|\.$")


def _check_repo_id(repo_id: str) -> None:
    """huggingface_hub's ``validate_repo_id`` (the rules of the Hub's names), as a ConfigError."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        reason = " ".join(str(exc).split()).replace(";", ",")
        raise ConfigError(
            f"--repo-id {repo_id!r}: not a Hub repository id ({reason}); give namespace/name, e.g. "
            "--repo-id your-name/my-dataset (letters, digits, '-', '_', '.')"
        ) from None


def _check_revision(revision: str | None) -> None:
    """A revision to push to is a branch name: git's ref-name rules."""
    if revision is None:
        return
    if not revision.strip() or revision == "@" or _BAD_REF.search(revision):
        raise ConfigError(
            f"--revision {revision!r}: not a valid branch name (git check-ref-format: no spaces, '..', "
            "'~^:?*[\\', '@{', control characters, no leading '/', '.' or '-', no trailing '/', '.' or '.lock'); "
            "give a branch name such as main or v1.0, or leave the flag out (main)"
        )


def _check_card_files(out_dir: Path, files: list[tuple[str, int]]) -> None:
    """Every file the card's ``data_files`` name is among the files to upload (a card whose shards
    would not be uploaded makes a Hub dataset that cannot load)."""
    listed = {rel for rel, _ in files}
    missing = [(where, rel) for where, rel in card_data_files(out_dir) if rel not in listed]
    if missing:
        (where, rel), more = missing[0], len(missing) - 1
        raise CardError(
            out_dir / "README.md",
            f"{rel!r} is not among the files push uploads (hidden, or outside {out_dir})"
            + (f" (and {more} more)" if more else ""),
            field=where,
            fix="put the data files in the folder under their card paths (not hidden), or fix the card",
        )


def _check_folder(out_dir: Path) -> None:
    """A :class:`DataError` unless ``out_dir`` is a folder and not an interrupted build (a
    half-built folder, or only the temporary sibling an interrupted build leaves)."""
    from lalm_eval.hub.atomic import check_loadable

    check_loadable(out_dir)
    if not out_dir.is_dir():
        raise DataError(out_dir, "no such folder; give the folder a build wrote (its --out)")


def push_folder(
    out_dir,
    repo_id: str,
    token: str | None = None,
    private: bool = False,
    dry_run: bool = False,
    revision: str | None = None,
    commit_message: str | None = None,
) -> PushReport:
    """Upload ``out_dir`` to the dataset repository ``repo_id`` (created if missing).

    The card is validated first (:func:`lalm_eval.hub.card.check_card` raises ``CardError``).
    With ``dry_run=True`` nothing touches the network: the report lists the files and sizes.
    """
    out_dir = Path(out_dir)
    _check_repo_id(repo_id)
    _check_revision(revision)
    _check_folder(out_dir)
    check_card(out_dir)
    walked = _walk(out_dir)
    files = [(rel, path.stat().st_size) for rel, path, _ in walked]
    _check_card_files(out_dir, files)
    total, linked = sum(size for _, size in files), sum(via for _, _, via in walked)
    repo_url = f"{HUB_URL}/datasets/{repo_id if '/' in repo_id else '<your namespace>/' + repo_id}"
    if dry_run:
        return PushReport(repo_id, repo_url, files, total, dry_run=True, revision=revision, linked=linked)

    from huggingface_hub import CommitOperationAdd

    api = HfApi(token=token)  # token=None: huggingface_hub's own resolution (HF_TOKEN, login)
    created = api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
    target = getattr(created, "repo_id", None) or repo_id  # "name" alone: created in the token's namespace
    logger.info("uploading %d files (%d bytes) to %s", len(files), total, target)
    commit = api.create_commit(
        repo_id=target,
        repo_type="dataset",
        operations=[CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(path)) for rel, path, _ in walked],
        revision=revision,
        commit_message=commit_message or f"Upload {len(files)} files with lalm-eval",
    )
    return PushReport(
        target,
        str(getattr(created, "url", None) or repo_url),
        files,
        total,
        dry_run=False,
        commit_url=getattr(commit, "commit_url", None),
        revision=revision,
        linked=linked,
    )
