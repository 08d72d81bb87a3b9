"""A worker process that dies under ``pytest -n 2 --dist loadgroup`` costs its test, not the run
(tests/xdist_scheduling.py): the run finishes, names the test, and runs every other test once."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))

#: 30 quick tests, the 6th of which ends its worker process as a crash in compiled code would; the others
#: record that they ran, so that none is run twice or left out.
SUITE = textwrap.dedent("""
    import os
    import time

    import pytest


    @pytest.mark.parametrize("number", range(30))
    def test_one(number):
        with open(os.path.join(os.environ["RAN_FOLDER"], str(number)), "a") as ran:
            ran.write("ran\\n")
        time.sleep(0.05)  # keeps work on the queue when the worker dies, for its replacement
        if number == 5:
            os._exit(1)
""")


@pytest.mark.integration
def test_a_worker_dying_fails_its_test_and_the_run_finishes(tmp_path):
    (tmp_path / "test_crashing.py").write_text(SUITE)
    ran = tmp_path / "ran"
    ran.mkdir()
    env = dict(os.environ, RAN_FOLDER=str(ran), PYTHONPATH=TESTS + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p",
                           "xdist_scheduling", "-p", "no:cacheprovider", "-p", "no:randomly", "test_crashing.py"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=180)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "node down" in done.stdout
    assert re.search(r"\b1 failed, 29 passed\b", done.stdout), done.stdout
    assert "test_crashing.py::test_one[5]" in done.stdout  # the test the worker died in, by name
    assert sorted(int(name) for name in os.listdir(ran)) == list(range(30))
    assert all((ran / name).read_text() == "ran\n" for name in os.listdir(ran))  # none run twice
