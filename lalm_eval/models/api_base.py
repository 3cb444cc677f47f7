"""``APIAdapter``: what the hosted-API adapters (``openai_audio``, ``gemini``) share.

A subclass turns one :class:`~lalm_eval.api.Request` into one provider call (:meth:`APIAdapter.call`)
and says how the task's generation kwargs are spelled there (:attr:`APIAdapter.GEN_FIELDS`);
everything else lives here:

Concurrency, timeouts, retries
    ``generate`` sends the requests of a call on a thread pool of ``concurrency`` workers (real
    parallel HTTP requests), each with a ``timeout`` in seconds. 429, 408, 409, 5xx, timeouts and
    connection errors are retried up to ``max_retries`` times, waiting ``retry_delay * 2**attempt``
    seconds (no jitter), or what the provider's ``Retry-After`` header asks (seconds or an HTTP
    date; also ``retry-after-ms``). A ``Retry-After`` over ``max_retry_delay`` ends the retries at
    once. The provider libraries' own retries are turned off, so these are the only ones.
Several endpoints (:mod:`.endpoints`)
    ``base_url=URL1|URL2|...`` or ``endpoints=FILE`` (one URL a line): servers of the same model.
    ``concurrency`` is per endpoint; each attempt goes to the healthy endpoint with the fewest in
    flight. A retryable failure there is a failure of that endpoint, and the retry goes at once to
    another healthy one when there is one (else after the usual wait); ``eject_after`` (default 3)
    such failures in a row take an endpoint out for ``cooldown_s`` (default 30) seconds. A request
    is sent to one endpoint at a time, never duplicated. Per-endpoint stats are the adapter's
    ``counters["endpoints"]`` (``adapter_counters`` of the results). ``identity()`` has the one
    ``base_url`` of a single endpoint (the keys of earlier runs), else the sorted list of the URLs
    (the keys do not depend on their order nor on which endpoint answered).
Failures (``Response.failed``, kinds from :data:`lalm_eval.api.FAILURE_KINDS`, never scored)
    ``refusal`` / ``content_filter`` (the provider declined or filtered the answer),
    ``bad_request`` (400/401/403/404/422 and other 4xx: the provider's message, key redacted),
    ``retries_exhausted``, ``audio_over_limit`` (``long_audio=refuse``), ``budget`` (not sent
    because ``--max_cost`` was reached; requests already in flight complete normally), ``error``
    (among them a reply that is not the protocol's JSON: the message says what the server sent —
    "the server answered HTML, not JSON", an empty body, invalid JSON, JSON without ``choices`` /
    ``candidates``, an error object under status 200 — with its first bytes, secrets redacted; a
    reply over ``max_reply_mb``, default :data:`DEFAULT_MAX_REPLY_MB`; a redirect loop).
API key
    Only from the environment: the subclass's ``KEY_ENVS`` or the variable named by the model arg
    ``api_key_env``. A missing key is a :class:`ConfigError` naming the variable — except for a
    loopback ``base_url`` (127.0.0.1, localhost, ::1: a local ``vllm serve`` or test server), where
    no key is needed and a placeholder is sent. A 401 or 403 (and Gemini's "API key not valid")
    stops the whole call with :class:`KeyRejected` (a :class:`ConfigError` naming the variable):
    no request can succeed, so none more is sent; the answers already received are kept (cached).
    The key is never logged, never in ``identity()``, results, answers or error messages: every
    answer, message and log line passes :func:`lalm_eval.redaction.redact`, which knows the key.
Long audio
    The limit is the request size: ``AUDIO_LIMIT_SCOPE = "per_request"``, ``AUDIO_LIMIT_S`` from
    the model arg ``max_request_mb`` (default ``DEFAULT_MAX_REQUEST_MB``; 1 MB = 10^6 bytes) minus
    :data:`REQUEST_RESERVE_BYTES` for the text and JSON, at :data:`WAV_B64_BYTES_PER_S` (16 kHz
    PCM16 WAV, base64). ``long_audio=refuse`` (default) or ``truncate`` (:mod:`.long_audio`);
    audio is never resampled below 16 kHz. Every response's meta has ``audio_s``, ``seen_s``,
    ``truncated``.
Generation kwargs (:meth:`APIAdapter.map_gen_kwargs`)
    ``max_gen_toks`` / ``max_new_tokens`` (also ``max_tokens``, ``max_completion_tokens``,
    ``max_output_tokens``) → the provider's output cap; ``do_sample=false`` → ``temperature=0``
    (greedy; an explicit temperature > 0 with it is an error); ``num_beams=1`` and
    ``num_return_sequences=1`` are the APIs' behaviour anyway (other values are errors); the rest
    through ``GEN_FIELDS``, and a kwarg with no field there is a :class:`ConfigError` naming it.
    ``until`` is applied client-side to the answer text (:func:`~.batching.truncate_at`), as the
    local adapters do: the API is not asked to stop early (any number of stop strings works and
    answers equal those without ``until``, only shorter; the provider bills the full output).
Per-sample meta
    ``usage`` (only the counts the provider reported: ``prompt_tokens``, ``completion_tokens``,
    ``audio_tokens``, ``total_tokens``, and ``reasoning_tokens`` / ``thoughts_tokens`` /
    ``cached_tokens`` when present), ``model`` (the id the provider answered with),
    ``finish_reason``, ``attempts``, ``cost_usd`` (from :attr:`prices`, when the model is priced).
Cost
    :attr:`prices` (a :class:`~lalm_eval.cost.PriceTable`, model arg ``prices=FILE``) and
    :attr:`budget` (a :class:`~lalm_eval.cost.Budget`, set by ``--max_cost``; setting one for a
    model without a price is a :class:`ConfigError`, since it could not be enforced).
    :meth:`APIAdapter.estimate` predicts tokens and price without any network call.
Resume
    With ``cache_dir`` (the CLI passes ``--cache_dir``), every answer is committed to
    ``<cache_dir>/responses.sqlite`` under the request's key as soon as it arrives, so a killed run
    loses only the requests in flight, not the evaluator's whole chunk. ``cache_dir=none`` turns
    that off.
"""

