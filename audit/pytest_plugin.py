"""The pytest plugin of miaudit: an ``assert_claim`` fixture whose checks share one session-level α.

Enable it with ``-p audit.pytest_plugin`` or ``pytest_plugins = ["audit.pytest_plugin"]`` in a
``conftest.py`` (an installed miaudit also registers it as the ``pytest11`` entry point
``audit.pytest_plugin``). A test asks for the fixture and calls it once::

    def test_laplace_meets_its_claim(assert_claim):
        assert_claim(laplace, "dp:1", pairs=[(db, neighbour)])

**False-alarm rate.** After collection, before any test runs, the plugin counts the K collected
tests that use the fixture and gives each the level α/K, with α = ``--miaudit-alpha`` (default
0.01). Each check fails a mechanism that meets its claim with probability at most α/K (its sequential
audit's type-I error, :mod:`audit.gating.sequential`), so by the union bound (Bonferroni) the probability
that **any** of the session's checks fails a correct mechanism is at most K · α/K = α. The split
is fixed before any outcome is seen, so it holds however the tests turn out; deselected tests are
not counted, and tests run alone (``pytest path::test``) get the whole α. One call per test: a
second call in the same test would spend its α again and is refused (parametrize the test instead). The K
tests are those that ask for the fixture by name (an argument of the test or of a fixture it uses, read at
collection); a test that asks for it only at run time (``request.getfixturevalue("assert_claim")``) was not
counted, and a check at α/K on top of the K shares would let the session's checks spend more than α: it is
refused with an error saying so.

The session ends with one summary line: how many checks ran, at what level, how many failed, and
the session's false-alarm bound. Under pytest-xdist (``pytest -n 2``) each worker counts its own
checks and the controller adds them up and prints the line; every worker collects all the tests,
so each check's level α/K is the same as in a session without workers.
"""

from __future__ import annotations

import pytest

#: The default session-level α (``--miaudit-alpha``).
SESSION_ALPHA = 0.01
_STATE = pytest.StashKey[dict]()


def pytest_addoption(parser):
    group = parser.getgroup("miaudit", "privacy checks (miaudit)")
    group.addoption("--miaudit-alpha", type=float, default=SESSION_ALPHA, metavar="ALPHA",
                    help="the whole session's false-alarm rate for assert_claim checks, split evenly across the "
                         f"tests that use the fixture (default {SESSION_ALPHA})")
    group.addoption("--miaudit-max-runs", type=int, default=None, metavar="N",
                    help="mechanism runs of each assert_claim check at most (default: the call's max_runs)")


def pytest_configure(config):
    alpha = config.getoption("--miaudit-alpha")
    if not 0 < alpha < 1:
        raise pytest.UsageError(f"--miaudit-alpha must be in (0, 1), got {alpha}")
    config.stash[_STATE] = {"alpha": alpha, "tests": 0, "passed": 0, "failed": 0, "errors": 0, "runs": 0}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    # After every other plugin has deselected: the split is over the tests that will run.
    counted = {item.nodeid for item in items if "assert_claim" in getattr(item, "fixturenames", ())}
    config.stash[_STATE]["tests"] = len(counted)
    config.stash[_STATE]["counted"] = counted


@pytest.fixture
def assert_claim(request):
    """:func:`audit.gating.assertions.assert_claim` at this test's share α/K of ``--miaudit-alpha`` (module docstring)."""
    __tracebackhide__ = True
    from estimators.package_names import check_package_names

    # The test's folder is on sys.path now: a user's mechanisms.py there would be imported next.
    check_package_names(("audit", "mechanisms", "estimators"))
    from audit.gating.assertions import ClaimRefuted, assert_claim as check, bonferroni_share

    state = request.config.stash[_STATE]
    if request.node.nodeid not in state.get("counted", ()):
        # Its level would come on top of the K shares that already sum to α (module docstring).
        raise RuntimeError("the assert_claim fixture was requested at run time (request.getfixturevalue), so this test "
                           "was not counted at collection among the checks that share the session's α; ask for "
                           "assert_claim as an argument of the test (or of a fixture it uses)")
    level = bonferroni_share(state["alpha"], max(1, state["tests"]))
    max_runs = request.config.getoption("--miaudit-max-runs")
    calls = []

    def bound(mechanism, claim, **kwargs):
        __tracebackhide__ = True  # a failure shows the test's line and the verdict, not the plugin
        if calls:
            raise RuntimeError("assert_claim was called twice in one test: each test's check spends its share of "
                               "the session's α once (parametrize the test to check several claims)")
        if "alpha" in kwargs:
            raise TypeError("the assert_claim fixture sets alpha from --miaudit-alpha; call audit.gating.assertions.assert_claim "
                            "directly for a level of your own")
        if max_runs is not None:
            kwargs["max_runs"] = max_runs
        calls.append(1)
        reproduce = f"pytest '{request.node.nodeid}' -p audit.pytest_plugin --miaudit-alpha={level!r}"
        try:
            audit = check(mechanism, claim, alpha=level, _reproduce=reproduce, **kwargs)
        except ClaimRefuted as failure:
            state["failed"] += 1
            state["runs"] += failure.audit.runs
            raise
        except Exception:
            state["errors"] += 1
            raise
        state["passed"] += 1
        state["runs"] += audit.runs
        return audit

    return bound


def summary_line(state: dict) -> str | None:
    """The session's one line (None when no check ran)."""
    ran = state["passed"] + state["failed"] + state["errors"]
    if not ran:
        return None
    level = state["alpha"] / max(1, state["tests"])
    return (f"miaudit: {ran} privacy check{'s' if ran != 1 else ''} at α = {level:.3g} each ({state['tests']} "
            f"collected, session α = {state['alpha']:g}, Bonferroni): {state['passed']} passed, {state['failed']} "
            f"refuted, {state['errors']} errors, {state['runs']} mechanism runs; the chance that any check failed a "
            f"mechanism meeting its claim is at most {state['alpha']:g}")


_COUNTS = ("passed", "failed", "errors", "runs")


def pytest_sessionfinish(session, exitstatus):
    # Under pytest-xdist a worker's checks are counted in the worker; its counts travel to the
    # controller in ``workeroutput`` (xdist's channel for a worker's results), which prints the line.
    output = getattr(session.config, "workeroutput", None)
    if output is not None:
        # The counts only: the set of counted tests stays in the worker (the controller prints no level from it).
        output["miaudit"] = {key: value for key, value in session.config.stash[_STATE].items() if key != "counted"}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist's controller: add a finished worker's counts to the session's."""
    counts = getattr(node, "workeroutput", {}).get("miaudit")
    if counts is None:
        return
    state = node.config.stash[_STATE]
    for key in _COUNTS:
        state[key] += counts[key]
    # Each worker collects every test, so each holds the whole session's K (the controller collects none).
    state["tests"] = max(state["tests"], counts["tests"])


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from estimators.package_names import hidden_modules

    line = summary_line(config.stash[_STATE])
    if line is not None:
        terminalreporter.write_line(line)
    # This plugin imported miaudit's packages before pytest put the tests' folders on sys.path.
    for name, path in hidden_modules():
        terminalreporter.write_line(f"miaudit: {path} is hidden by miaudit's package '{name}' (imported first, by "
                                    f"this plugin): 'import {name}' gets miaudit's; rename yours")
