"""Response cache: keys include the audio, errors are retried, and a killed run resumes for real."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from lalm_eval.api import Adapter, Request, Response
from lalm_eval.cache import CachedAdapter, ResponseCache, key_of, request_key

ROOT = Path(__file__).resolve().parents[1]
MESSAGES = ({"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": "Who speaks?"}]},)
IDENTITY = {"name": "counting", "weights": "none", "dtype": "float32"}

# A child process: 40 requests with identical text and different audio, through a counting
# adapter (sleeps per request, logs each computed key) behind the cache, chunk size 4.
SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    from lalm_eval.api import Adapter, Request, Response
    from lalm_eval.cache import CachedAdapter, ResponseCache

    db, log, out, delay, n = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
    MESSAGES = ({"role": "user", "content": [{"type": "audio"}, {"type": "text", "text": "Who speaks?"}]},)

    def tone(i):
        t = np.arange(1600) / 16000
        return (0.3 * np.sin(2 * np.pi * (200 + 10 * i) * t)).astype(np.float32)

    class Counting(Adapter):
        name = "counting"
        def identity(self):
            return {"name": "counting", "weights": "none", "dtype": "float32"}
        def generate(self, requests, batch_size=1):
            out = []
            for r in requests:
                time.sleep(delay)
                with open(log, "a") as f:
                    f.write(r.key + "\\n")
                    f.flush()
                    os.fsync(f.fileno())
                out.append(Response(text=f"answer {r.doc_id}"))
            return out

    requests = [Request(task="who", doc_id=i, audios=(tone(i),), messages=MESSAGES,
                        gen_kwargs={"max_new_tokens": 8}) for i in range(n)]
    adapter = CachedAdapter(Counting(), ResponseCache(db), chunk_size=4, task_hashes={"who": "h1"})
    responses = adapter.generate(requests)
    with open(out, "w") as f:
        json.dump({"hits": adapter.hits, "misses": adapter.misses, "generated": adapter.n_generated,
                   "texts": [r.text for r in responses], "cached": [r.cached for r in responses],
                   "keys": [adapter.keyed(r).key for r in requests]}, f)
""")


def tone(i):
    t = np.arange(1600) / 16000
    return (0.3 * np.sin(2 * np.pi * (200 + 10 * i) * t)).astype(np.float32)


def run_child(tmp_path, tag, n=40, delay=0.05, wait=True):
    script = tmp_path / "child.py"
    script.write_text(SCRIPT)
    log, out = tmp_path / f"log_{tag}.txt", tmp_path / f"out_{tag}.json"
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "PYTHONHASHSEED": str(hash(tag) % 1000),
    }
    proc = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "cache.sqlite"), str(log), str(out), str(delay), str(n)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if wait:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    return proc, log, out


