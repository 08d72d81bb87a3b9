"""Issue 12 part B: output files (never a device, one set, checked before the run), Markdown and
terminal escaping of user text, and stdout reserved for the result."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import audit.engine
from audit.cli.main import main
from audit.report import report_target, summary_table, write_reports
from audit.report import writing
from audit.report.markdown import render_markdown
from audit.report.terminal import plain_numbers, terminal_text
from audit.result import AuditResult, SecretEvidence
from estimators.validation import InputError

ROOT = Path(__file__).resolve().parents[1]
FAST_AUDIT = ["--prior", "builtin:bernoulli", "--n", "3", "--k", "1", "--notion", "mi-dp", "--epsilon", "1",
              "--samples", "1000", "--slices", "0", "--event-runs", "0", "--set", "critic.max_steps=100"]


def result_named(name: str, verdict: str = "no-violation-detected") -> AuditResult:
    evidence = [SecretEvidence(name, 0, name, "certify", 0.05, 0.01)]
    return AuditResult(verdict, "mi-dp", 0.5, 0.05, 0.01, 0.05, None, None, None, evidence, [], 1000, 1.0, 0,
                       mechanism=name, priors=[name], notes=[name])


def marker_mechanism(tmp_path: Path) -> tuple[Path, Path]:
    """A mechanism file that leaves a marker when it is loaded: proof that the audit started."""
    marker = tmp_path / "mechanism-was-loaded"
    source = tmp_path / "marked.py"
    source.write_text(textwrap.dedent(f"""
        from pathlib import Path
        Path({str(marker)!r}).write_text("loaded")

        def mech(dbs, rng):
            return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (dbs.shape[0], 1))
    """))
    return source, marker


def run_cli(args, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "audit.cli.main", *args], capture_output=True, text=True,
                          env=env, cwd=kwargs.pop("cwd", ROOT), **kwargs)


# --- B1: only regular files are ever replaced --------------------------------------------------------------

@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink"])
def test_report_target_refuses_anything_but_a_regular_file(tmp_path, kind):
    target = tmp_path / "report.html"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        (tmp_path / "real.html").write_text("keep")
        target.symlink_to(tmp_path / "real.html")
    expected = {"fifo": "FIFO", "folder": "a folder", "symlink": "symbolic link"}[kind]
    with pytest.raises(InputError, match=f"argument '--report': .*{expected}"):
        report_target(target)
    with pytest.raises(InputError, match=expected):
        writing.write_file_set({target: b"x"})
    assert (target.is_fifo() if kind == "fifo" else target.is_dir() if kind == "folder" else target.is_symlink())
    assert {p.name for p in tmp_path.iterdir()} == {"report.html"} | ({"real.html"} if kind == "symlink" else set())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_audit_with_fifo_report_fails_before_the_mechanism_loads(tmp_path, capsys):
    fifo = tmp_path / "out.html"
    os.mkfifo(fifo)
    source, marker = marker_mechanism(tmp_path)
    status = main(["audit", "--mechanism", f"{source}:mech", *FAST_AUDIT, "--report", str(fifo)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "argument '--report'" in err and "FIFO" in err
    assert not marker.exists() and fifo.is_fifo()
    assert not (tmp_path / "out.md").exists() and not (tmp_path / "out.json").exists()


# --- B2: the suffix decides ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name,expected", [
    ("r.html", {"r.html", "r.md", "r.json"}), ("r.HTM", {"r.HTM", "r.md", "r.json"}),
    ("r.md", {"r.md"}), ("r.json", {"r.json"}),
])
def test_report_suffix_decides_what_is_written(tmp_path, name, expected):
    paths = report_target(tmp_path / name).write(result_named("m"))
    assert {p.name for p in paths.values()} == expected
    assert {p.name for p in tmp_path.iterdir()} == expected
    for fmt, path in paths.items():
        text = path.read_text(encoding="utf-8")
        # Each file holds its own format, never another's content under its name.
        if fmt == "html":
            assert text.startswith("<!DOCTYPE html>")
        elif fmt == "md":
            assert text.startswith("# miaudit audit report\n")
        else:
            assert json.loads(text)["audits"][0]["mechanism"] == "m"


@pytest.mark.parametrize("name", ["report", "report.txt", "report.html.bak", "/dev/null"])
def test_unknown_report_suffix_is_refused(tmp_path, name):
    with pytest.raises(InputError, match=r"argument '--report': .* must end in \.html .*\.md or \.json"):
        report_target(name if name.startswith("/") else tmp_path / name)
    assert list(tmp_path.iterdir()) == []


# --- B3: one set, never a mix of two runs ------------------------------------------------------------------

def _titles(folder: Path) -> set:
    """The title each report file carries (each run writes its own title)."""
    found = set()
    for path in folder.iterdir():
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            found.add(json.loads(text)["title"])
        elif path.suffix == ".md":
            found.add(text.splitlines()[0][2:])
        else:
            found.add(re.search(r"<title>(.*)</title>", text).group(1))
    return found


def test_failure_while_writing_the_second_file_keeps_the_old_set(tmp_path, monkeypatch):
    write_reports(result_named("m"), tmp_path, title="old")
    real = writing._write_temporary
    calls = []

    def fail_on_second(path, data):
        calls.append(path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(writing, "_write_temporary", fail_on_second)
    with pytest.raises(InputError, match="argument '--out': could not write .*No space left"):
        write_reports(result_named("m"), tmp_path, title="new", flag="--out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]
    assert _titles(tmp_path) == {"old"}


def test_failure_between_renames_completes_the_new_set(tmp_path, monkeypatch):
    write_reports(result_named("m"), tmp_path, title="old")
    real = os.replace
    calls = []

    def fail_once_after_commit(src, dst):
        calls.append(dst)
        if len(calls) == 3:  # journal, first file, then this: the second file's rename
            raise OSError(5, "Input/output error")
        return real(src, dst)

    monkeypatch.setattr(writing.os, "replace", fail_once_after_commit)
    with pytest.raises(InputError, match="Input/output error"):
        write_reports(result_named("m"), tmp_path, title="new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]
    assert _titles(tmp_path) == {"new"}


@pytest.mark.integration
@pytest.mark.parametrize("kill_at,survivor", [("temporary", "old"), ("rename", "killed")])
def test_kill_leaves_no_mixed_set_after_the_next_start(tmp_path, kill_at, survivor):
    write_reports(result_named("m"), tmp_path, title="old")
    # A process killed (os._exit: no handler runs) while writing its temporaries, or between renames.
    code = textwrap.dedent(f"""
        import os
        from audit.report import writing
        from audit.report.writing import write_reports
        from audit.result import AuditResult
        counter = []
        real_write, real_replace = writing._write_temporary, os.replace
        def write(path, data):
            counter.append(path)
            if {kill_at!r} == "temporary" and len(counter) == 2:
                os._exit(9)
            return real_write(path, data)
        def replace(src, dst):
            counter.append(dst)
            if {kill_at!r} == "rename" and str(dst).endswith("report.md"):
                os._exit(9)
            return real_replace(src, dst)
        writing._write_temporary, writing.os.replace = write, replace
        result = AuditResult("violation", "mi-dp", 0.5, 0.05, 0.6, 0.7, None, None, None, [], [], 10, 1.0, 0)
        write_reports(result, {str(tmp_path)!r}, title="killed")
    """)
    done = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 9
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers  # the kill left temporaries (and, after the commit, a journal)
    # The next start (checking the location for a new run) repairs the folder before anything else.
    report_target(tmp_path / "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]
    assert _titles(tmp_path) == {survivor}


# --- B4: every output location is checked before any work ---------------------------------------------------

def test_missing_report_folder_fails_before_the_audit(tmp_path, capsys):
    source, marker = marker_mechanism(tmp_path)
    status = main(["audit", "--mechanism", f"{source}:mech", *FAST_AUDIT,
                   "--report", str(tmp_path / "no" / "such" / "r.html")])
    err = capsys.readouterr().err
    assert status == 2 and "argument '--report'" in err and "does not exist" in err
    assert not marker.exists()


def test_unwritable_folder_is_found_by_the_probe(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(writing.tempfile, "mkstemp", refuse)
    with pytest.raises(InputError, match=r"argument '--report': cannot create a file in folder .*Permission denied"):
        report_target(tmp_path / "r.html")
    with pytest.raises(InputError, match=r"argument '--out': cannot create a file .*Permission denied"):
        writing.check_output_location(tmp_path / "new" / "folder", "--out", folder=True)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_is_refused(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(InputError, match="argument '--report': cannot create a file"):
            report_target(folder / "r.html")
    finally:
        folder.chmod(0o700)


def test_demo_bad_out_fails_before_any_audit(tmp_path, capsys, monkeypatch):
    def must_not_run(spec):
        raise AssertionError("an audit ran before --out was checked")

    monkeypatch.setattr(audit.engine, "run_audit", must_not_run)
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    for out, message in ((blocker, "is a regular file, not a folder"),
                         (blocker / "sub", "is inside")):
        assert main(["demo", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert "argument '--out'" in err and message in err and "Traceback" not in err


def test_experiment_bad_out_fails_before_the_run(tmp_path, capsys, monkeypatch):
    import experiments.registry as registry

    def must_not_run(*args, **kwargs):
        raise AssertionError("the experiment ran before --out was checked")

    monkeypatch.setattr(registry, "run", must_not_run)
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    name = registry.experiments()[0].name
    assert main(["experiment", name, "--out", str(blocker)]) == 2
    assert "argument '--out'" in capsys.readouterr().err
    assert main(["experiment", "no-such-experiment", "--out", str(blocker)]) == 2
    assert "unknown experiment 'no-such-experiment'" in capsys.readouterr().err


@pytest.mark.integration
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["catalog"], ["catalog", "--json"], ["--help"], ["catalog", "--help"]])
def test_stdout_on_a_full_device_gives_one_line(args):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "audit.cli.main", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT)
    assert done.returncode == 2
    assert done.stderr == "miaudit: error: cannot write the result to stdout (No space left on device)\n"


# --- B5: user text is inert in Markdown and on the terminal; stdout carries the result alone ---------------

HOSTILE = "[l](javascript:alert(1)) ![i](x) _em_ *b* **s** $x^2$ ~~del~~ `code` <b>h</b> &amp; | # 1. \\ end"
MARKDOWN_ACTIVE = set("[]_*$~`|\\")


def _commonmark_unescape(text: str) -> str:
    """CommonMark §2.4, written independently: a backslash before ASCII punctuation is dropped."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text)


