"""An OpenAI-compatible chat-completions backend over plain HTTP (stdlib ``urllib``).

Works with any server that speaks ``POST {base_url}/chat/completions`` (vLLM, llama.cpp,
Ollama, DashScope's compatible mode for Qwen-Plus, OpenAI). Requests of a batch run on a thread
pool of at most ``concurrency`` workers; each request is retried ``max_retries`` times with
exponential backoff on 5xx/429 statuses, timeouts and connection errors. Errors name the URL
and status; the API key (``api_key``, else the variable named by ``api_key_env``, default
``OPENAI_API_KEY``) is sent only in the ``Authorization`` header and redacted
(:func:`lalm_eval.redaction.redact`) from every reply, message and log line.

A 401 or 403 raises :class:`KeyRefused` (a :class:`~lalm_eval.errors.ConfigError` naming where
the key came from): no chat can succeed, so the command stops at once instead of counting every
item as failed. A reply that is not a chat completion (an HTML page, an empty body, invalid JSON,
no ``choices``) is an :class:`~lalm_eval.llm.base.LLMError` saying what the server sent
(:func:`lalm_eval.http_reply.describe_reply`), its first bytes quoted.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lalm_eval import redaction
from lalm_eval.errors import ConfigError
from lalm_eval.http_reply import HTTPReply, describe_reply
from lalm_eval.llm.base import LLMError, Messages, TextLLM, check_batch

log = logging.getLogger(__name__)

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
#: decoding options sent (and recorded in :attr:`OpenAIChatLLM.settings`) only when set; ``top_k``,
#: ``min_p`` and ``repetition_penalty`` are vLLM / SGLang extensions of the protocol
DECODING_OPTIONS = ("top_p", "top_k", "min_p", "presence_penalty", "frequency_penalty", "repetition_penalty", "seed")
_RETRY_STATUS = {429, 500, 502, 503, 504}


_AUTH_STATUS = {401, 403}
DEFAULT_KEY_ENV = "OPENAI_API_KEY"


class _Retryable(Exception):
    """A failure worth another try (status 5xx/429, timeout, connection error)."""


class KeyRefused(ConfigError):
    """The server refused the API key (401 / 403): no chat can succeed."""


class OpenAIChatLLM(TextLLM):
    def __init__(
        self,
        model: str,
        base_url: str = "http://127.0.0.1:8000/v1",
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 1024,
        timeout: float = 60,
        max_retries: int = 3,
        concurrency: int = 4,
        retry_delay: float = 1.0,
        top_p: float | None = None,
        top_k: int | None = None,
        min_p: float | None = None,
        presence_penalty: float | None = None,
        frequency_penalty: float | None = None,
        repetition_penalty: float | None = None,
        seed: int | None = None,
        preset: str | None = None,
        api_key_env: str | None = None,
    ):
        if not model:
            raise ConfigError("OpenAIChatLLM: model must be given")
        if concurrency < 1 or max_retries < 0 or timeout <= 0:
            raise ConfigError(
                f"OpenAIChatLLM: need concurrency >= 1, max_retries >= 0, timeout > 0; got "
                f"{concurrency}, {max_retries}, {timeout}"
            )
        self.model, self.base_url = model, base_url.rstrip("/")
        self.url = f"{self.base_url}/chat/completions"
        self.key_env = str(api_key_env) if api_key_env else DEFAULT_KEY_ENV
        self._key_source = "the judge spec's api_key" if api_key is not None else self.key_env
        self._api_key = api_key if api_key is not None else os.environ.get(self.key_env)
        redaction.register(self._api_key)
        self._refused: KeyRefused | None = None
        self.temperature, self.max_tokens = float(temperature), int(max_tokens)
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.concurrency, self.retry_delay = int(concurrency), float(retry_delay)
        given = {
            "top_p": top_p,
            "top_k": top_k,
            "min_p": min_p,
            "presence_penalty": presence_penalty,
            "frequency_penalty": frequency_penalty,
            "repetition_penalty": repetition_penalty,
            "seed": seed,
        }
        self.decoding = {k: v for k, v in given.items() if v is not None}
        #: the named judge preset this client was made from (a task folder's ``judge_presets.yaml``), if any
        self.preset = preset
        host = urllib.parse.urlsplit(self.url).hostname or ""
        # a loopback server is never reached through a proxy from the environment
        handlers = [urllib.request.ProxyHandler({})] if host in _LOOPBACK else []
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return f"OpenAIChatLLM(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def settings(self) -> dict:
        out = {
            "backend": "openai",
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **self.decoding,
        }
        if self.preset:
            out["preset"] = self.preset
        return out

    def complete(self, batch: list[Messages], **settings: Any) -> list[str]:
        check_batch(batch)
        body = {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens, **self.decoding}
        body.update(settings)
        if not batch:
            return []
        workers = min(self.concurrency, len(batch))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="openai-http") as pool:
            return list(pool.map(lambda chat: self._complete_one({**body, "messages": chat}), batch))

    def complete_each(self, batch: list[Messages], **settings: Any) -> list[str | LLMError]:
        """:meth:`complete`, with a chat that still fails after its retries giving its
        :class:`LLMError` in place of a reply (the other chats of the batch are kept)."""
        check_batch(batch)
        body = {"model": self.model, "temperature": self.temperature, "max_tokens": self.max_tokens, **self.decoding}
        body.update(settings)
        if not batch:
            return []

        def one(chat: Messages) -> str | LLMError:
            try:
                return self._complete_one({**body, "messages": chat})
            except LLMError as exc:
                return exc

        with ThreadPoolExecutor(
            max_workers=min(self.concurrency, len(batch)), thread_name_prefix="openai-http"
        ) as pool:
            return list(pool.map(one, batch))

    # -----------------------------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        return redaction.redact(text)

    def _key_refused(self, status: int, detail: str) -> KeyRefused:
        where = self._key_source if self._api_key else self.key_env
        said = " ".join(detail.replace(";", ",").split())[:200]
        what = (
            f"the text-LLM server {self.url} refused the API key (HTTP {status}: {said})"
            if self._api_key
            else f"the text-LLM server {self.url} asks for an API key (HTTP {status}: {said}) and {self.key_env} is unset"
        )
        return KeyRefused(
            f"{where}: {what}, so no chat can succeed; set {self.key_env} to a valid key (or name another variable "
            "with api_key_env=VAR in the --judge / --llm-option spec) and rerun: what was already answered is cached"
        )

    def _complete_one(self, body: dict) -> str:
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._post(body)
            except _Retryable as exc:
                reason = self._redact(str(exc))
                if attempt + 1 == attempts:
                    raise LLMError(f"POST {self.url} failed after {attempts} attempts: {reason}") from None
                delay = self.retry_delay * 2**attempt
                log.warning("POST %s: %s; retry %d/%d in %.2fs", self.url, reason, attempt + 1, self.max_retries, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _post(self, body: dict) -> str:
        if self._refused is not None:
            raise self._refused
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            try:
                body = exc.read(4000)
            except OSError:
                body = b""
            reply = HTTPReply(exc.code, exc.headers.get("Content-Type", "") if exc.headers else "", body)
            detail = describe_reply(reply, "error") or self._redact(body[:300].decode("utf-8", "replace").strip())
            if exc.code in _AUTH_STATUS:
                self._refused = self._key_refused(exc.code, detail)  # the chats still queued are not sent
                raise self._refused from None
            if exc.code in _RETRY_STATUS:
                raise _Retryable(f"HTTP status {exc.code}: {detail}") from None
            raise LLMError(f"POST {self.url} returned HTTP status {exc.code}: {detail}") from None
        except TimeoutError as exc:
            raise _Retryable(f"timed out after {self.timeout:g}s ({exc})") from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise _Retryable(f"timed out after {self.timeout:g}s") from None
            raise _Retryable(f"connection error: {exc.reason}") from None
        except (ConnectionError, http.client.HTTPException) as exc:
            raise _Retryable(f"connection error: {type(exc).__name__}: {exc}") from None
        return self._content(raw, response.headers.get("Content-Type", ""), response.status)

    def _content(self, raw: bytes, content_type: str = "", status: int = 200) -> str:
        try:
            reply = json.loads(raw)
            content = reply["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            what = describe_reply(HTTPReply(status, content_type, raw), "choices")
            if what is None:
                what = repr(self._redact(raw[:200].decode("utf-8", "replace")))
            raise LLMError(f"POST {self.url}: reply is not a chat completion: {what}") from None
        if not isinstance(content, str):
            message = reply["choices"][0]["message"]
            if message.get("reasoning_content") or message.get("reasoning"):  # a server-side reasoning parser
                raise LLMError(
                    f"POST {self.url}: reply has a thinking trace but no answer after it "
                    f"(finish_reason {reply['choices'][0].get('finish_reason')!r}; was max_tokens "
                    f"{self.max_tokens} too small?)"
                )
            raise LLMError(f"POST {self.url}: reply has no text content (got {type(content).__name__})")
        return self._redact(content)
