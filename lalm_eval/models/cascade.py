"""``cascade``: a classic reference system, speaker verification + speech recognition, no LLM.

    lalm-eval --model cascade --model_args enrollment=DIR --tasks palm_recognition

What it does with a request (only the request: its task name, prompt text and audio; it never
sees a dataset row, so it cannot read answers or labels):

1. **Enrollment** (once, at construction; :mod:`.cascade_parts.enrollment`): ``enrollment=`` is a
   folder of speaker folders ``<dir>/<Name>/<clip>.<audio>`` (any format ``read_audio`` decodes,
   FFmpeg included) or a dataset with an ``enrollment`` config (``name``, ``audio``, ``clip_id``,
   ``language`` columns). One centroid per subject; the presence threshold is the EER point of
   leave-one-clip-out window scores on the enrollment data alone (``calibration`` /
   ``identity()`` report it). What a speaker folder holds that cannot be used is listed, each on
   stderr (a warning) and in ``identity()["enrollment_skips"]``, and counted
   (``counters["enrollment_skipped"]``). With a cache folder (the harness's ``cache_dir``, else
   ``embed_cache``) the centroids and the calibration are one record reused across runs
   (:mod:`.cascade_parts.enrollment_cache`: keyed by the enrollment files' content, the encoder's
   weights, the code and the settings; ``enrollment_cached`` says whether this run read it).
2. **Analysis of the test audio** (once per distinct audio, cached by content hash;
   :mod:`.cascade_parts.analysis`): webrtcvad regions → 1.6 s windows every 0.8 s → embeddings in
   one batch → each window to the best enrolled subject, or unknown below the threshold, after a
   median filter. A subject is present with at least ``min_speech_s`` of assigned speech.
3. **Answer** (:mod:`.cascade_parts.answers`, ``cascade_answers.yaml``): the task's DECLARED kind
   (``metadata.answer_kind`` of its YAML, as ``Request.task_metadata``; never its name, so a task
   renamed with ``--include_path`` behaves like its original) picks the analysis (recognition,
   captioning, reasoning, speaker counting, dialogue transcription, multiple choice — the letter
   of the option stating the speaker count when that is the question, else "cannot determine" —,
   or "cannot determine"; a task
   declaring no kind gets "cannot determine", counted as ``undeclared_kind`` and logged once); the language of the question picks the templates; names are the enrolled names
   found in the question. English speech is transcribed by pocketsphinx (extra ``asr``); there is
   no offline Mandarin recogniser, and Mandarin captioning says so (counted in
   ``counters["no_asr"]``). Reasoning questions get the target's words: the cascade cannot reason.

Model args (strings from the CLI are converted): ``enrollment`` (required), ``encoder``
(``resemblyzer`` | ``ecapa``), ``encoder_source`` (ECAPA folder or Hub id), ``device``,
``min_speech_s`` (1.0), ``window_s`` (1.6), ``hop_s`` (0.8), ``vad_mode`` (2), ``median`` (3),
``threshold`` / ``cluster_threshold`` (override the calibrated values), ``split_test``
(``gap``, the default: when the threshold finds one speaker, the gap statistic's one-or-two test
on the recording's own windows decides whether a second, closer voice is there —
:mod:`.cascade_parts.speaker_test`; ``off``), ``gap_dims`` (2) / ``gap_refs`` (100) (its
principal components and reference samples; seeded, deterministic), ``calibration``
(``multi``: clean + one augmented copy of each enrollment clip, the default; ``clean``),
``answers`` (another answers YAML), ``embed_cache`` (folder persisting embeddings across runs;
default ``<cache_dir>/embeddings``, shared with the builds, when the harness passes its ``cache_dir``),
``max_cached_audios`` (256), ``threads`` (sets torch's intra-op threads for the whole process;
unset leaves them alone: on shared or busy CPUs, ``threads=1`` keeps the GE2E LSTM from
crawling in OpenMP spin-waits, several times faster in our measurements), ``asr_workers``
(``auto``: the usable CPUs, at most 4; pocketsphinx processes that decode a batch's speech
together, the same words as one decoder since every decode starts from the decoder's initial
state; ``1``: in this process).

``MULTI_AUDIO = False``: a request with several audios is answered about its *last* audio (the
test recording in every built-in task, the in-context enrollment tasks included).

``counters``: ``kind:<kind>`` requests per kind; ``undeclared_kind`` (task metadata without
``answer_kind``); ``unsupported_kind:<declared>`` (a kind missing from the answers YAML);
``cannot_determine`` (all of those, declared-unsupported kinds, or no enrolled name in the question); ``no_asr`` (Mandarin captioning/reasoning/transcription);
``no_known_name`` (a question naming no enrolled subject); ``unenrolled_subject:<name>`` (requests
about a person the task names, ``Request.subjects``, who has no enrollment clips: each such name is
also a warning, once, with an enrolled name that differs only in case or spaces when there is one);
``choice_unsupported`` (a multiple-choice question the cascade cannot choose for), ``choice_no_option``
(no option states the speaker count it found);
``audios_analysed`` / ``analysis_cache_hits``; ``asr_calls``; ``errors``.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
import time
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from lalm_eval.api import AUDIO_SR, Adapter, Request, Response
from lalm_eval.audio.io import audio_hash
from lalm_eval.audio.speaker import EMBEDDINGS_FOLDER, get_speaker_encoder
from lalm_eval.errors import AudioError, ConfigError
from lalm_eval.evaluation.progress import announce
from lalm_eval.models.cascade_parts import enrollment_cache
from lalm_eval.models.cascade_parts.analysis import AudioAnalysis, Clustering, analyse, cluster
from lalm_eval.models.cascade_parts.answers import DEFAULT_ANSWERS, AnswerBook, find_names, language_of
from lalm_eval.models.cascade_parts.asr import PocketsphinxASR, default_workers
from lalm_eval.models.cascade_parts.enrollment import CALIBRATION_AUGMENTATION, calibrate, enroll, load_enrollment
from lalm_eval.models.cascade_parts.segmentation import SegmenterConfig
from lalm_eval.models.cascade_parts.speaker_test import GapTestConfig

log = logging.getLogger(__name__)
ASR_GAP_S = 0.2  # silence between a speaker's segments when they are transcribed together


def _float(name: str, value, default: float | None = None) -> float | None:
    """A numeric model argument (the CLI passes strings); ``default`` when unset."""
    if value in (None, "", "auto", "none", "None"):
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"cascade: model argument {name}={value!r} is not a number") from None


def say(message: str) -> None:
    """A stage of the adapter's construction on the console (the run's progress lines)."""
    announce("lalm-eval: cascade", message)


class _LRU(collections.OrderedDict):
    def __init__(self, size: int):
        super().__init__()
        self.size = size

    def put(self, key, value):
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.size:
            self.popitem(last=False)
        return value


class CascadeAdapter(Adapter):
    name = "cascade"
    MULTI_AUDIO = False

    def __init__(
        self,
        enrollment: str | None = None,
        encoder: str = "resemblyzer",
        encoder_source: str | None = None,
        device: str = "cpu",
        min_speech_s=1.0,
        window_s=1.6,
        hop_s=0.8,
        vad_mode=2,
        median=3,
        threshold=None,
        cluster_threshold=None,
        split_test: str = "gap",
        gap_dims=2,
        gap_refs=100,
        calibration: str = "multi",
        answers: str | None = None,
        embed_cache: str | None = None,
        max_cached_audios=256,
        threads=None,
        asr_workers="auto",
        cache_dir: str | None = None,
    ):
        super().__init__()
        if not enrollment:
            raise ConfigError(
                "cascade: model argument 'enrollment' (speaker folders or an enrollment dataset) is required"
            )
        self.enrollment_path = str(enrollment)
        self.min_speech_s = _float("min_speech_s", min_speech_s, 1.0)
        self.cfg = SegmenterConfig(
            window_s=_float("window_s", window_s, 1.6),
            hop_s=_float("hop_s", hop_s, 0.8),
            vad_mode=int(_float("vad_mode", vad_mode, 2)),
            median=int(_float("median", median, 3)),
        )
        if (
            not (0 <= self.cfg.vad_mode <= 3)
            or self.cfg.hop_s <= 0
            or self.cfg.window_s < self.cfg.min_window_s
            or self.cfg.median < 1
            or self.min_speech_s < 0
        ):
            raise ConfigError(f"cascade: invalid segmentation {self.cfg.to_dict()} / min_speech_s={self.min_speech_s}")
        if calibration not in ("multi", "clean"):
            raise ConfigError(f"cascade: calibration={calibration!r}; use 'multi' (clean + augmented) or 'clean'")
        if split_test not in ("gap", "off"):
            raise ConfigError(f"cascade: split_test={split_test!r}; use 'gap' (the one-or-two test) or 'off'")
        self.split_test = (
            GapTestConfig(dims=int(_float("gap_dims", gap_dims, 2)), n_ref=int(_float("gap_refs", gap_refs, 100)))
            if split_test == "gap"
            else None
        )
        if self.split_test is not None and (self.split_test.dims < 1 or self.split_test.n_ref < 2):
            raise ConfigError(f"cascade: invalid split test {self.split_test.to_dict()}")
        self.book = AnswerBook(answers or DEFAULT_ANSWERS)
        n_threads = _float("threads", threads)
        if n_threads is not None:  # process-wide: torch has one intra-op thread pool
            import torch

            torch.set_num_threads(max(1, int(n_threads)))
        if embed_cache is None and cache_dir:  # the harness's cache dir (lalm-eval --cache_dir)
            embed_cache = str(Path(cache_dir) / EMBEDDINGS_FOLDER)
        kwargs = {"device": "cpu" if device in (None, "", "auto") else str(device), "cache_dir": embed_cache}
        if encoder == "ecapa" and encoder_source:
            kwargs["source"] = encoder_source
        self.encoder = get_speaker_encoder(str(encoder), **kwargs)
        workers = default_workers() if asr_workers in (None, "", "auto") else _float("asr_workers", asr_workers)
        if workers < 1:
            raise ConfigError(f"cascade: asr_workers={asr_workers!r}; give a number of processes >= 1, or auto")
        self.asr = PocketsphinxASR(AUDIO_SR, workers=int(workers))
        self._planned: list | None = None  # while planning a batch: the decodes it started
        self._decoded: _LRU = _LRU(1024)  # decode key -> words (or their Future, while decoding)
        self._first_use: set[str] = set()  # audios analysed while planning, not yet used for real

        augment = CALIBRATION_AUGMENTATION if calibration == "multi" else None
        record_dir = (
            Path(cache_dir or embed_cache or "") / enrollment_cache.FOLDER if (cache_dir or embed_cache) else None
        )
        content = enrollment_cache.content_key(self.enrollment_path) if record_dir is not None else None
        key = None
        if content is not None:
            settings = {
                "segmenter": self.cfg.to_dict(),
                "augment": None if augment is None else dataclasses.asdict(augment),
                "seed": 0,
                "split_test": None if self.split_test is None else self.split_test.to_dict(),
            }
            key = enrollment_cache.record_key(content, enrollment_cache.encoder_fingerprint(self.encoder), settings)
        record = enrollment_cache.load(record_dir, key) if key is not None else None
        self.enrollment_cached = record is not None
        if record is not None:
            say(f"enrollment and calibration read from the cache ({len(record.enrollment.names)} subjects)")
        if record is None:
            clips = load_enrollment(self.enrollment_path)
            if not clips:
                raise ConfigError(f"enrollment {self.enrollment_path!r}: no clips found")
            t0 = time.perf_counter()
            say(f"enrolling {len(clips)} clips and calibrating the thresholds (once per enrollment set and encoder)")
            enrollment = enroll(clips, self.encoder, self.enrollment_path)
            calibration_record = calibrate(
                enrollment, clips, self.encoder, self.cfg, augment, split_test=self.split_test
            )
            say(f"enrollment and calibration done in {time.perf_counter() - t0:.0f} s")
            record = enrollment_cache.Record(enrollment, calibration_record, list(getattr(clips, "skips", [])))
            if key is not None:
                enrollment_cache.store(record_dir, key, record)
        self.enrollment, self.calibration = record.enrollment, dict(record.calibration)
        override, cluster_override = _float("threshold", threshold), _float("cluster_threshold", cluster_threshold)
        self.threshold = self.calibration["threshold"] if override is None else override
        self.cluster_threshold = self.calibration["cluster_threshold"] if cluster_override is None else cluster_override
        self.calibration.update(threshold_used=self.threshold, cluster_threshold_used=self.cluster_threshold)

        size = max(1, int(_float("max_cached_audios", max_cached_audios, 256)))
        self._analyses: _LRU = _LRU(size)
        self._clusterings: _LRU = _LRU(size)
        self._transcripts: _LRU = _LRU(4 * size)
        self.counters: collections.Counter = collections.Counter()
        self._undeclared_tasks: set[str] = set()
        self._unenrolled: set[str] = set()
        self._no_name_tasks: set[str] = set()
        self.enrollment_skips = list(record.skips)
        if self.enrollment_skips:
            self.counters["enrollment_skipped"] = len(self.enrollment_skips)
        for item in self.enrollment_skips:
            log.warning("cascade: enrollment %s: skipped %s: %s", self.enrollment_path, item["item"], item["reason"])
        log.info(
            "cascade: %d subjects, threshold %.3f (calibration EER %.3f)",
            len(self.enrollment.names),
            self.threshold,
            self.calibration["eer"],
        )

    # ---- identity -------------------------------------------------------------------------------
    def identity(self) -> dict:
        return {
            "name": self.name,
            "encoder": self.encoder.name,
            "enrollment": self.enrollment.fingerprint,
            "subjects": list(self.enrollment.names),
            "threshold": self.threshold,
            "calibration_eer": self.calibration["eer"],
            "calibration": self.calibration["conditions"],
            "cluster_threshold": self.cluster_threshold,
            "split_test": None if self.split_test is None else self.split_test.to_dict(),
            "min_speech_s": self.min_speech_s,
            "window_s": self.cfg.window_s,
            "hop_s": self.cfg.hop_s,
            "segmenter": self.cfg.to_dict(),
            "asr": self.asr.name,
            "answers_sha256": self.book.sha256,
            **({"enrollment_skips": list(self.enrollment_skips)} if self.enrollment_skips else {}),
        }

    # ---- generation -----------------------------------------------------------------------------
    def generate(self, requests: list[Request], batch_size: int | str = 1) -> list[Response]:
        """Requests in order; the per-audio analysis is shared through the caches and
        ``batch_size`` is ignored. With ``asr_workers`` > 1 the speech the requests need
        transcribed is decoded first, over the worker processes (:meth:`_decode_ahead`); every
        answer is the one a request alone would get. A failing request gets ``Response(None, error)``."""
        from tqdm.auto import tqdm

        if self.asr.workers > 1:
            self._decode_ahead(requests)
        out = []
        for req in tqdm(requests, desc=self.name, unit="sample", disable=None):
            try:
                out.append(Response(self.answer(req)))
            except Exception as exc:  # one bad request must not sink the others
                self.counters["errors"] += 1
                log.warning("cascade: %s doc %s failed: %s", req.task, req.doc_id, exc)
                out.append(Response(None, f"{type(exc).__name__}: {exc}"))
            self.n_generated += 1
        return out

    def _decode_ahead(self, requests: list[Request]) -> None:
        """Answer the requests once in planning mode: :meth:`_asr` hands each recording it would
        decode to the ASR workers at once (so the analyses of the next requests overlap the
        decoding) and returns nothing; no transcript is kept and the counters are restored. The
        real pass then collects the words. Each transcript is a function of its audio alone, so
        the answers equal those of decoding one by one."""
        counters = self.counters.copy()
        self._planned = []
        try:
            for req in requests:
                try:
                    self.answer(req)
                except Exception:  # noqa: BLE001 - the real pass reports it
                    pass
        finally:  # the analyses and decodes planning started are real work, counted once
            counters["audios_analysed"] = self.counters["audios_analysed"]
            counters["asr_calls"] += len(self._planned)
            self._planned, self.counters = None, counters

    def answer(self, req: Request) -> str:
        prompt = _prompt_text(req)
        question = self.book.question(prompt)
        lang = language_of(question)
        kind, declared = self.book.kind(req.task_metadata)
        self.counters[f"kind:{kind}"] += 1
        self._check_subjects(req)
        if declared is None:
            self.counters["undeclared_kind"] += 1
            if req.task not in self._undeclared_tasks:
                self._undeclared_tasks.add(req.task)
                log.warning(
                    "cascade: task %r declares no metadata.answer_kind: answered 'cannot determine' "
                    "(counted as undeclared_kind); declare one of %s in its YAML metadata",
                    req.task,
                    sorted(self.book.kinds),
                )
        elif declared not in self.book.kinds:
            self.counters[f"unsupported_kind:{declared}"] += 1
        if kind == "cannot_determine":
            self.counters["cannot_determine"] += 1
            return self.book.wrap(prompt, self.book.text(lang, "cannot_determine"))
        if kind == "multiple_choice":
            return self.book.wrap(prompt, self._choice(req, prompt, lang))
        audio = _test_audio(req)
        if kind == "speaker_counting":
            n = self.clustering(audio).n_speakers
            text = self.book.text(
                lang, "speaker_count_one" if n == 1 else "speaker_count", n=n, n_word=self.book.number(lang, n)
            )
        elif kind == "dialogue_transcription":
            text = self._transcription(audio, lang)
        else:
            text = self._about_names(kind, audio, question, prompt, lang, req.task)
        return self.book.wrap(prompt, text)

    def _choice(self, req: Request, prompt: str, lang: str) -> str:
        """The letter of the option stating the speaker count, or "cannot determine" (counted)."""
        letters = self.book.count_options(prompt, lang)
        if letters is None:
            self.counters["choice_unsupported"] += 1
        else:
            letter = letters.get(self.clustering(_test_audio(req)).n_speakers)
            if letter is not None:
                return self.book.text(lang, "choice", letter=letter)
            self.counters["choice_no_option"] += 1
        self.counters["cannot_determine"] += 1
        return self.book.text(lang, "cannot_determine")

    def _check_subjects(self, req: Request) -> None:
        """Count (and warn once per name about) the people the task names (``req.subjects``) who
        have no enrollment clips: their questions are answered as about someone unknown."""
        enrolled = set(self.enrollment.names)
        for name in dict.fromkeys(str(n) for n in req.subjects or () if n):
            if name in enrolled:
                continue
            self.counters[f"unenrolled_subject:{name}"] += 1
            if name in self._unenrolled:
                continue
            self._unenrolled.add(name)
            key = " ".join(name.split()).casefold()
            close = [n for n in self.enrollment.names if " ".join(n.split()).casefold() == key]
            hint = (
                f"the enrolled {close[0]!r} differs only in case or spaces: rename its folder to {name!r}"
                if close
                else f"add a folder {name}/ of their clips to the enrollment"
            )
            log.warning(
                "cascade: task %r (doc %s) asks about %r, who has no enrollment clips (enrolled: %s); their "
                "questions are answered as about an unknown person (counted as unenrolled_subject:%s); %s",
                req.task,
                req.doc_id,
                name,
                ", ".join(self.enrollment.names),
                name,
                hint,
            )

    def _about_names(self, kind: str, audio: np.ndarray, question: str, prompt: str, lang: str, task: str = "") -> str:
        names = find_names(question, self.enrollment.names) or find_names(prompt, self.enrollment.names)
        if not names:
            self.counters["cannot_determine"] += 1
            self.counters["no_known_name"] += 1
            if task not in self._no_name_tasks:
                self._no_name_tasks.add(task)
                log.warning(
                    "cascade: task %r: a question names no enrolled subject (enrolled: %s), answered 'no known "
                    "name' (counted as no_known_name): %r",
                    task,
                    ", ".join(self.enrollment.names),
                    question.strip()[:200],
                )
            return self.book.text(lang, "no_known_name")
        analysis = self.analysis(audio)
        index = {n: i for i, n in enumerate(self.enrollment.names)}
        present = {n: analysis.present(index[n], self.min_speech_s) for n in names}
        if kind == "recognition":
            if len(names) == 1:
                return self.book.text(lang, "single_present" if present[names[0]] else "single_absent", name=names[0])
            return self.book.raw(lang, "joiner").join(
                self.book.text(lang, "present" if present[n] else "absent", name=n) for n in names
            )
        target = names[0]  # captioning / reasoning: about one person, the first named
        if not present[target]:
            return self.book.text(lang, "refusal", name=target)
        if lang != "en":
            self.counters["no_asr"] += 1
            return self.book.text(lang, "no_asr", name=target)
        words = self.transcript(audio, analysis, index[target])
        return (
            self.book.text(lang, "says", name=target, text=words)
            if words
            else self.book.text(lang, "says_nothing_recognised", name=target)
        )

    def _transcription(self, audio: np.ndarray, lang: str) -> str:
        if lang != "en":
            self.counters["no_asr"] += 1
            return self.book.text(lang, "transcription_no_asr")
        clustering = self.clustering(audio)
        if clustering.n_speakers == 0:
            self.counters["cannot_determine"] += 1
            return self.book.text(lang, "cannot_determine")
        items = []
        for k in range(clustering.n_speakers):
            spans = [(s.start, s.end) for s in clustering.segments if s.label == k]
            items.append(self.book.text(lang, "transcription_item", index=k + 1, text=self._asr(audio, spans)))
        return (
            self.book.raw(lang, "transcription_open")
            + self.book.raw(lang, "transcription_separator").join(items)
            + self.book.raw(lang, "transcription_close")
        )

    # ---- cached analyses ------------------------------------------------------------------------
    def analysis(self, audio: np.ndarray) -> AudioAnalysis:
        key = audio_hash(audio, AUDIO_SR)
        if key in self._analyses:
            if self._planned is None and key in self._first_use:
                self._first_use.discard(key)  # analysed while planning: this is its first real use
            elif self._planned is None:
                self.counters["analysis_cache_hits"] += 1
            self._analyses.move_to_end(key)
            return self._analyses[key]
        self.counters["audios_analysed"] += 1
        if self._planned is not None:
            self._first_use.add(key)
        return self._analyses.put(
            key, analyse(audio, AUDIO_SR, self.encoder, self.enrollment.centroids, self.threshold, self.cfg)
        )

    def clustering(self, audio: np.ndarray) -> Clustering:
        key = audio_hash(audio, AUDIO_SR)
        if key not in self._clusterings:
            self._clusterings.put(
                key,
                cluster(
                    self.analysis(audio),
                    AUDIO_SR,
                    self.cluster_threshold,
                    self.min_speech_s,
                    self.cfg.median,
                    self.split_test,
                ),
            )
        return self._clusterings[key]

    def transcript(self, audio: np.ndarray, analysis: AudioAnalysis, subject: int) -> str:
        key = (audio_hash(audio, AUDIO_SR), subject)
        if key not in self._transcripts:
            spans = [(s.start, s.end) for s in analysis.segments if s.label == subject]
            words = self._asr(audio, spans)
            if self._planned is not None:  # planning: nothing decoded yet
                return words
            self._transcripts.put(key, words)
        return self._transcripts[key]

    def _asr(self, audio: np.ndarray, spans: list[tuple[int, int]]) -> str:
        """One decode over a speaker's segments, joined by short silences (decoded ahead with
        the batch when there are ASR workers; while planning, recorded and answered with "")."""
        gap = np.zeros(int(ASR_GAP_S * AUDIO_SR), np.float32)
        pieces = [p for a, b in spans for p in (audio[a:b], gap)]
        joined = np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
        key = audio_hash(joined, AUDIO_SR)
        found = self._decoded.get(key)
        if self._planned is not None:  # planning: start the decode, answer nothing yet
            if found is None:
                self._decoded.put(key, self.asr.submit(joined))
                self._planned.append(key)
            return ""
        if found is None:
            self.counters["asr_calls"] += 1
            return self.asr.transcribe(joined)
        if isinstance(found, Future):
            found = self._decoded.put(key, self.asr.result(found, joined))
        return found


def _prompt_text(req: Request) -> str:
    """The text parts of the request's user messages, joined by newlines."""
    parts = []
    for message in req.messages:
        if message.get("role", "user") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        for part in content if isinstance(content, (list, tuple)) else []:
            if isinstance(part, dict) and part.get("type") == "text":
                parts.append(str(part.get("text", "")))
    return "\n".join(parts)


def _test_audio(req: Request) -> np.ndarray:
    """The request's last audio, checked (MULTI_AUDIO is False: earlier audios are ignored)."""
    if not req.audios:
        raise AudioError(f"{req.task} doc {req.doc_id}: the request carries no audio")
    audio = np.asarray(req.audios[-1], dtype=np.float32)
    if audio.ndim != 1 or audio.size == 0:
        raise AudioError(f"{req.task} doc {req.doc_id}: the audio is empty or not mono (shape {audio.shape})")
    if not np.all(np.isfinite(audio)):
        raise AudioError(f"{req.task} doc {req.doc_id}: the audio contains NaN or infinite samples")
    return audio
