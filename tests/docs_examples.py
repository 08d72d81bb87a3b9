"""Run the code examples of a Markdown page (a docs page or the README) and check their printed output.

The conventions (docs/contributing-docs.md states them for writers):

- A fenced block with a title, `````python title="team.py"`````, or whose first line is a comment
  naming a file (``# team.py``), is a file: it is written to the page's working directory (a fresh
  temporary directory per page) and not run.
- A `````python````` block without a title is run, in one namespace per page, in that directory.
  When a `````text````` block follows it (only blank lines between), what the code printed must
  match it.
- A `````console````` block holds commands (``$ miaudit ...``, ``$ pytest ...`` (run in a fresh interpreter), ``$ python FILE.py``,
  ``$ python -c CODE``, ``$ cat FILE``, ``$ echo $?``; a line ending in ``\\`` continues) each
  followed by what the terminal shows: stderr (warnings, errors), then stdout. A command that
  exits non-zero must be followed by ``$ echo $?``.
- A `````bash````` block's commands run the same way; their output is not shown, so not checked.
- Output matches with :mod:`doctest`'s ``ELLIPSIS``: ``...`` stands for any text. A duration
  (``0.2 s``) matches any duration; trailing spaces and trailing blank lines are ignored. Digits
  that change with the CPU's vector instructions (a trained critic's) are shown as ``...`` too
  (:data:`NO_AVX512`).
- ``<!-- docs-test: skip -->`` on the line before a block leaves that block out (set-up commands
  such as ``pip install``, commands for a cluster); every other block runs.
- ``<!-- docs-test: slow -->`` anywhere on a page marks the page's test ``slow``; every page's test
  is marked ``integration`` and ``train`` (end-to-end runs of the CLI, which may train critics).
- A `````console````` block without any ``$ `` line is output only, not run.

Blocks of other languages (``toml`` without a title, ``json``, ``text`` not after ``python``) are
shown, not run.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import os
import re
import runpy
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^(?P<indent> *)```(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
_TITLE = re.compile(r"""title=["']([^"']+)["']""")
_FILE_COMMENT = re.compile(r"^(?:#|//|--)\s*([\w./-]+\.(?:py|toml|sh|json|txt|csv|yaml|yml|cfg))\b")
_DIRECTIVE = re.compile(r"<!--\s*docs-test:\s*([a-z ,]+?)\s*-->")
PAGE_MARKS = ("train", "slow")
# Languages whose block is a file when its first line is a comment naming one (``# team.py``).
_FILE_LANGUAGES = ("python", "toml", "sh", "bash", "json", "yaml", "text")

#: The environment under which an x86-64 CPU with AVX-512 computes what one without it (AVX2 and
#: FMA) computes. Torch's own kernels, MKL (torch's matrix products), oneDNN, NumPy's SIMD loops and
#: OpenBLAS (NumPy's matrix products) each pick a code path from the CPU when they load; each
#: variable caps that choice at AVX2. A critic trained on the other path ends elsewhere (the README's
#: MI-PP audit certifies 0.2243 nats with AVX-512, 0.2277 without), so shown digits that vary
#: between the two are written ``...``; tests/test_docs_cpu.py runs the pages again under this.
#: Read when the libraries load: it applies to a fresh interpreter only.
NO_AVX512 = {
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
    "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Haswell",
}


@dataclass
class Block:
    """One fenced code block of a page."""

    language: str
    title: str | None
    body: str
    line: int  # 1-based line of the opening fence
    skip: bool
    expected: str | None = None  # for a python block: the text block after it
    start: int = 0  # character offsets of the block in the page
    end: int = 0


def _dedent(body: str, indent: str) -> str:
    return "".join(line[len(indent):] if line.startswith(indent) else line for line in body.splitlines(True))


def blocks(text: str) -> list:
    """The fenced blocks of ``text`` in order, each python block paired with the text block after it."""
    found = []
    for match in _FENCE.finditer(text):
        info = match.group("info").strip()
        language = info.split()[0] if info else ""
        title = _TITLE.search(info)
        body = _dedent(match.group("body"), match.group("indent"))
        named = _FILE_COMMENT.match(body.splitlines()[0]) if body.strip() and language in _FILE_LANGUAGES else None
        title = title.group(1) if title else (named.group(1) if named else None)
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        directive = _DIRECTIVE.search(before)
        found.append(Block(language=language, title=title, body=body,
                           line=text.count("\n", 0, match.start()) + 1,
                           skip=bool(directive and "skip" in directive.group(1)),
                           start=match.start(), end=match.end()))
    for current, following in zip(found, found[1:]):
        between = text[current.end:following.start]
        if (current.language == "python" and current.title is None and following.language == "text"
                and following.title is None and not between.strip()):
            current.expected = following.body
            following.skip = True  # shown output, checked with the block before it
    return found


def page_marks(text: str) -> set:
    """The pytest marks a page asks for with ``<!-- docs-test: train -->`` / ``slow``."""
    marks = set()
    for directive in _DIRECTIVE.findall(text):
        marks.update(word for word in re.split(r"[ ,]+", directive) if word in PAGE_MARKS)
    return marks


def _normalise(output: str) -> str:
    lines = [line.rstrip() for line in output.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


_DURATION = re.compile(r"\b\d+(?:\.\d+)? s\b")


def output_matches(expected: str, got: str) -> bool:
    """Whether ``got`` is ``expected`` up to ``...`` (doctest ELLIPSIS), durations and trailing spaces.

    A duration in seconds (``0.2 s``) matches any other: timings vary from run to run.
    """
    expected, got = (_DURATION.sub("<N> s", _normalise(text)) for text in (expected, got))
    return doctest.OutputChecker().check_output(expected, got, doctest.ELLIPSIS)


class ExampleFailed(AssertionError):
    """An example that raised, exited non-zero unannounced or printed something else than shown."""


def _commands(body: str, console: bool) -> list:
    """(command, expected output) pairs of a console block; bash blocks have no expected output.

    A console block with no ``$ `` line shows output only (of a command shown before it): it has
    no commands.
    """
    pairs, lines = [], body.splitlines()
    if console and not any(line.startswith("$ ") for line in lines):
        return []
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if console and not line.startswith("$ "):
            if not pairs:
                raise ExampleFailed(f"console block: output before the first '$ ' command: {line!r}")
            pairs[-1][1].append(line)
            continue
        command = line[2:] if console else line
        if not console and (not command.strip() or command.lstrip().startswith("#")):
            continue
        while command.endswith("\\") and index < len(lines):
            command = command[:-1] + " " + lines[index].strip()
            index += 1
        pairs.append((command.strip(), []))
    return [(command, "\n".join(output)) for command, output in pairs]


class PageRunner:
    """Runs one page's blocks in order in ``workdir``; raises :class:`ExampleFailed` on the first failure."""

    def __init__(self, page: Path, workdir: Path):
        self.page, self.workdir = page, workdir
        self.namespace = {"__name__": "__docs_example__"}
        self.status = 0

    def _where(self, block: Block) -> str:
        try:
            name = self.page.relative_to(ROOT)
        except ValueError:
            name = self.page
        return f"{name}:{block.line}"

    def run(self, text: str | None = None) -> int:
        """Run every block; return how many ran."""
        text = self.page.read_text() if text is None else text
        ran = 0
        for block in blocks(text):
            if block.skip:
                continue
            if block.title is not None:
                (self.workdir / block.title).parent.mkdir(parents=True, exist_ok=True)
                (self.workdir / block.title).write_text(block.body)
                if block.title.endswith(".py"):  # a module of that name imported by an earlier page is stale
                    sys.modules.pop(Path(block.title).stem, None)
            elif block.language == "python":
                self._python(block)
            elif block.language in ("console", "bash"):
                self._shell(block)
            else:
                continue
            ran += 1
        return ran

    def _captured(self, block: Block, what: str, call):
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                value = call()
        except SystemExit as exc:  # argparse's --help and usage errors
            value = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:
            raise ExampleFailed(f"{self._where(block)}: {what} raised {type(exc).__name__}: {exc}\n"
                                f"stderr:\n{err.getvalue()[-3000:]}") from exc
        return value, out.getvalue(), err.getvalue()

    def _python(self, block: Block) -> None:
        code = compile(block.body, self._where(block), "exec")
        _, out, _ = self._captured(block, "the python block", lambda: exec(code, self.namespace))
        if block.expected is not None and not output_matches(block.expected, out):
            raise ExampleFailed(f"{self._where(block)}: the python block printed\n{out}\ninstead of\n{block.expected}")

    def _shell(self, block: Block) -> None:
        pairs = _commands(block.body, console=block.language == "console")
        for position, (command, expected) in enumerate(pairs):
            status, out, err = self._command(block, command)
            announced = position + 1 < len(pairs) and pairs[position + 1][0] == "echo $?"
            if status and not announced:
                raise ExampleFailed(f"{self._where(block)}: `{command}` exited with {status}\nstderr:\n{err[-3000:]}")
            if command != "echo $?":
                self.status = status
            shown = err + out  # what a terminal shows: warnings and errors come before the result
            if block.language == "console" and not output_matches(expected, shown):
                raise ExampleFailed(f"{self._where(block)}: `{command}` printed\n{shown}\ninstead of\n{expected}")

    def _command(self, block: Block, command: str):
        if command.endswith(" 2>&1"):  # the same as without: the output shown is stderr, then stdout
            return self._command(block, command[:-len(" 2>&1")])
        argv = shlex.split(command)
        if argv == ["echo", "$?"]:
            return 0, f"{self.status}\n", ""
        if argv[0] == "cat" and len(argv) == 2:
            return 0, (self.workdir / argv[1]).read_text(), ""
        if argv[0] == "miaudit":
            from audit.cli.main import main

            status, out, err = self._captured(block, f"`{command}`", lambda: main(argv[1:]))
            return status or 0, out, err
        if argv[0] == "python" and len(argv) == 3 and argv[1] == "-c":
            code = compile(argv[2], f"{self._where(block)} (python -c)", "exec")
            _, out, err = self._captured(block, f"`{command}`", lambda: exec(code, {"__name__": "__main__"}))
            return 0, out, err
        if argv[0] == "python" and len(argv) >= 2 and argv[1].endswith(".py"):
            saved = sys.argv
            sys.argv = argv[1:]
            try:
                _, out, err = self._captured(block, f"`{command}`",
                                             lambda: runpy.run_path(str(self.workdir / argv[1]), run_name="__main__"))
            finally:
                sys.argv = saved
            return 0, out, err
        if argv[0] == "pytest":  # a test session of its own: pytest keeps global state, so in a fresh interpreter
            # Not an xdist worker's session: plugins (pytest-benchmark) read PYTEST_XDIST_WORKER and warn.
            env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_XDIST_")}
            done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *argv[1:]], cwd=self.workdir,
                                  capture_output=True, text=True, timeout=600, env=env)
            return done.returncode, done.stdout, done.stderr
        raise ExampleFailed(f"{self._where(block)}: `{command}`: the example runner runs miaudit, pytest, python FILE.py, "
                            "cat FILE and echo $?; mark other blocks <!-- docs-test: skip -->")


