"""Issue 31 item 4: the light commands (catalog, demo --help, experiment --list) import no heavy package.

Their speed is measured by experiments/cli_startup.py (a benchmark, not a test); here: what they
import, and that the stored listings they print are the live ones (audit/cli/listings.py).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest

from audit.cli.listings import LISTINGS, live_listing, stored_listing

HEAVY = ("torch", "scipy", "sklearn", "numpy", "matplotlib")


def _same(stored, live, where="listing"):
    """Equal JSON trees, floats within 1e-9 relative (a library's last digit may move)."""
    if isinstance(live, float) and isinstance(stored, (int, float)):
        assert math.isclose(stored, live, rel_tol=1e-9, abs_tol=1e-12), where
    elif isinstance(live, dict):
        assert isinstance(stored, dict) and set(stored) == set(live), where
        for key in live:
            _same(stored[key], live[key], f"{where}.{key}")
    elif isinstance(live, list):
        assert isinstance(stored, list) and len(stored) == len(live), where
        for index, (a, b) in enumerate(zip(stored, live)):
            _same(a, b, f"{where}[{index}]")
    else:
        assert stored == live, where


@pytest.mark.parametrize("name", sorted(LISTINGS))
def test_stored_listing_is_the_live_one(name):
    stored = stored_listing(name)
    assert stored is not None, f"{LISTINGS[name]} is missing: run python -m audit.cli.listings"
    try:
        _same(stored, live_listing(name), name)
    except AssertionError as exc:
        raise AssertionError(f"{LISTINGS[name].name} differs from the live {name} at {exc}; "
                             "run python -m audit.cli.listings") from None


@pytest.mark.integration
@pytest.mark.parametrize("argv", [["catalog"], ["catalog", "--buggy"], ["demo", "--help"], ["experiment", "--list"]])
def test_light_commands_import_no_heavy_package(argv):
    code = ("import sys, contextlib, io\nfrom audit.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        status = main(sys.argv[1:])\n    except SystemExit as exc:\n        status = exc.code\n"
            f"print(status, [m for m in {HEAVY!r} if m in sys.modules])\n")
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": os.getcwd()})
    assert done.stdout.split("\n")[-2] == "0 []", done.stdout + done.stderr


def test_catalog_listing_prints_the_stored_entries(capsys):
    from audit.cli.main import main

    assert main(["catalog", "--json", "--buggy"]) == 0
    printed = json.loads(capsys.readouterr().out)["mechanisms"]
    assert [e["name"] for e in printed] == [e["name"] for e in stored_listing("catalog") if e["buggy"]]


def test_experiment_listing_is_not_used_once_the_modules_change(monkeypatch):
    from audit.cli import listings

    current = listings._experiment_modules()
    assert listings.stored_listing("experiments") is not None
    monkeypatch.setattr(listings, "_experiment_modules", lambda: current + ["a_new_experiment"])
    assert listings.stored_listing("experiments") is None  # the command then lists live
