"""Benchmarks: measured here, never asserted in tests. Run ``python -m benchmarks --help``."""
