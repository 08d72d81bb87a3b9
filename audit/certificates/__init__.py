"""Certificates: bounds that hold with probability at least 1 − α on fresh runs.

The event bounds (Clopper–Pearson), the odds and rate ratios, the μ-GDP certificate and its joint
binomial test, the secrets' MI bounds, and the claim tests that say which test can refute a claim
and at what share of α.
"""
