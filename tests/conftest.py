"""Shared test configuration: the small critic, and the ``train`` and ``integration`` markers kept true.

``train`` marks every test that trains critics (:mod:`estimators.neural`); ``integration`` marks
every test that starts a process (a CLI run in a fresh interpreter, an external command, worker
processes, Ray), runs a quick experiment, writes full reports, waits out a timeout or spends
seconds cross-checking against an external library (Opacus, dp-accounting). Deselecting
both and the statistical ``slow`` studies, ``python -m pytest -m "not train and not integration and not slow"``,
is a quick loop over the maths
(README, set-up). The markers are kept true where a test's cost can be counted: a test without
``train`` that trains a critic in the test process, or without ``integration`` that starts a
process or uses Ray, fails at teardown, naming the marker to add (tests/test_markers.py).
"""

from __future__ import annotations

import functools
import gc
import importlib.util
import multiprocessing.process
import os
import subprocess
import sys
import textwrap

import pytest

# Under pytest-xdist (``-n 2``) each worker holds a core: torch's intra-op threads, sized to the cores
# that look idle (estimators.device.free_cores) when the other worker is between tests, would then
# spin-wait across workers. One thread per worker, as an explicit OMP_NUM_THREADS, which miaudit keeps.
if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = "1"
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)

from estimators.critic_config import CriticConfig

# The assert_claim fixture (one session-level α split across the checks; audit.pytest_plugin). The
# installed package registers it under the same name, so it loads once either way. xdist_scheduling:
# ``--dist loadgroup`` that finishes the run when a worker process dies (tests/xdist_scheduling.py).
pytest_plugins = ("audit.pytest_plugin", "xdist_scheduling")

#: The critic of tests that need critics trained but assert nothing about their accuracy
#: (plumbing, determinism, shapes): 20 steps, well under a second per ensemble. Tests that
#: measure a leak or an estimate keep their own, larger step budget next to the assertion
#: that needs it.
SMALL_CRITIC = CriticConfig(max_steps=20)


@pytest.fixture
def small_critic() -> CriticConfig:
    """:data:`SMALL_CRITIC`."""
    return SMALL_CRITIC


@pytest.fixture
def plant(tmp_path, monkeypatch):
    """Plant a module for a test to scan: ``plant(name, source, on_path=True)`` writes ``source`` (dedented) to
    ``tmp_path/name.py`` and returns that path, its folder put on ``sys.path`` for the test (a scan of the module by
    name imports it from there) unless ``on_path`` is False (a scan of the file by its path)."""

    def planted(name: str, source: str, on_path: bool = True):
        path = tmp_path / f"{name}.py"
        path.write_text(textwrap.dedent(source), encoding="utf-8")
        if on_path:
            monkeypatch.syspath_prepend(str(tmp_path))
        return path

    return planted


@pytest.fixture
def planted_on_path(monkeypatch):
    """Put the tests' folder on ``sys.path`` for the test, so that the planted-bug library (tests/planted_lib) and its
    planted modules import by name, as a scan of ``planted_lib`` needs. A module of scan tests that all need it says
    so once: ``pytestmark = pytest.mark.usefixtures("planted_on_path")``."""
    monkeypatch.syspath_prepend(os.path.dirname(os.path.abspath(__file__)))


def needs(*modules: str) -> pytest.MarkDecorator:
    """Skip unless every one of ``modules`` is installed, found without importing it.

    Unlike a module-level ``pytest.importorskip``, collecting the tests (the quick loop included)
    then imports no optional library; the tests that use one import it when they run.
    """
    missing = [module for module in modules if importlib.util.find_spec(module) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)}")


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


#: Processes started and objects put into Ray: what ``integration`` stands for, and costs.
_STARTS = {"count": 0}
_STARTS_BEFORE = pytest.StashKey[int]()


def _counted(start):
    """``start`` that also counts its calls in :data:`_STARTS`."""

    @functools.wraps(start)
    def counted(*args, **kwargs):
        _STARTS["count"] += 1
        return start(*args, **kwargs)

    counted.counts_starts = True
    return counted


