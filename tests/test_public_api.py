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
    import inspect

    package = importlib.import_module(name)
    assert package.__all__, f"{name} exports nothing"
    for exported in package.__all__:
        obj = getattr(package, exported)
        assert obj.__doc__, f"{name}.{exported} has no docstring"
    # Once every submodule is loaded, an export is still the object, never a submodule of the
    # same name (importing ``estimators.gaussian_mi`` used to rebind ``estimators.gaussian_mi``).
    for module in {m.__name__ for m in map(inspect.getmodule, map(lambda e: getattr(package, e), package.__all__)) if m}:
        importlib.import_module(module)
    for exported in package.__all__:
        assert not inspect.ismodule(getattr(package, exported)), f"{name}.{exported} is a module"
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        getattr(package, "not_a_name")


@pytest.mark.integration
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


# The public objects whose numpydoc Examples run here; a public docstring with an Examples
# section must hold doctests, and they must pass.
DOCUMENTED_BY_EXAMPLE = {("estimators", "MIEstimate"), ("estimators", "exact_mi"), ("estimators", "plugin_mi"),
                         ("mechanisms", "parse_claim"), ("mechanisms", "calibrate")}


@pytest.mark.parametrize("name", PACKAGES)
def test_exported_docstring_examples_run(name):
    import inspect

    package = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with_examples = set()
    for exported in package.__all__:
        obj = getattr(package, exported)
        tests = [t for t in finder.find(obj, f"{name}.{exported}", module=inspect.getmodule(obj)) if t.examples]
        if "Examples\n" in (inspect.getdoc(obj) or ""):
            assert tests, f"{name}.{exported}: its Examples section holds no doctest"
        for test in tests:
            runner.run(test)
        if tests:
            with_examples.add((name, exported))
    assert runner.failures == 0
    assert {entry for entry in DOCUMENTED_BY_EXAMPLE if entry[0] == name} <= with_examples


def test_result_forms_examples_run():
    import estimators.result_forms

    failures, attempted = doctest.testmod(estimators.result_forms, verbose=False)
    assert attempted > 0 and failures == 0