def run_page(page: Path, workdir: Path, monkeypatch) -> int:
    """Run ``page``'s examples in ``workdir`` (made the working directory, put on ``sys.path``)."""
    monkeypatch.chdir(workdir)
    monkeypatch.syspath_prepend(str(workdir))
    monkeypatch.setenv("COLUMNS", "100")  # argparse wraps --help to the terminal's width
    return PageRunner(page, workdir).run()


def doc_pages() -> list:
    """Every Markdown page of the documentation site."""
    return sorted(DOCS.rglob("*.md"))


def runs_examples(text: str) -> bool:
    """Whether a page has a block that :class:`PageRunner` runs (not only files and shown output)."""
    return any(not block.skip and block.title is None and (block.language in ("python", "bash") or (
        block.language == "console" and _commands(block.body, console=True))) for block in blocks(text))


def code_block(page: Path, language: str, title: str) -> str:
    """The block of ``page`` in ``language`` titled ``title`` (a file an example writes)."""
    for block in blocks(page.read_text()):
        if block.language == language and block.title == title:
            return block.body
    raise AssertionError(f"{page.name} has no ```{language} title=\"{title}\" block")



if __name__ == "__main__":  # python tests/docs_examples.py PAGE: run a page, print what each example printed
    import tempfile

    class _Showing(PageRunner):
        def _captured(self, block, what, call):
            value, out, err = super()._captured(block, what, call)
            print(f"----- {self._where(block)} {what}\n{err}{out}", file=sys.__stdout__, flush=True)
            return value, out, err

    class _Patch:
        def chdir(self, path):
            os.chdir(path)

        def syspath_prepend(self, path):
            sys.path.insert(0, path)

        def setenv(self, name, value):
            os.environ[name] = value

    sys.path.insert(0, str(ROOT))  # the checkout's audit package
    output_matches = lambda expected, got: True  # noqa: E731  (show everything, compare nothing)
    page = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory() as workdir:
        patch = _Patch()
        patch.chdir(workdir), patch.syspath_prepend(workdir), patch.setenv("COLUMNS", "100")
        try:
            _Showing(page, Path(workdir)).run()
        except ExampleFailed as exc:
            print(f"FAILED: {str(exc)[:300]}", file=sys.__stdout__)
