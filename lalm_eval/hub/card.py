"""Dataset cards: the ``configs:`` front matter, Jinja2 rendering, and validation.

A card is the ``README.md`` beside the Parquet shards. Its YAML front matter lists, per config,
the files of each split (``configs: [{config_name, data_files: [{split, path}]}]``); that list is
what lets ``load_dataset(folder_or_repo, config)`` find the shards without a loading script.
Templates live in a folder the benchmark passes (``render_card(name, context, templates=folder)``;
PALM's and MSU's are in ``hub_cards/``, found by :func:`lalm_eval.resources.hub_cards_dir`) and
receive the front matter already dumped as ``configs_yaml``; they place it between ``---`` lines.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

import datasets
import jinja2
import yaml
from huggingface_hub import DatasetCard, DatasetCardData

from lalm_eval.errors import ConfigError
from lalm_eval.templating import jinja_env

CARD_NAME = "README.md"
_GLOB_CHARS = "*?["


CARD_FIX = "fix the card's front matter, or rebuild the folder (a build writes its card last)"


class CardError(ConfigError):
    """A dataset card is invalid; names the card file and the front-matter field at fault, then
    (after ``"; "``) how to fix it, the one error shape of the command lines."""

    def __init__(
        self, file, message: str, field: str | None = None, problems: list[str] | None = None, fix: str = CARD_FIX
    ):
        self.file, self.field, self.problems = str(file), field, list(problems or [message])
        what = f" field {field!r}:" if field else ""
        super().__init__(f"{self.file}:{what} {message.replace(';', ',')}; {fix}")


def configs_yaml_block(files: dict[str, dict[str, list[str]]], default_config: str | None = None) -> list[dict]:
    """The card's ``configs:`` list from ``{config: {split: [relative paths]}}``.

    ``default_config`` (else the first config) gets ``default: true``.
    """
    if not files:
        raise ConfigError("no configs to describe: the files mapping is empty")
    default = default_config if default_config is not None else next(iter(files))
    if default not in files:
        raise ConfigError(f"default_config {default!r} is not one of the configs {sorted(files)}")
    block = []
    for name, splits in files.items():
        entry: dict = {"config_name": name}
        if name == default:
            entry["default"] = True
        entry["data_files"] = [
            {"split": split, "path": paths[0] if len(paths) == 1 else list(paths)} for split, paths in splits.items()
        ]
        block.append(entry)
    return block


def dataset_info_block(files: dict[str, dict[str, list[str]]], root) -> list[dict]:
    """The card's ``dataset_info:`` list: per config, each split's rows and bytes, read from the
    Parquet files under ``root`` (what ``push_to_hub`` writes).

    ``datasets`` keys its cache of a local folder on the folder's name and this front matter only
    (the ``configs:`` paths are relative), so two builds in folders of one name would share a cache
    entry — a rebuilt ``palm-bench`` served the first build's rows (measured, datasets 5.2). The
    split sizes make the key differ between builds; ``datasets`` also checks the row counts on load.
    """
    import pyarrow.parquet as pq

    root, block = Path(root), []
    for name, splits in files.items():
        entry, total = {"config_name": name, "splits": []}, 0
        for split, paths in splits.items():
            rows = sum(pq.ParquetFile(root / p).metadata.num_rows for p in paths)
            size = sum((root / p).stat().st_size for p in paths)
            entry["splits"].append({"name": split, "num_bytes": size, "num_examples": rows})
            total += size
        entry["dataset_size"] = total
        block.append(entry)
    return block


def front_matter(files: dict[str, dict[str, list[str]]], default_config: str | None = None, root=None, **extra) -> str:
    """YAML text of the front matter (``extra`` keys such as ``license`` first, then ``configs``,
    then — with ``root``, the folder the paths are relative to — ``dataset_info``), ready to pass
    to :func:`render_card` as ``configs_yaml``."""
    data = {**extra, "configs": configs_yaml_block(files, default_config)}
    if root is not None:
        data["dataset_info"] = dataset_info_block(files, root)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip("\n")


def feature_rows(features: datasets.Features) -> list[dict]:
    """``[{name, type}]`` for a card's features table (``Audio`` shows its sampling rate)."""

    def describe(feature) -> str:
        if isinstance(feature, datasets.Audio):
            return f"Audio ({feature.sampling_rate} Hz)" if feature.sampling_rate else "Audio"
        if isinstance(feature, datasets.Value):
            return feature.dtype
        if isinstance(feature, datasets.ClassLabel):
            return "ClassLabel (" + ", ".join(feature.names) + ")"
        if isinstance(feature, datasets.List):
            return f"list of {describe(feature.feature)}"
        if isinstance(feature, dict):
            return "struct {" + ", ".join(f"{k}: {describe(v)}" for k, v in feature.items()) + "}"
        return type(feature).__name__

    return [{"name": name, "type": describe(feature)} for name, feature in features.items()]


