"""Publish an exported folder (Parquet shards + ``README.md`` card) as a Hub dataset repository.

``push_folder`` checks the card first, then either lists what would be uploaded (``dry_run``,
no network) or creates the repository (if needed) and uploads the folder in one commit.
The token is the explicit argument or, when ``None``, whatever huggingface_hub resolves
(``HF_TOKEN``, then the cached ``hf auth login`` token); it is handed to ``HfApi`` and never
printed, logged or stored in the report.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import HfApi

from lalm_eval.errors import ConfigError, DataError
from lalm_eval.hub.card import check_card

logger = logging.getLogger(__name__)

HUB_URL = "https://huggingface.co"
# Hidden files and folders (.git/, .cache/, editor droppings) are neither listed nor uploaded.
# huggingface_hub matches these with fnmatch, where "*" also matches "/".
IGNORE_PATTERNS = [".*", "*/.*"]


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

    def summary(self) -> str:
        """A few human-readable lines (no token, ever)."""
        verb = "would upload" if self.dry_run else "uploaded"
        lines = [f"{self.repo_id}: {verb} {len(self.files)} files, {self.total_bytes:,} bytes"]
        lines += [f"  {path}  {size:,}" for path, size in self.files]
        lines.append(f"  {self.commit_url or self.repo_url}")
        return "\n".join(lines)


def upload_files(out_dir) -> list[tuple[str, int]]:
    """``(relative posix path, size)`` of the files ``push_folder`` uploads, sorted by path."""
    out_dir = Path(out_dir)
    files = []
    for path in sorted(out_dir.rglob("*")):
        rel = path.relative_to(out_dir)
        if path.is_file() and not any(part.startswith(".") for part in rel.parts):
            files.append((rel.as_posix(), path.stat().st_size))
    return files


def _check_repo_id(repo_id: str) -> None:
    parts = repo_id.split("/") if isinstance(repo_id, str) else [""]
    if len(parts) > 2 or not all(parts):
        raise ConfigError(
            f"--repo-id {repo_id!r}: invalid repo_id (too many '/' or an empty part); give 'namespace/name' or 'name'"
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
    _check_folder(out_dir)
    check_card(out_dir)
    files = upload_files(out_dir)
    total = sum(size for _, size in files)
    repo_url = f"{HUB_URL}/datasets/{repo_id}"
    if dry_run:
        return PushReport(repo_id, repo_url, files, total, dry_run=True, revision=revision)

    api = HfApi(token=token)  # token=None: huggingface_hub's own resolution (HF_TOKEN, login)
    created = api.create_repo(repo_id, repo_type="dataset", exist_ok=True, private=private)
    logger.info("uploading %d files (%d bytes) to %s", len(files), total, repo_id)
    commit = api.upload_folder(
        repo_id=repo_id,
        repo_type="dataset",
        folder_path=str(out_dir),
        revision=revision,
        commit_message=commit_message or f"Upload {len(files)} files with lalm-eval",
        ignore_patterns=IGNORE_PATTERNS,
    )
    return PushReport(
        repo_id,
        str(getattr(created, "url", None) or repo_url),
        files,
        total,
        dry_run=False,
        commit_url=getattr(commit, "commit_url", None),
        revision=revision,
    )
