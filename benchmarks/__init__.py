"""Benchmarks, run with `python -m benchmarks`."""