def _count_starts() -> None:
    """Count every process started and every use of Ray.

    ``subprocess`` (a CLI run in a fresh interpreter, an external command, Ray's own services)
    goes through ``Popen.__init__``; ``multiprocessing`` (and so ``ProcessPoolExecutor``) through
    ``BaseProcess.start``. A Ray instance that an earlier test's module-scoped fixture started
    starts no process when used again, but every run on it puts the mechanism into its object
    store with ``ray.put``: counted once Ray is imported (never imported here only to count).
    """
    owners = [(subprocess.Popen, "__init__"), (multiprocessing.process.BaseProcess, "start")]
    if "ray" in sys.modules and hasattr(sys.modules["ray"], "put"):
        owners.append((sys.modules["ray"], "put"))
    for owner, name in owners:
        if not getattr(getattr(owner, name), "counts_starts", False):
            setattr(owner, name, _counted(getattr(owner, name)))


# Collecting imports the library with torch and scipy and builds two thousand test items, all of
# which live until the session ends. The cyclic garbage collector would walk that growing heap
# again and again while it is built (seconds of the quick loop, most of its collection time) and
# then at every full collection while the tests run. So it waits until collection is over, and what
# collection built is then moved out of its reach with gc.freeze (the objects stay alive either way;
# the tests' own garbage is collected as before). The tests import more as they go (sympy through
# torch's optimizers, opacus, dp-accounting, matplotlib's backends: some 400,000 objects), so what
# survives a test module is frozen too, after a collection that frees that module's garbage.
gc.disable()


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session):
    """Collect with the garbage collector off, then freeze what collection built and turn it on."""
    yield
    gc.collect()
    gc.freeze()
    gc.enable()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of a module (its module-scoped fixtures torn down), collect and freeze."""
    yield
    if getattr(nextitem, "module", None) is not getattr(item, "module", None):
        gc.collect()
        gc.freeze()


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """``pytest -n N`` (README, ``.ci/run``) distributes by ``loadgroup``, not xdist's default ``load``.

    ``loadgroup`` is ``load`` (each test to whichever worker is free) except for the groups marked
    below, so it keeps the module-scoped fixtures built once without a longer command. Runs
    before pytest-xdist picks its default (an explicit ``--dist`` is kept).
    """
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", None) == "no":
        config.option.dist = "loadgroup"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Keep the tests that share a module-scoped fixture on one pytest-xdist worker.

    Under ``-n 2`` (``--dist loadgroup``) every other test goes to whichever worker is free; a
    module's quick experiment run, Ray instance or other module-scoped fixture is then built once,
    by one worker, as in a serial run. Runs before xdist reads the marks.
    """
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        modules = set() if info is None else {
            fixturedef.baseid for name in info.names_closure for fixturedef in info.name2fixturedefs.get(name, ())
            if fixturedef.scope != "function" and fixturedef.baseid}  # the test files' fixtures, not pytest's own
        for module in sorted(modules):
            item.add_marker(pytest.mark.xdist_group(module))


def pytest_sessionstart(session):
    """Let matplotlib build its font cache now, if it is installed and has none.

    On a machine where matplotlib has never run (a fresh CI machine), its first import lists the
    fonts with ``fc-list`` in a subprocess: the machine's setup, not the cost of whichever test
    happens to plot first, which would otherwise fail for a process it did not start.
    """
    if importlib.util.find_spec("matplotlib") is not None:
        import matplotlib.font_manager  # noqa: F401


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    # Counted from before the fixtures are set up: a module-scoped fixture that trains critics
    # (a quick experiment run) or starts Ray does so in the setup of the first test that uses it.
    _count_trainings()
    _count_starts()
    item.stash[_TRAININGS_BEFORE] = _TRAININGS["count"]
    item.stash[_STARTS_BEFORE] = _STARTS["count"]
    yield


def _missing_marker(item) -> str | None:
    """What ``item`` did that its markers do not say, as the message of its failure (or None)."""
    if item.get_closest_marker("train") is None:
        if _TRAININGS["count"] != item.stash.get(_TRAININGS_BEFORE, _TRAININGS["count"]):
            return f"{item.nodeid} trains critics (or uses a fixture that does): mark it @pytest.mark.train"
    if item.get_closest_marker("integration") is None:
        if _STARTS["count"] != item.stash.get(_STARTS_BEFORE, _STARTS["count"]):
            return (f"{item.nodeid} starts a process or uses Ray (or uses a fixture that does): "
                    "mark it @pytest.mark.integration")
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Fail a test that trains critics without the ``train`` marker, or starts a process or uses Ray
    without the ``integration`` marker (reported at its teardown)."""
    outcome = yield
    report = outcome.get_result()
    if call.when != "teardown" or report.outcome == "failed":
        return
    message = _missing_marker(item)
    if message is not None:
        report.outcome = "failed"
        report.longrepr = message

