"""The documentation site builds offline with warnings as errors (``mkdocs build --strict``).

Strict mode fails on a broken internal link or anchor, a page left out of the navigation, and
any warning of mkdocstrings while it renders the API reference from the docstrings.
"""

import os
import subprocess
import sys

import pytest
from conftest import needs
from docs_examples import ROOT


@pytest.mark.integration
@needs("mkdocs", "material", "mkdocstrings_handlers")
def test_site_builds_with_no_warnings(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    assert "WARNING" not in build.stderr, build.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "api.html").read_text().count("run_audit") > 1
