"""Metrics shared by the benchmarks."""
