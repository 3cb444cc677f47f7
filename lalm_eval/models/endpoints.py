"""Several servers of one model behind one API adapter: the model args ``base_url=URL1|URL2|...``
or ``endpoints=FILE`` (:func:`parse_endpoints`) and the :class:`EndpointPool` that spreads the
requests over them.

Each endpoint has its own ``concurrency`` slots (requests in flight there at most; the total is the
sum). An attempt takes a slot on the healthy endpoint with the fewest requests in flight (ties: the
fewest sent so far, then the list order; a retry, on another than the one that failed when
another is healthy, waiting for a slot there), and gives it back when its answer, or its failure, is in.
An endpoint whose ``eject_after`` attempts in a row failed in a retryable way (transport error,
timeout, 5xx, 429: what :mod:`.api_base` retries) is taken out for ``cooldown_s`` seconds; when
every endpoint is out, an attempt waits for the first to come back (at most ``max_wait`` seconds,
then it takes that one anyway). With one endpoint nothing is ever taken out.

Stats per endpoint (:meth:`EndpointPool.report`): attempts sent, answered (any reply that is not a
retryable failure: an answer, a refusal, a 400), failures, retries moved elsewhere, latency of the
answered attempts (mean, p50, p95, seconds) and times taken out. URLs as shown there have no
userinfo, query or fragment (:func:`shown_url`).
"""

from __future__ import annotations

import dataclasses
import statistics
import threading
import time
import urllib.parse
from pathlib import Path

from lalm_eval.errors import ConfigError


def check_url(url: str, flag: str) -> str:
    """``url`` without a trailing slash; a :class:`ConfigError` naming ``flag`` unless http(s) with a host."""
    url = url.strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{flag}: {url!r} is not an http(s) URL with a host; give e.g. http://node1:8000/v1")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ConfigError(f"{flag}: {url!r} has a bad port; give e.g. http://node1:8000/v1") from None
    return url


