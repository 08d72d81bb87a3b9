"""Report writers that meet (issue 32, A2, A3 and A5): a lock per folder, absolute paths fixed before
the run, sets stamped and renamed without a catchable signal splitting them, and only our own
temporary files ever deleted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from audit.cli.main import main
from audit.report import report_target, write_reports
from audit.report.writing import report_set_of
from estimators.validation import InputError
from test_output_safety import FAST_AUDIT, _titles, result_named

ROOT = Path(__file__).resolve().parents[1]


#: A result built in a child process without importing the tests (whose imports load torch).
_RESULT = ("from audit.result import AuditResult\n"
           "result = AuditResult('violation', 'mi-dp', 0.5, 0.05, 0.6, 0.7, None, None, None, [], [], 10, 1.0, 0)\n")


def _child(code: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / 'tests')])),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def _one_set(folder: Path) -> set:
    """The stamps of the report files in ``folder`` (one: they belong together)."""
    return {report_set_of(folder / name) for name in ("report.html", "report.md", "report.json")}


@pytest.mark.integration
def test_two_processes_writing_one_report_serialize(tmp_path):
    # Each writer widens its rename window (a pause before every rename) and writes five sets: without a lock
    # the two interleave (a mixed set) or one's start-up repair removes the other's temporary files.
    code = f"""
        import os, sys, time
        from audit.report import writing
        exec({_RESULT!r})
        real = os.replace
        def slow_replace(src, dst):
            time.sleep(0.03)
            return real(src, dst)
        writing.os.replace = slow_replace
        for round in range(5):
            writing.write_reports(result, sys.argv[1], title=sys.argv[2])
    """
    writers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), str(tmp_path), title],
                                env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / 'tests')])), stderr=subprocess.PIPE, text=True)
               for title in ("first", "second")]
    errors = [w.communicate(timeout=120)[1] for w in writers]
    assert [w.returncode for w in writers] == [0, 0], errors
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]
    assert len(_titles(tmp_path)) == 1 and len(_one_set(tmp_path)) == 1


@pytest.mark.train
def test_a_mechanism_calling_chdir_does_not_move_the_report(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "out").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    source = tmp_path / "wanders.py"
    source.write_text(textwrap.dedent(f"""
        import os

        def mech(dbs, rng):
            os.chdir({str(elsewhere)!r})
            return dbs.sum(axis=(1, 2))[:, None] + rng.laplace(0.0, 1.0, (dbs.shape[0], 1))
    """))
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "--mechanism", f"{source}:mech", *FAST_AUDIT, "--report", "out/r.html", "--quiet"]) == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["r.html", "r.json", "r.md"]
    assert list((elsewhere / "out").iterdir()) == []


def test_a_report_folder_gone_before_writing_is_an_error_not_created(tmp_path):
    target = report_target(tmp_path / "sub" / "r.html") if (tmp_path / "sub").mkdir() is None else None
    (tmp_path / "sub").rmdir()
    with pytest.raises(InputError, match="argument '--report': folder .*sub' does not exist"):
        target.write(result_named("m"))
    assert not (tmp_path / "sub").exists()


def test_only_our_own_temporary_files_are_cleaned(tmp_path):
    users = [tmp_path / ".report.html.notes.tmp", tmp_path / ".report.md.abcdefgh.tmp",
             tmp_path / ".report.json.miaudit-backup.tmp"]  # not mkstemp's 8 random characters
    ours = tmp_path / ".report.html.miaudit-abcd_123.tmp"
    for path in (*users, ours):
        path.write_text("keep me")
    write_reports(result_named("m"), tmp_path, title="new")
    assert all(p.read_text() == "keep me" for p in users)
    assert not ours.exists()


def test_every_file_of_a_set_carries_the_same_stamp(tmp_path):
    write_reports(result_named("m"), tmp_path, title="one")
    first = _one_set(tmp_path)
    write_reports(result_named("m"), tmp_path, title="two")
    second = _one_set(tmp_path)
    assert len(first) == len(second) == 1 and first != second and None not in first | second


def _signalled_between_renames(folder: Path, signal_number: int) -> subprocess.CompletedProcess:
    """A child writing a new set (title "new") over ``folder`` that sends itself ``signal_number`` just
    before renaming report.md, as a CI runner's cancel (SIGTERM) or an out-of-memory kill (SIGKILL) would."""
    writer = _child(f"""
        import os
        from audit.report import writing
        exec({_RESULT!r})
        real = os.replace
        def replace(src, dst):
            if str(dst).endswith("report.md"):
                os.kill(os.getpid(), {signal_number})
            return real(src, dst)
        writing.os.replace = replace
        writing.write_reports(result, {str(folder)!r}, title="new")
        print("not reached: a held signal is delivered after the renames")
    """)
    out, err = writer.communicate(timeout=60)
    return subprocess.CompletedProcess(writer.args, writer.returncode, out, err)


