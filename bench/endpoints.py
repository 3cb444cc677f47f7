#!/usr/bin/env python3
"""Several OpenAI-protocol endpoints behind one ``openai_audio`` adapter: requests/s with 1, 2 and 4
local servers (each with a simulated latency, 200 ms by default, and the same per-endpoint
``concurrency``), the ratio to 1 server (goal: at least 1.8x with 2, 3.5x with 4), then 4 servers
with one killed mid-run: requests sent, answered, lost (must be 0) and duplicated (must be 0).

    python bench/endpoints.py [--latency 0.2] [--n 96] [--concurrency 4] [--quick] [--json]

Each request carries 1 s of 16 kHz audio (base64 PCM16 WAV, decoded by the server). ``--quick``
(the test's mode): 24 requests at 50 ms. ``--json`` prints the figures as one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lalm_eval.models.openai_audio import OpenAIAudioAdapter  # noqa: E402
from tests.api_contract import request  # noqa: E402
from tests.api_servers import OpenAIServer  # noqa: E402


def _answer(record) -> str:
    return "heard " + " ".join(record.texts)


def run(n_servers: int, n: int, latency: float, concurrency: int, kill_after: float | None = None) -> dict:
    """One ``generate`` of ``n`` requests over ``n_servers`` servers (the first killed after
    ``kill_after`` seconds, when given): rate and what the servers answered."""
    servers = [OpenAIServer(latency=latency, answer=_answer) for _ in range(n_servers)]
    try:
        adapter = OpenAIAudioAdapter(
            model="served",
            base_url="|".join(s.base_url for s in servers),
            concurrency=concurrency,
            retry_delay=0.05,
            cooldown_s=60,
            cache_dir="none",
        )
        requests = [request(i, seconds=1.0) for i in range(n)]
        adapter.generate([request(n + i, seconds=1.0) for i in range(n_servers)])  # connections, imports warm
        for s in servers:
            s.records.clear()
            s.answered = 0
        timer = threading.Timer(kill_after, servers[0].kill) if kill_after is not None else None
        t0 = time.perf_counter()
        if timer:
            timer.start()
        out = adapter.generate(requests)
        elapsed = time.perf_counter() - t0
        if timer:
            timer.join()
        answered = Counter(" ".join(r.texts) for s in servers for r in s.records if r.answered)
        wanted = Counter(" ".join(p["text"] for p in r.messages[0]["content"] if p["type"] == "text") for r in requests)
        ok = [r for r in out if r.text is not None]
        return {
            "servers": n_servers,
            "requests": n,
            "seconds": round(elapsed, 3),
            "requests_per_s": round(n / elapsed, 2),
            "sent": sum(len(s.records) for s in servers),
            "answered": len(ok),
            "lost": sum(1 for k in wanted if answered[k] == 0) + (n - len(ok)),
            "duplicated": sum(v - 1 for v in answered.values() if v > 1),
            "max_in_flight": [s.max_in_flight for s in servers],
            "endpoints": adapter.counters["endpoints"],
        }
    finally:
        for s in servers:
            s.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="server-side seconds per request")
    ap.add_argument("--n", type=int, default=96, help="requests per run")
    ap.add_argument("--concurrency", type=int, default=4, help="requests in flight per endpoint")
    ap.add_argument("--quick", action="store_true", help="24 requests at 50 ms (the test's mode)")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line last")
    args = ap.parse_args()
    if args.quick:
        args.n, args.latency = 24, 0.05
    print(
        f"{args.n} requests, {args.latency * 1000:.0f} ms simulated latency, concurrency {args.concurrency} "
        "per endpoint, 1 s of audio per request"
    )
    print("| endpoints | requests/s | x 1 endpoint |\n|---|---|---|")
    figures, base = {"scaling": []}, None
    for k in (1, 2, 4):
        r = run(k, args.n, args.latency, args.concurrency)
        if r["lost"] or r["duplicated"] or max(r["max_in_flight"]) > args.concurrency:
            raise SystemExit(f"{k} endpoints: {r}")
        base = base or r["requests_per_s"]
        r["ratio"] = round(r["requests_per_s"] / base, 2)
        figures["scaling"].append(r)
        print(f"| {k} | {r['requests_per_s']:.2f} | {r['ratio']:.2f} |")
    # one of 4 killed after about a third of the run (the run at 4 endpoints took `seconds`)
    kill_after = figures["scaling"][-1]["seconds"] / 3
    k = run(4, args.n, args.latency, args.concurrency, kill_after=kill_after)
    figures["killed"] = {key: k[key] for key in ("requests", "sent", "answered", "lost", "duplicated", "seconds")}
    figures["killed"]["killed_endpoint"] = k["endpoints"][0]
    dead = k["endpoints"][0]
    print(
        f"4 endpoints, one killed after {kill_after:.2f} s: {k['requests']} requests, {k['sent']} sent, "
        f"{k['answered']} answered, {k['lost']} lost, {k['duplicated']} duplicated "
        f"(killed endpoint: {dead['answered']} answered, {dead['failures']} failed, "
        f"{dead['moved_elsewhere']} moved elsewhere, taken out {dead['taken_out']}x); {k['seconds']:.2f} s"
    )
    if args.json:
        print(json.dumps(figures))
    return 0 if k["lost"] == 0 and k["duplicated"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