def render_card(template_name: str, context: dict, *, templates: str | os.PathLike) -> str:
    """Render ``<templates>/<template_name>`` with ``context``; a missing variable is an error.

    ``templates`` is the benchmark's own folder of card templates (PALM's and MSU's, and the
    harness's ``generic.md.j2``, are in :func:`lalm_eval.resources.hub_cards_dir`); a template may
    include others of the same folder.
    """
    env = jinja_env(templates, keep_trailing_newline=True, block_lines=False)  # a card keeps its blank lines
    try:
        return env.get_template(template_name).render(**context)
    except jinja2.TemplateNotFound as err:
        raise ConfigError(f"card template {template_name!r} not found in {templates}") from err
    except jinja2.UndefinedError as err:
        raise ConfigError(f"card template {template_name!r}: {err}") from err


def write_card(out_dir, text: str) -> Path:
    """Write ``text`` as ``<out_dir>/README.md`` (UTF-8, LF) and return the path."""
    path = Path(out_dir) / CARD_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


def _paths_of(data_files) -> list[tuple[str, str]]:
    """``(field suffix, path)`` for every path in one config's ``data_files`` (all HF forms)."""
    if isinstance(data_files, str):
        return [("", data_files)]
    if isinstance(data_files, dict):  # {split: path or [paths]}
        data_files = [{"split": k, "path": v} for k, v in data_files.items()]
    out = []
    for i, item in enumerate(data_files or []):
        if isinstance(item, str):
            out.append((f"[{i}]", item))
            continue
        paths = item.get("path") if isinstance(item, dict) else None
        for j, path in enumerate([paths] if isinstance(paths, str) else (paths or [None])):
            out.append((f"[{i}].path" + (f"[{j}]" if not isinstance(paths, str) else ""), path))
    return out


def _matches(out_dir: Path, rel: str) -> list[str]:
    """The existing files (symbolic links followed) a ``data_files`` path or glob names."""
    matches = (
        sorted(glob.glob(str(out_dir / rel), recursive=True))
        if any(ch in rel for ch in _GLOB_CHARS)
        else [str(out_dir / rel)]
    )
    return [m for m in matches if Path(m).is_file()]


def card_data_files(out_dir) -> list[tuple[str, str]]:
    """``(front-matter field, path relative to out_dir)`` of every existing file the card's
    ``configs`` name (globs expanded; ``[]`` without a readable card). For :func:`check_card`'s
    callers that need the files themselves, e.g. a push checking they are all uploaded."""
    out_dir = Path(out_dir)
    try:
        configs = getattr(DatasetCard((out_dir / CARD_NAME).read_text(encoding="utf-8-sig")).data, "configs", None)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError):
        return []
    out = []
    for c, config in enumerate(configs if isinstance(configs, list) else []):
        for suffix, rel in _paths_of(config.get("data_files") if isinstance(config, dict) else None):
            if isinstance(rel, str) and rel:
                where = f"configs[{c}].data_files{suffix}"
                out += [(where, os.path.relpath(m, out_dir).replace(os.sep, "/")) for m in _matches(out_dir, rel)]
    return out


