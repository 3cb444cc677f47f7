"""The knobs of a PALM-Bench build, with the paper's defaults, and the presets that set them.

Every field is a YAML key of a preset (``palm_bench/presets/<name>.yaml``) and a ``--set
key=value`` override of ``palm-bench build``; an unknown key is an error naming it.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from lalm_eval.cli_support import check_keys, load_preset_data
from lalm_eval.errors import ConfigError

PRESET_DIR = Path(__file__).resolve().parent / "presets"
STRATA = ("hard", "semi-hard", "medium", "easy")  # hardest (most similar) first
AUDIO_FORMATS = ("flac", "wav", "opus")


@dataclasses.dataclass(frozen=True)
class BuildConfig:
    seed: int = 0
    languages: tuple[str, ...] = ("en", "zh")
    #: share of each speaker's clips held out for the test split (no clip is in both splits)
    test_fraction: float = 0.25
    #: composed recognition/captioning audios per subject and split (each gives
    #: ``templates_per_audio`` samples)
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
    encoder: str = "resemblyzer"
    #: seconds of each subject's reference speech measured for its acoustic description
    ad_max_seconds: float = 12.0
    audio_format: str = "flac"
    #: also write the ``enrollment`` config: every train-split clip of every subject, for
    #: in-context enrollment prompts (a key of its own, so builds from before it are rebuilt)
    enrollment: bool = True
    #: how positive captioning references are written (PALM Table 24; palm_bench.caption_references):
    #: ``transcript`` (offline default, a deviation from the paper), ``summary`` or ``qa`` (need --llm)
    caption_reference: str = "transcript"
    #: a harness adapter spec (``vllm:pretrained=DIR``, ``openai_audio:model=M,base_url=URL``) whose
    #: model writes each subject's AD (Table 23 prompt) and HD from its train-split reference audio
    #: (palm_bench.model_descriptions); None: AD measured, HD from data
    description_model: str | None = None
    #: generation kwargs of those descriptions (Table 23 asks for at least 600 words)
    description_gen_kwargs: dict = dataclasses.field(
        default_factory=lambda: {"max_new_tokens": 2048, "do_sample": False}
    )

    def __post_init__(self) -> None:
        if not 0 < self.test_fraction < 1:
            raise ConfigError(f"test_fraction must be in (0, 1), got {self.test_fraction}")
        if self.templates_per_audio < 1:
            raise ConfigError("templates_per_audio must be at least 1")
        for key in ("positive_negative_ratio", "single_multi_ratio", "recognition_captioning_ratio"):
            pair = getattr(self, key)
            if len(pair) != 2 or min(pair) < 0 or sum(pair) <= 0:
                raise ConfigError(f"{key} must be two non-negative numbers, got {pair!r}")
        for key in ("audios_per_subject", "reasoning_per_subject"):
            counts = getattr(self, key)
            if set(counts) != {"train", "test"} or min(counts.values()) < 0:
                raise ConfigError(f"{key} needs non-negative 'train' and 'test' counts, got {counts!r}")
        counts = {int(k): float(v) for k, v in self.speaker_count_weights.items()}
        if not counts or not set(counts) <= {2, 3, 4} or min(counts.values()) < 0:
            raise ConfigError(f"speaker_count_weights keys must be 2, 3, 4, got {self.speaker_count_weights!r}")
        object.__setattr__(self, "speaker_count_weights", counts)
        method = self.negative_strata.get("method")
        cuts = self.negative_strata.get("edges" if method == "quantile" else "thresholds")
        if method not in ("quantile", "threshold") or not cuts or len(cuts) != 3 or list(cuts) != sorted(cuts):
            raise ConfigError(
                "negative_strata must be {method: quantile, edges: [a, b, c]} or "
                f"{{method: threshold, thresholds: [a, b, c]}} ascending; got {self.negative_strata!r}"
            )
        if not isinstance(self.enrollment, bool):
            raise ConfigError(f"enrollment must be true or false, got {self.enrollment!r}")
        if self.caption_reference not in ("transcript", "summary", "qa"):
            raise ConfigError(f"caption_reference must be transcript, summary or qa, got {self.caption_reference!r}")
        if self.description_model is not None and (
            not isinstance(self.description_model, str) or re.search(r"(^|[:,])\s*api_key\s*=", self.description_model)
        ):
            raise ConfigError(
                "description_model must be an adapter spec MODEL[:key=value,...] without api_key "
                f"(keys come from the environment), got {self.description_model!r}"
            )
        if self.audio_format not in AUDIO_FORMATS:
            raise ConfigError(f"audio_format must be one of {AUDIO_FORMATS}, got {self.audio_format!r}")

    @classmethod
    def from_dict(cls, data: dict, where: str = "build config") -> BuildConfig:
        check_keys(cls, data, where)
        data = dict(data)
        for key in ("languages", "positive_negative_ratio", "single_multi_ratio", "recognition_captioning_ratio"):
            if key in data:
                data[key] = tuple(data[key])
        return cls(**data)

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        for key, value in out.items():
            if isinstance(value, tuple):
                out[key] = list(value)
        return out


def load_preset(name_or_path: str, overrides: dict | None = None) -> BuildConfig:
    """A preset by name (``small``, ``paper``) or YAML path, with ``overrides`` on top."""
    data, path = load_preset_data(name_or_path, PRESET_DIR)
    return BuildConfig.from_dict({**data, **(overrides or {})}, where=str(path))
