"""``openai_audio``: audio-LMs behind the OpenAI chat-completions protocol — GPT-4o-Audio and any
``vllm serve`` of an audio model (Qwen2-Audio, Qwen2.5-Omni, Kimi-Audio, MiDashengLM…).

Each request becomes one ``POST {base_url}/chat/completions``: the task's messages in order, each
``{"type": "audio"}`` part replaced by ``{"type": "input_audio", "input_audio": {"data": <base64
16 kHz PCM16 WAV>, "format": "wav"}}`` (the request's audios in order), text parts kept where the
task put them, a system message's text parts joined into one string. ``modalities: ["text"]`` is
sent to OpenAI (``modalities=auto``, the default, sends it only when the host is api.openai.com;
``text`` always, ``none`` never).

Client: the ``openai`` package (extra ``lalm-eval[openai]``) with ``max_retries=0``, so that
:class:`~.api_base.APIAdapter`'s retries are the only ones and honour ``Retry-After``. We use it
rather than raw HTTP because it is what OpenAI-protocol users already run (the same client speaks to
OpenAI, Azure-style gateways and vLLM), it parses replies into typed objects (``message.refusal``,
``usage.prompt_tokens_details.audio_tokens``) and keeps the key out of its logs; its status
exceptions carry the HTTP response, hence the headers our retry logic reads.

Model args (besides :class:`~.api_base.APIAdapter`'s ``model``, ``base_url`` (default OpenAI's;
several servers of the model: ``URL1|URL2|...``), ``endpoints`` (a file of URLs, one a line, ``#``
comments; instead of ``base_url``), ``concurrency`` (per endpoint), ``eject_after`` and
``cooldown_s`` (when a failing endpoint is taken out, and for how long: "Several endpoints" in
:mod:`.api_base`), ``timeout``, ``max_retries``, ``retry_delay``, ``max_retry_delay``, ``long_audio``,
``max_request_mb`` (default 20), ``api_key_env`` (default ``OPENAI_API_KEY``), ``prices``,
``cache_dir``):

``server``
    ``auto`` (default: ``openai`` for api.openai.com, else ``compatible``), ``openai``,
    ``compatible``, or ``vllm``, which also accepts the gen kwargs ``top_k``, ``min_p`` and
    ``repetition_penalty`` (vLLM's extra sampling fields, sent in the request body).
``max_tokens_field``
    the body field of the output cap: ``max_completion_tokens`` (default; OpenAI's current name,
    accepted by vLLM) or ``max_tokens`` (older servers).
``modalities``
    see above.

Gen kwargs → body: ``max_new_tokens`` → ``max_tokens_field``, ``temperature``, ``top_p``, ``seed``,
``presence_penalty``, ``frequency_penalty``; the rest as :mod:`.api_base` says. A reply with
``message.refusal`` is a ``refusal`` failure, ``finish_reason: content_filter`` a
``content_filter`` failure; a reply without text content an ``error``, and so is a reply that is
not a chat completion (HTML, an empty body, invalid JSON, no ``choices``: the message quotes its
first bytes, see :mod:`.api_base`).
"""

from __future__ import annotations

import base64

from lalm_eval.api import Request
from lalm_eval.errors import ConfigError
from lalm_eval.models.api_base import (
    RETRY_STATUS,
    APIAdapter,
    BadRequest,
    GenParams,
    Reply,
    Retryable,
    message_parts,
    parse_retry_after,
    transport_failure,
)

SERVERS = ("openai", "compatible", "vllm")
MAX_TOKENS_FIELDS = ("max_completion_tokens", "max_tokens")
_VLLM_EXTRA = ("top_k", "min_p", "repetition_penalty")


