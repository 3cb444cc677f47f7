"""Generation kwargs of a task → vLLM ``SamplingParams`` keyword arguments, with transformers'
``generate`` semantics, so that ``--model vllm`` and the HF adapters decode alike (the rules are in
:mod:`lalm_eval.models.vllm_adapter`'s docstring, "Generation kwargs → SamplingParams")."""

from __future__ import annotations

from lalm_eval.errors import ConfigError
from lalm_eval.models.batching import split_gen_kwargs

#: fields of generation_config.json that transformers' generate applies under a task's kwargs
GENERATION_CONFIG_KEYS = (
    "do_sample",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repetition_penalty",
    "max_new_tokens",
    "min_new_tokens",
)
#: transformers' GenerationConfig defaults for sampling
HF_SAMPLING_DEFAULTS = {"temperature": 1.0, "top_p": 1.0, "top_k": 50}
#: task kwargs (transformers' names; after ``until``/``max_gen_toks`` handling) this adapter maps
HF_KWARGS = (*GENERATION_CONFIG_KEYS, "seed", "num_beams", "num_return_sequences", "use_cache")
#: vLLM SamplingParams names accepted as they are
VLLM_KWARGS = (
    "max_tokens",
    "min_tokens",
    "stop",
    "stop_token_ids",
    "presence_penalty",
    "frequency_penalty",
    "ignore_eos",
)
SUPPORTED_GEN_KWARGS = tuple(sorted(set(HF_KWARGS + VLLM_KWARGS + ("until", "max_gen_toks"))))


def _number(name: str, value, kind, where: str, low=None):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
        raise ConfigError(
            f"{where}: gen kwarg {name!r} must be {'an integer' if kind is int else 'a number'}, got {value!r}"
        )
    value = kind(value)
    if low is not None and value < low:
        raise ConfigError(f"{where}: gen kwarg {name!r} must be >= {low}, got {value!r}")
    return value


def _flag(name: str, value, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ConfigError(f"{where}: gen kwarg {name!r} must be true or false, got {value!r}")


def sampling_kwargs(
    gen_kwargs: dict, defaults: dict | None = None, where: str = "vllm", extra_stop_token_ids=()
) -> dict:
    """The ``vllm.SamplingParams`` keyword arguments for a request's gen kwargs (see the module
    docstring): ``defaults`` are the model's generation_config.json fields (transformers' names),
    under the request's kwargs. Raises :class:`ConfigError` naming any kwarg with no exact
    equivalent, a malformed value, or a missing token budget. Imports nothing."""
    try:
        kwargs, stops = split_gen_kwargs(gen_kwargs)  # until → stops; max_gen_toks → max_new_tokens
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    unknown = sorted(set(kwargs) - set(HF_KWARGS) - set(VLLM_KWARGS))
    if unknown:
        raise ConfigError(
            f"{where}: gen kwarg(s) {', '.join(map(repr, unknown))} have no exact vLLM SamplingParams "
            f"equivalent; supported: {', '.join(SUPPORTED_GEN_KWARGS)}"
        )
    for name in ("num_beams", "num_return_sequences"):
        if name in kwargs and _number(name, kwargs[name], int, where) != 1:
            raise ConfigError(
                f"{where}: gen kwarg {name}={kwargs[name]!r} is not supported by the vllm adapter "
                "(one greedy or sampled sequence per request; vLLM's beam search is another API)"
            )
    for a, b in (("max_tokens", "max_new_tokens"), ("min_tokens", "min_new_tokens")):
        if a in kwargs and b in kwargs:
            raise ConfigError(f"{where}: gen kwargs {a!r} and {b!r} are the same setting; give one")
    if "stop" in kwargs and stops:
        raise ConfigError(f"{where}: gen kwargs 'stop' and 'until' are the same setting; give one")
    base = {k: v for k, v in (defaults or {}).items() if k in GENERATION_CONFIG_KEYS and v is not None}
    merged = {**base, **kwargs}
    out: dict = {}
    max_tokens = kwargs.get("max_tokens", merged.get("max_new_tokens"))
    if max_tokens is None:
        raise ConfigError(
            f"{where}: no token budget: give the gen kwarg max_new_tokens (or max_gen_toks); "
            "vLLM's default (16) and transformers' (max_length=20) differ"
        )
    out["max_tokens"] = _number("max_new_tokens", max_tokens, int, where, low=1)
    min_tokens = kwargs.get("min_tokens", merged.get("min_new_tokens"))
    if min_tokens is not None:
        out["min_tokens"] = _number("min_new_tokens", min_tokens, int, where, low=0)
    if _flag("do_sample", merged.get("do_sample", False), where):
        out["temperature"] = _number(
            "temperature", merged.get("temperature", HF_SAMPLING_DEFAULTS["temperature"]), float, where
        )
        if out["temperature"] <= 0:
            raise ConfigError(f"{where}: do_sample=true needs a temperature > 0, got {out['temperature']!r}")
        out["top_p"] = _number("top_p", merged.get("top_p", HF_SAMPLING_DEFAULTS["top_p"]), float, where)
        if not 0 < out["top_p"] <= 1:
            raise ConfigError(f"{where}: gen kwarg 'top_p' must be in (0, 1], got {out['top_p']!r}")
        out["top_k"] = _number("top_k", merged.get("top_k", HF_SAMPLING_DEFAULTS["top_k"]), int, where, low=0)
        if merged.get("min_p") is not None:
            out["min_p"] = _number("min_p", merged["min_p"], float, where, low=0)
    else:
        out["temperature"] = 0.0  # greedy; transformers ignores temperature/top_p/top_k without do_sample
    if merged.get("repetition_penalty") is not None:
        out["repetition_penalty"] = _number("repetition_penalty", merged["repetition_penalty"], float, where)
        if out["repetition_penalty"] <= 0:
            raise ConfigError(f"{where}: gen kwarg 'repetition_penalty' must be > 0")
    for name in ("presence_penalty", "frequency_penalty"):
        if name in kwargs:
            out[name] = _number(name, kwargs[name], float, where)
    if "seed" in kwargs and kwargs["seed"] is not None:
        out["seed"] = _number("seed", kwargs["seed"], int, where)
    if "ignore_eos" in kwargs:
        out["ignore_eos"] = _flag("ignore_eos", kwargs["ignore_eos"], where)
    if "stop" in kwargs:
        try:
            _, stops = split_gen_kwargs({"until": kwargs["stop"]})
        except ConfigError as exc:
            raise ConfigError(f"{where}: {str(exc).replace('until', 'stop')}") from None
    if stops:
        out["stop"] = list(stops)
    ids = list(extra_stop_token_ids or ())
    if "stop_token_ids" in kwargs:
        given = kwargs["stop_token_ids"]
        if not isinstance(given, (list, tuple)) or not all(
            isinstance(t, int) and not isinstance(t, bool) for t in given
        ):
            raise ConfigError(f"{where}: gen kwarg 'stop_token_ids' must be a list of integers, got {given!r}")
        ids += [t for t in given if t not in ids]
    if ids:
        out["stop_token_ids"] = ids
    return out


def stop_strings(sampling: dict) -> list[str]:
    return list(sampling.get("stop") or [])