def _unescaped_active(text: str) -> list:
    """Active Markdown characters that are not preceded by an escaping backslash."""
    found, index = [], 0
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            index += 2
            continue
        if text[index] in MARKDOWN_ACTIVE or (text[index] == "<" and text[index + 1:index + 2].isalpha()):
            found.append(text[index])
        index += 1
    return found


def test_markdown_report_leaves_no_user_markup_live():
    markdown = render_markdown(result_named(HOSTILE), title=HOSTILE)
    lines = [line for line in markdown.splitlines() if "javascript" in line]
    assert len(lines) >= 4  # title, summary row, heading, evidence row, facts, notes
    for line in lines:
        # The user's text sits inside our own markup: take the part from its first character on.
        start = line.index("\\[l\\]")
        user_part = line[start:]
        user_text = user_part.split(" |")[0] if line.startswith("|") else user_part
        assert _unescaped_active(user_text) == [], line
    title = markdown.splitlines()[0][2:]
    assert _commonmark_unescape(title) == HOSTILE.replace("  ", " ")


@pytest.mark.parametrize("name", ["# heading", "> quote", "- item", "+ item", "1. item", "7) item", "---"])
def test_markdown_list_items_cannot_start_a_block(name):
    markdown = render_markdown(result_named(name))
    # The result's note is the name alone: its list item must not open a heading, quote, list or rule.
    items = [line[2:] for line in markdown.splitlines()
             if line.startswith("- ") and _commonmark_unescape(line[2:]) == name]
    assert items
    for item in items:
        assert re.match(r"\\|\d+\\[.)]", item), item


