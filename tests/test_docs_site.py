"""The built documentation site reads clean: what Markdown or a docstring would show raw is rendered.

One build of the site (``mkdocs build --strict``, offline) is read by every test marked
``integration``; the hooks that mend the pages (docs/hooks.py) are also tested on small inputs
without a build.
"""

import importlib.util
import os
import re
import subprocess
import sys

import pytest
from conftest import needs
from docs_examples import DOCS, ROOT


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = _hooks()

RAW_ROLE = re.compile(r":(?:py:)?(?:func|mod|class|meth|data|attr|obj|exc):[`<]")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "NO_COLOR": "1"}
    build = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return out


def _pages(site):
    return {str(path.relative_to(site)): path.read_text(encoding="utf-8") for path in sorted(site.rglob("*.html"))}


def _body(page: str) -> str:
    """The page's own content (the article), without the theme's navigation and scripts."""
    start = page.find("<article")
    return page[start:page.find("</article>", start)] if start >= 0 else page


# The hooks, on small inputs.

def test_a_role_links_to_an_object_of_the_page_and_is_plain_code_otherwise():
    content = ('<h3 id="audit.engine.run_audit">run_audit</h3><p>See :func:<code>audit.engine.run_audit</code>, '
               ':class:<code>~audit.spec.AuditSpec</code> and :py:mod:<code>audit</code>.</p>')
    out = hooks.render_roles(content)
    assert '<a href="#audit.engine.run_audit"><code>audit.engine.run_audit</code></a>' in out
    assert "<code>AuditSpec</code>" in out and "<code>audit</code>" in out
    assert not RAW_ROLE.search(out)


def test_escaped_pipes_are_unescaped_in_table_code_only():
    content = ("<table><tr><td><code>--wire text\\|npy</code></td></tr></table>"
               "<p><code>a\\|b</code></p>")
    out = hooks.unescape_table_pipes(content)
    assert "<code>--wire text|npy</code>" in out
    assert "<p><code>a\\|b</code></p>" in out  # outside a table the backslash is the author's


# The built site.

@pytest.mark.integration
@needs("mkdocs", "material", "mkdocstrings_handlers")
def test_no_raw_sphinx_role(site):
    raw = {name: RAW_ROLE.findall(page) for name, page in _pages(site).items() if RAW_ROLE.search(page)}
    assert not raw, raw
    assert not RAW_ROLE.search((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    assert '<a href="#audit.engine.run_audit"><code>' in _pages(site)["reference/api.html"]


@pytest.mark.integration
@needs("mkdocs", "material", "mkdocstrings_handlers")
def test_no_escaped_pipe_in_code(site):
    shown = {name: re.findall(r"<code>[^<]*\\\|[^<]*</code>", _body(page)) for name, page in _pages(site).items()}
    assert not {name: spans for name, spans in shown.items() if spans}
