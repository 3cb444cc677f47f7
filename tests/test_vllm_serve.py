"""``vllm serve`` + ``openai_audio`` against the offline ``vllm`` adapter, on the same docs.

Marked ``vllm``: runs in ``.venv-vllm`` (``bash scripts/test_vllm.sh``) on the tiny head-dim-64
Qwen2-Audio; the server is started and stopped by :class:`tests.vllm_serve.VLLMServer` (a module
fixture: stopped on teardown, also when a test fails). One ``lalm-eval`` command per path, each on
``palm_recognition`` and one MSU task, greedy; the answers are compared doc by doc.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.vllm_serve import ServerError, VLLMServer

ROOT = Path(__file__).resolve().parents[1]
TASKS = "palm_recognition,msu_t1_sr_speaker_counting"
LIMIT = "16"
# fewer new tokens than the tasks' own (128, 512) keep the stage short; both paths get the same
GEN = "max_new_tokens=48"
FFFD = "\ufffd"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    pytest.importorskip("vllm")
    from lalm_eval.models.tiny import make_tiny_model

    root = tmp_path_factory.mktemp("serve")
    model = make_tiny_model("qwen2_audio", root / "t64", head_dim=64)
    with VLLMServer(model, name="t64", log_path=root / "server.log") as server:
        yield {"server": server, "model": str(model), "root": root}


def _cli(root: Path, folder: str, model: str, model_args: str) -> dict[str, list]:
    from lalm_eval.flags import DEFAULT_CACHE

    cmd = [sys.executable, "-m", "lalm_eval.cli", "--model", model, "--model_args", model_args]
    cmd += ["--tasks", TASKS, "--limit", LIMIT, "--gen_kwargs", GEN, "--no_cache", "--log_samples"]
    cmd += ["--cache_dir", os.environ.get("LALM_VLLM_TEST_CACHE", str(DEFAULT_CACHE))]
    cmd += ["--output_path", str(root / folder)]
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
    }
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=root, timeout=900)
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        errors = [ln for ln in text.splitlines() if "Error" in ln or "error:" in ln][:30]
        pytest.fail(f"exit {proc.returncode}: {model}\n" + "\n".join(errors) + "\n...\n" + text[-2000:])
    out = {}
    for task in TASKS.split(","):
        (path,) = (root / folder).glob(f"samples_{task}_*.jsonl")
        out[task] = [json.loads(line) for line in path.read_text().splitlines()]
    return out


# -- the start/stop helper, on a stand-in server (no vLLM needed; main suite) ---------------------

FAKE = """#!/bin/sh
# stands in for `python -m vllm.entrypoints.openai.api_server ... --port P ...`: /health on P
port=$(echo "$@" | sed 's/.*--port \\([0-9]*\\).*/\\1/')
echo "fake server on $port"
[ -n "$FAKE_FAIL" ] && { echo "ValueError: $FAKE_FAIL"; exit 3; }
exec %s -c "
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == '/health' else 404); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', $port), H).serve_forever()"
"""


def _fake(tmp_path: Path) -> str:
    path = tmp_path / "fake_python"
    path.write_text(FAKE % sys.executable)
    path.chmod(0o755)
    return str(path)


def test_server_helper_waits_for_health_and_stops_the_process_group(tmp_path):
    import urllib.request

    server = VLLMServer(tmp_path / "m", name="m", log_path=tmp_path / "s.log", python=_fake(tmp_path))
    with server:
        proc = server.proc
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        assert opener.open(f"http://127.0.0.1:{server.port}/health", timeout=5).status == 200
    assert server.proc is None and proc.poll() is not None
    assert "--chat-template-content-format string" in " ".join(server.command())


def test_server_helper_quotes_the_log_when_the_server_exits(tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_FAIL", "no such model")
    server = VLLMServer(tmp_path / "m", log_path=tmp_path / "s.log", python=_fake(tmp_path), start_timeout=60)
    with pytest.raises(ServerError, match="exited with 3 before /health(.|\\n)*ValueError: no such model"):
        server.start()
    assert server.proc is None


# -- the real server (vllm-cpu in .venv-vllm) -----------------------------------------------------


@pytest.mark.vllm
def test_openai_audio_on_vllm_serve_equals_offline_vllm(served):
    server, root = served["server"], served["root"]
    api = _cli(root, "api", "openai_audio", f"base_url={server.base_url},model=t64,server=vllm")
    server.stop()  # two engines on 2 cores slow both; the offline one runs alone
    offline = _cli(root, "offline", "vllm", f"pretrained={served['model']}")
    for task in TASKS.split(","):
        a, b = api[task], offline[task]
        assert len(a) == len(b) >= 6, task
        assert all(r["response"] is not None for r in a), [r.get("error") for r in a]
        assert [r["doc_id"] for r in a] == [r["doc_id"] for r in b]
        # the same prompt (token counts as each engine reported them) and the same greedy answer
        assert [r["usage"]["prompt_tokens"] for r in a] == [r["usage"]["prompt_tokens"] for r in b], task
        assert [r["usage"]["completion_tokens"] for r in a] == [r["usage"]["completion_tokens"] for r in b], task
        for x, y in zip(a, b):
            if x["response"] != y["response"]:
                # the one difference left: when max_tokens cuts a character's UTF-8 bytes, the offline
                # engine's text ends with U+FFFD for them and the server's reply leaves them out
                assert x["response"] == y["response"].rstrip(FFFD) and x["finish_reason"] == "length", (task, x)
