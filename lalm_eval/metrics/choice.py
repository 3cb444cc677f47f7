"""Multiple-choice answers: which option letter a reply chose, and what that choice means.

Two parsers (pure functions):

- :func:`parse_letter` — the letter parser of MSU-Benchmark's authors (``bench_evaluation_pipeline``,
  in the public release ASLP-lab/MSU-Bench): upper-case the reply; a reply that is a
  lone allowed letter wins; else the first of the allowed letters, **in their order**, that occurs
  as a standalone word anywhere; else the first, in the same order, not flanked by capital letters
  (``"答案是B。"``); else ``""``. It does not look for "Final answer" (so ``"A podcast, so D"`` → A).
- :func:`parse_final_answer` — stricter: the letter of the last ``Final answer: X`` /
  ``最后答案：X`` / ``最终答案：X`` line (``**Final answer:** (c)`` too); else ``""``.

:func:`choice_outcome` names what a parsed letter means: ``correct``; ``invalid`` (no allowed
letter: the reply did not follow the instruction); else the chosen option's label when it is one
of ``error_labels``, or ``other``. The ``mcq_accuracy`` metric (:class:`ChoiceMetric`) scores 1 / 0
per item and records the letter and outcome of each (``metric_details``), their counts
(``error_types``) and the invalid count beside the value. An invalid reply scores 0 and is counted:
it is an answer the model gave, not a failure to generate (those never reach a metric).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from lalm_eval.errors import ConfigError
from lalm_eval.metrics.scoring import Metric, MetricResult, ScoreItem

LETTERS = ("A", "B", "C", "D")
_FINAL = re.compile(r"(?:FINAL\s*ANSWER|最后答案|最终答案)(?:\s*IS)?[\s*:：]*[(（\[【]?\s*([A-Z])(?![A-Z])")


def parse_letter(reply: str | None, letters: Sequence[str] = LETTERS) -> str:
    """The authors' parser (module docstring); ``""`` when no allowed letter is found."""
    text = (reply or "").upper()
    if text.strip() in letters:
        return text.strip()
    for x in letters:
        if re.search(rf"\b{re.escape(x)}\b", text):
            return x
    for x in letters:
        if re.search(rf"(?<![A-Z]){re.escape(x)}(?![A-Z])", text):
            return x
    return ""


def parse_final_answer(reply: str | None, letters: Sequence[str] = LETTERS) -> str:
    """The letter of the last "Final answer: X" (or 最后答案/最终答案), when allowed; else ``""``."""
    found = _FINAL.findall((reply or "").upper())
    return found[-1] if found and found[-1] in letters else ""


PARSERS = {"first_letter": parse_letter, "final_answer": parse_final_answer}


def choice_outcome(
    letter: str,
    answer: str,
    labels: Sequence[str],
    letters: Sequence[str] = LETTERS,
    error_labels: Sequence[str] = (),
    invalid: str = "invalid",
    other: str = "other",
) -> str:
    """``correct`` | ``invalid`` | the chosen option's label (one of ``error_labels``) | ``other``."""
    if letter not in letters:
        return invalid
    if letter == answer:
        return "correct"
    k = list(letters).index(letter)
    label = labels[k] if k < len(labels) else None
    return label if label in error_labels else other


class ChoiceMetric(Metric):
    """``mcq_accuracy``: 1 when the parsed letter is the reference letter.

    Options: ``parser`` (``first_letter``, the default, or ``final_answer``); ``letters_field``
    (doc field listing the option letters; default A-D); ``labels_field`` (doc field with one label
    per option, for the outcome of a wrong choice); ``error_labels`` (the labels reported as they
    are; any other is ``other_label``); ``invalid_label`` (default ``invalid``); ``other_label``
    (default ``other``).
    """

    OPTIONS = ("parser", "letters_field", "labels_field", "error_labels", "invalid_label", "other_label")
    display_name, percent = "accuracy", 100  # 1 / 0 per item

    def check_options(self) -> None:  # when the task loads
        name = self.options.get("parser", "first_letter")
        if name not in PARSERS:
            raise ConfigError(f"metric {self.name!r}: parser {name!r}: use one of {sorted(PARSERS)}")

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        name, o = self.options.get("parser", "first_letter"), self.options
        parse = PARSERS[name]  # a known parser: checked when the task loaded
        invalid, other = o.get("invalid_label", "invalid"), o.get("other_label", "other")
        values, details = [], []
        for item in items:
            letters = tuple(item.doc.get(o["letters_field"]) or LETTERS) if o.get("letters_field") else LETTERS
            labels = list(item.doc.get(o["labels_field"]) or []) if o.get("labels_field") else []
            answer = item.reference.strip().upper()
            if answer not in letters:
                raise ConfigError(
                    f"metric {self.name!r}: reference {item.reference!r} is not one of the letters "
                    f"{list(letters)} (doc_to_target must give the answer letter)"
                )
            letter = parse(item.prediction, letters)
            outcome = choice_outcome(letter, answer, labels, letters, o.get("error_labels", ()), invalid, other)
            values.append(float(outcome == "correct"))
            details.append({"letter": letter, "error_type": outcome})
        counts = Counter(d["error_type"] for d in details)
        return MetricResult(
            values,
            [None] * len(items),
            details=details,
            extra={"parser": name, "error_types": dict(sorted(counts.items())), invalid: counts.get(invalid, 0)},
        )


