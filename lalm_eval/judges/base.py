"""The LLM-judge contract: items in, one verdict per item out, in order, cache in front.

A :class:`Judge` renders one Jinja2 prompt per :class:`JudgeItem` (its ``template`` in
:meth:`Judge.templates_dir`, the ``prompts/`` folder beside the module defining the judge class;
StrictUndefined), asks a :class:`~lalm_eval.llm.base.TextLLM` in chunks, and parses every reply
strictly: one JSON object with the judge's keys and values in the rubric's range. An invalid
reply is asked again once (the same chat plus the invalid reply and the template's ``retry``
reminder of the exact format); still invalid, the item gets ``JudgeResult(score=None, error=...)``
— never a silent 0 or 1. The caller counts and reports such failures.

Cache: verdicts already in the :class:`~lalm_eval.judges.cache.JudgeCache` are served first;
the misses go to the LLM ``chunk_size`` at a time and each chunk's successes are stored before
the next chunk starts, so a killed run resumes where it stopped. Failures are not stored.

A chat whose call fails at the transport level (after the backend's own retries) is a failed
item too; a chunk of two or more chats in which *every* call failed that way raises
:class:`LLMError` instead — the judge server is down or misconfigured, and asking the rest would
only burn retries (what was judged so far is cached).

Samples: a judge built with ``samples=K`` (``--judge_samples K``) asks every item K times, each
pass with its own seed (:func:`lalm_eval.judges.decoding.sample_seeds`, from the run's seed) and
its own cache entries, and scores the item by the mean of its verdicts; K = 1 sends no seed of
its own and keeps the cache keys it always had. The judge's decoding, K and the seeds are in
:attr:`Judge.settings`, which the results record beside every judge score.

Judges that classify instead of score (``numeric = False``) return ``score=None`` with
``error=None`` and the label in ``detail``; :attr:`JudgeResult.ok` tells success either way.
"""

from __future__ import annotations

import abc
import hashlib
import math
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar

from lalm_eval.errors import ConfigError
from lalm_eval.judges.cache import JudgeCache, judge_key
from lalm_eval.judges.decoding import check_samples, sample_seeds, sample_spread
from lalm_eval.judges.verdicts import JudgeItem, JudgeResult
from lalm_eval.llm.ask import ReplyInvalid
from lalm_eval.llm.base import LLMError, Messages, TextLLM, parse_json_reply
from lalm_eval.registry import Registry
from lalm_eval.templating import jinja_env

TEMPLATES_FOLDER = "prompts"  # a judge's templates: this folder beside the module defining its class
_REPLY_SNIPPET = 300  # characters of an invalid reply kept in a failure's detail


