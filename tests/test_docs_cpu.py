"""The checked examples print what the pages show on a CPU without AVX-512 too.

Numbers that come out of a trained critic depend on the code path the CPU's vector instructions
select (see :data:`docs_examples.NO_AVX512`): a digit that varies must be shown as ``...``. This
machine's own path is checked by tests/test_docs_examples.py and tests/test_readme_examples.py;
here each page's test runs again in a fresh interpreter whose libraries are capped at AVX2, as on a
CPU without AVX-512. ``slow``: it repeats every page's examples (about 3 minutes on one core).
"""

import os
import subprocess
import sys

import pytest
from docs_examples import DOCS, NO_AVX512, ROOT, doc_pages, runs_examples

# Every page's test that runs an example, the slow pages' too (selected with -m below).
_NODES = [pytest.param(f"tests/test_docs_examples.py::test_page_examples_run_and_print_what_they_show[{page.relative_to(DOCS)}]",
                       id=str(page.relative_to(DOCS)))
          for page in doc_pages() if runs_examples(page.read_text())]
_NODES.append(pytest.param("tests/test_readme_examples.py::test_readme_examples_run_and_print_what_they_show", id="README.md"))


def _avx512() -> bool:
    import torch

    return torch.backends.cpu.get_cpu_capability() == "AVX512"


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.train
@pytest.mark.parametrize("node", _NODES)
def test_examples_print_what_they_show_without_avx512(node):
    if not _avx512():
        pytest.skip("this CPU has no AVX-512: the default suite already checks the pages on the AVX2 path")
    # A session of its own, not an xdist worker's (plugins read PYTEST_XDIST_WORKER).
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_XDIST_")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "slow or not slow", node], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800, env={**env, **NO_AVX512})
    assert done.returncode == 0, f"{node} under {NO_AVX512}:\n{done.stdout[-6000:]}\n{done.stderr[-2000:]}"
    assert " passed" in done.stdout.splitlines()[-1], done.stdout[-2000:]


@pytest.mark.slow
@pytest.mark.integration
def test_no_avx512_caps_torch_mkl_and_numpy():
    # Each variable is read by its library alone and ignored when misspelt: check that each takes.
    if not _avx512():
        pytest.skip("this CPU has no AVX-512")
    code = ("import json, torch, numpy\n"
            "from numpy._core._multiarray_umath import __cpu_features__ as f\n"
            "a = torch.ones(64, 64)\n"
            "a @ a\n"
            "print(json.dumps([torch.backends.cpu.get_cpu_capability(), f['X86_V4'], f['X86_V3']]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **NO_AVX512, "MKL_VERBOSE": "1"})
    assert done.returncode == 0, done.stderr
    *mkl, last = done.stdout.strip().splitlines()
    assert last == '["AVX2", false, true]'
    assert any("AVX2" in line for line in mkl if "oneMKL" in line), mkl  # MKL's banner names the path it took


def test_pages_that_run_examples_are_told_apart():
    assert runs_examples("```python\nprint(1)\n```\n")
    assert runs_examples("```console\n$ miaudit demo\n```\n")
    assert not runs_examples('```python title="a.py"\nx = 1\n```\n\n```console\nshown output only\n```\n')
    assert not runs_examples("<!-- docs-test: skip -->\n```bash\npip install miaudit\n```\n")
