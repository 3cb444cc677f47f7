"""``gemini``: Google's Gemini models through the ``google-genai`` SDK (extra ``lalm-eval[gemini]``).

Each request becomes one ``models.generate_content`` call: the task's user/assistant turns as
``contents`` (roles ``user`` / ``model``), each ``{"type": "audio"}`` part an inline
``types.Part.from_bytes(data=<16 kHz PCM16 WAV>, mime_type="audio/wav")`` (the request's audios in
order), text parts where the task put them; a system message becomes ``system_instruction``.
The SDK's own retries are off (``HttpRetryOptions(attempts=1)``) so that
:class:`~.api_base.APIAdapter`'s retries are the only ones and honour ``Retry-After``; its
``http_options.base_url`` is the model arg ``base_url`` when given (a local test server, a gateway;
several: ``base_url=URL1|URL2`` or ``endpoints=FILE``, one client each, requests spread as
"Several endpoints" in :mod:`.api_base` says), ``http_options.timeout`` is ``timeout`` in milliseconds.

Model args (besides :class:`~.api_base.APIAdapter`'s; ``api_key_env`` defaults to
``GEMINI_API_KEY`` then ``GOOGLE_API_KEY``, ``max_request_mb`` to 20, Gemini's inline-request cap):

``thinking_budget``
    tokens the model may think (0 turns thinking off where the model allows, -1 dynamic); unset:
    the model's default.
``thinking_level``
    Gemini 3's ``low`` / ``high`` instead of a budget.
``include_thoughts``
    ask for thought summaries: they are kept in the sample's meta (``thoughts``), never in the
    answer text that is scored.
``api_version``
    the API version of the URL (the SDK's default when unset).

Gen kwargs → ``GenerateContentConfig``: ``max_new_tokens`` → ``max_output_tokens``,
``temperature``, ``top_p``, ``top_k``, ``seed``, ``presence_penalty``, ``frequency_penalty``.

Failures: a prompt blocked (``prompt_feedback.block_reason``) or a candidate finished for
SAFETY, BLOCKLIST, PROHIBITED_CONTENT, SPII, RECITATION, IMAGE_SAFETY, MODEL_ARMOR… is a
``content_filter`` failure, LANGUAGE (unsupported language) a ``refusal``; no candidate, or no
text, an ``error``, and so is a reply that is not the protocol's JSON (HTML, an empty body,
invalid JSON: the message quotes its first bytes, see :mod:`.api_base`). A 400 saying the key is
not valid (:data:`KEY_INVALID_SIGNS`) stops the run as a 401 does. Usage: ``prompt_token_count`` → ``prompt_tokens``, ``candidates_token_count`` →
``completion_tokens``, ``thoughts_token_count`` → ``thoughts_tokens`` (billed as output, not part
of ``completion_tokens``), the AUDIO entry of ``prompt_tokens_details`` → ``audio_tokens``,
``total_token_count`` → ``total_tokens``; the model id is ``model_version``.
"""

from __future__ import annotations

import importlib

from lalm_eval.api import Request
from lalm_eval.errors import ConfigError
from lalm_eval.models.api_base import (
    RETRY_STATUS,
    APIAdapter,
    BadRequest,
    GenParams,
    KeyRejected,
    Reply,
    Retryable,
    message_parts,
    parse_retry_after,
    transport_failure,
)

#: finish / block reasons that are the provider's filters (anything not listed and not normal is an error)
FILTER_REASONS = frozenset(
    {
        "SAFETY",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "RECITATION",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
        "MODEL_ARMOR",
        "JAILBREAK",
    }
)
REFUSAL_REASONS = frozenset({"LANGUAGE"})
NORMAL_REASONS = frozenset({"STOP", "MAX_TOKENS", "FINISH_REASON_UNSPECIFIED"})
#: how Google says a key is not valid (HTTP 400, not 401): the run stops as for a 401
KEY_INVALID_SIGNS = ("API_KEY_INVALID", "API key not valid")