from __future__ import annotations

import dataclasses
import email.utils
import inspect
import io
import logging
import math
import os
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor, as_completed

import numpy as np

from lalm_eval import redaction
from lalm_eval.api import AUDIO_SR, Adapter, Request, Response
from lalm_eval.errors import ConfigError
from lalm_eval.http_reply import HTTPReply, describe_reply, find_cause
from lalm_eval.models.batching import gen_kwargs_key, split_gen_kwargs, truncate_at
from lalm_eval.models.endpoints import EndpointPool, parse_endpoints, shown_url
from lalm_eval.models.long_audio import LongAudioError, fit_request, resolve_policy

log = logging.getLogger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
WAV_B64_BYTES_PER_S = AUDIO_SR * 2 * 4 / 3  # 16 kHz mono PCM16, base64
REQUEST_RESERVE_BYTES = 200_000  # prompt text, JSON, WAV headers
RETRY_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
_SAMPLING_NEUTRAL = {"num_beams": 1, "num_return_sequences": 1}  # what an API always does
_MAX_ALIASES = ("max_tokens", "max_completion_tokens", "max_output_tokens")
AUTH_STATUS = frozenset({401, 403})  # the key is refused: no request of the run can succeed
DEFAULT_MAX_REPLY_MB = 16.0  # no text answer is this long; a bigger reply is a failure, not read into a cache


