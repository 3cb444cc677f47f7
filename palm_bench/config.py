"""The knobs of a PALM-Bench build, with the paper's defaults, and the presets that set them.

Every field is a YAML key of a preset (``palm_bench/presets/<name>.yaml``) and a ``--set
key=value`` override of ``palm-bench build`` (values read as YAML). Each value is checked before
any work: its type against the field's annotation (``--set seed=abc``: "--set seed: must be a
whole number"), then its range; an unknown key gets the close names. Errors name where the value
came from: ``--set KEY`` for an override, ``<preset file>: field 'KEY'`` for a preset.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import types
import typing
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError, DataError

PRESET_DIR = Path(__file__).resolve().parent / "presets"
STRATA = ("hard", "semi-hard", "medium", "easy")  # hardest (most similar) first
AUDIO_FORMATS = ("flac", "wav", "opus")


class SettingError(ConfigError):
    """One build setting is invalid: ``key``, what is wrong and how to fix it."""

    def __init__(self, key: str, what: str, fix: str):
        self.key, self.what, self.fix = key, what, fix
        super().__init__(f"{key}: {what}; {fix}")


@dataclasses.dataclass(frozen=True)
class BuildConfig:
    seed: int = 0
    languages: tuple[str, ...] = ("en", "zh")
    #: share of each speaker's clips held out for the test split (no clip is in both splits)
    test_fraction: float = 0.25
    #: share of each speaker's clips held out for the ``validation`` split (PALM §5.2: "hyperparameters
    #: are tuned on validation sets"), taken from the clips the test split left, so a validation
    #: clip is in no train and no test row; the split is built when ``audios_per_subject`` has a
    #: ``validation`` count above 0 (palm_bench.splits)
    validation_fraction: float = 0.1
    #: composed recognition/captioning audios per subject and split (each gives
    #: ``templates_per_audio`` samples); ``validation`` optional (0: no validation split)
    audios_per_subject: dict = dataclasses.field(default_factory=lambda: {"train": 8, "test": 4})
    reasoning_per_subject: dict = dataclasses.field(default_factory=lambda: {"train": 4, "test": 3})
    templates_per_audio: int = 8  # paper default
    positive_negative_ratio: tuple[int, int] = (1, 1)  # paper default
    single_multi_ratio: tuple[int, int] = (4, 6)  # paper default
    recognition_captioning_ratio: tuple[int, int] = (7, 3)  # paper default
    speaker_count_weights: dict = dataclasses.field(default_factory=lambda: {2: 1, 3: 1, 4: 1})
    silence_s: float = 0.5  # paper: fixed 0.5 s between concatenated utterances
    #: ``{method: quantile, edges: [q1, q2, q3]}`` (per target, over candidate similarities) or
    #: ``{method: threshold, thresholds: [t_semi_hard_min... ]}``: three cosine cut points,
    #: ascending, separating easy | medium | semi-hard | hard
    negative_strata: dict = dataclasses.field(
        default_factory=lambda: {"method": "quantile", "edges": [0.25, 0.5, 0.75]}
    )
    augmentation: dict = dataclasses.field(default_factory=dict)  # lalm_eval AugmentationConfig keys
    #: speaker encoder grading the negatives (lalm_eval.audio.speaker: resemblyzer, ecapa) and the
    #: keyword arguments it is built with (ecapa: ``{source: DIR}``, the paper's spkrec-ecapa-voxceleb)
    encoder: str = "resemblyzer"
    encoder_options: dict = dataclasses.field(default_factory=dict)
    #: seconds of each subject's reference speech measured for its acoustic description
    ad_max_seconds: float = 12.0
    audio_format: str = "flac"
    #: also write the ``enrollment`` config: every train-split clip of every subject, for
    #: in-context enrollment prompts (a key of its own, so builds from before it are rebuilt)
    enrollment: bool = True
    #: how positive captioning references are written (PALM Table 24; palm_bench.caption_references):
    #: ``transcript`` (offline default, a deviation from the paper), ``summary``, ``qa`` or
    #: ``summary+qa`` (the paper's: both; need --llm)
    caption_reference: str = "transcript"
    #: a harness adapter spec (``vllm:pretrained=DIR``, ``openai_audio:model=M,base_url=URL``) whose
    #: model writes each subject's AD (Table 23 prompt) and HD from its train-split reference audio
    #: (palm_bench.model_descriptions); None: AD measured, HD from data
    description_model: str | None = None
    #: generation kwargs of those descriptions (Table 23 asks for at least 600 words)
    description_gen_kwargs: dict = dataclasses.field(
        default_factory=lambda: {"max_new_tokens": 2048, "do_sample": False}
    )
    #: the ``paper`` preset: a step of the paper this build would do otherwise (palm_bench/deviations.yaml)
    #: stops the build before planning, unless its key is in ``allowed_deviations``
    require_paper_steps: bool = False
    #: deviation keys (``--allow-deviation KEY``) the build may take; each is listed in the card
    allowed_deviations: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        from palm_bench.templates import LANGUAGES

        bad = SettingError
        hints = typing.get_type_hints(type(self))
        for field in dataclasses.fields(self):
            problem = _type_problem(getattr(self, field.name), hints[field.name])
            if problem:
                raise bad(field.name, problem, _example(field.name))
        if isinstance(self.languages, str):
            object.__setattr__(self, "languages", (self.languages,))
        unknown = [lang for lang in self.languages if lang not in LANGUAGES]
        if not self.languages or unknown or len(set(self.languages)) != len(self.languages):
            raise bad(
                "languages",
                f"must list languages PALM-Bench builds ({', '.join(LANGUAGES)}) once each, got {list(self.languages)}",
                "e.g. --set 'languages=[en]'",
            )
        if self.seed < 0:
            raise bad("seed", f"must be a whole number >= 0, got {self.seed}", "e.g. --set seed=3")
        if not 0 < self.test_fraction < 1:
            raise bad("test_fraction", f"must be in (0, 1), got {self.test_fraction}", "e.g. --set test_fraction=0.25")
        if not 0 <= self.validation_fraction < 1 or self.test_fraction + self.validation_fraction >= 1:
            raise bad(
                "validation_fraction",
                f"must be in [0, 1) with test_fraction + validation_fraction below 1, got {self.validation_fraction}",
                "e.g. --set validation_fraction=0.1 (0: no validation split)",
            )
        if self.templates_per_audio < 1:
            raise bad(
                "templates_per_audio",
                f"must be at least 1, got {self.templates_per_audio}",
                "e.g. --set templates_per_audio=8",
            )
        for key in ("positive_negative_ratio", "single_multi_ratio", "recognition_captioning_ratio"):
            pair = getattr(self, key)
            if len(pair) != 2 or min(pair) < 0 or sum(pair) <= 0:
                raise bad(
                    key, f"must be two non-negative numbers, not both 0, got {list(pair)}", f"e.g. --set '{key}=[1, 1]'"
                )
        for key in ("audios_per_subject", "reasoning_per_subject"):
            counts = getattr(self, key)
            if not {"train", "test"} <= set(counts) <= {"train", "validation", "test"} or not all(
                _is_int(v) and v >= 0 for v in counts.values()
            ):
                raise bad(
                    key,
                    f"needs whole, non-negative 'train' and 'test' counts (and optionally 'validation'), got {counts!r}",
                    f"e.g. --set '{key}={{train: 8, validation: 2, test: 4}}'",
                )
        weights = self.speaker_count_weights
        try:
            counts = {int(k): float(v) for k, v in weights.items()}
        except (TypeError, ValueError):
            counts = {}
        if (
            not counts
            or not set(counts) <= {2, 3, 4}
            or min(counts.values()) < 0
            or not all(map(math.isfinite, counts.values()))
            or sum(counts.values()) <= 0
        ):
            raise bad(
                "speaker_count_weights",
                f"keys must be 2, 3, 4 with non-negative weights, not all 0, got {weights!r}",
                "e.g. --set 'speaker_count_weights={2: 1, 3: 1}'",
            )
        object.__setattr__(self, "speaker_count_weights", counts)
        method = self.negative_strata.get("method")
        cuts = self.negative_strata.get("edges" if method == "quantile" else "thresholds")
        if (
            method not in ("quantile", "threshold")
            or not isinstance(cuts, (list, tuple))
            or len(cuts) != 3
            or not all(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) for c in cuts)
            or list(cuts) != sorted(cuts)
            or set(self.negative_strata) - {"method", "edges", "thresholds"}
        ):
            raise bad(
                "negative_strata",
                "must be {method: quantile, edges: [a, b, c]} or {method: threshold, thresholds: [a, b, c]} "
                f"with three ascending numbers, got {self.negative_strata!r}",
                "e.g. --set 'negative_strata={method: quantile, edges: [0.25, 0.5, 0.75]}'",
            )
        if not math.isfinite(self.silence_s) or self.silence_s < 0:
            raise bad(
                "silence_s", f"must be a number of seconds >= 0, got {self.silence_s}", "e.g. --set silence_s=0.5"
            )
        if not math.isfinite(self.ad_max_seconds) or self.ad_max_seconds <= 0:
            raise bad(
                "ad_max_seconds",
                f"must be a number of seconds > 0, got {self.ad_max_seconds}",
                "e.g. --set ad_max_seconds=12",
            )
        from lalm_eval.audio.augment import AugmentationConfig

        try:
            AugmentationConfig.from_dict(self.augmentation)
        except ConfigError as exc:
            raise bad(
                "augmentation", str(exc).removeprefix("augmentation: ").replace(";", ","), "fix the augmentation keys"
            ) from None
        from lalm_eval.audio.speaker import SPEAKER_ENCODERS

        if self.encoder not in SPEAKER_ENCODERS:
            close = difflib.get_close_matches(self.encoder, SPEAKER_ENCODERS.names(), n=1)
            raise bad(
                "encoder",
                f"unknown speaker encoder {self.encoder!r}",
                (f"did you mean {close[0]!r}? " if close else "") + f"encoders: {', '.join(SPEAKER_ENCODERS.names())}",
            )
        problem = _options_problem(self.encoder, self.encoder_options)
        if problem:
            raise bad("encoder_options", problem, "e.g. --encoder-option source=DIR (ecapa)")
        if isinstance(self.allowed_deviations, str):
            object.__setattr__(self, "allowed_deviations", (self.allowed_deviations,))
        from palm_bench.deviations import close_key, deviation_keys

        unknown = [k for k in self.allowed_deviations if k not in deviation_keys()]
        if unknown:
            close = close_key(unknown[0])
            raise bad(
                "allowed_deviations",
                f"unknown deviation key {unknown[0]!r}",
                (f"did you mean {close!r}? " if close else "") + f"keys: {', '.join(deviation_keys())}",
            )
        from palm_bench.caption_references import KINDS

        if self.caption_reference not in KINDS:
            raise bad(
                "caption_reference",
                f"must be transcript, summary or qa (or summary+qa, both), got {self.caption_reference!r}",
                "e.g. --caption-reference transcript",
            )
        if self.description_model is not None and (
            not self.description_model.strip() or re.search(r"(^|[:,])\s*api_key\s*=", self.description_model)
        ):
            raise bad(
                "description_model",
                f"must be an adapter spec MODEL[:key=value,...] without api_key, got {self.description_model!r}",
                "keys come from the environment (api_key_env=NAME)",
            )
        if self.audio_format not in AUDIO_FORMATS:
            raise bad(
                "audio_format",
                f"must be one of {', '.join(AUDIO_FORMATS)}, got {self.audio_format!r}",
                "e.g. --set audio_format=flac",
            )

    @classmethod
    def from_dict(cls, data: dict, where: str = "build config", overrides: dict | None = None) -> BuildConfig:
        """A config from ``data`` (a preset's keys, read from ``where``) with ``overrides``
        (``--set``) on top; every key and value checked (module docstring)."""
        overrides = dict(overrides or {})
        if not isinstance(data, dict):
            raise DataError(
                where,
                f"a preset must be a mapping of build settings, got {type(data).__name__}; write key: value lines",
            )

        def where_of(key: str) -> str:
            if key in overrides:
                flag = {
                    "caption_reference": " (or --caption-reference)",
                    "description_model": " (or --description-model)",
                    "encoder": " (or --encoder)",
                    "encoder_options": " (or --encoder-option)",
                    "allowed_deviations": " (or --allow-deviation)",
                }
                return f"--set {key}{flag.get(key, '')}"
            return f"{where}: field {key!r}" if where != "build config" else f"build config field {key!r}"

        known = [f.name for f in dataclasses.fields(cls)]
        for key in list(data) + list(overrides):
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise ConfigError(f"{where_of(key)}: unknown key {key!r}; {hint}known keys: {', '.join(known)}")
        merged = {**data, **overrides}
        for key in (
            "languages",
            "positive_negative_ratio",
            "single_multi_ratio",
            "recognition_captioning_ratio",
            "allowed_deviations",
        ):
            if isinstance(merged.get(key), list):
                merged[key] = tuple(merged[key])
        try:
            return cls(**merged)
        except SettingError as exc:
            raise ConfigError(f"{where_of(exc.key)}: {exc.what}; {exc.fix}") from None

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
        return out


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _options_problem(encoder: str, options: dict) -> str | None:
    """What is wrong with ``options`` for the encoder class's constructor, or None."""
    import inspect

    from lalm_eval.audio.speaker import SPEAKER_ENCODERS

    if not options:
        return None
    params = [
        p
        for p in inspect.signature(SPEAKER_ENCODERS.get(encoder).__init__).parameters
        if p not in ("self", "cache_dir")
    ]
    unknown = sorted(set(options) - set(params))
    if unknown:
        return f"unknown option {unknown[0]!r} of encoder {encoder!r} (its options: {', '.join(params)})"
    return None


def _type_problem(value, hint) -> str | None:
    """What is wrong with ``value`` for a field annotated ``hint``, or None."""
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        hint = next(a for a in args if a is not type(None))
        origin, args = typing.get_origin(hint), typing.get_args(hint)
    got = f"got {value!r}"
    if hint is bool:
        return None if isinstance(value, bool) else f"must be true or false, {got}"
    if hint is int:
        return None if _is_int(value) else f"must be a whole number, {got}"
    if hint is float:
        if not _is_number(value):
            return f"must be a number, {got}"
        return None if math.isfinite(value) else f"must be a finite number, {got}"
    if hint is str:
        return None if isinstance(value, str) else f"must be text, {got}"
    if hint is dict or origin is dict:
        return None if isinstance(value, dict) else f"must be a mapping {{key: value}}, {got}"
    if origin is tuple:
        if isinstance(value, str) and args[-1] is Ellipsis and args[0] is str:
            return None  # one language, e.g. --set languages=en
        if not isinstance(value, (list, tuple)):
            return f"must be a list, {got}"
        if args and args[-1] is not Ellipsis and len(value) != len(args):
            return f"must be a list of {len(args)}, {got}"
        element = args[0] if args else None
        for item in value:
            if element is str and not isinstance(item, str):
                return f"must be a list of text, {got}"
            if element in (int, float) and not _is_number(item):
                return f"must be a list of numbers, {got}"
        return None
    return None


def _example(key: str) -> str:
    default = next(f.default for f in dataclasses.fields(BuildConfig) if f.name == key)
    if default is dataclasses.MISSING:
        default = next(f.default_factory() for f in dataclasses.fields(BuildConfig) if f.name == key)
    if isinstance(default, tuple):
        default = list(default)
    if default is None:
        return f"e.g. --set {key}=VALUE (see palm_bench/config.py)"
    text = (
        yaml.safe_dump(default, default_flow_style=True, width=1000, sort_keys=False)
        .strip()
        .removesuffix("...")
        .strip()
    )
    return f"e.g. --set '{key}={text}' (the default)"


def load_preset(name_or_path: str, overrides: dict | None = None) -> BuildConfig:
    """A preset by name (``small``, ``paper``) or YAML path, with ``overrides`` on top."""
    path = Path(name_or_path)
    if not path.is_file():
        path = PRESET_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        names = ", ".join(sorted(p.stem for p in PRESET_DIR.glob("*.yaml")))
        raise ConfigError(f"--preset {name_or_path}: unknown preset; give one of {names}, or a YAML file")
    try:
        from lalm_eval.hub.readers import read_text

        data = yaml.safe_load(read_text(path)) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        problem = str(getattr(exc, "problem", None) or exc).splitlines()[0].replace(";", ",")
        raise DataError(path, f"cannot read preset ({problem}); fix the YAML") from None
    return BuildConfig.from_dict(data, where=str(path), overrides=overrides)
