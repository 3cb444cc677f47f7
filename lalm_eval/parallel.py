"""Data parallelism under ``accelerate launch --multi_gpu`` or ``torchrun``: each process
generates a strided share of the requests and the responses are gathered back, in order, on
every process (``torch.distributed.all_gather_object``; NCCL on GPUs, gloo on CPUs).

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


def generate_sharded(model, requests: list, batch_size) -> list:
    """``model.generate`` over this process's share; every process gets all responses in order."""
    rank, size = world()
    if size == 1:
        return model.generate(requests, batch_size) if requests else []
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():  # the launcher set MASTER_ADDR/PORT, RANK, WORLD_SIZE
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    indices = list(range(rank, len(requests), size))
    mine = model.generate([requests[i] for i in indices], batch_size) if indices else []
    parts: list = [None] * size
    dist.all_gather_object(parts, list(zip(indices, mine)))
    ordered = dict(pair for part in parts for pair in part)
    return [ordered[i] for i in range(len(requests))]


def is_main_process() -> bool:
    return world()[0] == 0
