"""Offline English speech recognition with pocketsphinx (its wheel ships the en-US model).

Optional: the ``asr`` extra (``pip install 'lalm-eval[asr]'``). pocketsphinx is imported only when
something is transcribed, so recognition and speaker counting work without it.

**A transcript is a function of its audio alone.** A pocketsphinx decoder carries its feature
state (the cepstral-mean estimate) from one utterance into the next, so the same audio decoded
after different audios can give different words (seen on 3 of 6 embedded clips decoded in two
orders). :meth:`PocketsphinxASR.transcribe` resets that state before every utterance
(``reinit_feat``): each transcript equals a fresh decoder's, whatever was decoded before, in which
order, in which process. That is what lets :meth:`PocketsphinxASR.transcribe_many` spread the
decodes of a batch over worker processes (pocketsphinx holds the GIL, threads would not help) and
return exactly the words of one in-process decoder.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import Future, ProcessPoolExecutor
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from lalm_eval.errors import ConfigError

INSTALL_HINT = "pip install 'lalm-eval[asr]'"
log = logging.getLogger(__name__)


def pocketsphinx_version() -> str:
    try:
        return version("pocketsphinx")
    except PackageNotFoundError:
        return "missing"


def default_workers() -> int:
    """Worker processes for ``asr_workers=auto``: the CPUs this process may use, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(4, cpus))


class PocketsphinxASR:
    """``transcribe(audio)`` → lower-case words; one decoder, built on first use.

    ``workers`` > 1: :meth:`submit` / :meth:`transcribe_many` decode in that many worker processes
    (started on first use, each with its own decoder; :meth:`close` stops them)."""

    def __init__(self, sr: int = 16_000, workers: int = 1):
        self.sr = sr
        self.workers = max(1, int(workers))
        self._decoder = None
        self._pool: ProcessPoolExecutor | None = None
        # "fresh-feat": every utterance decoded from the decoder's initial feature state
        self.name = f"pocketsphinx-{pocketsphinx_version()}-en-us-fresh-feat"

    @property
    def decoder(self):
        if self._decoder is None:
            try:
                from pocketsphinx import Decoder
            except ImportError as exc:
                raise ConfigError(
                    f"the cascade's English speech recogniser needs pocketsphinx: {INSTALL_HINT}"
                ) from exc
            self._decoder = Decoder(samprate=self.sr, logfn="/dev/null")
        return self._decoder

    def transcribe(self, audio: np.ndarray) -> str:
        audio = np.asarray(audio, dtype=np.float32)
        if audio.size == 0:
            return ""
        pcm = (np.clip(audio, -1.0, 1.0) * 32767).astype("<i2").tobytes()
        d = self.decoder
        d.reinit_feat()  # the initial cepstral mean: the words depend on this audio only
        d.start_utt()
        d.process_raw(pcm, full_utt=True)
        d.end_utt()
        hyp = d.hyp()
        return " ".join(hyp.hypstr.split()) if hyp is not None else ""

    def submit(self, audio: np.ndarray) -> Future:
        """A future of ``transcribe(audio)``: decoded by a worker process when ``workers`` > 1
        (if the workers cannot start, logged, and decoded here from then on), else here, now."""
        self.decoder  # noqa: B018 - a missing pocketsphinx is a ConfigError here, not in a worker
        if self.workers > 1:
            try:
                return self._start().submit(_worker_transcribe, np.asarray(audio, np.float32))
            except Exception as exc:  # a spawn failure, a broken pool
                self.stop_workers(exc)
        done: Future = Future()
        done.set_result(self.transcribe(audio))
        return done

    def transcribe_many(self, audios: list[np.ndarray]) -> list[str]:
        """Transcripts of ``audios``, in order; the same words as ``transcribe`` one by one (with
        workers, longest first; a worker that dies has its audio decoded here)."""
        order = sorted(range(len(audios)), key=lambda i: -len(audios[i]))
        futures = {i: self.submit(audios[i]) for i in order}
        return [self.result(futures[i], audios[i]) for i in range(len(audios))]

    def result(self, future: Future, audio: np.ndarray) -> str:
        """The words of a :meth:`submit` future; decoded here if its worker failed."""
        try:
            return future.result()
        except Exception as exc:  # BrokenProcessPool: a worker killed or crashed
            self.stop_workers(exc)
            return self.transcribe(audio)

    def stop_workers(self, exc: BaseException) -> None:
        if self.workers > 1:
            log.warning(
                "cascade: ASR worker processes failed (%s: %s); decoding in this process", type(exc).__name__, exc
            )
        self.close()
        self.workers = 1

    def _start(self) -> ProcessPoolExecutor:
        if self._pool is None:
            import multiprocessing

            # spawn: the parent holds torch's thread pools, which a fork would copy mid-state
            self._pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_init,
                initargs=(self.sr,),
            )
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __del__(self):  # pragma: no cover - interpreter teardown
        try:
            self.close()
        except Exception:
            pass


_WORKER: PocketsphinxASR | None = None


def _worker_init(sr: int) -> None:
    global _WORKER
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    _WORKER = PocketsphinxASR(sr)


def _worker_transcribe(audio: np.ndarray) -> str:
    assert _WORKER is not None
    return _WORKER.transcribe(audio)
