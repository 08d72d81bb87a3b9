"""The curated public API of the three packages: every exported name resolves, importing a
package loads neither torch nor scipy, and the docstring examples run (doctests)."""

import doctest
import importlib
import subprocess
import sys

import pytest

PACKAGES = ("audit", "estimators", "mechanisms")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_resolves_and_is_documented(name):
    package = importlib.import_module(name)
    assert package.__all__, f"{name} exports nothing"
    for exported in package.__all__:
        obj = getattr(package, exported)
        assert obj.__doc__, f"{name}.{exported} has no docstring"
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        getattr(package, "not_a_name")


def test_importing_the_packages_loads_neither_torch_nor_scipy():
    code = ("import sys, audit, estimators, mechanisms; "
            "print(sorted(m for m in ('torch', 'scipy', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("name", PACKAGES)
def test_package_docstring_examples_run(name):
    package = importlib.import_module(name)
    failures, attempted = doctest.testmod(package, verbose=False)
    assert attempted > 0 and failures == 0
