"""Audits: Pufferfish frameworks, hypothesis tests, certified and conversion bounds, reports, the CLI."""
