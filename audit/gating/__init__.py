"""Gating: audits that decide when to stop or what to spend — nested sequential looks, budget
forecasts from a pilot, and ``assert_claim`` for test suites.
"""
