"""Speech regions, sliding windows and label smoothing, from the audio alone (no ground truth).

1. :func:`speech_regions`: webrtcvad flags 30 ms frames as speech; gaps shorter than
   ``max_gap_s`` are bridged and regions shorter than ``min_region_s`` dropped.
2. :func:`make_windows`: windows of ``window_s`` every ``hop_s`` inside each region (the last one
   aligned to the region's end; a region shorter than a window but at least ``min_window_s`` long
   is one window). Each window also *owns* a span of the region, from the midpoint with its
   previous window's centre to the midpoint with its next one's, so the owned spans tile the
   region: speech time per label and merged segments come from the owned spans.
3. :func:`smooth_scores`: a median filter over windows (per region, per column) of a
   windows × candidates score matrix, before labels are chosen.
4. :func:`merge_segments` / :func:`seconds_by_label`: consecutive windows with one label → segments.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.ndimage import median_filter


@dataclasses.dataclass(frozen=True)
class SegmenterConfig:
    window_s: float = 1.6
    hop_s: float = 0.8
    vad_mode: int = 2  # webrtcvad aggressiveness, 0 (least) … 3 (most)
    frame_ms: int = 30
    max_gap_s: float = 0.3
    min_region_s: float = 0.3
    min_window_s: float = 0.5
    median: int = 3  # median-filter length in windows (1 = off)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Window:
    start: int  # samples of the audio this window's embedding sees
    end: int
    own_start: int  # samples of the region this window stands for (the spans tile the region)
    own_end: int
    region: int


@dataclasses.dataclass(frozen=True)
class Segment:
    label: object
    start: int  # samples
    end: int


def _runs(flags: np.ndarray) -> list[tuple[int, int]]:
    """``[start, end)`` index pairs of the runs of True in a boolean array."""
    padded = np.concatenate([[False], flags, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2])]


def speech_regions(audio: np.ndarray, sr: int, cfg: SegmenterConfig) -> list[tuple[int, int]]:
    """Speech regions ``[(start, end), ...]`` in samples, found by webrtcvad."""
    import webrtcvad

    vad = webrtcvad.Vad(int(cfg.vad_mode))
    frame = sr * cfg.frame_ms // 1000
    n = len(audio) // frame
    if n == 0:
        return []
    pcm = (np.clip(audio[: n * frame], -1.0, 1.0) * 32767).astype("<i2")
    flags = np.array([vad.is_speech(pcm[i * frame : (i + 1) * frame].tobytes(), sr) for i in range(n)])
    runs = _runs(flags)
    max_gap, min_len = cfg.max_gap_s * sr / frame, cfg.min_region_s * sr / frame
    merged: list[list[int]] = []
    for a, b in runs:
        if merged and a - merged[-1][1] <= max_gap:
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return [(a * frame, b * frame) for a, b in merged if b - a >= min_len]


def make_windows(regions: list[tuple[int, int]], sr: int, cfg: SegmenterConfig) -> list[Window]:
    """Sliding windows inside each region, with the span of the region each one owns."""
    win, hop, min_win = int(cfg.window_s * sr), int(cfg.hop_s * sr), int(cfg.min_window_s * sr)
    out: list[Window] = []
    for r, (a, b) in enumerate(regions):
        if b - a < win:
            if b - a >= min_win:
                out.append(Window(a, b, a, b, r))
            continue
        starts = list(range(a, b - win + 1, hop))
        if starts[-1] + win < b:
            starts.append(b - win)
        centres = [s + win // 2 for s in starts]
        for i, s in enumerate(starts):
            own_a = a if i == 0 else (centres[i - 1] + centres[i]) // 2
            own_b = b if i == len(starts) - 1 else (centres[i] + centres[i + 1]) // 2
            out.append(Window(s, s + win, own_a, own_b, r))
    return out


def smooth_scores(scores: np.ndarray, windows: list[Window], size: int) -> np.ndarray:
    """Median-filter a ``[windows, candidates]`` score matrix along the windows of each region."""
    scores = np.asarray(scores, dtype=np.float32)
    if size <= 1 or len(windows) == 0:
        return scores
    out = scores.copy()
    regions = np.array([w.region for w in windows])
    for r in np.unique(regions):
        rows = np.flatnonzero(regions == r)
        out[rows] = median_filter(scores[rows], size=(size, 1), mode="nearest")
    return out


def merge_segments(windows: list[Window], labels: list) -> list[Segment]:
    """Consecutive windows of one region with one label → one segment over their owned spans."""
    segments: list[Segment] = []
    for w, label in zip(windows, labels):
        last = segments[-1] if segments else None
        if last is not None and last.label == label and last.end == w.own_start:
            segments[-1] = Segment(label, last.start, w.own_end)
        else:
            segments.append(Segment(label, w.own_start, w.own_end))
    return segments


def seconds_by_label(windows: list[Window], labels: list, sr: int) -> dict:
    """Speech seconds owned by each label."""
    out: dict = {}
    for w, label in zip(windows, labels):
        out[label] = out.get(label, 0.0) + (w.own_end - w.own_start) / sr
    return out


def cut(audio: np.ndarray, windows: list[Window]) -> list[np.ndarray]:
    return [audio[w.start : w.end] for w in windows]


def embed_windows(encoder, audios: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Embed window audios in one batch; ``(embeddings, ok)``.

    An encoder may reject a window (resemblyzer finds no speech after its own trimming); then the
    windows are embedded one by one and the rejected ones get a zero row and ``ok = False``.
    """
    try:
        embs = encoder.embed(audios)
        return embs, np.ones(len(audios), dtype=bool)
    except ValueError:
        rows, ok = [], []
        for a in audios:
            try:
                rows.append(encoder.embed_one(a))
                ok.append(True)
            except ValueError:
                rows.append(None)
                ok.append(False)
        dim = next((r.shape[0] for r in rows if r is not None), getattr(encoder, "dim", 1))
        embs = np.stack([r if r is not None else np.zeros(dim, np.float32) for r in rows])
        return embs.astype(np.float32), np.array(ok, dtype=bool)
