"""Batch planning, generation kwargs and run settings (batch size, device, dtype) of the adapters.

Batches
    :func:`plan_batches` groups requests that share the same generation kwargs (one
    ``model.generate`` call takes one set of kwargs), sorts each group by total audio duration,
    longest first (stable, so equal durations keep request order), and cuts a new batch when the
    count reaches ``max_batch`` or the summed audio seconds would exceed ``max_audio_seconds``.
    Longest first means padding is small inside a batch and an out-of-memory error shows up on
    the first batch rather than after an hour. A request longer than the seconds cap on its own
    still gets a batch (of one).

``batch_size="auto"``
    Resolved by the adapter (:meth:`HFAudioAdapter.generate`): on CUDA it starts at
    :data:`AUTO_CUDA_START` and halves the cap (re-planning the requests not yet done) each time a
    batch raises ``torch.cuda.OutOfMemoryError``; on CPU, where batching buys little and memory is
    not the limit, it is the fixed :data:`AUTO_CPU`.

Generation kwargs
    :func:`split_gen_kwargs` passes every kwarg through unchanged except two lm-eval spellings:
    ``max_gen_toks`` becomes ``max_new_tokens`` (an explicit ``max_new_tokens`` wins), and
    ``until`` (a string or a list of strings) is taken out and applied by :func:`truncate_at`
    to the decoded text: the output is cut at the earliest occurrence of any stop string. The
    model still stops on its own EOS; it is not stopped early at a stop string (so greedy outputs
    are the same as without ``until``, only shorter).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from lalm_eval.errors import ConfigError

AUTO_CUDA_START = 64  # first cap for batch_size="auto" on CUDA, halved on each OOM
AUTO_CPU = 8  # batch_size="auto" on CPU
DTYPES = ("bfloat16", "float16", "float32")  # names; ``getattr(torch, name)`` when a model loads
_DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "float16", "half": "float16", "fp32": "float32", "float": "float32"}


def gen_kwargs_key(gen_kwargs: dict) -> str:
    """A canonical string for a request's generation kwargs (used to group batches)."""
    return json.dumps(gen_kwargs, sort_keys=True, default=repr)


def plan_batches(requests: Sequence, max_batch: int, max_audio_seconds: float | None) -> list[list[int]]:
    """Indices of ``requests`` cut into batches (see the module docstring).

    Each request needs ``audio_seconds`` and ``gen_kwargs`` attributes (``lalm_eval.api.Request``).
    Groups of equal gen kwargs come in the order of their first request.
    """
    if int(max_batch) < 1:
        raise ConfigError(f"batch size must be >= 1, got {max_batch!r}")
    if max_audio_seconds is not None and max_audio_seconds <= 0:
        raise ConfigError(f"max_audio_seconds_per_batch must be > 0, got {max_audio_seconds!r}")
    groups: dict[str, list[int]] = {}
    for i, req in enumerate(requests):
        groups.setdefault(gen_kwargs_key(getattr(req, "gen_kwargs", {}) or {}), []).append(i)
    batches: list[list[int]] = []
    for members in groups.values():
        members = sorted(members, key=lambda i: -requests[i].audio_seconds)  # stable
        batch: list[int] = []
        seconds = 0.0
        for i in members:
            dur = requests[i].audio_seconds
            too_many = len(batch) >= max_batch
            too_long = max_audio_seconds is not None and batch and seconds + dur > max_audio_seconds
            if too_many or too_long:
                batches.append(batch)
                batch, seconds = [], 0.0
            batch.append(i)
            seconds += dur
        if batch:
            batches.append(batch)
    return batches


def replan(
    requests: Sequence, batches: list[list[int]], max_batch: int, max_audio_seconds: float | None
) -> list[list[int]]:
    """The batches not yet run, re-cut under a new cap (``batch_size="auto"`` after an OOM)."""
    rest = [i for b in batches for i in b]
    plan = plan_batches([requests[i] for i in rest], max_batch, max_audio_seconds)
    return [[rest[j] for j in b] for b in plan]


def resolve_batch_size(batch_size: int | str, on_cuda: bool) -> tuple[int, bool]:
    """``(max_batch, adaptive)``: ``"auto"`` → the CUDA start cap (adaptive) or the CPU default."""
    if isinstance(batch_size, str):
        if batch_size.strip().lower() == "auto":
            return (AUTO_CUDA_START, True) if on_cuda else (AUTO_CPU, False)
        if not batch_size.strip().isdigit():
            raise ConfigError(f"batch_size must be a positive integer or 'auto', got {batch_size!r}")
        batch_size = int(batch_size)
    if int(batch_size) < 1:
        raise ConfigError(f"batch_size must be a positive integer or 'auto', got {batch_size!r}")
    return int(batch_size), False


def split_gen_kwargs(gen_kwargs: dict) -> tuple[dict, list[str]]:
    """``(kwargs for model.generate, stop strings)`` from a request's gen kwargs."""
    kwargs = dict(gen_kwargs or {})
    until = kwargs.pop("until", None)
    if "max_gen_toks" in kwargs:
        max_gen = kwargs.pop("max_gen_toks")
        kwargs.setdefault("max_new_tokens", max_gen)
    if until is None:
        stops: list[str] = []
    elif isinstance(until, str):
        stops = [until]
    elif isinstance(until, (list, tuple)) and all(isinstance(s, str) for s in until):
        stops = list(until)
    else:
        raise ConfigError(f"gen kwarg 'until' must be a string or a list of strings, got {until!r}")
    return kwargs, [s for s in stops if s]


def truncate_at(text: str, stops: Sequence[str]) -> str:
    """``text`` cut at the earliest occurrence of any stop string (the stop string removed)."""
    cut = min((pos for pos in (text.find(s) for s in stops) if pos >= 0), default=len(text))
    return text[:cut]


def cuda_available() -> bool:
    """``torch.cuda.is_available()``, without importing torch when the installed build is CPU-only
    (its version ends in ``+cpu``): a cached rerun then never pays torch's import."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        if version("torch").endswith("+cpu"):
            return False
    except PackageNotFoundError:
        return False
    import torch

    return torch.cuda.is_available()


def resolve_device(device: str | None) -> str:
    """``auto`` → ``cuda`` when available, else ``cpu``; ``cpu``, ``cuda``, ``cuda:N``, ``mps`` kept."""
    d = str(device or "auto").strip().lower()
    if d == "auto":
        return "cuda" if cuda_available() else "cpu"
    if not (d in ("cpu", "mps") or re.fullmatch(r"cuda(:\d+)?", d)):
        raise ConfigError(f"device must be auto, cpu, cuda, cuda:N or mps, got {device!r}")
    if d.startswith("cuda") and not cuda_available():
        raise ConfigError(f"device {device!r} asked for, but torch sees no CUDA device")
    return d


def resolve_dtype(dtype: str | None, device: str) -> str:
    """The dtype's name: ``auto`` → bfloat16 on CUDA, float32 elsewhere; else one of :data:`DTYPES`
    (or bf16/fp16/fp32, with or without ``torch.``)."""
    d = str(dtype or "auto").strip().lower().removeprefix("torch.")
    if d == "auto":
        return "bfloat16" if device.startswith("cuda") else "float32"
    d = _DTYPE_ALIASES.get(d, d)
    if d in DTYPES:
        return d
    raise ConfigError(f"dtype must be auto or one of {', '.join(DTYPES)}, got {dtype!r}")
