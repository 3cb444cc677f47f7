"""Audio building blocks shared by the benchmarks: I/O, speaker embeddings, speech synthesis."""

from lalm_eval.audio.io import TARGET_SR, audio_hash, read_audio, resample, write_audio

__all__ = ["TARGET_SR", "audio_hash", "read_audio", "resample", "write_audio"]
