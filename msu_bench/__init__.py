"""MSU-Bench: multi-speaker conversation understanding benchmark builder."""

__version__ = "0.1.0"
