"""Every call of the scanned library's code outside a case's audited calls is bounded by the scan's ``--timeout``
too (:mod:`audit.scan.cases`, :func:`audit.scan.case_audit.audit_case`): a module whose import hangs, a public name
whose reading hangs (a module's ``__getattr__``), a family's grid or grid point that calls a library that hangs, and a
case whose call's build (its family's setup) hangs are each skipped naming it, in the scan's own process (where no
worker's hard kill reaches) and with ``in_process=True``, within a bound far below the planted sleep."""

from __future__ import annotations

import textwrap
import time
from dataclasses import dataclass

import pytest

from audit.scan.case_audit import audit_case, list_cases
from audit.scan.cases import EntryPoint, build_cases
from audit.scan.profiles.base import ArrayTool
from audit.scan.running import scan

#: What a planted call sleeps: far past the tests' bound (TIMEOUT), so a test that ends in HANG / 2 saw the bound.
HANG = 120.0
TIMEOUT = 0.5

MODULE = f'''
"""Entry points of a user's module, one of which hangs as the scan reads it (a lazy ``__getattr__``)."""
import time

import numpy as np

__all__ = ["noisy_sum", "lazy_tool"]

HANG = {HANG}


def noisy_sum(array, epsilon=1.0, random_state=None):
    return float(np.sum(array) + np.random.default_rng(random_state).laplace(scale=10.0 / epsilon))


def hanging_calibration():
    time.sleep(HANG)


def __getattr__(name):
    if name == "lazy_tool":  # a lazy import that never ends
        time.sleep(HANG)
    raise AttributeError(name)
'''


