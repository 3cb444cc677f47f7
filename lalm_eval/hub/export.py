"""Run dataset builders and export them as a Hub-style folder (shared by every benchmark).

``export_builders`` prepares each builder in a temporary Arrow cache, writes its splits as
Parquet shards under ``out_dir/<config>/`` and returns the datasets (for statistics) and the
file map (for the card). ``finish_folder`` writes the card and ``build_info.json`` with the
shard hashes, so two builds can be compared byte for byte.

The benchmarks' build commands run both inside :func:`lalm_eval.hub.atomic.staged_build`: they
write into a temporary sibling of the output folder that replaces it only when complete, so an
interrupted build never leaves a half-written folder under the final name.
"""

from __future__ import annotations

import functools
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import datasets

from lalm_eval.errors import ConfigError
from lalm_eval.hub.card import write_card
from lalm_eval.hub.parquet import export_dataset_dict, file_sha256


def export_builders(
    make_builder: Callable[[str, str], datasets.DatasetBuilder],
    configs: list[str],
    out_dir: Path,
    consume: Callable[[dict], object] | None = None,
    num_proc: int | None = None,
    work_dir: Path | None = None,
    say: Callable[[str], None] | None = None,
):
    """``make_builder(config, cache_dir)`` for each config → Parquet in ``out_dir``.

    ``num_proc`` > 1 generates each split in that many processes (``datasets`` shards the list
    in a builder's ``gen_kwargs``; see :mod:`lalm_eval.hub.builder`): same shards for any value.

    Returns ``(files, consumed)`` where ``files`` maps config → split → shard paths and
    ``consumed`` is ``consume(datasets_by_config)``, called while the Arrow cache still exists
    (use it to compute statistics). The Arrow cache lives in ``work_dir`` (default: the system's
    temporary folder); a staged build puts it inside its stage, so a killed build leaves nothing
    elsewhere (the next build removes the stage).

    ``say(message)`` (e.g. :func:`build_progress`) is told each stage: every config generated and
    encoded, then the Parquet export.
    """
    check_num_proc(num_proc)
    from lalm_eval.audio.io import require_codec

    require_codec()  # datasets encodes every Audio row through torchcodec: say what is wrong first
    with tempfile.TemporaryDirectory(prefix=".lalm_arrow_", dir=work_dir) as tmp:
        built = {}
        for i, config in enumerate(configs, 1):
            t0 = time.perf_counter()
            if say:
                say(f"config {i}/{len(configs)} {config!r}: rendering, encoding, writing Arrow")
            builder = make_builder(config, tmp)
            builder.download_and_prepare(num_proc=num_proc if num_proc and num_proc > 1 else None)
            built[config] = builder.as_dataset()
            if say:
                rows = sum(len(split) for split in built[config].values())
                say(f"config {i}/{len(configs)} {config!r}: {rows} rows in {time.perf_counter() - t0:.0f} s")
        if say:
            say(f"exporting {len(built)} config(s) to Parquet in {out_dir}")
        files = export_dataset_dict(built, out_dir)
        consumed = consume(built) if consume else None
    return files, consumed


def build_progress(prog: str) -> Callable[[str], None]:
    """``say`` for :func:`export_builders`: ``<prog>: <message>`` on stderr, at once
    (:func:`~lalm_eval.evaluation.progress.announce`)."""
    from lalm_eval.evaluation.progress import announce

    return functools.partial(announce, prog)


def check_num_proc(num_proc) -> None:
    """A :class:`ConfigError` naming ``--num_proc`` unless ``num_proc`` is None or a positive int
    (call it before planning)."""
    if num_proc is not None and (isinstance(num_proc, bool) or not isinstance(num_proc, int) or num_proc < 1):
        raise ConfigError(
            f"--num_proc: must be a whole number of processes >= 1, got {num_proc!r}; give e.g. --num_proc 4, "
            "or leave the flag out for one process"
        )


def with_union_config(files: dict, name: str = "all") -> dict:
    """``files`` plus a config ``name`` whose splits are the union of every config's shards."""
    splits = sorted({split for cfg in files.values() for split in cfg})
    return {**files, name: {split: sorted(p for cfg in files.values() for p in cfg.get(split, [])) for split in splits}}


def finish_folder(out_dir: Path, card_text: str, info: dict, stage=None) -> dict:
    """Write the card and ``build_info.json`` (``info`` + shard hashes and sizes, and with a
    :class:`lalm_eval.hub.atomic.Stage` the ``kept_files`` it carries over); return it."""
    write_card(out_dir, card_text)
    shards = sorted(Path(out_dir).glob("*/*.parquet"))
    info = {
        **info,
        "parquet_bytes": sum(p.stat().st_size for p in shards),
        "shards": {p.relative_to(out_dir).as_posix(): file_sha256(p) for p in shards},
    }
    if stage is not None:  # files of the previous folder that no build wrote, carried into this one
        info["kept_files"] = list(stage.kept)
    (Path(out_dir) / "build_info.json").write_text(
        json.dumps(info, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    return info
