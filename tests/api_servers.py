"""Local servers that speak the OpenAI chat-completions and Gemini ``generateContent`` protocols,
for the API adapters' tests and the concurrency benchmark (helpers, not collected by pytest).

Each runs a :class:`http.server.ThreadingHTTPServer` on 127.0.0.1 (a free port) in a daemon thread,
decodes every audio part it receives (base64 WAV through soundfile) and records it, and answers
from a script:

- ``server.script(action, ..., match=None)`` queues actions for the next requests (those whose
  prompt text contains ``match``, when given); each request pops one action, or gets the default
  answer. Actions (dicts): ``{"status": 429, "retry_after": "1"}``, ``{"status": 500}``,
  ``{"status": 400, "message": "..."}``, ``{"delay": 2.0}`` (sleep, then answer),
  ``{"refusal": "..."}``, ``{"filter": True}`` (content filter / SAFETY), ``{"text": "...",
  "usage": {...}, "model": "..."}``, ``{"hold": True}`` (no answer until :meth:`release`, bounded
  by ``hold_limit_s``). Hostile answers: ``{"raw": "<html>…", "content_type": "text/html",
  "status": 200}`` (those bytes as they are: HTML, malformed or empty JSON, a huge body),
  ``{"redirect": "/other/path", "status": 307}``; ``{auth}`` in a ``text``, ``message`` or
  ``raw`` is replaced by the key the request carried (a server that echoes the key).
- ``latency`` (seconds) is added to every answer; ``answer(record) -> str`` makes the default text.

``server.records`` lists :class:`Received` (path, headers, prompt texts, audios with their
sampling rates, the content-part order, the raw JSON body); ``max_in_flight`` is the largest
number of requests handled at once; ``answered`` counts replies written in full (and marks
their records). :meth:`clear_script` drops what is still queued; :meth:`release` ends every hold.
:meth:`kill` dies mid-run: every request in flight or later is dropped unanswered.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import math
import socket
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import soundfile as sf


@dataclasses.dataclass
class Received:
    path: str
    headers: dict
    body: dict
    texts: list  # text parts, in order
    audios: list  # float32 arrays decoded from the WAV parts, in order
    rates: list  # their sampling rates
    order: list  # ("text", str) / ("audio", k) in the order the parts came
    t_start: float = 0.0
    answered: bool = False  # the reply was written in full

    @property
    def prompt(self) -> str:
        return "\n".join(self.texts)

    @property
    def audio_s(self) -> float:
        return sum(len(a) / sr for a, sr in zip(self.audios, self.rates))


def decode_wav(b64: str) -> tuple[np.ndarray, int]:
    """A base64 (standard or URL-safe, as google-genai sends it) WAV → (float32 samples, rate)."""
    raw = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)) if ("-" in b64 or "_" in b64) else base64.b64decode(b64)
    data, sr = sf.read(io.BytesIO(raw), dtype="float32")
    return data, sr


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, *args):  # keep test output clean
        pass

    def do_POST(self):  # noqa: N802 - http.server's naming
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.owner.handle(self, body)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: ScriptedServer

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return  # the client went away (it timed out, or refused a reply): nothing to report
        super().handle_error(request, client_address)


class ScriptedServer:
    """Protocol-independent part: threading, script, recording; subclasses parse and reply."""

    default_model = "served-model"

    def __init__(self, latency: float = 0.0, hold_limit_s: float = 30.0, answer=None):
        self.latency, self.hold_limit_s = latency, hold_limit_s
        self.answer = answer or (lambda rec: f"answer {len(rec.audios)} audio(s)")
        self.records: list[Received] = []
        self.errors: list[str] = []  # requests the server could not parse
        self.answered = 0
        self.killed = False  # kill(): every request from then on dropped unanswered
        self.in_flight = self.max_in_flight = 0
        self._rules: list[tuple[str | None, deque]] = []
        self._lock = threading.Lock()
        self._released = threading.Event()
        self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    # -- control ---------------------------------------------------------------------------------
    def script(self, *actions: dict, match: str | None = None) -> None:
        with self._lock:
            self._rules.append((match, deque(actions)))

    def clear_script(self) -> None:
        with self._lock:
            self._rules.clear()

    def release(self) -> None:
        self._released.set()

    def kill(self) -> None:
        """Die as a killed process would: requests in flight and all later ones (on open
        keep-alive connections too) get their connection dropped without an answer."""
        self.killed = True
        self.close()

    def close(self) -> None:
        self._released.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _next_action(self, record: Received) -> dict:
        with self._lock:
            for match, actions in self._rules:
                if actions and (match is None or match in record.prompt):
                    return actions.popleft()
        return {}

    # -- per request -----------------------------------------------------------------------------
    def handle(self, handler: _Handler, body: dict) -> None:
        try:
            record = self.parse(handler.path, dict(handler.headers), body)
        except Exception as exc:  # a malformed request: recorded, answered 400 (never retried)
            self.errors.append(repr(exc))
            self._send(handler, 400, {}, {"error": {"message": f"test server: {exc!r}", "code": 400}})
            return
        record.t_start = time.monotonic()
        with self._lock:
            self.records.append(record)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            action = _with_key(self._next_action(record), record)
            if action.get("hold"):
                self._released.wait(self.hold_limit_s)
            time.sleep(self.latency + float(action.get("delay", 0.0)))
            if self.killed:
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)
                return
            if "raw" in action or "redirect" in action:
                self._send_raw(handler, record, action)
            else:
                self._send(handler, *self.reply(record, action))
            with self._lock:
                self.answered += 1
                record.answered = True
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout, killed)
            pass
        finally:
            with self._lock:
                self.in_flight -= 1

    @staticmethod
    def _send(handler: _Handler, status: int, headers: dict, payload: dict) -> None:
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()

    @staticmethod
    def _send_raw(handler: _Handler, record: Received, action: dict) -> None:
        """A hostile answer: ``raw`` bytes (str: UTF-8; ``{auth}`` replaced by the request's key
        header) with ``content_type`` and ``status``, or a ``redirect`` (a Location, status 307)."""
        if "redirect" in action:
            status, data, ctype = action.get("status", 307), b"", "text/plain"
            headers = {"Location": action["redirect"]}
        else:
            data = action["raw"]
            if isinstance(data, str):
                data = _with_key({"text": data}, record)["text"].encode()
            status, ctype, headers = action.get("status", 200), action.get("content_type", "text/html"), {}
        handler.send_response(status)
        handler.send_header("Content-Type", ctype)
        handler.send_header("Content-Length", str(len(data)))
        for key, value in {**headers, **action.get("headers", {})}.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)
        handler.wfile.flush()

    def default_usage(self, record: Received, text: str) -> dict:
        audio = math.ceil(record.audio_s * 10)
        prompt = audio + sum(len(t) for t in record.texts) // 4 + 7
        completion = max(1, len(text.split()))
        return {"prompt": prompt, "audio": audio, "completion": completion}

    def parse(self, path: str, headers: dict, body: dict) -> Received:
        """The request as :class:`Received`, from the protocol's :meth:`parts`."""
        texts, audios, rates, order = [], [], [], []
        for kind, value in self.parts(body):
            if kind == "text":
                texts.append(value)
                order.append(("text", value))
            else:
                audio, sr = decode_wav(value)
                order.append(("audio", len(audios)))
                audios.append(audio)
                rates.append(sr)
        return Received(path, headers, body, texts, audios, rates, order)

    def parts(self, body: dict):
        """``("text", str)`` / ``("audio", base64 WAV)`` of a request body, in order."""
        raise NotImplementedError

    def reply(self, record: Received, action: dict) -> tuple[int, dict, dict]:
        raise NotImplementedError