def _card_problems(out_dir: Path) -> list[tuple[str | None, str]]:
    card = out_dir / CARD_NAME
    if not card.is_file():
        return [(None, "card not found")]
    text = card.read_text(encoding="utf-8")
    if not text.startswith("---"):
        return [(None, "no YAML front matter (the card must start with a '---' line)")]
    try:
        data: DatasetCardData = DatasetCard(text).data
    except (yaml.YAMLError, ValueError) as err:
        return [(None, f"front matter is not valid YAML: {' '.join(str(err).split())}")]
    configs = getattr(data, "configs", None)
    if not isinstance(configs, list) or not configs:
        return [("configs", "missing or empty: load_dataset would not find the shards")]
    problems, names, defaults = [], set(), 0
    for c, config in enumerate(configs):
        field = f"configs[{c}]"
        if not isinstance(config, dict) or not config.get("config_name"):
            problems.append((field, "needs a config_name"))
            continue
        name = config["config_name"]
        if name in names:
            problems.append((f"{field}.config_name", f"duplicate config_name {name!r}"))
        names.add(name)
        defaults += bool(config.get("default"))
        if not config.get("data_files"):
            problems.append((f"{field}.data_files", f"config {name!r} has no data_files"))
        for suffix, rel in _paths_of(config.get("data_files")):
            where = f"{field}.data_files{suffix}"
            if not isinstance(rel, str) or not rel:
                problems.append((where, "missing path"))
                continue
            found = _matches(out_dir, rel)
            if not found:
                problems.append((where, f"{rel!r} not found in {out_dir}"))
            problems.extend(
                (where, f"{Path(m).relative_to(out_dir).as_posix()!r} is empty")
                for m in found
                if Path(m).stat().st_size == 0
            )
    if defaults > 1:
        problems.append(("configs", f"{defaults} configs are marked default: true (at most one)"))
    return problems


def _format(field: str | None, message: str) -> str:
    return f"{CARD_NAME}:" + (f" field {field!r}:" if field else "") + f" {message}"


def validate_card(out_dir) -> list[str]:
    """Problems with ``<out_dir>/README.md`` and the files it lists; an empty list means valid."""
    return [_format(field, msg) for field, msg in _card_problems(Path(out_dir))]


def check_card(out_dir) -> Path:
    """Like :func:`validate_card` but raises :class:`CardError` (naming the card file and the
    first problem's field; ``.problems`` holds them all); returns the card's path when valid."""
    out_dir = Path(out_dir)
    problems = _card_problems(out_dir)
    if problems:
        (field, message), rest = problems[0], problems[1:]
        if rest:
            message += f" (and {len(rest)} more: " + " | ".join((f"{f}: {m}" if f else m) for f, m in rest) + ")"
        raise CardError(out_dir / CARD_NAME, message, field=field, problems=[_format(f, m) for f, m in problems])
    return out_dir / CARD_NAME


def card_configs(out_dir) -> tuple[dict[str, list[str]], str | None] | None:
    """``({config: [splits]}, default config)`` from the ``configs:`` block of
    ``<out_dir>/README.md``; None when there is no card or no such block (``datasets`` then infers
    the layout itself)."""
    card = Path(out_dir) / CARD_NAME
    if not card.is_file():
        return None
    try:
        configs = getattr(DatasetCard(card.read_text(encoding="utf-8-sig")).data, "configs", None)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError):
        return None
    if not isinstance(configs, list) or not configs or not all(isinstance(c, dict) for c in configs):
        return None
    out, default = {}, None
    for config in configs:
        name = config.get("config_name")
        if not isinstance(name, str):
            return None
        files = config.get("data_files")
        if isinstance(files, dict):
            splits = list(files)
        elif isinstance(files, list) and all(isinstance(f, dict) for f in files):
            splits = [str(f.get("split", "train")) for f in files]
        else:  # a path or a list of paths: one split, "train"
            splits = ["train"]
        out[name] = splits
        if config.get("default"):
            default = name
    if default is None and (len(out) == 1 or "default" in out):
        default = "default" if "default" in out else next(iter(out))
    return out, default