class Judge(abc.ABC):
    """Base class of the LLM judges; subclasses set the class attributes and :meth:`validate`."""

    name: ClassVar[str]
    prompt_version: ClassVar[str]
    template: ClassVar[str]  # file name in templates_dir()
    #: the folder of the judge's templates; None: ``prompts/`` beside the module defining the class
    templates_folder: ClassVar[Path | None] = None
    required_context: ClassVar[tuple[str, ...]] = ()
    numeric: ClassVar[bool] = True

    def __init__(
        self,
        llm: TextLLM,
        cache: JudgeCache | None = None,
        chunk_size: int = 32,
        samples: int = 1,
        seed: int = 0,
    ):
        if not isinstance(llm, TextLLM):
            raise ConfigError(f"judge {self.name}: llm must be a TextLLM, got {type(llm).__name__}")
        if int(chunk_size) < 1:
            raise ConfigError(f"judge {self.name}: chunk_size must be >= 1, got {chunk_size}")
        self.llm, self.cache, self.chunk_size = llm, cache, int(chunk_size)
        self.samples = check_samples(samples, llm, f"judge {self.name}: samples")
        if self.samples > 1 and not self.numeric:
            raise ConfigError(
                f"judge {self.name}: samples {self.samples}: a classifying judge is asked once per item; "
                "give samples=1 (it has no score to average)"
            )
        # K > 1: each pass has its own seed, from the judge spec's seed= when it sets one, else the run's
        spec_seed = llm.settings.get("seed") if self.samples > 1 else None
        self.seed_source = f"the --judge spec's seed={spec_seed}" if spec_seed is not None else f"--seed {seed}"
        base = spec_seed if spec_seed is not None else int(seed)
        self.sample_seeds: list[int] = sample_seeds(base, self.samples) if self.samples > 1 else []
        self.last_stats: dict[str, int] = {}
        #: after :meth:`judge` with samples > 1: the judge's own spread (:func:`~lalm_eval.judges.decoding.sample_spread`)
        self.last_spread: dict | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self.llm!r})"

    # ---- what subclasses provide ------------------------------------------------------------

    @abc.abstractmethod
    def validate(self, reply: dict, item: JudgeItem) -> tuple[float | None, dict]:
        """``(score, detail)`` of a parsed reply; raise :class:`ReplyInvalid` naming the bad key."""

    # ---- prompts ----------------------------------------------------------------------------

    @classmethod
    def templates_dir(cls) -> Path:
        """Where the judge's templates are: :attr:`templates_folder`, else the ``prompts/`` folder
        beside the module that defines the class (a plug-in judge ships its own)."""
        if cls.templates_folder is not None:
            return Path(cls.templates_folder)
        return Path(sys.modules[cls.__module__].__file__).resolve().parent / TEMPLATES_FOLDER

    @property
    def prompt_sha256(self) -> str:
        return hashlib.sha256((self.templates_dir() / self.template).read_bytes()).hexdigest()

    @property
    def settings(self) -> dict:
        """What to record next to the scores: judge, prompt version and hash, the LLM's settings, the
        verdicts per item (``samples``) and, for K > 1, each pass's seed and where they came from."""
        out = {
            "judge": self.name,
            "prompt_version": self.prompt_version,
            "prompt_sha256": self.prompt_sha256,
            **self.llm.settings,
            "samples": self.samples,
        }
        if self.samples > 1:
            out["sample_seeds"] = list(self.sample_seeds)
            out["sample_seed_source"] = self.seed_source
        return out

    def _module(self, item: JudgeItem):
        import jinja2

        missing = [k for k in self.required_context if k not in item.context]
        if missing:
            raise ConfigError(f"judge {self.name}: item context lacks {missing} (question {item.question[:80]!r})")
        try:
            return (
                jinja_env(self.templates_dir())
                .get_template(self.template)
                .make_module(
                    {
                        "question": item.question,
                        "reference": item.reference,
                        "response": item.response,
                        "language": item.language,
                        "context": item.context,
                    }
                )
            )
        except jinja2.UndefinedError as exc:
            raise ConfigError(f"judge {self.name}: prompts/{self.template}: {exc}") from None

    def render(self, item: JudgeItem) -> str:
        """The prompt text for ``item``."""
        return str(self._module(item)).strip()

    def messages(self, item: JudgeItem) -> Messages:
        return [{"role": "user", "content": self.render(item)}]

    def retry_message(self, item: JudgeItem, error: str) -> str:
        """The follow-up after an invalid reply: the template's ``retry`` macro."""
        return str(self._module(item).retry(error)).strip()

    # ---- judging ----------------------------------------------------------------------------

    def parse(self, reply: str, item: JudgeItem) -> JudgeResult:
        """Strictly parse one reply; raises :class:`LLMError` / :class:`ReplyInvalid`."""
        score, detail = self.validate(parse_json_reply(reply), item)
        if self.numeric and (score is None or not math.isfinite(score)):
            raise ReplyInvalid(f"judge {self.name} produced no finite score", "score")
        return JudgeResult(score=None if score is None else float(score), detail=detail)

    def judge(self, items: Iterable[JudgeItem]) -> list[JudgeResult]:
        """One :class:`JudgeResult` per item, in order (see the module docstring).

        With ``samples`` K > 1 every item is judged K times, pass s sending ``seed`` =
        ``sample_seeds[s]`` and caching under the key of the LLM settings with that seed (so each
        verdict is cached on its own and K = 1 keeps the keys of the settings as they are). An
        item's score is the mean of its successful verdicts; ``detail`` is the first successful
        verdict's, plus ``judge_samples`` (each pass's score, None where it failed) and
        ``judge_sample_sd``; it fails only when all K failed. :attr:`last_spread` holds the judge's
        own spread."""
        items = list(items)
        chats = [self.messages(item) for item in items]
        if self.samples == 1:
            self.last_spread = None
            results, self.last_stats = self._judge_pass(items, chats, self.llm.settings, {})
            return results
        passes, totals = [], {}
        for seed in self.sample_seeds:
            verdicts, stats = self._judge_pass(items, chats, {**self.llm.settings, "seed": seed}, {"seed": seed})
            passes.append(verdicts)
            for k, v in stats.items():
                totals[k] = totals.get(k, 0) + v
        results = [self._combine([p[i] for p in passes]) for i in range(len(items))]
        totals.update(items=len(items), samples=self.samples, failed=sum(1 for r in results if not r.ok))
        self.last_stats = totals
        self.last_spread = sample_spread([[p[i].score if p[i].ok else None for p in passes] for i in range(len(items))])
        return results

    def _combine(self, verdicts: list[JudgeResult]) -> JudgeResult:
        """One item's K verdicts as one result (see :meth:`judge`)."""
        per = [v.score if v.ok else None for v in verdicts]
        good = [v for v in verdicts if v.ok]
        cached = all(v.cached for v in verdicts)
        if not good:
            first = verdicts[0]
            return JudgeResult(
                None,
                {**first.detail, "judge_samples": per},
                error=f"all {len(verdicts)} judge verdicts failed; first: {first.error}",
                cached=cached,
            )
        scores = [float(v.score) for v in good]
        mean = sum(scores) / len(scores)
        sd = math.sqrt(sum((x - mean) ** 2 for x in scores) / (len(scores) - 1)) if len(scores) > 1 else None
        detail = {**good[0].detail, "judge_samples": per, "judge_sample_sd": sd}
        return JudgeResult(mean, detail, cached=cached)

    def _judge_pass(
        self, items: list[JudgeItem], chats: list[Messages], llm_settings: dict, call: dict
    ) -> tuple[list[JudgeResult], dict]:
        """One verdict per item under ``llm_settings`` (the cache key's) sending ``call`` settings."""
        keys = [judge_key(self.name, self.prompt_version, chat, llm_settings) for chat in chats]
        results: list[JudgeResult | None] = [None] * len(items)
        hits = self.cache.get_many(keys) if self.cache is not None else {}
        pending: dict[str, list[int]] = {}  # miss key -> item indices (identical items asked once)
        for i, key in enumerate(keys):
            if key in hits:
                results[i] = hits[key]
            else:
                pending.setdefault(key, []).append(i)
        stats = {
            "items": len(items),
            "cached": len(items) - sum(map(len, pending.values())),
            "asked": len(pending),
            "llm_calls": 0,
            "retried": 0,
            "failed": 0,
        }
        order = list(pending)
        for start in range(0, len(order), self.chunk_size):
            chunk = order[start : start + self.chunk_size]
            firsts = [pending[key][0] for key in chunk]
            verdicts = self._judge_chunk([items[i] for i in firsts], [chats[i] for i in firsts], stats, call)
            if self.cache is not None:
                self.cache.put_many((key, v, self.name) for key, v in zip(chunk, verdicts))
            for key, verdict in zip(chunk, verdicts):
                for i in pending[key]:
                    results[i] = verdict
        stats["failed"] = sum(1 for r in results if not r.ok)
        return results, stats  # type: ignore[return-value]

    def _ask(self, chats: list[Messages], stats: dict, call: dict) -> list[str | LLMError]:
        replies = self.llm.complete_each(chats, **call)
        if len(replies) != len(chats):
            raise LLMError(f"{type(self.llm).__name__} returned {len(replies)} replies for {len(chats)} chats")
        stats["llm_calls"] += len(chats)
        return replies

    def _judge_chunk(self, items: list[JudgeItem], chats: list[Messages], stats: dict, call: dict) -> list[JudgeResult]:
        replies = self._ask(chats, stats, call)
        out: list[JudgeResult | None] = [None] * len(items)
        again: list[tuple[int, str, str]] = []  # (index, invalid reply, why)
        for i, reply in enumerate(replies):
            if isinstance(reply, LLMError):
                out[i] = JudgeResult(None, {}, error=f"judge LLM call failed: {reply}")
                continue
            try:
                out[i] = self.parse(reply, items[i])
            except (LLMError, ReplyInvalid) as exc:
                again.append((i, reply, str(exc)))
        if len(replies) > 1 and all(isinstance(r, LLMError) for r in replies):
            raise LLMError(
                f"judge {self.name}: all {len(replies)} judge calls of a chunk failed "
                f"(is the judge server up?); first: {replies[0]}"
            )
        if again:
            stats["retried"] += len(again)
            retry_chats = [
                chats[i]
                + [
                    {"role": "assistant", "content": reply},
                    {"role": "user", "content": self.retry_message(items[i], why)},
                ]
                for i, reply, why in again
            ]
            for (i, first, why), reply in zip(again, self._ask(retry_chats, stats, call)):
                seen = {"replies": [first[:_REPLY_SNIPPET]]}
                if isinstance(reply, LLMError):
                    out[i] = JudgeResult(None, seen, error=f"invalid reply ({why}); the retry call failed: {reply}")
                    continue
                try:
                    out[i] = self.parse(reply, items[i])
                except (LLMError, ReplyInvalid) as exc:
                    seen["replies"].append(reply[:_REPLY_SNIPPET])
                    out[i] = JudgeResult(None, seen, error=f"invalid reply after 2 attempts: {exc}")
        return out  # type: ignore[return-value]