class Retryable(Exception):
    """A failure worth another try; ``retry_after`` is the provider's wait in seconds, if it said."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.endpoint = None  # the endpoint it happened at (set by the adapter)


class BadRequest(Exception):
    """A 4xx that retrying cannot fix (the provider's message)."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class KeyRejected(BadRequest):
    """The provider refused the API key (401 / 403, or its own spelling of "key not valid")."""


class ReplyTooLarge(Exception):
    """The reply body is over ``max_reply_mb`` (raised while it is received)."""

    def __init__(self, size: int, limit: int):
        super().__init__(
            f"the server's reply is {size / 1e6:.1f} MB, over the max_reply_mb limit of {limit / 1e6:g} MB"
        )


class AuthFailed(ConfigError):
    """The provider refused the API key: the run stops (exit 2), answers so far kept."""


class ReplyRecorder:
    """An ``httpx`` response hook for the providers' SDK clients: checks each reply's size against
    the limit (its ``Content-Length`` before the body is read, the body after) and keeps the last
    reply of each thread, so that a reply the SDK cannot parse is described from its bytes."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._local = threading.local()

    def hook(self, response) -> None:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            self._local.last = None
            raise ReplyTooLarge(int(declared), self.max_bytes)
        response.read()
        body = response.content
        self._local.last = HTTPReply(
            response.status_code,
            response.headers.get("content-type", ""),
            body,
            response.headers.get("location", ""),
        )
        if len(body) > self.max_bytes:
            raise ReplyTooLarge(len(body), self.max_bytes)

    def start(self) -> None:
        self._local.last = None

    @property
    def last(self) -> HTTPReply | None:
        return getattr(self._local, "last", None)

    def describe(self, expected: str) -> str | None:
        """What is wrong with the last reply when it is not a JSON object holding ``expected``
        (None when nothing was recorded or it looks right)."""
        return describe_reply(self.last, expected)


@dataclasses.dataclass
class Reply:
    """What one provider call gave: text, or a failure kind (refusal/content_filter/error)."""

    text: str | None
    usage: dict
    model: str | None
    finish_reason: str | None = None
    failure: str | None = None
    detail: str = ""
    extra: dict = dataclasses.field(default_factory=dict)  # more meta (e.g. Gemini thoughts)


def redirect_loop(exc: BaseException, recorder: ReplyRecorder) -> str | None:
    """The failure message of a reply that redirected too often (a loop), or None."""
    if find_cause(exc, "TooManyRedirects") is None:  # httpx's or httpx2's, whichever the SDK uses
        return None
    last = recorder.last
    where = f" (last Location: {redaction.redact(last.location)})" if last is not None and last.location else ""
    return f"the server redirected too many times{where}, a redirect loop"


def transport_failure(exc: BaseException, recorder: ReplyRecorder) -> Reply | None:
    """What a transport exception of an SDK call means, for both protocols: a reply over the size
    cap is raised as its :class:`ReplyTooLarge`; a redirect loop is an ``error`` reply saying so;
    anything else is None (the caller retries it as a connection failure)."""
    too_big = find_cause(exc, ReplyTooLarge)
    if too_big is not None:
        raise too_big from None
    loop = redirect_loop(exc, recorder)
    return Reply(None, {}, None, None, "error", loop) if loop else None


@dataclasses.dataclass(frozen=True)
class GenParams:
    """A request's generation kwargs in the provider's spelling, stop strings, output cap."""

    fields: dict
    stops: tuple[str, ...]
    max_tokens: int | None


def wav_bytes(audio: np.ndarray) -> bytes:
    """16 kHz mono PCM16 WAV of a float32 array (what every API adapter sends)."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, np.asarray(audio, dtype=np.float32), AUDIO_SR, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def message_parts(request: Request, adapter: str) -> list[tuple[str, list[tuple[str, object]]]]:
    """``[(role, [("text", str) | ("audio", 16 kHz PCM16 WAV bytes), ...]), ...]``: each message's
    content parts in order, the request's audios filling its ``{"type": "audio"}`` parts in order.
    A part of another type, or as many audio parts as audios not, is a :class:`ConfigError`."""
    where = f"task {request.task!r} doc {request.doc_id}"
    audios, out, n_parts = iter(request.audios), [], 0
    for msg in request.messages:
        content = msg.get("content")
        parts = []
        for part in (
            [{"type": "text", "text": content or ""}] if isinstance(content, str) or content is None else content
        ):
            if part.get("type") == "audio":
                n_parts += 1
                audio = next(audios, None)
                if audio is not None:
                    parts.append(("audio", wav_bytes(audio)))
            elif part.get("type") == "text":
                parts.append(("text", part.get("text", "")))
            else:
                raise ConfigError(
                    f"{where}: content part type {part.get('type')!r} is not supported by {adapter} "
                    "(audio and text only)"
                )
        out.append((msg["role"], parts))
    if n_parts != len(request.audios):
        raise ConfigError(f"{where}: {n_parts} audio parts in the messages, {len(request.audios)} audios")
    return out


def parse_retry_after(headers) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    try:
        if ms is not None:
            return max(0.0, float(ms) / 1000)
    except ValueError:
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def text_tokens_estimate(messages) -> int:
    """Prompt text tokens before a call: per message 4, plus per text ceil(ASCII chars / 4) + one
    per other character (a CJK character is about one token in GPT-4o's and Gemini's tokenizers)."""
    total = 0
    for msg in messages:
        content = msg.get("content")
        texts = (
            [content]
            if isinstance(content, str)
            else [p.get("text", "") for p in content or () if isinstance(p, dict) and p.get("type") == "text"]
        )
        total += 4
        for text in texts:
            n_ascii = sum(ch.isascii() for ch in text)
            total += math.ceil(n_ascii / 4) + (len(text) - n_ascii)
    return total


def _number(where: str, name: str, value, kind=float, minimum: float = 0.0):
    try:
        number = kind(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{where}: model arg {name}={value!r} must be a {kind.__name__}") from None
    if number < minimum:
        raise ConfigError(f"{where}: model arg {name}={value!r} must be >= {minimum:g}")
    return number


def _is_off(value) -> bool:
    return value is None or str(value).strip().lower() in ("", "none", "off", "false")


class APIAdapter(Adapter):
    """Base of the hosted-API adapters (see the module docstring)."""

    name = "api"
    WRITES_RESPONSE_CACHE = True  # the CLI passes cache_dir=none under --no_cache
    MULTI_AUDIO = True
    AUDIO_LIMIT_SCOPE = "per_request"
    LONG_AUDIO_DEFAULT = "refuse"
    DEFAULT_BASE_URL = ""
    KEY_ENVS: tuple[str, ...] = ()
    DEFAULT_MAX_REQUEST_MB = 20.0
    AUDIO_TOKENS_PER_S = 10.0  # for estimates when the price table has no entry
    GEN_FIELDS: dict[str, str] = {}  # our gen kwarg → the provider's field

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        concurrency: int = 8,
        timeout: float = 120.0,
        max_retries: int = 5,
        retry_delay: float = 1.0,
        max_retry_delay: float = 120.0,
        long_audio: str | None = None,
        max_request_mb: float | None = None,
        api_key_env: str | None = None,
        prices: str | None = None,
        cache_dir: str | None = None,
        device: str | None = None,
        max_reply_mb: float | None = None,
        endpoints: str | None = None,
        eject_after: int = 3,
        cooldown_s: float = 30.0,
        **unknown,
    ):
        super().__init__()
        where = self.name
        if "api_key" in unknown:
            raise ConfigError(
                f"{where}: API keys are read from the environment only, never from model args; "
                f"set {' or '.join(self.KEY_ENVS) or 'a variable'} (or name one with api_key_env=VAR)"
            )
        if unknown:
            raise ConfigError(
                f"{where}: unknown model arg(s) {', '.join(sorted(unknown))}; valid: {', '.join(self.valid_args())}"
            )
        if _is_off(model):
            raise ConfigError(f"{where}: model arg 'model' (the provider's model id) is required")
        self.model = str(model)
        self.base_urls = parse_endpoints(base_url, endpoints, self.DEFAULT_BASE_URL)
        self.base_url = self.base_urls[0]
        self.host = urllib.parse.urlsplit(self.base_url).hostname
        self.loopback = all(urllib.parse.urlsplit(u).hostname in LOOPBACK_HOSTS for u in self.base_urls)
        self.concurrency = _number(where, "concurrency", concurrency, int, 1)
        self.pool = EndpointPool(
            self.base_urls,
            self.concurrency,
            eject_after=_number(where, "eject_after", eject_after, int, 1),
            cooldown_s=_number(where, "cooldown_s", cooldown_s, float),
        )
        self._current = threading.local()
        self.timeout = _number(where, "timeout", timeout, float, 0.001)
        self.max_retries = _number(where, "max_retries", max_retries, int, 0)
        self.retry_delay = _number(where, "retry_delay", retry_delay)
        self.max_retry_delay = _number(where, "max_retry_delay", max_retry_delay)
        self.long_audio = resolve_policy(long_audio, self.LONG_AUDIO_DEFAULT, self.AUDIO_LIMIT_SCOPE, where)
        mb = (
            self.DEFAULT_MAX_REQUEST_MB
            if max_request_mb is None
            else _number(where, "max_request_mb", max_request_mb, float, 0.3)
        )
        self.max_request_mb = mb
        self.AUDIO_LIMIT_S = round((mb * 1e6 - REQUEST_RESERVE_BYTES) / WAV_B64_BYTES_PER_S, 1)
        self.max_reply_mb = (
            DEFAULT_MAX_REPLY_MB if max_reply_mb is None else _number(where, "max_reply_mb", max_reply_mb, float, 0.001)
        )
        self.recorder = ReplyRecorder(int(self.max_reply_mb * 1e6))
        self._key_names = (str(api_key_env),) if not _is_off(api_key_env) else self.KEY_ENVS
        self._key, self.key_env = self._resolve_key(api_key_env)
        redaction.register(self._key)
        from lalm_eval.cost import load_prices

        self.prices = load_prices(None if _is_off(prices) else prices)
        self._budget = None
        self._cache = None
        self._cache_path = None if _is_off(cache_dir) else os.path.join(str(cache_dir), "responses.sqlite")
        self._lock = threading.Lock()
        self.stats = {"calls": 0, "retries": 0, "in_flight": 0, "max_in_flight": 0}
        del device  # the model runs at the provider; --device has nothing to choose

    # -- configuration ---------------------------------------------------------------------------

    @classmethod
    def valid_args(cls) -> list[str]:
        """Every model arg this adapter takes (its own and the base's)."""
        names = []
        for klass in cls.__mro__:
            if issubclass(klass, APIAdapter) and "__init__" in vars(klass):
                for name, p in inspect.signature(klass.__init__).parameters.items():
                    if name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and name not in names:
                        names.append(name)
        return names

    def _resolve_key(self, api_key_env: str | None) -> tuple[str | None, str | None]:
        names = (str(api_key_env),) if not _is_off(api_key_env) else self.KEY_ENVS
        for env in names:
            if os.environ.get(env, "").strip():
                return os.environ[env].strip(), env
        if self.loopback:
            return None, None
        raise ConfigError(
            f"{self.name}: no API key for {self.base_url}: set the environment variable "
            f"{' or '.join(names)} (or name another one with model arg api_key_env=VAR); "
            "keys are never read from model args"
        )

    def redact(self, text) -> str:
        """``text`` with the API key (and every other known secret) replaced by ``***``."""
        return redaction.redact(str(text))

    def key_rejected(self, exc: BadRequest) -> AuthFailed:
        """The run-stopping error for a refused key, naming the variable it came from."""
        names = self.key_env or " or ".join(self._key_names)
        said = " ".join(self.redact(exc).replace(";", ",").split())
        if self._key is None:
            what = f"the server at {self.base_url} asks for an API key ({said}) and none of {names} is set"
        else:
            what = f"the server at {self.base_url} refused the API key in {names} ({said})"
        return AuthFailed(
            f"{names}: {what}, so no request can succeed and the run stopped; set {names} to a valid key (or name "
            "another variable with --model_args api_key_env=VAR) and rerun: the answers already received are cached"
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def budget(self):
        """The :class:`~lalm_eval.cost.Budget` in force (``--max_cost``), or None."""
        return self._budget

    @budget.setter
    def budget(self, budget) -> None:
        if budget is not None and budget.prices.lookup(self.model) is None:
            raise ConfigError(
                f"--max_cost: no price for model {self.model!r} in {budget.prices.source}, so the "
                "budget could not be enforced; add the model to the price table (--prices FILE) "
                "or drop --max_cost"
            )
        self._budget = budget
        if budget is not None:
            self.prices = budget.prices

    def identity(self) -> dict:
        """Name, model id, endpoint(s), long-audio policy and the settings that change outputs
        (concurrency, timeouts and retries do not; the key never appears). Several endpoints: their
        URLs sorted, so neither their order nor which one answered changes the cache keys."""
        urls = sorted(shown_url(u) for u in self.base_urls)
        return {
            "name": self.name,
            "model": self.model,
            "base_url": urls[0] if len(urls) == 1 else urls,
            "long_audio": self.long_audio,
            "audio_limit_s": self.AUDIO_LIMIT_S,
            **self.settings(),
        }

    @property
    def counters(self) -> dict:
        """What the results' ``adapter_counters`` record: per-endpoint stats (see :mod:`.endpoints`)."""
        return {"endpoints": self.pool.report()}

    @property
    def endpoint_url(self) -> str:
        """The URL of the endpoint this thread's call goes to (the first outside a call)."""
        endpoint = getattr(self._current, "endpoint", None)
        return endpoint.url if endpoint is not None else self.base_url

    def settings(self) -> dict:
        """Subclass settings that change outputs (for :meth:`identity`)."""
        return {}

    def gen_fields(self) -> dict[str, str]:
        """Our gen kwarg names → the provider's (default :attr:`GEN_FIELDS`)."""
        return dict(self.GEN_FIELDS)

    def map_gen_kwargs(self, gen_kwargs: dict) -> GenParams:
        """A task's gen kwargs in the provider's spelling (see the module docstring); an
        unmappable one is a :class:`ConfigError` naming it."""
        kwargs, stops = split_gen_kwargs(gen_kwargs)
        for alias in _MAX_ALIASES:
            if alias in kwargs:
                value = kwargs.pop(alias)
                if kwargs.setdefault("max_new_tokens", value) != value:
                    raise ConfigError(f"{self.name}: gen kwargs max_new_tokens and {alias} disagree")
        do_sample = kwargs.pop("do_sample", None)
        if do_sample is not None and not isinstance(do_sample, bool):
            raise ConfigError(f"{self.name}: gen kwarg do_sample={do_sample!r} must be true or false")
        if do_sample is False:
            if kwargs.get("temperature") not in (None, 0, 0.0):
                raise ConfigError(
                    f"{self.name}: gen kwargs do_sample=false (greedy) and temperature="
                    f"{kwargs['temperature']!r} contradict each other"
                )
            kwargs["temperature"] = 0.0
        for name, neutral in _SAMPLING_NEUTRAL.items():
            if name in kwargs and kwargs.pop(name) != neutral:
                raise ConfigError(
                    f"{self.name}: gen kwarg {name}={gen_kwargs[name]!r}: the API returns one "
                    f"sampled answer; only {name}={neutral} can be honoured"
                )
        table = self.gen_fields()
        unknown = sorted(k for k in kwargs if k not in table)
        if unknown:
            raise ConfigError(
                f"{self.name}: gen kwarg(s) {', '.join(unknown)} cannot be sent to this API "
                f"(never dropped silently); supported: "
                f"{', '.join(sorted(set(table) | {'do_sample', 'until', 'max_gen_toks'}))}"
            )
        max_tokens = kwargs.get("max_new_tokens")
        if max_tokens is not None:
            kwargs["max_new_tokens"] = max_tokens = _number(self.name, "max_new_tokens", max_tokens, int, 1)
        return GenParams({table[k]: v for k, v in kwargs.items()}, tuple(stops), max_tokens)

    # -- what a subclass provides ------------------------------------------------------------------

    def call(self, request: Request, params: GenParams) -> Reply:
        """One provider call; raise :class:`Retryable` or :class:`BadRequest` for HTTP failures."""
        raise NotImplementedError

    def max_output_tokens(self, params: GenParams) -> int | None:
        """Upper bound of billed output tokens of one call (estimates); None when unbounded."""
        return params.max_tokens

    # -- generation -----------------------------------------------------------------------------

    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        """One response per request, in order; up to ``concurrency`` requests in flight."""
        requests = list(requests)
        params = {}
        for r in requests:  # every gen kwargs error before anything is sent
            key = gen_kwargs_key(r.gen_kwargs or {})
            if key not in params:
                params[key] = self.map_gen_kwargs(r.gen_kwargs or {})
        out: list[Response | None] = [None] * len(requests)
        jobs = []
        for i, r in enumerate(requests):
            try:
                fitted, meta = fit_request(r, self.AUDIO_LIMIT_S, self.AUDIO_LIMIT_SCOPE, self.long_audio)
            except LongAudioError as exc:
                out[i] = Response.failed(
                    "audio_over_limit", str(exc), audio_s=round(r.audio_seconds, 3), seen_s=0.0, truncated=False
                )
                continue
            if meta["truncated"]:
                log.info(
                    "%s: task %r doc %s: %.1f s of audio, %.1f s sent (long_audio=truncate)",
                    self.name,
                    r.task,
                    r.doc_id,
                    meta["audio_s"],
                    meta["seen_s"],
                )
            jobs.append((i, fitted, meta, params[gen_kwargs_key(r.gen_kwargs or {})]))
        if not jobs:
            return out
        pool = ThreadPoolExecutor(max_workers=min(self.pool.capacity, len(jobs)), thread_name_prefix=self.name)
        stop, failed = threading.Event(), None
        try:
            futures = {pool.submit(self._one, req, meta, p, stop): i for i, req, meta, p in jobs}
            for future in as_completed(futures):
                i = futures[future]
                try:
                    out[i] = future.result()
                except BaseException as exc:  # a refused key (or a bug): nothing more is sent
                    failed = failed or exc
                    stop.set()
                    continue
                self._persist(requests[i], out[i])  # every answer received is kept, even when the call stops
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if failed is not None:
            raise failed
        return out

    def _one(self, request: Request, meta: dict, params: GenParams, stop: threading.Event | None = None) -> Response:
        where = f"task {request.task!r} doc {request.doc_id}"
        last = avoid = None
        for attempt in range(self.max_retries + 1):
            if stop is not None and stop.is_set():
                return Response.failed("error", f"{where}: not sent, the call stopped", **meta)
            if self._budget is not None and self._budget.exhausted:
                return Response.failed(
                    "budget",
                    f"{where}: not sent, --max_cost {self._budget.max_cost_usd:g} USD "
                    f"reached (spent {self._budget.spent:.6f})",
                    **meta,
                )
            try:
                reply = self._tracked_call(request, params, first=attempt == 0, avoid=avoid)
            except Retryable as exc:
                last, wait = exc, self._wait(attempt, exc.retry_after)
                avoid = exc.endpoint
                if attempt < self.max_retries and len(self.pool) > 1 and self.pool.elsewhere(avoid):
                    wait = 0.0  # another endpoint is healthy: the retry goes there at once
                if attempt == self.max_retries or wait is None:
                    break
                log.warning(
                    "%s: %s: %s; retry %d/%d in %.2f s",
                    self.name,
                    where,
                    self.redact(exc),
                    attempt + 1,
                    self.max_retries,
                    wait,
                )
                with self._lock:
                    self.stats["retries"] += 1
                time.sleep(wait)
                continue
            except BadRequest as exc:
                if isinstance(exc, KeyRejected) or exc.status in AUTH_STATUS:
                    if stop is not None:
                        stop.set()  # before this worker takes the next request
                    raise self.key_rejected(exc) from None
                return Response.failed("bad_request", f"{where}: {self.redact(exc)}", **meta, attempts=attempt + 1)
            except ReplyTooLarge as exc:
                log.warning("%s: %s: %s", self.name, where, exc)
                return Response.failed("error", f"{where}: {exc}", **meta, attempts=attempt + 1)
            except Exception as exc:  # noqa: BLE001 - recorded per sample, never scored
                log.warning("%s: %s failed: %s", self.name, where, self.redact(repr(exc)))
                return Response.failed("error", f"{where}: {self.redact(repr(exc))}", **meta, attempts=attempt + 1)
            return self._response(reply, meta, params, attempt + 1, where)
        too_long = last is not None and last.retry_after is not None and last.retry_after > self.max_retry_delay
        why = (
            f"the provider asked to wait {last.retry_after:.0f} s (> max_retry_delay {self.max_retry_delay:g})"
            if too_long
            else f"{self.max_retries + 1} attempts"
        )
        return Response.failed(
            "retries_exhausted",
            f"{where}: gave up after {why}: {self.redact(last)}",
            **meta,
            attempts=self.max_retries + 1 if not too_long else attempt + 1,
        )

    def _tracked_call(self, request: Request, params: GenParams, first: bool, avoid=None) -> Reply:
        endpoint = self.pool.acquire(avoid, max_wait=self.max_retry_delay)
        with self._lock:
            self.stats["calls"] += 1
            self.stats["in_flight"] += 1
            self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self.stats["in_flight"])
            if first:
                self.n_generated += 1
        self.recorder.start()
        self._current.endpoint = endpoint
        failed, t0 = False, time.perf_counter()
        try:
            return self.call(request, params)
        except Retryable as exc:
            failed, exc.endpoint = True, endpoint
            raise
        finally:
            self._current.endpoint = None
            self.pool.release(endpoint, failed, time.perf_counter() - t0)
            with self._lock:
                self.stats["in_flight"] -= 1

    def _wait(self, attempt: int, retry_after: float | None) -> float | None:
        """Seconds before the next attempt; None when the provider asks for more than allowed."""
        if retry_after is not None:
            return None if retry_after > self.max_retry_delay else retry_after
        return min(self.retry_delay * 2**attempt, self.max_retry_delay)

    def _response(self, reply: Reply, meta: dict, params: GenParams, attempts: int, where: str) -> Response:
        meta = {
            **meta,
            "usage": reply.usage,
            "model": reply.model,
            "finish_reason": reply.finish_reason,
            "attempts": attempts,
            **reply.extra,
        }
        meta = redaction.redact_value(meta)  # a server may echo the key anywhere
        priced_id = reply.model if self.prices.lookup(reply.model) else self.model
        cost = self._budget.charge(priced_id, reply.usage) if self._budget else self.prices.cost(priced_id, reply.usage)
        if cost is not None:
            meta["cost_usd"] = round(cost, 8)
        if reply.failure:
            detail = f": {self.redact(reply.detail)}" if reply.detail else ""
            log.warning("%s: %s: %s%s", self.name, where, reply.failure, detail)
            finish = f" (finish_reason {reply.finish_reason})" if reply.finish_reason else ""
            return Response.failed(reply.failure, f"{where}: {reply.failure}{finish}{detail}", **meta)
        return Response(truncate_at(self.redact(reply.text), params.stops), meta=meta)

    def _persist(self, request: Request, response: Response) -> None:
        """Commit one answer to the response cache at once (see "Resume" in the module docstring)."""
        if self._cache_path is None or not request.key or response.text is None or response.error:
            return
        try:
            if self._cache is None:
                from lalm_eval.cache import ResponseCache

                self._cache = ResponseCache(self._cache_path)
            self._cache.put_many([(request.key, response)])
        except Exception as exc:  # noqa: BLE001 - the evaluator still stores it at the end of the chunk
            log.warning("%s: could not write %s: %s", self.name, self._cache_path, exc)

    # -- estimates ------------------------------------------------------------------------------

    def estimate(self, requests: list[Request]) -> dict:
        """Tokens and price of sending ``requests``, without any network call.

        Audio tokens: seconds sent × the price table's ``audio_tokens_per_s`` (or
        ``AUDIO_TOKENS_PER_S``); text tokens: :func:`text_tokens_estimate`; output: each request's
        output cap (``max_new_tokens``), an upper bound. Requests refused as over the audio limit
        are counted in ``over_limit`` and cost nothing.
        """
        price = self.prices.lookup(self.model)
        per_s = price.audio_tokens_per_s if price else self.AUDIO_TOKENS_PER_S
        audio_s = 0.0
        audio_tokens = text_tokens = max_out = over = unbounded = 0
        for r in requests:
            params = self.map_gen_kwargs(r.gen_kwargs or {})
            try:
                _, meta = fit_request(r, self.AUDIO_LIMIT_S, self.AUDIO_LIMIT_SCOPE, self.long_audio)
            except LongAudioError:
                over += 1
                continue
            audio_s += meta["seen_s"]
            audio_tokens += math.ceil(meta["seen_s"] * per_s)
            text_tokens += text_tokens_estimate(r.messages)
            cap = self.max_output_tokens(params)
            if cap is None:
                unbounded += 1
            else:
                max_out += cap
        out = {
            "requests": len(requests),
            "over_limit": over,
            "audio_s": round(audio_s, 3),
            "est_audio_tokens": audio_tokens,
            "est_text_tokens": text_tokens,
            "max_completion_tokens": None if unbounded else max_out,
            "audio_tokens_per_s": per_s,
            "est_cost_usd": None,
        }
        if price is None:
            out["cost_missing_reason"] = f"no price for model {self.model!r} in {self.prices.source}"
        elif unbounded:
            out["cost_missing_reason"] = f"{unbounded} requests have no output cap (max_new_tokens): cost unbounded"
        else:
            out["est_cost_usd"] = round(
                (text_tokens * price.input_text + audio_tokens * price.input_audio + max_out * price.output) / 1e6, 6
            )
            out["price"] = {"model": price.pattern, "estimated": list(price.estimated)}
        return out
