#!/usr/bin/env python3
"""API adapter throughput vs concurrency, against the local OpenAI-protocol test server with a fixed
simulated latency per request (default 200 ms): samples/s at each concurrency and the ratio to the
sequential rate (goal: at least 12x at concurrency 16).

    python bench/api_concurrency.py [--latency 0.2] [--n 96] [--concurrency 1,4,16] [--protocol openai|gemini]

Each request carries 2 s of 16 kHz audio (sent as base64 PCM16 WAV and decoded by the server), so
the figures include encoding, HTTP and JSON work, not only the sleeps. The sequential run sends
``n // 4`` requests (it takes n x latency otherwise); rates are per request.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.api_contract import request  # noqa: E402
from tests.api_servers import GeminiServer, OpenAIServer  # noqa: E402


def rate(protocol: str, latency: float, concurrency: int, n: int) -> float:
    """Requests per second of one ``generate`` call of ``n`` requests at ``concurrency``."""
    if protocol == "openai":
        from lalm_eval.models.openai_audio import OpenAIAudioAdapter as Adapter

        server_cls, model = OpenAIServer, "gpt-4o-audio-preview"
    else:
        from lalm_eval.models.gemini import GeminiAdapter as Adapter

        server_cls, model = GeminiServer, "gemini-2.5-flash"
    with server_cls(latency=latency) as server:
        adapter = Adapter(model=model, base_url=server.base_url, concurrency=concurrency)
        requests = [request(i, seconds=2.0) for i in range(n)]
        adapter.generate(requests[:2])  # connection set up, imports warm
        t0 = time.perf_counter()
        out = adapter.generate(requests)
        elapsed = time.perf_counter() - t0
        failed = [r for r in out if r.text is None]
        if failed or server.errors:
            raise SystemExit(f"{len(failed)} failed requests ({failed[:1]}), server errors {server.errors[:1]}")
        if server.max_in_flight > concurrency:
            raise SystemExit(f"{server.max_in_flight} requests in flight at concurrency {concurrency}")
    return n / elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.2, help="server-side seconds per request")
    ap.add_argument("--n", type=int, default=96, help="requests per concurrent run")
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--protocol", choices=("openai", "gemini"), default="openai")
    args = ap.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    print(f"{args.protocol} protocol, {args.latency * 1000:.0f} ms simulated latency, 2 s of audio per request")
    print("| concurrency | requests | samples/s | x sequential |\n|---|---|---|---|")
    base = None
    for c in levels:
        n = max(8, args.n // 4) if c == 1 else args.n
        r = rate(args.protocol, args.latency, c, n)
        base = base or r
        print(f"| {c} | {n} | {r:.2f} | {r / base:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