@pytest.fixture
def planted(tmp_path, monkeypatch):
    path = tmp_path / "planted_bounds.py"
    path.write_text(textwrap.dedent(MODULE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    return path


def test_a_public_name_whose_reading_hangs_is_skipped_naming_it(planted):
    started = time.perf_counter()
    result = scan(str(planted), epsilons=(1.0,), max_runs=20, timeout=TIMEOUT, in_process=True)
    assert time.perf_counter() - started < HANG / 2
    reasons = {row["what"]: row["reason"] for row in result.skipped}
    assert reasons["planted_bounds.lazy_tool"] == (
        f"planted_bounds.lazy_tool did not return within {TIMEOUT:g} s as the scan read it and its signature (the "
        "scan's --timeout); it was skipped")
    # The rest of the module is still listed: noisy_sum's case (left out of the split at 20 runs, without a run).
    assert any(row["what"].startswith("planted_bounds.noisy_sum(") for row in result.skipped)


@pytest.mark.integration
def test_a_worker_lists_within_a_bound_too(planted):
    # A worker lists the cases again (audit.scan.isolation.list_in_worker), where the same name hangs: bounded there
    # too (WORKER_LISTING_TIMEOUTS × --timeout), it skips it as the scan did and audits the case it is sent.
    started = time.perf_counter()
    result = scan(str(planted), epsilons=(1.0,), max_runs=3000, timeout=TIMEOUT, workers=1)
    assert time.perf_counter() - started < HANG / 2
    assert [o["entry"] for o in result.outcomes] == ["planted_bounds.noisy_sum"]
    assert [row["what"] for row in result.skipped] == ["planted_bounds.lazy_tool"]


def test_a_worker_bounds_its_listing_by_a_multiple_of_the_timeout(monkeypatch):
    # What the scan's process listed in time, a fresh worker must list too: its bound is a multiple of the scan's.
    from audit.scan import isolation

    given = []
    monkeypatch.setattr(isolation, "list_cases", lambda target, epsilons, timeout: given.append(timeout) or ([], []))
    monkeypatch.setattr(isolation, "_warm", lambda: None)
    monkeypatch.setattr(isolation, "_CASES", {})
    isolation.list_in_worker(isolation.ScanTarget("scan", "lib", (1.0,), 2.5))
    isolation.list_in_worker(isolation.ScanTarget("scan", "other", (1.0,)))
    assert given == [isolation.WORKER_LISTING_TIMEOUTS * 2.5, None] and isolation.WORKER_LISTING_TIMEOUTS > 1


def test_a_module_whose_import_hangs_is_skipped_naming_it(tmp_path, monkeypatch):
    # The bound of the listing's own import (a library with a profile is imported without a trial import first).
    from audit.scan.profiles.base import Profile

    (tmp_path / "hangs_on_import.py").write_text(f"import time\ntime.sleep({HANG})\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    profile = Profile(name="hangs", modules=("hangs_on_import",), families=(ArrayTool(),))
    monkeypatch.setattr("audit.scan.case_audit.profile_for", lambda target: profile)
    started = time.perf_counter()
    skipped, cases = list_cases("hangs", (1.0,), timeout=TIMEOUT)
    assert time.perf_counter() - started < HANG / 2
    assert not cases and [(s.what, s.reason) for s in skipped] == [
        ("hangs_on_import", f"module hangs_on_import did not return within {TIMEOUT:g} s as it was imported (the "
                            "scan's --timeout); it was skipped")]


@dataclass(frozen=True)
class CalibratedTool(ArrayTool):
    """An array tool whose family calls the library to build its grid (as OpenDP's calibration does)."""

    def settings(self, obj, epsilons=(1.0,)):
        __import__("planted_bounds").hanging_calibration()
        return ArrayTool.settings(self, obj, epsilons)


@dataclass(frozen=True)
class MappedTool(ArrayTool):
    """An array tool whose family reads each grid point's claim from the library (as OpenDP's privacy map)."""

    def claim(self, obj, settings):
        __import__("planted_bounds").hanging_calibration()
        return ArrayTool.claim(self, obj, settings)


def test_a_grid_or_grid_point_whose_build_hangs_is_skipped_naming_it(planted):
    import planted_bounds

    entries = [EntryPoint("planted_bounds", "noisy_sum", planted_bounds.noisy_sum, family)
               for family in (CalibratedTool(), MappedTool())]
    started = time.perf_counter()
    cases, skipped = build_cases(entries, (1.0,), timeout=TIMEOUT)
    assert time.perf_counter() - started < HANG / 2
    assert not cases
    assert [(s.what, s.reason) for s in skipped] == [
        ("planted_bounds.noisy_sum", f"entry point planted_bounds.noisy_sum did not return within {TIMEOUT:g} s as its "
                                     "parameter grid was built (the scan's --timeout); it was skipped"),
        ("planted_bounds.noisy_sum(epsilon=1.0)",
         f"entry point planted_bounds.noisy_sum(epsilon=1.0) did not return within {TIMEOUT:g} s as its case was "
         "built (the scan's --timeout); it was skipped")]


@dataclass(frozen=True)
class SetUpTool(ArrayTool):
    """An array tool built once per case from the library (as OpenDP's measurement): its setup hangs."""

    def setup_source(self, obj, settings):
        return "__import__('planted_bounds').hanging_calibration()"


def test_a_case_whose_call_hangs_as_it_is_built_is_skipped_naming_it(planted):
    # audit_case is what scan(..., in_process=True) runs, where no worker's hard kill reaches.
    import planted_bounds

    (case, *_), _ = build_cases([EntryPoint("planted_bounds", "noisy_sum", planted_bounds.noisy_sum, SetUpTool())],
                                (1.0,))
    started = time.perf_counter()
    outcome = audit_case(case, alpha=0.05, max_runs=100, timeout=TIMEOUT, seed=0)
    assert time.perf_counter() - started < HANG / 2
    assert outcome["status"] == "skipped" and outcome["reason"] == (
        f"hangs or exits: entry point planted_bounds.noisy_sum did not return within {TIMEOUT:g} s while its call was "
        "built (the family's preamble and setup) (the scan's --timeout)")
