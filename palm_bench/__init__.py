"""PALM-Bench: personalized audio-language model benchmark builder."""

__version__ = "0.1.0"
