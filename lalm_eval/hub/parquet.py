"""Write ``datasets.Dataset`` splits as Hub-style Parquet shards.

Layout: ``<out_dir>/<config>/<split>-00000-of-0000N.parquet``, the names ``push_to_hub`` uses, so
a ``configs:`` block in the card (see :mod:`lalm_eval.hub.card`) makes ``load_dataset(out_dir,
config)`` work. The Parquet schema carries the dataset's features under the ``huggingface``
metadata key, exactly as ``datasets`` writes it (``Features.arrow_schema``), so ``Audio`` and
``ClassLabel`` come back on load.

Unlike ``Dataset.to_parquet`` in datasets 5 (which stores embedded media PLAIN and uncompressed for
content-defined chunking), every column here is dictionary encoded with pyarrow's default
compression: rows are written in order, so identical audio rows kept adjacent by the builder are
stored once per row group (a question set asking several questions about one clip costs one clip).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import datasets
import pyarrow.parquet as pq
from datasets.table import embed_table_storage

from lalm_eval.errors import ConfigError

SHARD_PATTERN = "{split}-{index:05d}-of-{count:05d}.parquet"


def _check_name(kind: str, name: str) -> None:
    if not name or "/" in name or "\\" in name or name.startswith("."):
        raise ConfigError(f"invalid {kind} name {name!r}: must be non-empty, no '/' and no leading '.'")


def _batches(dataset: datasets.Dataset, rows: int):
    """The dataset as Arrow tables of ``rows`` rows, in order, external media embedded.

    Each table is made one contiguous chunk: a dataset written by ``num_proc`` processes is
    several Arrow files with record batches cut elsewhere, and the Parquet writer's pages (and
    its dictionary-to-plain fallback) follow the chunks it is given, so without this the same
    rows would give different bytes for different ``num_proc``."""
    schema = dataset.features.arrow_schema
    for table in dataset.with_format("arrow").iter(batch_size=rows):
        table = table.combine_chunks().cast(schema)  # cast attaches the ``huggingface`` features metadata
        yield embed_table_storage(table, remote_files=False)  # never reaches the network


def write_split(
    dataset: datasets.Dataset,
    out_dir,
    config_name: str,
    split: str,
    max_shard_bytes: int = 500_000_000,
    rows_per_row_group: int = 100,
) -> list[Path]:
    """Write one split as Parquet shards and return their paths, in order.

    A new shard starts before a row group that would take the current one past
    ``max_shard_bytes`` (estimated from the uncompressed Arrow size, an upper bound of what
    dictionary encoding writes); a shard always holds at least one row group. Old shards of the
    same split in that folder are removed first, so a re-export never leaves stale files.
    """
    _check_name("config", config_name)
    _check_name("split", split)
    if rows_per_row_group < 1 or max_shard_bytes < 1:
        raise ConfigError(
            f"rows_per_row_group ({rows_per_row_group}) and max_shard_bytes ({max_shard_bytes}) must be positive"
        )
    folder = Path(out_dir) / config_name
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob(f"{split}-*-of-*.parquet"):
        stale.unlink()

    schema = dataset.features.arrow_schema
    temp_paths: list[Path] = []
    writer = sink = None

    def open_shard():
        path = folder / f".{split}-{len(temp_paths):05d}.parquet.partial"
        temp_paths.append(path)
        handle = open(path, "wb")
        return handle, pq.ParquetWriter(handle, schema, use_dictionary=True)

    try:
        for table in _batches(dataset, rows_per_row_group):
            if writer is None:
                sink, writer = open_shard()
            elif sink.tell() + table.nbytes > max_shard_bytes:
                writer.close()
                sink.close()
                sink, writer = open_shard()
            writer.write_table(table, row_group_size=rows_per_row_group)
            sink.flush()
        if writer is None:  # an empty split still gets one (empty) shard with the schema
            sink, writer = open_shard()
            writer.write_table(schema.empty_table())
        writer.close()
        sink.close()
    except BaseException:
        if sink is not None:
            sink.close()
        for path in temp_paths:
            path.unlink(missing_ok=True)
        raise

    count = len(temp_paths)
    final = [folder / SHARD_PATTERN.format(split=split, index=i, count=count) for i in range(count)]
    for temp, path in zip(temp_paths, final):
        os.replace(temp, path)
    return final


def file_sha256(path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_dataset_dict(
    configs: dict[str, datasets.DatasetDict], out_dir, **write_kwargs
) -> dict[str, dict[str, list[str]]]:
    """Write every split of every config; return ``{config: {split: [posix paths rel. to out_dir]}}``.

    Configs and splits keep the order given (the caller's order is the card's order).
    ``write_kwargs`` go to :func:`write_split` (``max_shard_bytes``, ``rows_per_row_group``).
    """
    out_dir = Path(out_dir)
    files: dict[str, dict[str, list[str]]] = {}
    for config_name, dataset_dict in configs.items():
        files[config_name] = {}
        for split, dataset in dataset_dict.items():
            paths = write_split(dataset, out_dir, config_name, split, **write_kwargs)
            files[config_name][split] = [p.relative_to(out_dir).as_posix() for p in paths]
    return files
