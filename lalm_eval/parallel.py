"""Data parallelism under ``accelerate launch --multi_gpu`` or ``torchrun``: each process
generates a strided share of the requests and the responses are gathered back, in order, on
every process (``torch.distributed.all_gather_object``; NCCL on GPUs, gloo on CPUs). A streamed
run (:func:`lalm_eval.evaluation.run.evaluate`) does this once per chunk of cache misses; the processes
first agree on which docs the cache answers (:func:`common_keys`), so that they cut the same chunks.

Nothing is imported or initialised in a single process, so ordinary runs pay nothing. The
response cache is one SQLite file that all processes of a host share (WAL mode).
"""

from __future__ import annotations

import os


def world() -> tuple[int, int]:
    """(rank, world size) from the launcher's environment; (0, 1) when not launched."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def local_device(device: str | None) -> str | None:
    """``cuda`` → ``cuda:<LOCAL_RANK>`` under a launcher, so each process uses its own GPU."""
    rank, size = world()
    if size > 1 and device in (None, "auto", "cuda"):
        import torch

        if torch.cuda.is_available():
            return f"cuda:{os.environ.get('LOCAL_RANK', '0')}"
    return device


def _dist():
    """``torch.distributed``, its process group initialised (the launcher set MASTER_ADDR/PORT, RANK,
    WORLD_SIZE)."""
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    return dist


def common_keys(keys) -> set:
    """The keys that every process holds (one process: ``keys``). The evaluator streams the docs whose
    cached answer some process lacks (a cache file per host, or a rank that looked before another
    wrote), so that every process cuts the same chunks and gathers the same requests."""
    rank, size = world()
    if size == 1:
        return set(keys)
    parts: list = [None] * size
    _dist().all_gather_object(parts, sorted(keys))
    return set.intersection(*(set(p) for p in parts))


def generate_sharded(model, requests: list, batch_size) -> list:
    """``model.generate`` over this process's share; every process gets all responses in order.
    Called once per chunk of a streamed run (the same chunks on every process)."""
    rank, size = world()
    if size == 1:
        return model.generate(requests, batch_size) if requests else []
    dist = _dist()
    indices = list(range(rank, len(requests), size))
    mine = model.generate([requests[i] for i in indices], batch_size) if indices else []
    parts: list = [None] * size
    dist.all_gather_object(parts, list(zip(indices, mine)))
    ordered = dict(pair for part in parts for pair in part)
    return [ordered[i] for i in range(len(requests))]


def is_main_process() -> bool:
    return world()[0] == 0