@pytest.mark.integration
def test_sigterm_during_the_renames_waits_for_the_set(tmp_path):
    write_reports(result_named("m"), tmp_path, title="old")
    done = _signalled_between_renames(tmp_path, signal.SIGTERM)
    assert done.returncode == -signal.SIGTERM and "not reached" not in done.stdout, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html", "report.json", "report.md"]
    assert _titles(tmp_path) == {"new"} and len(_one_set(tmp_path)) == 1


#: The steps of publishing a committed three-file set over an old one (audit.report.writing._publish): the journal
#: renamed in (the commit), the three old files removed, the three new ones renamed in, the journal removed.
PUBLISH_STEPS = 1 + 3 + 3 + 1


@pytest.mark.integration
def test_sigkill_after_any_publish_step_never_leaves_two_runs_files(tmp_path):
    # A SIGKILL (uncatchable: an out-of-memory kill) after each step of the publish in turn, one child per step:
    # what is left on disk is then exactly what a reader could see at that instant.
    folders = [tmp_path / f"killed-after-{step}" for step in range(1, PUBLISH_STEPS)]
    for folder in folders:
        folder.mkdir()
        write_reports(result_named("m"), folder, title="old")
    old_sets = {folder: _one_set(folder) for folder in folders}
    writers = [_child(f"""
        import os, signal
        from audit.report import writing
        exec({_RESULT!r})
        done, real = [], writing._publish_step
        def step(action, *paths):
            real(action, *paths)
            done.append(action)
            if len(done) == {step}:
                os.kill(os.getpid(), signal.SIGKILL)
        writing._publish_step = step
        writing.write_reports(result, {str(folder)!r}, title="new")
    """) for step, folder in enumerate(folders, start=1)]
    for writer in writers:
        writer.communicate(timeout=120)
    assert [w.returncode for w in writers] == [-signal.SIGKILL] * len(writers)
    for step, folder in enumerate(folders, start=1):
        present = [name for name in ("report.html", "report.md", "report.json") if (folder / name).exists()]
        stamps = {report_set_of(folder / name) for name in present}
        # Old files only while removing (steps 1-4), new ones only while renaming (4-7); never both.
        assert len(stamps) <= 1, (step, present, stamps)
        expected = 3 - step + 1 if step <= 4 else step - 4
        assert len(present) == expected, (step, present)
        assert stamps <= old_sets[folder] if step < 4 else stamps.isdisjoint(old_sets[folder]), step
        assert (folder / ".report.html.set-journal").exists(), step
        # The next run's start completes the interrupted publish: the killed run's new set, whole.
        report_target(folder / "report.html")
        assert sorted(p.name for p in folder.iterdir()) == ["report.html", "report.json", "report.md"], step
        assert _titles(folder) == {"new"} and len(_one_set(folder)) == 1 and _one_set(folder) != old_sets[folder]


class _Killed(BaseException):
    """Stands for a SIGKILL inside the publish: nothing of the writer runs after it."""


@pytest.mark.parametrize("steps_done", [2, 4, 6])  # removing old files, all removed, renaming new ones
def test_a_markdown_report_after_an_html_set_killed_in_its_publish_completes_that_set(tmp_path, monkeypatch,
                                                                                       steps_done):
    """A SIGKILL inside an HTML report's publish left its journal (named after r.html) and its waiting
    r.md; a following ``--report r.md`` neither completed nor cleaned that set, and deleted its waiting
    r.md as a stale temporary file of its own (issue 43 §9)."""
    from audit.report import writing

    html = tmp_path / "r.html"
    report_target(html).write(result_named("m"), title="old")
    done, real = [], writing._publish_step

    def killed_after(action, *paths):
        real(action, *paths)
        done.append(action)
        if len(done) == steps_done:
            raise _Killed

    monkeypatch.setattr(writing, "_publish_step", killed_after)
    monkeypatch.setattr(writing, "recover_file_set", lambda paths: None)  # a killed writer repairs nothing
    with pytest.raises(_Killed):
        report_target(html).write(result_named("m"), title="new")
    monkeypatch.undo()
    assert (tmp_path / ".r.html.set-journal").exists()

    markdown = report_target(tmp_path / "r.md")  # the next run's start: the interrupted set completed whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.json", "r.md"]
    assert _titles(tmp_path) == {"new"}
    assert len({report_set_of(tmp_path / name) for name in ("r.html", "r.md", "r.json")}) == 1
    markdown.write(result_named("m"), title="markdown alone")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html", "r.json", "r.md"]
    assert (tmp_path / "r.md").read_text(encoding="utf-8").splitlines()[0] == "# markdown alone"
