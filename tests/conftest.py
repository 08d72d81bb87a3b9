"""Shared test configuration: the small critic, and the ``train`` marker kept true.

``train`` marks every test that trains critics (:mod:`estimators.neural`), so that
``python -m pytest -m "not train"`` is a quick loop over the maths alone (README, Tests). The
marker is kept true: a test without it that trains a critic in the test process fails at
teardown, naming the marker to add.
"""

from __future__ import annotations

import functools

import pytest

from estimators.critic_config import CriticConfig

#: The critic of tests that need critics trained but assert nothing about their accuracy
#: (plumbing, determinism, shapes): 20 steps, well under a second per ensemble. Tests that
#: measure a leak or an estimate keep their own, larger step budget next to the assertion
#: that needs it.
SMALL_CRITIC = CriticConfig(max_steps=20)


@pytest.fixture
def small_critic() -> CriticConfig:
    """:data:`SMALL_CRITIC`."""
    return SMALL_CRITIC


_TRAININGS = {"count": 0}
_TRAININGS_BEFORE = pytest.StashKey[int]()


def _count_trainings() -> None:
    """Count every ensemble trained: whatever calls fit_critics, _fit_chunk trains it, chunk by chunk."""
    from estimators import neural  # torch: once per session

    if getattr(neural._fit_chunk, "counts_trainings", False):
        return
    fit_chunk = neural._fit_chunk

    @functools.wraps(fit_chunk)
    def counted(*args, **kwargs):
        _TRAININGS["count"] += 1
        return fit_chunk(*args, **kwargs)

    counted.counts_trainings = True
    neural._fit_chunk = counted


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    # Counted from before the fixtures are set up: a module-scoped fixture that trains critics
    # (a quick experiment run) trains them in the setup of the first test that uses it.
    _count_trainings()
    item.stash[_TRAININGS_BEFORE] = _TRAININGS["count"]
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Fail a test that trains critics without the ``train`` marker (reported at its teardown)."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "teardown" or item.get_closest_marker("train") is not None:
        return
    before = item.stash.get(_TRAININGS_BEFORE, _TRAININGS["count"])
    if _TRAININGS["count"] != before and report.outcome != "failed":
        report.outcome = "failed"
        report.longrepr = f"{item.nodeid} trains critics (or uses a fixture that does): mark it @pytest.mark.train"