def logged(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_kill_and_resume_computes_each_request_once(tmp_path):
    requests = [Request("who", i, (tone(i),), MESSAGES, {"max_new_tokens": 8}) for i in range(40)]
    all_keys = [key_of(r, IDENTITY, "h1") for r in requests]
    assert len(set(all_keys)) == 40

    # Run 1: SIGKILL once about half of the requests have been computed (22: mid-chunk).
    proc, log1, out1 = run_child(tmp_path, "1", delay=0.1, wait=False)  # 4 s in all
    deadline = time.monotonic() + 90
    while len(logged(log1)) < 22:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "child made no progress"
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stderr.close()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL and not out1.exists()
    computed1 = logged(log1)
    with ResponseCache(tmp_path / "cache.sqlite") as cache:
        persisted1 = set(cache.get_many(all_keys))
    assert len(computed1) == len(set(computed1)) and set(computed1) <= set(all_keys)
    assert persisted1 <= set(computed1)
    in_flight = set(computed1) - persisted1
    assert len(in_flight) <= 4  # only the chunk in flight is lost
    assert len(persisted1) % 4 == 0 and 20 <= len(persisted1) < 40

    # Run 2: computes exactly what run 1 did not persist.
    _, log2, out2 = run_child(tmp_path, "2", delay=0.02)
    computed2 = logged(log2)
    assert len(computed2) == len(set(computed2))
    assert set(computed2) == set(all_keys) - persisted1
    assert set(computed1) & set(computed2) == in_flight
    res2 = json.loads(out2.read_text())
    assert res2["keys"] == all_keys  # same key in another process
    assert res2["hits"] == len(persisted1) and res2["misses"] == 40 - len(persisted1)
    assert res2["generated"] == len(computed2)
    assert res2["texts"] == [f"answer {i}" for i in range(40)]
    assert res2["cached"] == [k in persisted1 for k in all_keys]

    # Run 3: everything is cached.
    _, log3, out3 = run_child(tmp_path, "3", delay=0.02)
    res3 = json.loads(out3.read_text())
    assert logged(log3) == [] and res3["hits"] == 40 and res3["misses"] == 0 and all(res3["cached"])
    assert res3["texts"] == res2["texts"]
    print(
        f"\nkill/resume: run1 computed {len(computed1)}, persisted {len(persisted1)}, "
        f"in flight {len(in_flight)}; run2 computed {len(computed2)}; run3 computed 0"
    )


def test_audio_is_part_of_the_key():
    a, b = tone(1), tone(2)

    def k(audio, **kw):
        return request_key(IDENTITY, "h", 0, [audio], MESSAGES, {"max_new_tokens": 8, **kw})

    assert k(a) != k(b)  # identical text, different audio
    assert k(a) == k(a.copy())
    assert k(a) != k(a, do_sample=True)
    assert request_key(IDENTITY, "h", 0, [a, b], MESSAGES, {}) != request_key(IDENTITY, "h", 0, [b, a], MESSAGES, {})
    assert request_key(IDENTITY, "h", 0, [a], MESSAGES, {}) != request_key(IDENTITY, "h", "0", [a], MESSAGES, {})
    assert request_key(IDENTITY, "h", 0, [a], MESSAGES, {}) != request_key(IDENTITY, "h2", 0, [a], MESSAGES, {})
    assert request_key(IDENTITY, "h", 0, [a], MESSAGES, {}) != request_key(
        {**IDENTITY, "dtype": "bf16"}, "h", 0, [a], MESSAGES, {}
    )
    # key order of dicts does not matter
    assert request_key({"b": 1, "a": 2}, "h", 0, [a], MESSAGES, {"x": 1, "y": 2}) == request_key(
        {"a": 2, "b": 1}, "h", 0, [a], MESSAGES, {"y": 2, "x": 1}
    )


def test_same_inputs_same_key_across_processes():
    code = (
        "import numpy as np, json\nfrom lalm_eval.cache import request_key\n"
        "t = np.arange(1600) / 16000\n"
        "a = (0.3 * np.sin(2 * np.pi * 210 * t)).astype(np.float32)\n"
        f"print(request_key({IDENTITY!r}, 'h', 7, [a], json.loads({json.dumps(json.dumps(MESSAGES))}), "
        "{'max_new_tokens': 8, 'until': ['\\n']}))"
    )
    keys = set()
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
            check=True,
        )
        keys.add(out.stdout.strip())
    mine = request_key(
        IDENTITY,
        "h",
        7,
        [tone(1)],
        [json.loads(json.dumps(m)) for m in MESSAGES],
        {"max_new_tokens": 8, "until": ["\n"]},
    )
    assert keys == {mine}


class Flaky(Adapter):
    name = "flaky"

    def __init__(self, fail=()):
        super().__init__()
        self.fail, self.seen = set(fail), []

    def identity(self):
        return {"name": "flaky"}

    def generate(self, requests, batch_size=1):
        self.seen += [r.doc_id for r in requests]
        return [Response(None, "boom") if r.doc_id in self.fail else Response(f"a{r.doc_id}") for r in requests]


def test_errors_are_not_cached_and_are_retried(tmp_path):
    reqs = [Request("t", i, (tone(i),), MESSAGES, {}) for i in range(6)]
    cache = ResponseCache(tmp_path / "c.sqlite")
    first = CachedAdapter(Flaky(fail={2, 4}), cache, chunk_size=4)
    out = first.generate(reqs)
    assert [r.error for r in out] == [None, None, "boom", None, "boom", None]
    assert len(cache) == 4 and first.misses == 6 and first.hits == 0
    inner = Flaky()
    second = CachedAdapter(inner, cache)
    out = second.generate(reqs)
    assert inner.seen == [2, 4] and second.hits == 4 and second.misses == 2
    assert [r.text for r in out] == [f"a{i}" for i in range(6)]
    assert [r.cached for r in out] == [True, True, False, True, False, True]


def test_duplicates_generated_once_and_length_mismatch_raises(tmp_path):
    inner = Flaky()
    adapter = CachedAdapter(inner, ResponseCache(tmp_path / "c.sqlite"))
    r = Request("t", 0, (tone(0),), MESSAGES, {})
    assert [x.text for x in adapter.generate([r, r])] == ["a0", "a0"] and inner.seen == [0]

    class Short(Flaky):
        def generate(self, requests, batch_size=1):
            return []

    with pytest.raises(Exception, match="returned 0 responses"):
        CachedAdapter(Short(), ResponseCache(tmp_path / "d.sqlite")).generate([r])


def test_concurrent_writers_share_one_file(tmp_path):
    code = (
        "import sys\nfrom lalm_eval.api import Response\nfrom lalm_eval.cache import ResponseCache\n"
        "c = ResponseCache(sys.argv[1])\n"
        "for i in range(150):\n    c.put_many([(f'{sys.argv[2]}-{i}', Response(str(i)))])\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "c.sqlite"), f"rank{r}"], cwd=ROOT)
        for r in range(3)
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert len(cache) == 450
    got = cache.get_many([f"rank{r}-{i}" for r in range(3) for i in range(150)])
    assert got["rank2-149"].text == "149" and got["rank0-0"].cached
