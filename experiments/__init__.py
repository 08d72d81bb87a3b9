"""Reproduced figures, studies and benchmarks. Nothing outside this package imports from it."""