class OpenAIAudioAdapter(APIAdapter):
    name = "openai_audio"
    DEFAULT_BASE_URL = "https://api.openai.com/v1"
    KEY_ENVS = ("OPENAI_API_KEY",)
    DEFAULT_MAX_REQUEST_MB = 20.0
    AUDIO_TOKENS_PER_S = 10.0

    def __init__(
        self,
        model: str | None = None,
        server: str = "auto",
        max_tokens_field: str = "max_completion_tokens",
        modalities: str = "auto",
        cache_dir: str | None = None,
        **kwargs,
    ):
        super().__init__(model=model, cache_dir=cache_dir, **kwargs)
        server = str(server or "auto").strip().lower()
        if server == "auto":
            server = "openai" if self.host == "api.openai.com" else "compatible"
        if server not in SERVERS:
            raise ConfigError(f"{self.name}: model arg server={server!r}; choose auto or one of {', '.join(SERVERS)}")
        if max_tokens_field not in MAX_TOKENS_FIELDS:
            raise ConfigError(
                f"{self.name}: model arg max_tokens_field={max_tokens_field!r}; choose one of "
                f"{', '.join(MAX_TOKENS_FIELDS)}"
            )
        modalities = str(modalities or "auto").strip().lower()
        if modalities not in ("auto", "text", "none"):
            raise ConfigError(f"{self.name}: model arg modalities={modalities!r}; choose auto, text or none")
        self.server, self.max_tokens_field = server, max_tokens_field
        self.modalities = ["text"] if modalities == "text" or (modalities == "auto" and server == "openai") else None
        try:
            import openai
        except ImportError:
            raise ConfigError(f"{self.name} needs the 'openai' package: pip install 'lalm-eval[openai]'") from None
        self._openai = openai
        self._clients = {url: self._new_client(url) for url in self.base_urls}  # one per endpoint
        self._client = self._clients[self.base_url]

    def _new_client(self, url: str):
        http_client = self._openai.DefaultHttpx2Client(  # no proxy for 127.0.0.1; every reply seen by the recorder
            **({"trust_env": False} if self.loopback else {}), event_hooks={"response": [self.recorder.hook]}
        )
        return self._openai.OpenAI(
            api_key=self._key or "EMPTY", base_url=url, max_retries=0, timeout=self.timeout, http_client=http_client
        )

    def settings(self) -> dict:
        return {"server": self.server, "max_tokens_field": self.max_tokens_field, "modalities": self.modalities}

    def gen_fields(self) -> dict[str, str]:
        table = {
            "max_new_tokens": self.max_tokens_field,
            "temperature": "temperature",
            "top_p": "top_p",
            "seed": "seed",
            "presence_penalty": "presence_penalty",
            "frequency_penalty": "frequency_penalty",
        }
        if self.server == "vllm":
            table.update({k: k for k in _VLLM_EXTRA})
        return table

    def messages(self, request: Request) -> list[dict]:
        """The request's messages in the protocol's form (audio parts → ``input_audio``, in order;
        a system message's text as one string)."""
        out = []
        for role, parts in message_parts(request, self.name):
            if role == "system":
                out.append({"role": role, "content": "\n".join(text for kind, text in parts if kind == "text")})
                continue
            out.append(
                {
                    "role": role,
                    "content": [
                        {"type": "text", "text": value}
                        if kind == "text"
                        else {
                            "type": "input_audio",
                            "input_audio": {"data": base64.b64encode(value).decode("ascii"), "format": "wav"},
                        }
                        for kind, value in parts
                    ],
                }
            )
        return out

    def call(self, request: Request, params: GenParams) -> Reply:
        openai = self._openai
        body = {k: v for k, v in params.fields.items() if k not in _VLLM_EXTRA}
        extra = {k: v for k, v in params.fields.items() if k in _VLLM_EXTRA}
        if self.modalities:
            body["modalities"] = self.modalities
        messages = self.messages(request)
        try:
            completion = self._clients[self.endpoint_url].chat.completions.create(
                model=self.model, messages=messages, extra_body=extra or None, **body
            )
        except openai.APITimeoutError:
            raise Retryable(f"timed out after {self.timeout:g} s") from None
        except openai.APIConnectionError as exc:
            failed = transport_failure(exc, self.recorder)
            if failed is not None:
                return failed
            cause = exc.__cause__ or exc.__context__
            raise Retryable(
                f"connection error: {exc}" + (f" ({type(cause).__name__}: {cause})" if cause else "")
            ) from None
        except openai.APIStatusError as exc:
            message = self.recorder.describe("error") or _provider_message(exc)
            if exc.status_code in RETRY_STATUS:
                raise Retryable(f"HTTP {exc.status_code}: {message}", parse_retry_after(exc.response.headers)) from None
            raise BadRequest(exc.status_code, message) from None
        except ValueError:  # the SDK could not decode the body
            return Reply(None, {}, None, None, "error", self.recorder.describe("choices") or "reply is not JSON")
        if isinstance(completion, (str, bytes, list, dict)) or not hasattr(completion, "choices"):
            what = self.recorder.describe("choices") or f"reply is not a chat completion ({type(completion).__name__})"
            return Reply(None, {}, None, None, "error", what)
        reply = self.parse(completion)
        if reply.failure == "error" and not completion.choices:
            reply.detail = self.recorder.describe("choices") or reply.detail
        return reply

    @staticmethod
    def parse(completion) -> Reply:
        """A chat completion → :class:`Reply` (usage only as reported; refusals and filters as failures)."""
        usage = _usage(getattr(completion, "usage", None))
        model = getattr(completion, "model", None)
        if not completion.choices:
            return Reply(None, usage, model, None, "error", "the server's reply has an empty 'choices' list")
        choice = completion.choices[0]
        message, finish = choice.message, choice.finish_reason
        if getattr(message, "refusal", None):
            return Reply(None, usage, model, finish, "refusal", message.refusal)
        if finish == "content_filter":
            return Reply(None, usage, model, finish, "content_filter", message.content or "")
        if not isinstance(message.content, str):
            got = "null" if message.content is None else type(message.content).__name__
            return Reply(None, usage, model, finish, "error", f"the reply's choices[0].message.content is {got}")
        return Reply(message.content, usage, model, finish)


def _provider_message(exc) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    return str(getattr(exc, "message", exc))


def _usage(usage) -> dict:
    """The provider's token counts, only those it reported (see :mod:`lalm_eval.api`)."""
    if usage is None:
        return {}
    out = {
        k: getattr(usage, k)
        for k in ("prompt_tokens", "completion_tokens", "total_tokens")
        if getattr(usage, k, None) is not None
    }
    prompt = getattr(usage, "prompt_tokens_details", None)
    completion = getattr(usage, "completion_tokens_details", None)
    for details, field, key in (
        (prompt, "audio_tokens", "audio_tokens"),
        (prompt, "cached_tokens", "cached_tokens"),
        (completion, "reasoning_tokens", "reasoning_tokens"),
    ):
        if details is not None and getattr(details, field, None) is not None:
            out[key] = getattr(details, field)
    return out