def _with_key(action: dict, record: Received) -> dict:
    """``action`` with ``{auth}`` in its ``text`` / ``message`` replaced by the key the request
    carried (its ``Authorization`` or ``x-goog-api-key`` header): a server that echoes the key."""
    headers = {k.lower(): v for k, v in record.headers.items()}
    key = headers.get("authorization") or headers.get("x-goog-api-key") or ""
    return {
        k: v.replace("{auth}", key) if k in ("text", "message") and isinstance(v, str) else v for k, v in action.items()
    }


def _error_headers(action: dict) -> dict:
    return {"Retry-After": str(action["retry_after"])} if "retry_after" in action else {}


class OpenAIServer(ScriptedServer):
    """``POST /v1/chat/completions`` with ``input_audio`` parts."""

    default_model = "gpt-4o-audio-preview-2024-12-17"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def parts(self, body):
        for msg in body.get("messages", []):
            content = msg.get("content")
            for part in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
                if part.get("type") == "text":
                    yield "text", part["text"]
                elif part.get("type") == "input_audio":
                    assert part["input_audio"]["format"] == "wav"
                    yield "audio", part["input_audio"]["data"]

    def reply(self, record, action):
        if "status" in action:
            message = action.get("message", f"scripted status {action['status']}")
            return (
                action["status"],
                _error_headers(action),
                {"error": {"message": message, "type": "test", "code": None}},
            )
        text = action.get("text", self.answer(record))
        u = self.default_usage(record, text)
        usage = action.get(
            "usage",
            {
                "prompt_tokens": u["prompt"],
                "completion_tokens": u["completion"],
                "total_tokens": u["prompt"] + u["completion"],
                "prompt_tokens_details": {"audio_tokens": u["audio"], "cached_tokens": 0},
            },
        )
        message = {"role": "assistant", "content": text, "refusal": None}
        finish = "stop"
        if action.get("refusal"):
            message = {"role": "assistant", "content": None, "refusal": action["refusal"]}
        if action.get("filter"):
            message, finish = {"role": "assistant", "content": None, "refusal": None}, "content_filter"
        return (
            200,
            {},
            {
                "id": f"chatcmpl-{len(self.records)}",
                "object": "chat.completion",
                "created": 0,
                "model": action.get("model", self.default_model),
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
            },
        )