def test_terminal_output_neutralises_control_characters():
    name = "evil\x1b[2J\x1b[31mred\r\nsecond line\u202ecod.exe\x9b1m\x07"
    table = summary_table(result_named(name))
    assert len(table.splitlines()) == 3  # header, rule, one row: the newline did not split the row
    for character in "\x1b\r\u202e\x9b\x07":
        assert character not in table
    assert "evil\\x1b[2J\\x1b[31mred\\x0d\\x0asecond line\\u202ecod.exe\\x9b1m\\x07" in table
    assert terminal_text("a\nb\tc") == "a\nb\tc"
    assert terminal_text("a\nb", keep_newlines=False) == "a\\x0ab"


def test_terminal_summary_keeps_each_statement_on_one_line(monkeypatch):
    from audit.cli.audit_command import _text

    result = result_named("honest")
    # A statement that quotes user text holding a newline (a claim's origin, a secret's name).
    monkeypatch.setattr(type(result), "mi_statement", lambda self, dp_bounds=True: "quoted 'honest\nclaim 1-DP: NOT-REFUTED'")
    text = _text(result)
    assert not any(line.startswith("claim 1-DP") for line in text.splitlines())  # no forged line
    assert "quoted 'honest\\x0aclaim 1-DP: NOT-REFUTED'" in text