# -- free-text options (MMAU): the reply names an option by its letter or by its text ---------------

_LETTER_FORMS = (
    r"^\s*[(\[]?([A-Z])[)\].:]?\s*$",  # the reply is a letter: "B", "(B)", "B."
    r"^\s*[(\[]?([A-Z])[)\].:](?:\s|$)",  # it starts with one: "B. Guitar", "(B) guitar"
    r"(?i:answer|option|choice)(?i:\s+is)?\s*[:：]?\s*[(\[]?([A-Z])(?![A-Za-z])",  # "The answer is (B)"
    r"(?<![A-Za-z'’])[(\[]?([A-Z])[)\]]?[.!]?\s*$",  # it ends with one: "I think it's B."
)


def _words(text: str) -> frozenset:
    return frozenset(re.findall(r"\w+", (text or "").lower()))


def parse_option(reply: str | None, options: Sequence[str]) -> int | None:
    """The index of the option a free-text reply chose, else None.

    1. An option letter (A, B, … one per option, upper case) written as a letter: the whole reply
       (``"B"``, ``"(B)"``), its start followed by ``.`` ``)`` ``:`` (``"B. Guitar"``), or after
       "answer"/"option"/"choice" (``"The answer is (B)"``), or ending it (``"I think it's B."``).
       A letter wins over the option text.
    2. Else the option whose words all occur in the reply (case and punctuation ignored); when
       several do, those whose words are a strict subset of another candidate's are dropped
       (``"electric guitar"`` beats ``"guitar"``); two or more left (``"not piano but guitar"``),
       or none, is None: the reply did not choose.
    """
    letters = [chr(ord("A") + k) for k in range(len(options))]
    text = reply or ""
    for pattern in _LETTER_FORMS:
        found = re.search(pattern, text)
        if found and found.group(1) in letters:
            return letters.index(found.group(1))
    said = _words(text)
    words = [_words(o) for o in options]
    found = [k for k, w in enumerate(words) if w and w <= said]
    found = [k for k in found if not any(words[k] < words[j] for j in found)]
    return found[0] if len(found) == 1 else None


class OptionMetric(Metric):
    """``option_accuracy``: 1 when :func:`parse_option` picks the reference option (MMAU).

    The reference (``doc_to_target``) is the answer's text, one of the doc's options (option
    ``choices_field``, default ``choices``), compared case- and space-insensitively. A reply that
    names no option (or two) scores 0 and is counted (``unparsed``); a reference that is not
    among the options cannot be scored (None, counted, left out).
    """

    OPTIONS = ("choices_field",)
    display_name, percent = "accuracy", 100  # 1 / 0 per item

    def compute(self, items: list[ScoreItem]) -> MetricResult:
        field = self.options.get("choices_field", "choices")
        values, errors, details = [], [], []
        for item in items:
            options = [str(o) for o in (item.doc.get(field) or [])]
            key = [" ".join(o.lower().split()) for o in options]
            answer = " ".join(item.reference.lower().split())
            if answer not in key:
                values.append(None)
                errors.append(f"reference {item.reference!r} is not one of the options in {field!r}: {options}")
                details.append(None)
                continue
            chosen = parse_option(item.prediction, options)
            values.append(float(chosen is not None and key[chosen] == answer))
            errors.append(None)
            details.append({"chosen": None if chosen is None else options[chosen], "parsed": chosen is not None})
        unparsed = sum(1 for d in details if d and not d["parsed"])
        return MetricResult(
            values, errors, details=details, extra={"parser": "letter_or_option_text", "unparsed": unparsed}
        )
