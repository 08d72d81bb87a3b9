"""The ``integration`` marker is kept true by tests/conftest.py: a test that starts a process
without it fails at teardown, naming the marker."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent

INNER_TESTS = '''
import multiprocessing
import subprocess
import sys

import pytest


def test_pure_maths():
    assert 1 + 1 == 2


def test_unmarked_subprocess():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


@pytest.mark.integration
def test_marked_subprocess():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_unmarked_process():
    process = multiprocessing.get_context("spawn").Process(target=int)
    process.start()
    process.join()


@pytest.fixture(scope="module")
def started_once():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_unmarked_first_user_of_a_module_fixture_that_starts_a_process(started_once):
    pass
'''


@pytest.mark.integration  # runs pytest in a fresh interpreter: the counting wraps process starts once per process
def test_a_test_that_starts_a_process_without_the_marker_fails_naming_it(pytester, monkeypatch):
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makeini("[pytest]\nmarkers =\n    train: t\n    integration: i\n")
    pytester.makepyfile(test_inner=INNER_TESTS)
    repository = str(TESTS.parent)
    # The tests folder too: the conftest loads its plugin xdist_scheduling from there.
    paths = [repository, str(TESTS), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(passed=5, errors=3)
    for name in ("test_unmarked_subprocess", "test_unmarked_process",
                 "test_unmarked_first_user_of_a_module_fixture_that_starts_a_process"):
        result.stdout.fnmatch_lines([f"*{name}* starts a process or uses Ray*mark it @pytest.mark.integration*"])
    assert "test_marked_subprocess starts" not in result.stdout.str()
    assert "test_pure_maths starts" not in result.stdout.str()


FIRST_PLOT = '''
def test_first_plot_on_a_fresh_machine():
    import matplotlib.font_manager  # noqa: F401
'''


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("fc-list") is None, reason="matplotlib lists fonts with fc-list only where it exists")
def test_matplotlib_building_its_font_cache_is_not_charged_to_a_test(pytester, monkeypatch, tmp_path):
    # A fresh CI machine has no font cache: matplotlib's first import runs fc-list in a subprocess.
    pytest.importorskip("matplotlib")
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    pytester.makeini("[pytest]\nmarkers =\n    train: t\n    integration: i\n")
    pytester.makepyfile(test_inner=FIRST_PLOT)
    repository = str(TESTS.parent)
    # The tests folder too: the conftest loads its plugin xdist_scheduling from there.
    paths = [repository, str(TESTS), os.environ.get("PYTHONPATH")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, paths)))
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "fresh-matplotlib"))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-rE")
    result.assert_outcomes(passed=1)
    assert (tmp_path / "fresh-matplotlib").is_dir()
