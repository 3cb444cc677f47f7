"""lalm-eval: evaluation harness and shared building blocks for audio-language model benchmarks."""

__version__ = "0.1.0"
