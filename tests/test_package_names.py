"""A user's module named like one of miaudit's packages (``audit``, ``mechanisms``, ``estimators``,
``experiments``) beside their script is named in one line, with what to rename (issue 41 §8).

Each case runs Python in a fresh folder holding the user's files, as a user would."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from estimators.package_names import PACKAGES, shadowing_path

REPOSITORY = Path(__file__).resolve().parents[1]


def _run(argv, folder: Path) -> subprocess.CompletedProcess:
    # This checkout's packages come after the user's folder on sys.path, as an installed miaudit would.
    environment = {**os.environ, "PYTHONPATH": str(REPOSITORY)}
    return subprocess.run(argv, cwd=folder, env=environment, capture_output=True, text=True, timeout=240)


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_miaudits_own_packages_shadow_nothing():
    import audit  # noqa: F401 - loaded, so judged by where it came from

    assert PACKAGES == ("audit", "mechanisms", "estimators", "experiments")
    assert [shadowing_path(name) for name in PACKAGES] == [None] * 4
    assert shadowing_path("a_name_no_module_has") is None


@pytest.mark.integration  # Python subprocesses in a fresh folder
@pytest.mark.parametrize("name, user_file, error", [
    ("mechanisms", "mechanisms.py", "estimators.package_names.ShadowedPackageError"),
    ("mechanisms", "mechanisms/__init__.py", "estimators.package_names.ShadowedPackageError"),
    ("estimators", "estimators.py", "ImportError"),
])
def test_a_script_beside_a_shadowing_module_gets_one_line_naming_it(tmp_path, name, user_file, error):
    shadow = tmp_path / user_file
    shadow.parent.mkdir(exist_ok=True)
    shadow.write_text("HELPER = 1\n")
    (tmp_path / "check.py").write_text("from audit import assert_claim\n")
    done = _run([sys.executable, "check.py"], tmp_path)
    named = shadow if shadow.name != "__init__.py" else shadow.parent
    assert done.returncode == 1
    line = _last_line(done.stderr)
    assert line.startswith(f"{error}: {named}") and f"shadows miaudit's package '{name}': rename it" in line, line
    # What Python says without the check: the package's own imports fail further on.
    assert "is not a package" not in done.stderr and "partially initialized" not in done.stderr


@pytest.mark.integration  # a pytest session in a subprocess
def test_a_test_folder_with_its_own_mechanisms_package_fails_the_check_with_one_line(tmp_path):
    pytest_script = shutil.which("pytest")
    if pytest_script is None:
        pytest.skip("no pytest script on PATH")
    (tmp_path / "mechanisms").mkdir()
    (tmp_path / "mechanisms" / "__init__.py").write_text("def exact_sum(dbs, rng):\n    return dbs.sum(axis=1)\n")
    (tmp_path / "test_mine.py").write_text(
        "import numpy as np\nfrom mechanisms import exact_sum\n\n\ndef test_mine(assert_claim):\n"
        "    first = np.zeros((3, 1))\n    second = first.copy()\n    second[0, 0] = 1.0\n"
        "    assert_claim(exact_sum, 'dp:1', pairs=[(first, second)])\n")
    # The script, not python -m pytest: the plugin loads before the test's folder joins sys.path.
    done = _run([pytest_script, "-q", "-p", "audit.pytest_plugin", "-p", "no:cacheprovider"], tmp_path)
    assert done.returncode == 1, done.stdout
    errors = [line for line in done.stdout.splitlines() if line.startswith("E   ") and not line.endswith("%]")]
    assert errors == [f"E   estimators.package_names.ShadowedPackageError: {tmp_path / 'mechanisms'} shadows "
                      f"miaudit's package 'mechanisms': rename it (and delete the __pycache__ beside it); miaudit's "
                      f"packages are audit, mechanisms, estimators, experiments, installed at {REPOSITORY}"], done.stdout


@pytest.mark.integration  # the CLI in a subprocess
def test_the_experiment_command_names_a_shadowing_experiments_folder(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "__init__.py").write_text("")
    done = _run([sys.executable, "-m", "audit.cli.main", "experiment", "sequential-audit", "--quick"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"miaudit experiment: error: {tmp_path / 'experiments'} shadows miaudit's package "
                                   f"'experiments': rename it (and delete the __pycache__ beside it); miaudit's "
                                   f"packages are audit, mechanisms, estimators, experiments, installed at "
                                   f"{REPOSITORY}")


@pytest.mark.integration  # a pytest session in a subprocess
def test_a_users_audit_py_hidden_by_the_plugins_package_is_named_at_the_end_of_the_session(tmp_path):
    pytest_script = shutil.which("pytest")
    if pytest_script is None:
        pytest.skip("no pytest script on PATH")
    (tmp_path / "audit.py").write_text("HELPER = 1\n")
    (tmp_path / "test_helper.py").write_text("from audit import HELPER\n\n\ndef test_helper():\n    assert HELPER == 1\n")
    done = _run([pytest_script, "-q", "-p", "audit.pytest_plugin", "-p", "no:cacheprovider"], tmp_path)
    assert done.returncode == 2  # the test module cannot be imported: miaudit's 'audit' came first
    assert (f"miaudit: {tmp_path / 'audit.py'} is hidden by miaudit's package 'audit' (imported first, by this "
            "plugin): 'import audit' gets miaudit's; rename yours") in done.stdout.splitlines(), done.stdout
