"""API prices and spending: the price table, the cost of one call, and a budget that stops a run.

- :func:`load_prices` reads a price table (default ``lalm_eval/models/prices.yaml``, user-editable:
  USD per 1M input text / input audio / output tokens and audio tokens per second per model id or
  glob pattern) into a :class:`PriceTable`; every field is checked and a bad one is a
  :class:`~lalm_eval.errors.DataError` naming the model key and the field.
- :meth:`PriceTable.lookup` finds a model id's :class:`Price`: an exact key first, else the
  longest matching glob pattern (``gpt-4o-audio-preview-2024-10-01`` beats
  ``gpt-4o-audio-preview*``).
- :meth:`Price.cost` prices one call from the usage the provider reported (``prompt_tokens``,
  ``audio_tokens`` — the prompt-side audio part of ``prompt_tokens`` —, ``completion_tokens`` and
  Gemini's ``thoughts_tokens``, billed as output but not part of ``completion_tokens``).
- :class:`Budget` (``--max_cost``) adds up the cost of every call, thread-safe; once ``spent``
  reaches ``max_cost_usd`` it is ``exhausted`` and the API adapters send nothing more.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import threading
from pathlib import Path

import yaml

from lalm_eval.errors import ConfigError, DataError

DEFAULT_PRICES = Path(__file__).resolve().parent / "models" / "prices.yaml"
PRICE_FIELDS = ("input_text", "input_audio", "output", "audio_tokens_per_s")
_OPTIONAL = ("estimated", "note")


@dataclasses.dataclass(frozen=True)
class Price:
    """One price-table entry: USD per 1M tokens, and audio tokens per second for estimates."""

    pattern: str
    input_text: float
    input_audio: float
    output: float
    audio_tokens_per_s: float
    estimated: tuple[str, ...] = ()
    note: str = ""

    def cost(self, usage: dict) -> float | None:
        """USD of one call from the provider's usage; None when it reported no token counts."""
        if not usage or "prompt_tokens" not in usage and "completion_tokens" not in usage:
            return None
        prompt, audio = int(usage.get("prompt_tokens") or 0), int(usage.get("audio_tokens") or 0)
        output = int(usage.get("completion_tokens") or 0) + int(usage.get("thoughts_tokens") or 0)
        return (max(prompt - audio, 0) * self.input_text + audio * self.input_audio + output * self.output) / 1e6


class PriceTable:
    """Prices by model id or glob pattern (see :meth:`lookup`); ``source`` is the file read."""

    def __init__(self, prices: list[Price], source: str = "<memory>"):
        self.prices, self.source = list(prices), source

    def lookup(self, model_id: str | None) -> Price | None:
        """The entry for ``model_id``: an exact key, else the longest glob pattern that matches."""
        if not model_id:
            return None
        for price in self.prices:
            if price.pattern == model_id:
                return price
        matches = [p for p in self.prices if fnmatch.fnmatchcase(model_id, p.pattern)]
        return max(matches, key=lambda p: len(p.pattern), default=None)

    def cost(self, model_id: str | None, usage: dict) -> float | None:
        price = self.lookup(model_id)
        return None if price is None else price.cost(usage)

    def __repr__(self) -> str:
        return f"PriceTable({len(self.prices)} models from {self.source})"


def _number(value, file: Path, key: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise DataError(file, f"model {key!r}: must be a number >= 0, got {value!r}", field=name)
    return float(value)


def load_prices(path: str | Path | None = None) -> PriceTable:
    """The price table in ``path`` (default :data:`DEFAULT_PRICES`), every entry validated."""
    file = Path(path) if path is not None else DEFAULT_PRICES
    if not file.is_file():
        raise ConfigError(f"price table {file}: no such file")
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise DataError(file, f"not valid YAML ({exc})") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise DataError(file, "must be a mapping with a 'models' mapping of model id -> prices", field="models")
    prices = []
    for key, entry in models.items():
        if not isinstance(entry, dict):
            raise DataError(file, f"model {key!r}: must be a mapping of {', '.join(PRICE_FIELDS)}", field=str(key))
        unknown = sorted(set(entry) - set(PRICE_FIELDS) - set(_OPTIONAL))
        missing = [f for f in PRICE_FIELDS if f not in entry]
        if unknown or missing:
            raise DataError(
                file,
                f"model {key!r}: unknown fields {unknown}, missing {missing}; fields: "
                f"{', '.join(PRICE_FIELDS + _OPTIONAL)}",
                field=(unknown or missing)[0],
            )
        estimated = entry.get("estimated") or []
        if not isinstance(estimated, list) or not set(estimated) <= set(PRICE_FIELDS):
            raise DataError(file, f"model {key!r}: 'estimated' must list some of {PRICE_FIELDS}", field="estimated")
        prices.append(
            Price(
                str(key),
                *(_number(entry[f], file, str(key), f) for f in PRICE_FIELDS),
                estimated=tuple(estimated),
                note=str(entry.get("note") or ""),
            )
        )
    return PriceTable(prices, str(file))


class Budget:
    """A spending cap (``--max_cost``): :meth:`charge` adds each call's cost; thread-safe.

    ``exhausted`` once ``spent >= max_cost_usd``. Calls that cannot be priced (no entry for the
    model id, no usage reported) add nothing and are counted in ``unpriced``.
    """

    def __init__(self, max_cost_usd: float, prices: PriceTable):
        if isinstance(max_cost_usd, bool) or not isinstance(max_cost_usd, (int, float)) or max_cost_usd < 0:
            raise ConfigError(f"--max_cost must be a number of USD >= 0, got {max_cost_usd!r}")
        self.max_cost_usd, self.prices = float(max_cost_usd), prices
        self._spent, self.calls, self.unpriced = 0.0, 0, 0
        self._lock = threading.Lock()

    def charge(self, model_id: str | None, usage: dict) -> float | None:
        """Add the cost of one call (the model id the provider answered with); returns it, or None."""
        cost = self.prices.cost(model_id, usage)
        with self._lock:
            self.calls += 1
            if cost is None:
                self.unpriced += 1
            else:
                self._spent += cost
        return cost

    @property
    def spent(self) -> float:
        with self._lock:
            return self._spent

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.max_cost_usd

    def __repr__(self) -> str:
        return f"Budget(spent {self.spent:.6f} of {self.max_cost_usd:g} USD, {self.calls} calls)"
