"""The built documentation site reads clean: what Markdown or a docstring would show raw is rendered.

One build of the site (``mkdocs build --strict``, offline) is read by every test marked
``integration``; the hooks that mend the pages (docs/hooks.py) are also tested on small inputs
without a build.
"""

import importlib.util
import json
import os
import re
import shutil
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


@pytest.mark.integration
@needs("mkdocs", "material", "mkdocstrings_handlers")
def test_cli_page_has_a_flag_table_per_command(site):
    from audit.cli.main import COMMANDS

    page = _body(_pages(site)["reference/cli.html"])
    for command in COMMANDS:
        assert f"<code>miaudit {command}</code>" in page, command
    for flag in ("--per-database", "--workers N|auto", "--wire {text,npy}", "--x X.npy"):
        assert f"<td><code>{flag}</code></td>" in page, flag


@pytest.mark.integration
@needs("mkdocs", "material", "mkdocstrings_handlers")
def test_no_script_or_style_from_the_network(site):
    remote = re.compile(r'<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)="(?:https?:)?//[^"]*"')
    found = {name: remote.findall(page) for name, page in _pages(site).items()}
    assert not {name: refs for name, refs in found.items() if refs}
    assert '<script src="../javascripts/iframe-worker.js"' in _pages(site)["tutorial/own-function.html"]