def _transport_errors() -> tuple[type, ...]:
    """httpx / httpx2 transport errors (timeouts, connection failures) and redirect loops: whichever
    the SDK uses."""
    found = []
    for module in ("httpx", "httpx2"):
        try:
            found += [importlib.import_module(module).TransportError, importlib.import_module(module).TooManyRedirects]
        except ImportError:
            continue
    return tuple(found)


def _name(value) -> str | None:
    return None if value is None else str(getattr(value, "name", value))


class GeminiAdapter(APIAdapter):
    name = "gemini"
    DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com"
    KEY_ENVS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    DEFAULT_MAX_REQUEST_MB = 20.0
    AUDIO_TOKENS_PER_S = 32.0  # documented by Google
    GEN_FIELDS = {
        "max_new_tokens": "max_output_tokens",
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
        "seed": "seed",
        "presence_penalty": "presence_penalty",
        "frequency_penalty": "frequency_penalty",
    }

    def __init__(
        self,
        model: str | None = None,
        thinking_budget: int | None = None,
        thinking_level: str | None = None,
        include_thoughts: bool | str = False,
        api_version: str | None = None,
        cache_dir: str | None = None,
        **kwargs,
    ):
        super().__init__(model=model, cache_dir=cache_dir, **kwargs)
        try:
            from google import genai
            from google.genai import errors, types
        except ImportError:
            raise ConfigError(
                f"{self.name} needs the 'google-genai' package: pip install 'lalm-eval[gemini]'"
            ) from None
        self._types, self._errors = types, errors
        self._transport = _transport_errors()
        if thinking_budget not in (None, "", "none"):
            try:
                thinking_budget = int(thinking_budget)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"{self.name}: model arg thinking_budget={thinking_budget!r} must be an integer (0 off, -1 dynamic)"
                ) from None
        else:
            thinking_budget = None
        self.thinking_budget = thinking_budget
        self.thinking_level = None if thinking_level in (None, "", "none") else str(thinking_level)
        self.include_thoughts = str(include_thoughts).strip().lower() in ("1", "true", "yes")
        self.api_version = None if api_version in (None, "") else str(api_version)
        custom = self.base_urls != [self.DEFAULT_BASE_URL]
        self._clients = {  # one per endpoint (model args base_url=URL1|URL2 or endpoints=FILE)
            url: genai.Client(
                api_key=self._key or "EMPTY",
                http_options=types.HttpOptions(
                    base_url=url + "/" if custom else None,
                    api_version=self.api_version,
                    timeout=int(self.timeout * 1000),
                    retry_options=types.HttpRetryOptions(attempts=1),
                    client_args={  # no proxy for 127.0.0.1; every reply seen by the recorder
                        **({"trust_env": False} if self.loopback else {}),
                        "event_hooks": {"response": [self.recorder.hook]},
                    },
                ),
            )
            for url in self.base_urls
        }
        self._client = self._clients[self.base_url]

    def settings(self) -> dict:
        return {
            "thinking_budget": self.thinking_budget,
            "thinking_level": self.thinking_level,
            "include_thoughts": self.include_thoughts,
            "api_version": self.api_version,
        }

    def max_output_tokens(self, params: GenParams) -> int | None:
        """The output cap plus a positive thinking budget (thinking tokens are billed as output)."""
        if params.max_tokens is None:
            return None
        return params.max_tokens + max(self.thinking_budget or 0, 0)

    def contents(self, request: Request) -> tuple[list, str | None]:
        """``(contents, system instruction)`` of a request (audio parts inline WAV, in order)."""
        types, contents, system = self._types, [], []
        for role, parts in message_parts(request, self.name):
            if role == "system":
                system += [text for kind, text in parts if kind == "text"]
                continue
            contents.append(
                types.Content(
                    role="model" if role == "assistant" else "user",
                    parts=[
                        types.Part.from_text(text=value)
                        if kind == "text"
                        else types.Part.from_bytes(data=value, mime_type="audio/wav")
                        for kind, value in parts
                    ],
                )
            )
        return contents, "\n".join(system) if system else None

    def call(self, request: Request, params: GenParams) -> Reply:
        types = self._types
        contents, system = self.contents(request)
        thinking = None
        if self.thinking_budget is not None or self.thinking_level or self.include_thoughts:
            thinking = types.ThinkingConfig(
                thinking_budget=self.thinking_budget,
                thinking_level=self.thinking_level,
                include_thoughts=self.include_thoughts or None,
            )
        config = types.GenerateContentConfig(
            system_instruction=system,
            thinking_config=thinking,
            **params.fields,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )  # no tools here
        try:
            response = self._clients[self.endpoint_url].models.generate_content(
                model=self.model, contents=contents, config=config
            )
        except self._errors.APIError as exc:
            message = self.recorder.describe("error") or exc.message or str(exc.details)
            if exc.code in RETRY_STATUS:
                headers = getattr(getattr(exc, "response", None), "headers", None)
                raise Retryable(f"HTTP {exc.code} {exc.status}: {message}", parse_retry_after(headers)) from None
            if exc.code == 400 and any(s in f"{message} {exc.details}" for s in KEY_INVALID_SIGNS):
                raise KeyRejected(exc.code, f"{exc.status}: {message}") from None
            raise BadRequest(exc.code, f"{exc.status}: {message}") from None
        except self._transport as exc:
            failed = transport_failure(exc, self.recorder)
            if failed is not None:
                return failed
            kind = "timed out" if "Timeout" in type(exc).__name__ else "connection error"
            raise Retryable(f"{kind} ({type(exc).__name__}) after at most {self.timeout:g} s") from None
        except ValueError:  # the SDK could not decode the body
            return Reply(None, {}, None, None, "error", self.recorder.describe("candidates") or "reply is not JSON")
        reply = self.parse(response)
        if reply.failure == "error" and not response.candidates:
            reply.detail = self.recorder.describe("candidates") or reply.detail
        return reply

    @staticmethod
    def parse(response) -> Reply:
        """A ``GenerateContentResponse`` → :class:`Reply` (thoughts kept apart from the answer)."""
        usage = _usage(getattr(response, "usage_metadata", None))
        model = getattr(response, "model_version", None)
        feedback = getattr(response, "prompt_feedback", None)
        blocked = _name(getattr(feedback, "block_reason", None))
        if blocked:
            detail = getattr(feedback, "block_reason_message", None) or f"prompt blocked: {blocked}"
            return Reply(
                None, usage, model, blocked, "refusal" if blocked in REFUSAL_REASONS else "content_filter", detail
            )
        if not response.candidates:
            return Reply(None, usage, model, None, "error", "the server's reply has no candidates")
        candidate = response.candidates[0]
        finish = _name(candidate.finish_reason)
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        thoughts = "".join(p.text for p in parts if p.text and p.thought)
        extra = {"thoughts": thoughts} if thoughts else {}
        if finish in FILTER_REASONS or finish in REFUSAL_REASONS:
            kind = "refusal" if finish in REFUSAL_REASONS else "content_filter"
            return Reply(None, usage, model, finish, kind, getattr(candidate, "finish_message", None) or "", extra)
        if finish is not None and finish not in NORMAL_REASONS:
            return Reply(None, usage, model, finish, "error", f"finish_reason {finish}", extra)
        if not any(p.text is not None and not p.thought for p in parts):
            return Reply(None, usage, model, finish, "error", "the reply's candidate has no text part", extra)
        return Reply(text, usage, model, finish, extra=extra)


def _usage(meta) -> dict:
    """Gemini's usage metadata in the harness's names, only the counts it reported."""
    if meta is None:
        return {}
    out = {}
    for field, key in (
        ("prompt_token_count", "prompt_tokens"),
        ("candidates_token_count", "completion_tokens"),
        ("thoughts_token_count", "thoughts_tokens"),
        ("cached_content_token_count", "cached_tokens"),
        ("total_token_count", "total_tokens"),
    ):
        if getattr(meta, field, None) is not None:
            out[key] = getattr(meta, field)
    for detail in getattr(meta, "prompt_tokens_details", None) or ():
        if _name(detail.modality) == "AUDIO" and detail.token_count is not None:
            out["audio_tokens"] = detail.token_count
    return out
