"""A judge's decoding is part of its score: the seeds of ``--judge_samples K``, the check that a
backend can take them, and the footnote text that names the decoding beside every judge score.

- :func:`sample_seeds`: K distinct seeds, a pure function of a base seed (the run's ``--seed``, or
  the judge spec's own ``seed=``), so the same config and seed ask the same K questions.
- :func:`check_samples`: K a whole number >= 1; K > 1 only for a backend that sends a seed per
  request (``decoding.yaml``: ``per_request_seed_backends``; the OpenAI protocol's ``seed``, which
  vLLM's OpenAI server passes to ``SamplingParams.seed``).
- :func:`sample_spread`: the judge's own spread over K verdicts per item: the mean per-item
  standard deviation and the standard deviation of the K run-level means (both n-1).
- :func:`describe_judge` / :func:`describe_classification`: what a report prints under a judge
  score (model, temperature, top_p, top_k, max_tokens, seed, samples; a warning when a single
  sampled verdict makes the score move from run to run; the failed-answer threshold of MSU's error
  classifier). The texts live in ``decoding.yaml``.
"""

from __future__ import annotations

import math
from functools import lru_cache
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError

DECODING_FILE = Path(__file__).resolve().parent / "decoding.yaml"
SAMPLES_FLAG = "--judge_samples"
_SEED_RANGE = 2**31  # seeds kept in a signed 32-bit int: every server's seed type takes them


@lru_cache(maxsize=1)
def decoding_spec() -> dict:
    """``decoding.yaml``: ``fields``, ``unset``, ``per_request_seed_backends`` and the ``notes``."""
    return yaml.safe_load(DECODING_FILE.read_text(encoding="utf-8"))


def sample_seeds(base: int, samples: int) -> list[int]:
    """``samples`` distinct seeds in [0, 2**31) derived from ``base`` (the same in every process)."""
    from lalm_eval.seeding import stable_int

    seeds: list[int] = []
    attempt = 0
    while len(seeds) < samples:
        seed = stable_int("judge_sample", base, len(seeds), attempt) % _SEED_RANGE
        if seed in seeds:  # a collision in 2**31 values: draw again for this sample
            attempt += 1
            continue
        seeds.append(seed)
    return seeds


def takes_request_seed(llm) -> bool:
    """Whether ``llm`` sends a seed with each request (``per_request_seed`` on its class, else its
    backend listed in ``decoding.yaml``)."""
    flag = getattr(llm, "per_request_seed", None)
    if flag is not None:
        return bool(flag)
    return llm.settings.get("backend") in decoding_spec()["per_request_seed_backends"]


def check_samples(value, llm=None, flag: str = SAMPLES_FLAG) -> int:
    """``value`` as K, a whole number >= 1; K > 1 needs a judge ``llm`` that takes a seed per
    request. Errors name ``flag``."""
    if isinstance(value, bool):
        value = str(value)
    try:
        k = int(str(value).strip())
    except ValueError:
        k = None
    if k is None or k < 1:
        raise ConfigError(
            f"{flag} {value!r}: must be a whole number >= 1; give e.g. {flag} 3 (1: one verdict per item, the default)"
        )
    if k > 1 and llm is None:
        raise ConfigError(
            f"{flag} {k}: there is no judge to ask (no --judge given); add --judge BACKEND:... or leave out {flag}"
        )
    if k > 1 and not takes_request_seed(llm):
        backend = llm.settings.get("backend", type(llm).__name__)
        raise ConfigError(
            f"{flag} {k}: the {backend} judge backend takes no per-request seed, so its {k} verdicts could not "
            f"each have their own seed; serve the judge behind an OpenAI-compatible server (--judge "
            f"openai:model=...,base_url=..., e.g. vLLM) or use {flag} 1"
        )
    return k


def sample_spread(per_item: list[list[float | None]]) -> dict:
    """The judge's own spread of K verdicts per item (``per_item[i][s]``: item i's score in sample s,
    None when that verdict failed): ``samples``, ``mean_item_sd`` (the mean over items with two or
    more verdicts of their standard deviation), ``run_means`` (per sample, the mean over the items it
    scored), ``run_mean_sd`` (their standard deviation); standard deviations with n - 1."""
    k = max((len(s) for s in per_item), default=0)

    def sd(values: list[float]) -> float | None:
        if len(values) < 2:
            return None
        mean = sum(values) / len(values)
        return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))

    item_sds = [x for x in (sd([v for v in s if v is not None]) for s in per_item) if x is not None]
    run_means = []
    for s in range(k):
        scored = [row[s] for row in per_item if s < len(row) and row[s] is not None]
        run_means.append(sum(scored) / len(scored) if scored else None)
    return {
        "samples": k,
        "mean_item_sd": sum(item_sds) / len(item_sds) if item_sds else None,
        "run_means": run_means,
        "run_mean_sd": sd([m for m in run_means if m is not None]),
    }


def _value(v) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def _num(v) -> str:
    return "—" if v is None else f"{v:.4f}"


def describe_decoding(settings: dict) -> str:
    """``model M, temperature T, top_p P, top_k K, max_tokens N, seed S, samples K`` of a judge's
    recorded settings (a field not set: ``decoding.yaml``'s ``unset``)."""
    spec = decoding_spec()
    parts = []
    for field in spec["fields"]:
        if field == "seed" and settings.get("sample_seeds"):
            parts.append("seed one per verdict [" + ", ".join(map(str, settings["sample_seeds"])) + "]")
            continue
        value = settings.get(field, 1 if field == "samples" else None)
        parts.append(f"{field} {spec['unset'] if value is None else _value(value)}")
    return ", ".join(parts)


def describe_judge(settings: dict, spread: dict | None = None) -> str:
    """The footnote of a judge score: which judge and prompt, its decoding, and what moves it."""
    notes = decoding_spec()["notes"]
    text = f"judge {settings.get('judge', '?')}"
    if settings.get("prompt_version"):
        text += f" (prompt v{settings['prompt_version']})"
    text += ": " + describe_decoding(settings)
    samples = int(settings.get("samples", 1) or 1)
    temperature = settings.get("temperature")
    if samples == 1 and isinstance(temperature, (int, float)) and temperature > 0:
        text += "; " + notes["sampled"].format(temperature=_value(temperature))
    if samples > 1:
        spread = spread or {}
        text += "; " + notes["samples"].format(
            samples=samples,
            seed_source=settings.get("sample_seed_source", "--seed"),
            item_sd=_num(spread.get("mean_item_sd")),
            run_sd=_num(spread.get("run_mean_sd")),
        )
    return text


def describe_classification(info: dict) -> str | None:
    """The footnote of an error-type distribution: the failed-answer threshold (``classify_below``)
    and the classifier judge with its decoding; None when the metric classifies nothing."""
    if info.get("classify_below") is None:
        return None
    classifier = info.get("classifier")
    if isinstance(classifier, dict):
        who = f"{classifier.get('judge', '?')} (prompt v{classifier.get('prompt_version', '?')}): "
        who += describe_decoding(classifier)
    else:
        who = str(info.get("classify_failures") or "?")
    return decoding_spec()["notes"]["classified"].format(below=_value(info["classify_below"]), classifier=who)
