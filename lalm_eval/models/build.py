"""Adapters built from ``--model`` / ``--model_args`` (the ``MODELS`` registry of
:mod:`lalm_eval.models`): the args checked against the adapter's signature before anything loads,
errors in the one shape naming the flag, the model's identity computed so that a missing model
shows before the tasks run. Shared by ``lalm-eval`` and its ``check`` / ``train`` subcommands and
by the benchmarks' builders (``palm-bench --description-model``).
"""

from __future__ import annotations

import dataclasses
import os
import re

from lalm_eval.errors import ConfigError, LalmEvalError
from lalm_eval.flags import flag_error, key_values

SECRET_ARG = re.compile(r"(key|token|secret|password)", re.I)


def redact_model_args(text: str) -> str:
    """``model_args`` as written to results: values of secret-looking keys (api_key, token…) masked."""
    parts = []
    for part in (text or "").split(","):
        key, sep, value = part.partition("=")
        parts.append(f"{key}=***" if sep and SECRET_ARG.search(key) and not key.strip().endswith("_env") else part)
    return ",".join(parts)


@dataclasses.dataclass
class AdapterSpec:
    """A ``--model`` and its ``--model_args`` checked, not yet built (:func:`adapter_spec`)."""

    model: str
    cls: type
    model_args: dict
    from_flag: bool  # the device came from --device (not from --model_args device=)


def adapter_spec(
    model: str, model_args_text: str, device: str | None, cache_dir: str, use_response_cache: bool = True
) -> AdapterSpec:
    """The registered adapter ``model`` and its ``k=v,k=v`` args, checked without building it:
    unknown or missing args named with the ones the adapter takes, ``~`` expanded in each value
    that starts with it (paths: ``pretrained=~/m``; transformers would take ``~/m`` for a Hub
    id, and the shell leaves a ``~`` after ``=`` alone). ``--device`` and,
    for adapters with caches of their own, ``--cache_dir`` are passed on; adapters that write
    answers to the response cache themselves (``WRITES_RESPONSE_CACHE``) get none under
    ``--no_cache``."""
    import difflib
    import inspect

    from lalm_eval.errors import UnknownNameError
    from lalm_eval.models import MODELS
    from lalm_eval.parallel import local_device

    model_args = {
        k: os.path.expanduser(v) if isinstance(v, str) and v.startswith("~") else v
        for k, v in key_values(model_args_text).items()
    }
    from_flag = device is not None
    device = local_device(device or model_args.get("device"))
    if device:
        model_args["device"] = device
    try:
        adapter_cls = MODELS.get(model)
    except UnknownNameError as exc:
        raise UnknownNameError(f"--model: {exc}; give one of these names (plug-ins add more)") from None
    if "cache_dir" in inspect.signature(adapter_cls.__init__).parameters:  # adapters with caches of their own
        off = not use_response_cache and getattr(adapter_cls, "WRITES_RESPONSE_CACHE", False)
        model_args.setdefault("cache_dir", "none" if off else cache_dir)
    signature = inspect.signature(adapter_cls.__init__)
    params = [
        n for n, p in signature.parameters.items() if n != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]
    takes_any = any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())
    unknown = [] if takes_any else [k for k in model_args if k not in params]
    if unknown:
        key = unknown[0]
        if key == "device" and from_flag:
            raise ConfigError(f"--device: adapter {model!r} takes no device; leave out --device for it")
        close = difflib.get_close_matches(key, params, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(
            f"--model_args: {model} takes no argument {key!r}{hint}; it takes: {', '.join(params) or 'none'}"
        )
    try:  # a missing argument: name it, list the valid ones
        signature.bind(None, **model_args)
    except TypeError as exc:
        raise ConfigError(
            f"--model_args: {model} cannot be built from them ({exc}); it takes: {', '.join(params) or 'none'}"
        ) from None
    return AdapterSpec(model, adapter_cls, model_args, from_flag)


def _told(spec: AdapterSpec, exc: LalmEvalError) -> LalmEvalError:
    """``exc`` from building ``spec`` in the one shape: a device problem names ``--device`` when the
    device came from that flag; other messages get ``--model M`` in front unless they name a flag."""
    device = spec.model_args.get("device")
    prefix = f"--model_args device={device}"
    if spec.from_flag and str(exc).startswith(prefix + ":"):
        exc.args = (f"--device {device}" + str(exc)[len(prefix) :], *exc.args[1:])
        return exc
    return flag_error(f"--model {spec.model}", exc, "check --model_args (pretrained=...) and --device")


def build_from_spec(spec: AdapterSpec, identify: bool = True):
    """The adapter of ``spec`` built and (``identify``) its identity computed (model files hashed,
    nothing loaded), so that a missing model shows now; errors told by :func:`_told`."""
    try:
        adapter = spec.cls(**spec.model_args)
        if identify:
            adapter.identity()
    except LalmEvalError as exc:
        raise _told(spec, exc) from None
    return adapter


def identify(spec: AdapterSpec, adapter) -> None:
    """``adapter.identity()`` (model files hashed), errors told by :func:`_told`."""
    try:
        adapter.identity()
    except LalmEvalError as exc:
        raise _told(spec, exc) from None


def build_adapter(
    model: str, model_args_text: str, device: str | None, cache_dir: str, use_response_cache: bool = True
):
    """The registered adapter ``model`` built from ``k=v,k=v`` args (:func:`adapter_spec`), its
    identity known (:func:`build_from_spec`)."""
    return build_from_spec(adapter_spec(model, model_args_text, device, cache_dir, use_response_cache))