# A page opened from files, in Node: the page's window and a same-origin iframe are vm contexts; the
# page's own Worker throws, as a browser's does on file://. The theme's search worker, loaded
# through docs/javascripts/iframe-worker.js, gets the built index as the theme posts it and answers a
# query with the locations it found.
SEARCH_FROM_FILES = r"""
// Run the site's search worker through docs/javascripts/file-worker.js in a page opened from files.
const fs = require("fs"), path = require("path"), vm = require("vm"), { pathToFileURL, fileURLToPath } = require("url");
const [site, shim, query] = process.argv.slice(2);
class ErrorEvent extends Event { constructor(type, init) { super(type); this.error = init.error; this.message = init.message; } }

function frame() {
  // An iframe of the page's origin: a global of its own in which script elements run when appended.
  const target = new EventTarget(), scripts = [];
  const doc = {
    baseURI: pathToFileURL(path.join(site, "index.html")).href,
    head: { appendChild(script) { scripts.push(script); setTimeout(() => {
      try { vm.runInContext(fs.readFileSync(fileURLToPath(script.src), "utf8"), scope); } catch (e) { return script.onerror(e); }
      script.onload(); }); } },
    createElement: () => ({}),
    querySelector: (selector) => selector === "script[src]" ? scripts[0] : null,
  };
  const scope = vm.createContext({
    console, setTimeout, Promise, URL, MessageEvent, parent: page, document: doc,
    addEventListener: (type, f) => target.addEventListener(type, f),
    dispatchEvent: (event) => target.dispatchEvent(event),
  });
  scope.self = vm.runInContext("this", scope);
  return { hidden: false, setAttribute() {}, remove() { this.contentWindow = null; }, contentWindow: scope, contentDocument: doc };
}

const page = vm.createContext({
  console, setTimeout, Promise, URL, EventTarget, MessageEvent, ErrorEvent,
  location: { protocol: "file:" },
  document: { baseURI: pathToFileURL(path.join(site, "index.html")).href, body: { appendChild() {} },
              createElement: (tag) => tag === "iframe" ? frame() : {} },
  Worker: function NativeWorker() { throw new Error("a page opened from files cannot start a worker"); },
});
page.window = vm.runInContext("this", page);
vm.runInContext(fs.readFileSync(shim, "utf8"), page);
const worker = [...fs.readdirSync(path.join(site, "assets/javascripts/workers"))].find((f) => f.endsWith(".min.js"));
const w = vm.runInContext(`new Worker("assets/javascripts/workers/${worker}")`, page);
w.onerror = (event) => { console.log("error", String(event.error)); process.exit(1); };
w.addEventListener("message", (event) => {
  if (event.data.type === 1) return w.postMessage({ type: 2, data: query });
  console.log(JSON.stringify(event.data.data.items.flat().map((item) => item.location).slice(0, 5)));
  process.exit(0);
});
const { config, docs } = JSON.parse(fs.readFileSync(path.join(site, "search/search_index.json"), "utf8"));
w.postMessage({ type: 0, data: { config, docs, options: { suggest: false } } });  // as the theme posts it
setTimeout(() => { console.log("no answer"); process.exit(1); }, 20000);
"""


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
@needs("mkdocs", "material", "mkdocstrings_handlers")
def test_search_works_on_the_site_opened_from_files(site, tmp_path):
    harness = tmp_path / "search_from_files.js"
    harness.write_text(SEARCH_FROM_FILES)
    shim = site / "javascripts" / "iframe-worker.js"
    run = subprocess.run(["node", str(harness), str(site), str(shim), "snapping"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "tutorial/own-function.html#4-floating-point-and-snapping" in json.loads(run.stdout.splitlines()[-1])
    without = subprocess.run(["node", str(harness), str(site), os.devnull, "snapping"], capture_output=True, text=True,
                             timeout=60)
    assert without.returncode != 0 and "cannot start a worker" in without.stderr


@pytest.mark.integration
@needs("mkdocs", "material", "mkdocstrings_handlers")
def test_wide_tables_fit(site):
    pages = _pages(site)
    bugs = _body(pages["benchmarks/real-bugs.html"])
    assert "<td><code>miaudit" not in bugs and "<li><code>miaudit audit --mechanism" in bugs
    assert "overflow-wrap: anywhere" in (site / "stylesheets" / "extra.css").read_text()
    assert 'href="../stylesheets/extra.css"' in pages["reference/cli.html"]


def test_prose_maths_is_set_as_superscripts_and_subscripts():
    assert hooks.render_maths("ψ ≤ e^{2ε}, and p̲ − e^ε′ p̄") == "ψ ≤ e<sup>2ε</sup>, and p̲ − e<sup>ε′</sup> p̄"
    assert (hooks.render_maths("E_P[T] − log E_{P_X⊗P_Y}[e^T]")
            == "E<sub>P</sub>[T] − log E<sub>P<sub>X</sub>⊗P<sub>Y</sub></sub>[e<sup>T</sup>]")
    assert hooks.render_maths("z_{α/2}, 2^-32, e^(2 eps/d)") == "z<sub>α/2</sub>, 2<sup>-32</sup>, e<sup>2 eps/d</sup>"
    assert (hooks.render_maths("α_k = α·(t_k² − t_{k−1}²), δ^LIP_μ, d_in")
            == "α<sub>k</sub> = α·(t<sub>k</sub>² − t<sub>k−1</sub>²), δ<sup>LIP</sup><sub>μ</sub>, d_in")
    kept = '<pre><code>sigma^2 = e^(2 eps/d)</code></pre><code>x_{1}^2</code><a href="a^b">at d_in = 1</a>'
    assert hooks.render_maths(kept) == kept


# Maths typed as plain text: a caret or an underscore group in prose (code and output excluded).
PLAIN_MATHS = re.compile(r"(?<=[\w)\]])\^[\w({(εδμρα′-]|_\{|\bE_[A-Z]\[|(?<!\w)[^\W\d_]_[^\W_](?!\w)")


def _prose(page: str) -> str:
    return re.sub(r"<[^>]+>", "", re.sub(r"<(pre|code)\b.*?</\1>", "", _body(page), flags=re.DOTALL))


@pytest.mark.integration
@needs("mkdocs", "material", "mkdocstrings_handlers")
def test_no_plain_text_maths(site):
    pages = _pages(site)
    found = {name: PLAIN_MATHS.findall(_prose(page)) for name, page in pages.items()}
    assert not {name: hits for name, hits in found.items() if hits}
    assert ") ≤ e<sup>2ε</sup>, and" in pages["explanation/certificates.html"]
