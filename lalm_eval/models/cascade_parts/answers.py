"""Task routing and answer sentences of the cascade, read from ``cascade_answers.yaml``.

:class:`AnswerBook` maps a task's declared kind (``answer_kind`` of its YAML ``metadata``, passed
as ``Request.task_metadata``) to a kind of analysis, never its name; picks the answer language
from the question (any CJK character → ``zh``), finds the question inside a prompt (after the
last marker), finds enrolled names in it, and renders the templates.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError

DEFAULT_ANSWERS = Path(__file__).resolve().parent.parent / "cascade_answers.yaml"
KINDS = (
    "recognition",
    "captioning",
    "reasoning",
    "speaker_counting",
    "dialogue_transcription",
    "multiple_choice",
    "cannot_determine",
)
LANGUAGES = ("en", "zh")
REQUIRED_TEMPLATES = (
    "single_present",
    "single_absent",
    "present",
    "absent",
    "joiner",
    "says",
    "says_nothing_recognised",
    "refusal",
    "no_asr",
    "speaker_count",
    "speaker_count_one",
    "transcription_open",
    "transcription_item",
    "transcription_separator",
    "transcription_close",
    "transcription_no_asr",
    "cannot_determine",
    "no_known_name",
    "choice",
)
#: an option line of a multiple-choice prompt: "A. text" (also "A)", "A、", full-width stops)
_OPTION = re.compile(r"^\s*([A-J])\s*[.．、)）:：]\s*(.+?)\s*$", re.M)
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def language_of(text: str) -> str:
    return "zh" if _CJK.search(text) else "en"


def find_names(text: str, names: list[str]) -> list[str]:
    """The ``names`` that occur in ``text`` as whole words (CJK names: as substrings), in order."""
    found = []
    for name in names:
        pattern = re.escape(name) if _CJK.search(name) else r"(?<!\w)" + re.escape(name) + r"(?!\w)"
        m = re.search(pattern, text)
        if m:
            found.append((m.start(), name))
    return [name for _, name in sorted(found)]


class AnswerBook:
    def __init__(self, path: str | Path = DEFAULT_ANSWERS):
        self.path = Path(path)
        try:
            raw = self.path.read_bytes()
            data = yaml.safe_load(raw)
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{self.path}: cannot read the cascade's answers ({exc})") from exc
        self.sha256 = hashlib.sha256(raw).hexdigest()
        if not isinstance(data, dict):
            raise ConfigError(f"{self.path}: expected a mapping at the top level")
        self.markers = [str(m) for m in data.get("question_markers") or []]
        kinds = data.get("kinds")
        if not isinstance(kinds, dict) or not kinds:
            raise ConfigError(f"{self.path}: field 'kinds': expected a mapping answer_kind → analysis, got {kinds!r}")
        for declared, kind in kinds.items():
            if kind not in KINDS:
                raise ConfigError(f"{self.path}: field 'kinds': {declared!r} → {kind!r} is not one of {KINDS}")
        self.kinds = {str(k): str(v) for k, v in kinds.items()}
        self.wrappers = []
        for i, entry in enumerate(data.get("wrappers") or []):
            if not isinstance(entry, dict) or "prompt_contains" not in entry or "template" not in entry:
                raise ConfigError(f"{self.path}: field 'wrappers[{i}]': needs 'prompt_contains' and 'template'")
            self.wrappers.append((str(entry["prompt_contains"]), str(entry["template"])))
        templates = data.get("templates") or {}
        for lang in LANGUAGES:
            missing = [k for k in REQUIRED_TEMPLATES if k not in (templates.get(lang) or {})]
            if missing:
                raise ConfigError(f"{self.path}: field 'templates.{lang}': missing {missing}")
        self.numbers = {lang: [str(w) for w in templates[lang].get("number_words") or []] for lang in LANGUAGES}
        choice = data.get("multiple_choice") or {}
        counting = choice.get("counting_questions") or {}
        extra = choice.get("extra_numbers") or {}
        if not isinstance(counting, dict) or not isinstance(extra, dict):
            raise ConfigError(
                f"{self.path}: field 'multiple_choice': counting_questions and extra_numbers map a "
                f"language to a list / a mapping word → number"
            )
        self.counting_questions = {lang: [str(m).lower() for m in counting.get(lang) or []] for lang in LANGUAGES}
        self.number_values = {
            lang: {
                **{w: i for i, w in enumerate(self.numbers[lang])},
                **{str(w): int(n) for w, n in (extra.get(lang) or {}).items()},
            }
            for lang in LANGUAGES
        }
        self.templates = {
            lang: {k: str(v) for k, v in templates[lang].items() if k != "number_words"} for lang in LANGUAGES
        }

    def kind(self, task_metadata: dict | None) -> tuple[str, str | None]:
        """``(analysis, declared)`` for a task's metadata: the analysis its ``answer_kind`` maps to
        (``cannot_determine`` when it declares none, or one missing from ``kinds``) and the
        declared kind (None when undeclared)."""
        declared = (task_metadata or {}).get("answer_kind")
        if declared in (None, ""):
            return "cannot_determine", None
        return self.kinds.get(str(declared), "cannot_determine"), str(declared)

    def wrap(self, prompt: str, answer: str) -> str:
        template = next((t for text, t in self.wrappers if text in prompt), None)
        return template.format(answer=answer) if template else answer

    def question(self, prompt: str) -> str:
        """The text after the last question marker of ``prompt`` (all of it without one)."""
        cut = max((prompt.rfind(m) + len(m) for m in self.markers if m in prompt), default=0)
        return prompt[cut:]

    def text(self, lang: str, key: str, **fields) -> str:
        """A template with its fields filled in."""
        return self.templates[lang][key].format(**fields)

    def number(self, lang: str, n: int) -> str:
        """``n`` spelled with the language's ``number_words`` (digits beyond the list)."""
        words = self.numbers[lang]
        return words[n] if 0 <= n < len(words) else str(n)

    def raw(self, lang: str, key: str) -> str:
        """A template as written (for the literal pieces: joiners, brackets)."""
        return self.templates[lang][key]

    def count_options(self, prompt: str, lang: str) -> dict[int, str] | None:
        """``{speaker count: option letter}`` when ``prompt`` is a multiple-choice question about how
        many speakers there are (one of ``multiple_choice.counting_questions``) whose every option
        states one number (digits or a number word), all different; else None (the cascade cannot
        choose)."""
        low = prompt.lower()
        if not any(m in low for m in self.counting_questions[lang]):
            return None
        options = _OPTION.findall(prompt)
        out: dict[int, str] = {}
        for letter, text in options:
            values = {int(d) for d in re.findall(r"\d+", text)}
            for word, n in self.number_values[lang].items():
                hit = (
                    word in text
                    if _CJK.search(word)
                    else re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.I)
                )
                if hit:
                    values.add(n)
            if len(values) != 1 or next(iter(values)) in out:
                return None
            out[values.pop()] = letter
        return out if len(out) >= 2 else None