def shown_url(url: str) -> str:
    """``scheme://host[:port]/path`` of ``url``: no userinfo, query or fragment (what results show)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


def parse_endpoints(base_url: str | None, endpoints: str | None, default: str) -> list[str]:
    """The endpoint URLs of the model args: ``endpoints=FILE`` (one URL a line, ``#`` comments and
    blank lines ignored) or ``base_url`` (``|`` between URLs), else ``[default]``. A missing or
    empty file, a bad URL, a URL given twice, or both args at once is a :class:`ConfigError`."""
    if endpoints not in (None, "") and base_url not in (None, ""):
        raise ConfigError("--model_args endpoints: give endpoints=FILE or base_url=URL1|URL2, not both")
    if endpoints not in (None, ""):
        flag = "--model_args endpoints"
        path = Path(str(endpoints))
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(f"{flag}: {path}: no such file; give a file with one URL per line") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{flag}: {path}: cannot read it ({exc}); give a UTF-8 file of URLs") from None
        urls = []
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if line:
                urls.append(check_url(line, f"{flag}: {path} line {n}"))
        if not urls:
            raise ConfigError(f"{flag}: {path} holds no URL; give one URL per line (# starts a comment)")
    else:
        flag = "--model_args base_url"
        raw = str(base_url or default)
        urls = [check_url(u, flag) for u in raw.split("|") if u.strip()]
        if not urls:
            raise ConfigError(f"{flag}: {raw!r} holds no URL; give base_url=URL or URL1|URL2")
    seen = set()
    for url in urls:
        if url in seen:
            raise ConfigError(f"{flag}: {shown_url(url)} is given twice; list each endpoint once")
        seen.add(url)
    return urls


@dataclasses.dataclass(eq=False)
class Endpoint:
    """One server of the pool and its counts."""

    url: str
    index: int
    in_flight: int = 0
    requests: int = 0
    answered: int = 0
    failures: int = 0
    moved: int = 0
    taken_out: int = 0
    in_a_row: int = 0
    out_until: float = 0.0
    latencies: list = dataclasses.field(default_factory=list)

    def stats(self) -> dict:
        lat = sorted(self.latencies)
        out = {
            "url": shown_url(self.url),
            "requests": self.requests,
            "answered": self.answered,
            "failures": self.failures,
            "moved_elsewhere": self.moved,
            "taken_out": self.taken_out,
        }
        if lat:
            out["latency_s"] = {
                "mean": round(statistics.fmean(lat), 4),
                "p50": round(_quantile(lat, 0.5), 4),
                "p95": round(_quantile(lat, 0.95), 4),
            }
        return out


def _quantile(values: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted ``values`` (numpy's default)."""
    pos = (len(values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (pos - lo)


class EndpointPool:
    """The endpoints of one adapter, their slots and health (see the module docstring)."""

    def __init__(self, urls: list[str], concurrency: int, eject_after: int = 3, cooldown_s: float = 30.0):
        self.endpoints = [Endpoint(url, i) for i, url in enumerate(urls)]
        self.concurrency = concurrency
        self.eject_after = eject_after
        self.cooldown_s = cooldown_s
        self._cond = threading.Condition()

    def __len__(self) -> int:
        return len(self.endpoints)

    @property
    def capacity(self) -> int:
        """Requests in flight at most, over all endpoints."""
        return self.concurrency * len(self.endpoints)

    def acquire(self, avoid: Endpoint | None = None, max_wait: float = 120.0) -> Endpoint:
        """A slot on the best healthy endpoint (another than ``avoid`` when there is one healthy),
        waiting for one when all are busy; when all are out, waiting for the first back (``max_wait`` at most)."""
        waited_out = 0.0
        with self._cond:
            while True:
                now = time.monotonic()
                healthy = [e for e in self.endpoints if e.out_until <= now]
                if avoid is not None and any(e is not avoid for e in healthy):
                    healthy = [e for e in healthy if e is not avoid]  # a retry waits for another one
                free = [e for e in healthy if e.in_flight < self.concurrency]
                if free:
                    best = min(free, key=lambda e: (e.in_flight, e.requests, e.index))
                    best.in_flight += 1
                    best.requests += 1
                    return best
                if healthy:  # all healthy ones are busy: a slot comes back on release
                    self._cond.wait(timeout=0.5)
                    continue
                first = min(self.endpoints, key=lambda e: e.out_until)
                pause = first.out_until - now
                if waited_out + pause > max_wait:  # waited enough: take the first back now
                    first.out_until = now
                    continue
                self._cond.wait(timeout=pause)
                waited_out += max(0.0, time.monotonic() - now)

    def release(self, endpoint: Endpoint, failed: bool, seconds: float) -> None:
        """Give the slot back: ``failed`` (a retryable failure there) counts toward taking it out."""
        with self._cond:
            endpoint.in_flight -= 1
            if failed:
                endpoint.failures += 1
                endpoint.in_a_row += 1
                if len(self.endpoints) > 1 and endpoint.in_a_row >= self.eject_after:
                    endpoint.in_a_row = 0
                    endpoint.taken_out += 1
                    endpoint.out_until = time.monotonic() + self.cooldown_s
            else:
                endpoint.answered += 1
                endpoint.in_a_row = 0
                endpoint.latencies.append(seconds)
            self._cond.notify_all()

    def elsewhere(self, endpoint: Endpoint) -> bool:
        """Whether a retry can go to another endpoint, healthy now; if so it counts as moved from ``endpoint``."""
        with self._cond:
            now = time.monotonic()
            other = any(e is not endpoint and e.out_until <= now for e in self.endpoints)
            if other:
                endpoint.moved += 1
            return other

    def report(self) -> list[dict]:
        """Per-endpoint stats, in the list order (see the module docstring)."""
        with self._cond:
            return [e.stats() for e in self.endpoints]