def count_failures(results: Iterable[JudgeResult]) -> int:
    """How many verdicts failed (``error`` set)."""
    return sum(1 for r in results if not r.ok)


# ---- validation helpers shared by the judges ----------------------------------------------------


def number(
    reply: dict,
    key: str,
    *,
    allowed: tuple[float, ...] | None = None,
    lo: float | None = None,
    hi: float | None = None,
    integer: bool = False,
) -> float:
    """``reply[key]`` as a finite number (not a bool, not a string) in the allowed set / range."""
    if key not in reply:
        raise ReplyInvalid(f"missing key {key!r}", key)
    value = reply[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ReplyInvalid(f"{key!r} must be a number, got {value!r}", key)
    if integer and value != int(value):
        raise ReplyInvalid(f"{key!r} must be a whole number, got {value!r}", key)
    if allowed is not None and not any(abs(value - a) < 1e-9 for a in allowed):
        raise ReplyInvalid(f"{key!r} must be one of {', '.join(f'{a:g}' for a in allowed)}, got {value!r}", key)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise ReplyInvalid(f"{key!r} must lie in [{lo:g}, {hi:g}], got {value!r}", key)
    return float(value)


def text(reply: dict, key: str) -> str:
    """``reply[key]`` as a string."""
    if not isinstance(reply.get(key), str):
        raise ReplyInvalid(f"{key!r} must be a string, got {reply.get(key)!r}", key)
    return reply[key].strip()


def choice(reply: dict, key: str, options: tuple[str, ...]) -> str:
    """``reply[key]``, a string among ``options`` (case and surrounding spaces ignored)."""
    value = text(reply, key).lower()
    if value not in options:
        raise ReplyInvalid(f"{key!r} must be one of {list(options)}, got {reply[key]!r}", key)
    return value


#: the judges by name; every one comes from the entry-point group ``lalm_eval.judges`` (the PALM
#: and MSU judges from palm_bench.judges and msu_bench.judges, registered in pyproject.toml)
JUDGES = Registry("judge", entry_point_group="lalm_eval.judges")