class GeminiServer(ScriptedServer):
    """``POST /<version>/models/<model>:generateContent`` with inline ``audio/wav`` parts."""

    default_model = "gemini-2.5-flash-001"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def parts(self, body):
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                inline = part.get("inlineData") or part.get("inline_data")
                if "text" in part:
                    yield "text", part["text"]
                elif inline:
                    assert (inline.get("mimeType") or inline.get("mime_type")) == "audio/wav"
                    yield "audio", inline["data"]

    def reply(self, record, action):
        if "status" in action:
            status_names = {400: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
            return (
                action["status"],
                _error_headers(action),
                {
                    "error": {
                        "code": action["status"],
                        "message": action.get("message", f"scripted status {action['status']}"),
                        "status": status_names.get(action["status"], "UNKNOWN"),
                    }
                },
            )
        text = action.get("text", self.answer(record))
        u = self.default_usage(record, text)
        usage = action.get(
            "usage",
            {
                "promptTokenCount": u["prompt"],
                "candidatesTokenCount": u["completion"],
                "totalTokenCount": u["prompt"] + u["completion"],
                "promptTokensDetails": [
                    {"modality": "AUDIO", "tokenCount": u["audio"]},
                    {"modality": "TEXT", "tokenCount": u["prompt"] - u["audio"]},
                ],
            },
        )
        parts = [{"text": text}]
        if action.get("thought"):
            parts.insert(0, {"text": action["thought"], "thought": True})
        payload = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": usage,
            "modelVersion": action.get("model", self.default_model),
            "responseId": f"r{len(self.records)}",
        }
        if action.get("filter"):
            payload["candidates"] = [{"content": {"role": "model", "parts": []}, "finishReason": "SAFETY", "index": 0}]
        if action.get("block"):
            payload = {
                "promptFeedback": {"blockReason": action["block"]},
                "usageMetadata": usage,
                "modelVersion": payload["modelVersion"],
            }
        if action.get("refusal"):
            payload["candidates"] = [
                {"content": {"role": "model", "parts": []}, "finishReason": "LANGUAGE", "index": 0}
            ]
        return 200, {}, payload