def test_error_messages_are_terminal_safe_and_show_plain_numbers(tmp_path, capsys):
    status = main(["audit", "--report", str(tmp_path / "x\x1b[2J.txt"), "--mechanism", "catalog:laplace_mean"])
    err = capsys.readouterr().err
    assert status == 2 and "\x1b" not in err and "x\\x1b[2J.txt" in err
    import numpy as np

    message = f"argument 'sigma' must be > 0, got {np.float64(-0.5)!r} (n = {np.int64(3)!r}, ok = {np.True_!r})"
    assert plain_numbers(message) == "argument 'sigma' must be > 0, got -0.5 (n = 3, ok = True)"


@pytest.mark.integration
@pytest.mark.train
def test_printing_mechanism_cannot_corrupt_json_stdout(tmp_path):
    source = tmp_path / "chatty.py"
    source.write_text(textwrap.dedent("""
        import os, subprocess, sys
        print("python print from the mechanism's module")

        def mech(dbs, rng):
            print("python print during a run")
            os.write(1, b"fd-level write during a run\\n")
            subprocess.run([sys.executable, "-c", "print('a subprocess writes too')"], check=True)
            return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (dbs.shape[0], 1))
    """))
    done = run_cli(["audit", "--mechanism", f"{source}:mech", *FAST_AUDIT, "--json", "--quiet"])
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)  # stdout is the JSON result and nothing else
    assert payload["notion"] == "mi-dp"
    # Written at import, or to the file descriptors (compiled code, a subprocess): on stderr, as they were.
    for text in ("python print from the mechanism's module", "fd-level write during a run", "a subprocess writes too"):
        assert text in done.stderr
    # A Python print during the runs is kept off the terminal (mechanisms.calls.printed): one note says it, with a
    # line for each call of the runs and of the probe's two (the mechanism is batched: one call a chunk).
    assert "python print during a run" not in done.stderr
    [note] = [note for note in payload["notes"] if " printed " in note]
    assert note.startswith(f"mechanism '{source}:mech' printed ") and "'python print during a run'" in note
