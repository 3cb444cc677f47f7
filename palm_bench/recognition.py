"""Rule-based scorer for PALM-Bench's speaker-recognition task (no LLM).

PALM-Bench Appendix C.3, Table 26 ("Recognition Evaluation") asks a judge to take the set of
names in the question (N people), to read from the ground truth and from the model's response
whether each of them is present in the audio, and to score ``k / N`` where ``k`` is the number
of names whose presence the response judges as the ground truth does. This module applies that
rubric with rules instead of an LLM, in English and Chinese:

1. **Names.** The queried names are taken from the question (capitalised words that are not
   function words; Chinese names as surname + one or two characters between particles such as
   的/在/和/吗), or passed as ``names=`` when the dataset knows them (PALM rows carry
   ``queried``).
2. **Clauses.** Each text is cut into clauses at punctuation, dashes and but/while/and/但/而
   (a list of names such as "A, B, and C" or "A、B和C" is kept whole). A clause's polarity is
   the parity of its negation cues (not, n't, neither…nor, none, absent, 没有, 不, 未, ...), and
   it applies to the names it mentions. A clause with a hedge ("I cannot determine", 无法确定)
   leaves its names undecided.
3. **Scopes.** "only X" / 只有X makes the other names absent; a clause naming nobody with a
   quantifier ("All three voices can be heard", "None of them", 都不在) speaks for every name
   not decided otherwise; a short leading "Yes"/"No"/"是的"/"没有" answers for the undecided
   names ("No" only when no name was already judged absent, since then it is explained); in an
   answer to a who/which/谁 question the names listed as present are the whole answer; a text
   that only says somebody else is speaking ("The speaker is Bob.") makes the queried names
   absent; names the question presupposes ("Is A speaking, and do you also hear B?") are
   present unless the text says otherwise. Refusals ("I'm sorry, I can't identify specific
   individuals") decide nothing.
4. **Score.** ``correct / N`` with N the queried names the reference decides. A name the
   response leaves undecided counts as wrong. A response identical to the reference (after
   normalising whitespace and case) scores 1 (Table 26, Important Note 2); an empty one 0.

Difference from the paper: Table 26 lists N=3 scores as {1, 0.6, 0.3, 0} although it asks for
``k / N`` "with no rounding". The LLM-judge prompt in this project keeps the paper's wording;
this scorer returns the exact ``k / N`` (2/3, not 0.6). Names the reference itself leaves
undecided (a reference that does not speak about a queried name) are left out of N and listed in
``PresenceResult.unscored``.

The word lists live in ``recognition_cues.yaml`` next to this module. The harness runs this
scorer as the metric ``recognition_presence`` (:class:`palm_bench.metrics.RecognitionPresenceMetric`,
registered through the ``lalm_eval.metrics`` entry points).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

CUES_FILE = Path(__file__).with_name("recognition_cues.yaml")

_TOKEN_BASE = 0xE100  # private-use characters stand for the queried names inside a text
_TOKEN = "[\ue100-\ue1ff]"
_LIST_SEP = "\ue002"  # joins the names of one list once its connectors are removed
_OTHER = "\ue0ff"  # a name that is not queried (kept only so that lists parse)
_CJK = "\u3400-\u9fff\uf900-\ufaff"
_CJK_CHAR = re.compile(f"[{_CJK}]")
_PUNCT_SPLIT = r"[.;!?:,()\[\]\"“”/。；！？：，（）…]|——|—|–|--|\s-\s|\n"


@dataclass(frozen=True)
class PresenceResult:
    """Per-name presence judgments of the reference and the response, and the score.

    ``reference``/``response`` map each queried name to True (present), False (absent) or
    None (the text decides nothing about it). ``undecided`` are the scored names the response
    leaves undecided (counted as wrong); ``unscored`` the names the reference leaves undecided
    (left out of N).
    """

    names: tuple[str, ...]
    reference: dict[str, bool | None]
    response: dict[str, bool | None]
    correct: int
    score: float
    undecided: tuple[str, ...]
    unscored: tuple[str, ...] = field(default=())


# --------------------------------------------------------------------------- cue lists


@dataclass(frozen=True)
class _Lang:
    negation: re.Pattern
    nor: re.Pattern | None
    exceptions: re.Pattern
    hedges: re.Pattern
    only: re.Pattern
    quantifiers: re.Pattern
    partial: re.Pattern
    yes_starters: re.Pattern
    no_starters: re.Pattern
    wh_words: re.Pattern
    presupposition: re.Pattern


@dataclass(frozen=True)
class _Cues:
    en: _Lang
    zh: _Lang
    stopwords: frozenset[str]
    clause_split: re.Pattern
    list_span: re.Pattern
    surnames: frozenset[str]
    compound_surnames: frozenset[str]
    left: frozenset[str]
    right: frozenset[str]
    answer_max_words: int
    answer_max_chars: int


def _alternation(items, words: bool) -> str:
    parts = sorted({str(i).lower() for i in items}, key=len, reverse=True)
    escaped = [re.escape(p) for p in parts]
    if not words:
        return "(?:" + "|".join(escaped) + ")"
    # whole words: no letter (or apostrophe) right before, no letter right after
    return r"(?<![a-z'])(?:" + "|".join(escaped) + r")(?![a-z])"


def _english(spec: dict) -> _Lang:
    negation = [w for w in spec["negation"] if w not in ("n't", "nor")]
    neg = _alternation(negation, words=True) + r"|n't(?![a-z])"
    return _Lang(
        negation=re.compile(neg),
        nor=re.compile(_alternation(["nor"], words=True)),
        exceptions=re.compile(_alternation(spec["negation_exceptions"], words=True)),
        hedges=re.compile(_alternation(spec["hedges"], words=True)),
        only=re.compile(_alternation(spec["only"], words=True)),
        quantifiers=re.compile(_alternation(spec["quantifiers"], words=True)),
        partial=re.compile(_alternation(spec["partial_quantifiers"], words=True)),
        yes_starters=re.compile("^" + _alternation(spec["yes_starters"], words=True)),
        no_starters=re.compile("^" + _alternation(spec["no_starters"], words=True)),
        wh_words=re.compile(_alternation(spec["wh_words"], words=True)),
        presupposition=re.compile(_alternation(spec["presupposition"], words=True)),
    )


def _chinese(spec: dict) -> _Lang:
    def plain(key: str, anchored: bool = False) -> re.Pattern:
        return re.compile(("^" if anchored else "") + _alternation(spec[key], words=False))

    return _Lang(
        negation=plain("negation"),
        nor=None,
        exceptions=plain("negation_exceptions"),
        hedges=plain("hedges"),
        only=plain("only"),
        quantifiers=plain("quantifiers"),
        partial=plain("partial_quantifiers"),
        # a Chinese "yes" is a whole short clause (是的，/ 有。/ 当然能。), not a prefix of 是X在说话
        yes_starters=re.compile("^" + _alternation(spec["yes_starters"], words=False) + "[了的啊呀呢吧啦嘛!]*$"),
        no_starters=plain("no_starters", True),
        wh_words=plain("wh_words"),
        presupposition=plain("presupposition"),
    )


@lru_cache(maxsize=1)
def _cues() -> _Cues:
    spec = yaml.safe_load(CUES_FILE.read_text(encoding="utf-8"))
    en, zh = spec["english"], spec["zh"]
    _check_strings(en, zh)
    return _Cues(
        en=_english(en),
        zh=_chinese(zh),
        stopwords=frozenset(w.lower() for w in en["name_stopwords"]),
        clause_split=_clause_split(en["clause_breaks"], zh["clause_breaks"]),
        list_span=_list_span(en["list_connectors"] + zh["list_connectors"]),
        surnames=frozenset(zh["surnames"]),
        compound_surnames=frozenset(zh["compound_surnames"]),
        left=frozenset(zh["left_boundaries"]),
        right=frozenset(zh["right_boundaries"]),
        answer_max_words=int(en["answer_max_words"]),
        answer_max_chars=int(zh["answer_max_chars"]),
    )


def _clause_split(english: list[str], chinese: list[str]) -> re.Pattern:
    words = _alternation(english, words=True)
    chinese_breaks = _alternation(chinese, words=False)
    return re.compile(rf"{_PUNCT_SPLIT}|{words}|{chinese_breaks}", re.IGNORECASE)


def _list_span(connectors: list[str]) -> re.Pattern:
    """ "A, B, and C" / "A、B和C" / "neither A nor B" over name tokens.

    A comma without a following space is a Chinese clause comma (NFKC turns "，" into ","),
    not a list separator.
    """
    connector = _alternation(connectors, words=False)
    item = f"[{_OTHER}\ue100-\ue1ff]" + r"(?:'s)?"
    between = (
        rf"(?:\s*、\s*(?:{connector}\s*)?|\s*,\s+(?:{connector}\s*)?"
        rf"|\s*{connector}\s*)"
    )
    return re.compile(rf"{item}(?:{between}{item})+", re.IGNORECASE)


def _check_strings(*sections: dict) -> None:
    """Every cue must be a string (unquoted YAML yes/no/on would load as booleans)."""
    for section in sections:
        for key, value in section.items():
            if not isinstance(value, list):
                continue
            bad = [item for item in value if not isinstance(item, str)]
            if bad:
                raise ValueError(f"{CUES_FILE}: {key} has non-string entries {bad}; quote them")


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "")
    return text.replace("’", "'").replace("‘", "'").replace("`", "'")


# --------------------------------------------------------------------------- name extraction


def extract_names(question: str) -> tuple[str, ...]:
    """The queried names in ``question``, in order of first appearance, without repeats."""
    text = _normalize(question)
    found = _english_names(text) + _chinese_names(text)
    ordered = [name for _, name in sorted(found, key=lambda pair: pair[0])]
    return tuple(dict.fromkeys(ordered))


def _english_names(text: str) -> list[tuple[int, str]]:
    """Runs of capitalised words (``Mary Ann``), cut at function words such as "Does"."""
    stop = _cues().stopwords
    out: list[tuple[int, str]] = []
    run: list[re.Match] = []
    word = re.compile(r"(?<![A-Za-z'])[A-Z][a-zA-Z]*(?:['-][A-Z][a-zA-Z]+)*(?![a-zA-Z])")

    def flush():
        if run:
            out.append((run[0].start(), " ".join(m.group() for m in run)))
            run.clear()

    for m in word.finditer(text):
        if len(m.group()) < 2 or m.group().lower() in stop:
            flush()
            continue
        if run and text[run[-1].end() : m.start()] != " ":
            flush()
        run.append(m)
    flush()
    return out


def _chinese_names(text: str) -> list[tuple[int, str]]:
    """Surname + one or two CJK characters between boundary particles (在王芳和李明中)."""
    cues = _cues()
    out: list[tuple[int, str]] = []
    i = 0
    while i < len(text):
        name = _chinese_name_at(text, i, cues)
        if name:
            out.append((i, name))
            i += len(name)
        else:
            i += 1
    return out


def _chinese_name_at(text: str, i: int, cues: _Cues) -> str | None:
    if i > 0 and text[i - 1] not in cues.left and _CJK_CHAR.match(text[i - 1]):
        return None
    if text[i : i + 2] in cues.compound_surnames:
        surname = 2
    elif text[i] in cues.surnames:
        surname = 1
    else:
        return None

    def given_ok(j: int) -> bool:
        return j < len(text) and _CJK_CHAR.match(text[j]) is not None and text[j] not in cues.right

    def right_ok(j: int) -> bool:
        return j >= len(text) or text[j] in cues.right or not _CJK_CHAR.match(text[j])

    start = i + surname
    if not given_ok(start):
        return None
    if right_ok(start + 1):
        return text[i : start + 1]
    if given_ok(start + 1) and right_ok(start + 2):
        return text[i : start + 2]
    return None


# --------------------------------------------------------------------------- judgments


@dataclass
class _Clause:
    names: tuple[int, ...]
    hedge: bool
    negative: bool
    only: bool
    quantifier: bool
    partial: bool
    answer: bool | None  # a short yes (True) / no (False) clause that names nobody
    other: bool  # names somebody who is not queried
    also: bool  # "also" / 也 / 还: somebody else is present besides


def _mark_names(text: str, names: tuple[str, ...]) -> str:
    """Replace every queried name by its private-use token, other names by ``_OTHER``.

    Other names matter only inside lists ("none of Henry, David, or Leo" when only Leo is
    queried); an English capitalised word counts as one when it does not start a sentence.
    """
    order = sorted(range(len(names)), key=lambda k: len(names[k]), reverse=True)
    for k in order:
        name, token = names[k], chr(_TOKEN_BASE + k)
        if _CJK_CHAR.search(name):
            text = text.replace(name, token)
        else:
            pattern = r"(?<![A-Za-z])" + re.escape(name) + r"(?![A-Za-z])"
            text = re.sub(pattern, token, text, flags=re.IGNORECASE)
    return _mark_other_names(text)


def _mark_other_names(text: str) -> str:
    spans = [(pos, name) for pos, name in _chinese_names(text)]
    spans += [(pos, name) for pos, name in _english_names(text) if not re.search(r"(?:^|[.!?\n])\s*$", text[:pos])]
    for pos, name in sorted(spans, reverse=True):
        text = text[:pos] + _OTHER + text[pos + len(name) :]
    return text


def _collapse_lists(text: str) -> str:
    """ "A, B, and C" -> tokens joined by a neutral separator, so the list stays one clause."""

    def join(m: re.Match) -> str:
        tokens = re.findall(f"[{_OTHER}\ue100-\ue1ff]", m.group())
        return _LIST_SEP.join(dict.fromkeys(tokens))

    return _cues().list_span.sub(join, text)


def _count_negations(clause: str) -> int:
    cues, low = _cues(), clause.lower()
    count = 0
    for lang in (cues.en, cues.zh):
        cleaned = lang.exceptions.sub(" ", low)
        hits = len(lang.negation.findall(cleaned))
        if lang.nor is not None and hits == 0:
            hits = len(lang.nor.findall(cleaned))
        count += hits
    return count


def _analyse(clause: str) -> _Clause:
    cues, low = _cues(), clause.strip().lower()
    names = tuple(dict.fromkeys(ord(ch) - _TOKEN_BASE for ch in re.findall(_TOKEN, clause)))
    langs = (cues.en, cues.zh)
    hedge = any(lang.hedges.search(low) for lang in langs)
    negative = _count_negations(low) % 2 == 1
    only = any(lang.only.search(lang.exceptions.sub(" ", low)) for lang in langs)
    partial = any(lang.partial.search(low) for lang in langs)
    quantifier = any(lang.quantifiers.search(low) for lang in langs)
    answer = None
    short = (
        len(re.findall(r"[a-z']+", low)) <= cues.answer_max_words
        and len(_CJK_CHAR.findall(low)) <= cues.answer_max_chars
    )
    if not names and not hedge and short:
        if negative or any(lang.no_starters.search(low) for lang in langs):
            answer = False
        elif any(lang.yes_starters.search(low) for lang in langs):
            answer = True
    also = any(lang.presupposition.search(low) for lang in langs)
    return _Clause(names, hedge, negative, only, quantifier, partial, answer, _OTHER in clause, also)


def _clauses(text: str, names: tuple[str, ...]) -> list[_Clause]:
    marked = _collapse_lists(_mark_names(_normalize(text), names))
    return [_analyse(p) for p in _cues().clause_split.split(marked) if p and p.strip()]


def _is_wh_question(question: str) -> bool:
    low = _normalize(question).lower()
    return any(lang.wh_words.search(low) for lang in (_cues().en, _cues().zh))


def _presupposed(question: str, names: tuple[str, ...]) -> set[int]:
    """Names the question takes as present: those before an "also"/还 clause."""
    if not question:
        return set()
    cues = _cues()
    marked = _collapse_lists(_mark_names(_normalize(question), names))
    before: set[int] = set()
    for piece in cues.clause_split.split(marked):
        low = (piece or "").lower()
        ids = {ord(ch) - _TOKEN_BASE for ch in re.findall(_TOKEN, low)}
        if any(lang.presupposition.search(low) for lang in (cues.en, cues.zh)):
            return before - ids
        before |= ids
    return set()


def judge_presence(text: str, names: tuple[str, ...], question: str = "") -> dict[str, bool | None]:
    """What ``text`` says about each name: True present, False absent, None undecided.

    ``question`` (optional) enables the question-dependent rules: a who/which question makes
    a list of present names exhaustive, and names the question presupposes ("Is A speaking,
    and do you also hear B?") are present unless the text says otherwise.
    """
    state = _Scopes()
    decided: dict[int, bool] = {}
    hedged: set[int] = set()
    for clause in _clauses(text, names):
        state.other |= clause.other and not clause.also
        if clause.names:
            _decide(clause, state, decided, hedged)
        elif not (clause.hedge or clause.partial):
            _scope(clause, state)
    open_names = [k for k in range(len(names)) if k not in decided and k not in hedged]
    fill = _fill_value(decided, state, question)
    if fill is not None:
        decided.update({k: fill for k in open_names})
    elif decided:
        decided.update({k: True for k in _presupposed(question, names) if k in open_names})
    return {name: decided.get(k) for k, name in enumerate(names)}


@dataclass
class _Scopes:
    """What the clauses naming nobody (or "only" clauses) say about the undecided names."""

    only: bool | None = None  # polarity of the last "only X" clause
    pending_only: bool | None = None  # "Only one of them is present:" before the names
    quantifier: bool | None = None  # "All three ..." / "None of them ..."
    answer: bool | None = None  # leading "Yes" / "No"
    seen_named: bool = False
    other: bool = False  # the text names somebody not queried (not "also")
    other_present: bool = False  # ... and says that person is present


def _decide(clause: _Clause, state: _Scopes, decided: dict[int, bool], hedged: set[int]) -> None:
    state.seen_named = True
    if clause.hedge:
        hedged.update(n for n in clause.names if n not in decided)
        return
    for n in clause.names:  # a later clause overrides an earlier one (self-corrections)
        decided[n] = not clause.negative
        hedged.discard(n)
    if clause.only or state.pending_only is not None:
        state.only = not clause.negative
    state.pending_only = None


def _scope(clause: _Clause, state: _Scopes) -> None:
    if clause.other and not clause.negative and not clause.also:
        state.other_present = True
    if clause.only:
        state.pending_only = not clause.negative
    elif clause.quantifier:
        state.quantifier = not clause.negative
    elif not state.seen_named and state.answer is None and clause.answer is not None:
        state.answer = clause.answer


def _fill_value(decided: dict[int, bool], state: _Scopes, question: str) -> bool | None:
    """The judgment for names no clause decided, from the text's scopes (or None)."""
    if state.only is not None:
        return not state.only
    if state.quantifier is not None:
        return state.quantifier
    if state.answer is True and not state.other:  # "Confirmed—Isabel didn't speak." says
        return True  # nothing about the queried name
    if state.answer is False and False not in decided.values():
        return False  # a "No" that no negative clause explains applies to the rest
    if True in decided.values() and question and _is_wh_question(question):
        return False  # the answer to "who appears?" lists every present name
    if state.other_present and True not in decided.values():
        return False  # "The speaker is Bob." when asked about Amy
    return None


# --------------------------------------------------------------------------- scoring


def _same_text(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return " ".join(_normalize(s).split()).casefold()

    return bool(norm(a)) and norm(a) == norm(b)


def presence_judgments(
    question: str, reference: str, response: str, names: list[str] | tuple[str, ...] | None = None
) -> PresenceResult:
    """Judge each queried name in the reference and in the response, and score (Table 26)."""
    queried = tuple(dict.fromkeys(names)) if names is not None else extract_names(question)
    ref = judge_presence(reference, queried, question)
    if response and response.strip():
        resp = judge_presence(response, queried, question)
    else:
        resp = {name: None for name in queried}
    scored = [n for n in queried if ref[n] is not None]
    unscored = tuple(n for n in queried if ref[n] is None)
    if _same_text(response or "", reference or ""):
        return PresenceResult(queried, ref, resp, len(queried), 1.0, (), unscored)
    correct = sum(1 for n in scored if resp[n] is not None and resp[n] == ref[n])
    undecided = tuple(n for n in scored if resp[n] is None)
    score = correct / len(scored) if scored else 0.0
    return PresenceResult(queried, ref, resp, correct, score, undecided, unscored)


def recognition_presence_score(
    question: str, reference: str, response: str, names: list[str] | tuple[str, ...] | None = None
) -> float:
    """Table 26 score ``k / N`` (exact fraction) of ``response`` against ``reference``."""
    return presence_judgments(question, reference, response, names=names).score
