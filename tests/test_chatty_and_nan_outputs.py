"""A user function that prints on every call, or returns NaN now and then (issue: a newcomer's first audit).

What it prints is kept off the terminal while the audit samples it, in the audit's process and in worker processes,
and said in one note with an exact count and its first lines; a call that fails says what it printed as it fails.
NaN outputs of a per-database function, each made one category by the output encoder, are counted in one note.
The expected counts are computed here from the fixtures' schedules (tests/fixtures/chatty_mechanisms.py).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from audit import AuditSpec, run_audit
from audit.report import render_markdown
from mechanisms.adapters.recognition import load_mechanism
from mechanisms.calls.printed import KEPT_CHARACTERS, PrintedLines, captured_prints, terminal_stderr
from mechanisms.errors import MechanismError
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.inputs.priors import ProductBernoulli

FIXTURES = Path(__file__).parent / "fixtures"
SOURCE = str(FIXTURES / "chatty_mechanisms.py")  # loaded by its path, in the audit's process and in each worker


def _numbered(m: int) -> np.ndarray:
    """Databases whose first entry is their index (the fixtures' schedules read it)."""
    dbs = np.zeros((m, 2, 1))
    dbs[:, 0, 0] = np.arange(m)
    return dbs


def _runner(name: str, **settings) -> MechanismRunner:
    table = {"spec": f"{SOURCE}:{name}", "per_database": True}  # as --per-database loads it, in every process
    return MechanismRunner(load_mechanism(table).mechanism, name, ExecutionSettings(**settings), source=table)


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.integration)])
def test_what_a_function_prints_is_counted_exactly_and_kept_off_the_terminal(workers, capfd):
    m = 300
    with _runner("prints_by_index", workers=workers, chunk_size=64) as runner:
        runner.sample(_numbered(m), np.random.default_rng(0))
        # Written out: database i prints i % 3 lines; the probe runs database 0, which prints none.
        expected = sum(i % 3 for i in range(m))
        assert runner.printed.lines == expected
        assert runner.printed.first == ("database 1 line 0", "database 2 line 0", "database 2 line 1")
        [note] = runner.call_notes()
    out, err = capfd.readouterr()  # the descriptors: a worker's prints would show here
    assert "database" not in out and "database" not in err
    assert note == (f"mechanism 'prints_by_index' printed {expected:,} lines while the audit ran it (stdout and stderr, "
                    "kept off the terminal); the first 3 in the order of the runs: 'database 1 line 0' | "
                    "'database 2 line 0' | "
                    "'database 2 line 1'")


def test_a_call_that_fails_says_what_it_printed_as_it_fails(capfd):
    with _runner("prints_then_fails", retries=0) as runner:
        with pytest.raises(MechanismError, match="database 4 is bad"):
            runner.sample(_numbered(8), np.random.default_rng(0))
    _, err = capfd.readouterr()
    # Its one chunk (the only attempt: retries=0) printed a line for each of databases 0 to 4 and raised on 4 (the
    # per-database adapter names the database itself, so no call locates it): 5 lines. The probe (database 0)
    # returned, and what it printed is the runner's to say, not the failure's.
    assert err.count("printed") == 1
    assert ("mechanism 'prints_then_fails' printed 5 lines before it failed; the first 3: 'looking at database 0' | "
            "'looking at database 1' | 'looking at database 2'") in err


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.integration)])
def test_a_chunk_retried_until_it_fails_says_what_it_printed_once(workers, capfd):
    with _runner("prints_then_fails", workers=workers, retries=2) as runner:
        with pytest.raises(MechanismError, match="database 4 is bad"):
            runner.sample(_numbered(8), np.random.default_rng(0))
    _, err = capfd.readouterr()
    # Its one chunk fails on each of its 3 attempts, each printing the 5 lines of databases 0 to 4; the line that says
    # so comes once, from the last attempt, not once an attempt.
    said = [line for line in err.splitlines() if "before it failed" in line]
    assert said == ["mechanism 'prints_then_fails' printed 5 lines before it failed; the first 3: 'looking at database "
                    "0' | 'looking at database 1' | 'looking at database 2'"]


def test_nan_outputs_are_counted_in_one_note():
    m = 200
    with _runner("nan_on_sevens") as runner:
        runner.sample(_numbered(m), np.random.default_rng(0))
        notes = runner.call_notes()
    # Written out: a NaN for every multiple of 7 or of 11 (the probe's database 0 is not among the calls counted).
    with_nan = sum(1 for i in range(m) if i % 7 == 0 or i % 11 == 0)
    assert notes == [f"mechanism 'nan_on_sevens' returned NaN in {with_nan} of its {m} outputs: each NaN is treated as "
                     "one category (y=nan, the same value whatever made it), not as a number"]


@pytest.mark.train
def test_a_function_that_returns_none_is_named_in_one_note():
    from mechanisms.adapters.callables import PerDatabaseMechanism
    from mechanisms.outputs.encoding import NONE_NOTE_WORDS, OutputEncoder

    def forgot_return(db, rng):
        db[:, 0].mean() + rng.laplace()

    def returns(db, rng):
        return db[:, 0].mean() + rng.laplace()

    # A function without its return releases None every time, so every claim holds of it: a note says so.
    for function, notes in ((forgot_return, 1), (returns, 0)):
        mechanism = PerDatabaseMechanism(function, function.__name__, encoder=OutputEncoder())
        with MechanismRunner(mechanism, function.__name__, ExecutionSettings(), quiet=True) as runner:
            runner.sample(_numbered(4), np.random.default_rng(0))
        assert sum(NONE_NOTE_WORDS in note for note in runner.notes) == notes
    # None's row and no other: not a 0 (a number), nor the string "None", another name that at width 4 shares None's
    # bucket, so its row is None's row: the names the encoder saw tell them apart.
    encoders = [OutputEncoder(width=4) for _ in range(3)]
    rows = [encoder(output) for encoder, output in zip(encoders, (None, 0.0, "None"))]
    assert np.array_equal(rows[0], rows[2])
    assert [encoder.encodes_none(row) for encoder, row in zip(encoders, rows)] == [True, False, False]
    assert not OutputEncoder(width=4).encodes_none(rows[0])  # encoded elsewhere (another process): not said


@pytest.mark.train  # its MI-DP audit trains one neural critic (counted: neural._fit_chunk runs once)
def test_an_audit_carries_the_notes_in_its_json_and_report():
    prior = ProductBernoulli(0.5, shape=(2, 1))

    def chatty_nan(db, rng):
        print("one line a call")
        return np.nan if db[0, 0] == 1 else db[0, 0] + rng.normal()

    from mechanisms.adapters.callables import PerDatabaseMechanism
    from mechanisms.outputs.encoding import OutputEncoder

    mechanism = PerDatabaseMechanism(chatty_nan, "chatty_nan", encoder=OutputEncoder())
    result = run_audit(AuditSpec(mechanism=mechanism, priors=[prior], notion="mi-dp", epsilon=0.5, samples=1000,
                                 slices=0, event_runs=0, records=(0,), seed=1, name="chatty_nan"))
    # One line a call: the audit's runs (the MI sample alone here) and the probe's two calls.
    printed = next(note for note in result.notes if " printed " in note)
    assert printed.startswith(f"mechanism 'chatty_nan' printed {result.samples + 2:,} lines while the audit ran it")
    nan = next(note for note in result.notes if "returned NaN in" in note)
    # Record 0 is 1 in about half the MI sample's databases: the count is between the two tails, and exact below.
    count = int(nan.split("returned NaN in ")[1].split(" of ")[0].replace(",", ""))
    assert f" of its {result.samples:,} outputs" in nan and 0 < count < result.samples
    assert printed in result.to_dict()["notes"] and nan in result.to_dict()["notes"]
    markdown = render_markdown(result)
    assert "returned NaN in" in markdown and "one category" in markdown


def test_printed_lines_count_every_line_and_keep_the_first_cut_short():
    stream = PrintedLines()
    stream.write("a\nb")
    stream.write("c\n\n")  # "bc" and an empty line
    stream.write("x" * (KEPT_CHARACTERS + 50) + "\nlast without newline")
    stream.buffer.write("é bytes\n".encode())
    printed = stream.printed
    # Lines: "a", "bc", "", the long one, "last without newlineé bytes": 5.
    assert printed.lines == 5
    assert printed.first == ("a", "bc", "")
    long_line = PrintedLines()
    long_line.write("y" * (KEPT_CHARACTERS + 50))
    assert long_line.printed == type(printed)(1, ("y" * KEPT_CHARACTERS,), unterminated=True)


def test_the_capture_puts_the_streams_back_and_lets_miaudit_reach_the_terminal():
    before = sys.stdout, sys.stderr
    with captured_prints("mechanism 'm'") as capture:
        assert sys.stdout is capture and sys.stderr is capture
        assert terminal_stderr() is before[1]  # the watchdog's last words go there, not into the capture
        print("hidden")
    assert (sys.stdout, sys.stderr) == before
    assert capture.printed.lines == 1


def _as_one_text(texts) -> tuple[int, tuple]:
    """The lines of ``texts`` written one after another (a text without a newline at its end continues on the next
    one's line, as on a terminal; a last line without a newline counts), and the first 3 of them."""
    text = "".join(texts)
    lines = text.split("\n")
    if lines[-1] == "":  # the text ends with a newline: no line after it
        lines.pop()
    return len(lines), tuple(lines[:3])


@pytest.mark.parametrize("workers, chunk_size", [(1, 64), (1, 7), pytest.param(2, 7, marks=pytest.mark.integration)])
def test_the_count_is_of_the_lines_printed_whatever_the_chunks(workers, chunk_size):
    m = 98
    with _runner("prints_unterminated", workers=workers, chunk_size=chunk_size) as runner:
        runner.sample(_numbered(m), np.random.default_rng(0))
        printed = runner.printed
    # Written out, from the fixture's schedule: what each call writes, in the order of the runs (the probe's two calls
    # on database 0 first), as one text.
    written = {0: "", 1: "database {i} unterminated", 2: "database {i} line 0\ndatabase {i} line 1\n"}
    lines, first = _as_one_text(written[i % 3].format(i=i) for i in [0, 0, *range(m)])
    # 32 databases (2, 5, ..., 95) print 2 lines, the first continuing the line without a newline of the database
    # before (1, 4, ..., 94): 64 newlines, after which database 97's line without a newline counts too.
    assert lines == 65
    assert printed.lines == lines
    assert printed.first == first == ("database 1 unterminateddatabase 2 line 0", "database 2 line 1",
                                      "database 4 unterminateddatabase 5 line 0")


def _shown_as_an_application_shows_them(message, category, filename, lineno, file=None, line=None):
    """``warnings.showwarning`` as the CLI's (not pytest's record): the warning written to ``sys.stderr``."""
    (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))


@pytest.mark.parametrize("workers", [1, pytest.param(2, marks=pytest.mark.integration)])
def test_miaudits_own_warnings_reach_the_terminal_and_are_not_counted(workers, capfd):
    m = 20
    with warnings.catch_warnings():
        # In the audit's process, as the CLI shows warnings; a worker process shows them as Python does by default.
        warnings.simplefilter("always", RuntimeWarning)
        warnings.showwarning = _shown_as_an_application_shows_them
        with _runner("warns_from_miaudits_code", workers=workers, chunk_size=8) as runner:
            runner.sample(_numbered(m), np.random.default_rng(0))
            printed = runner.printed
    _, err = capfd.readouterr()
    # The function prints one line a call (the probe's two calls and the m runs); the warning in the name of the
    # encoder (miaudit's code) reaches the terminal, as it would without the capture.
    assert printed.lines == m + 2
    assert printed.first == ("database 0", "database 0", "database 0")
    assert "RuntimeWarning: overflow encountered in cast" in err


def test_a_warning_is_the_mechanisms_or_miaudits_by_the_code_it_names(capfd):
    import mechanisms.outputs.encoding

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = _shown_as_an_application_shows_them
        with captured_prints("mechanism 'm'") as capture:
            warnings.warn_explicit("the mechanism's own", UserWarning, "/home/user/mechanism.py", 3)
            warnings.warn_explicit("miaudit's", RuntimeWarning, mechanisms.outputs.encoding.__file__, 171)
    _, err = capfd.readouterr()
    # The mechanism's warning, counted: one line (its file is not here, so no source line follows); miaudit's, shown.
    assert capture.printed.lines == 1 and "the mechanism's own" in capture.printed.first[0]
    assert "RuntimeWarning: miaudit's" in err and "the mechanism's own" not in err


@pytest.mark.integration
def test_the_first_lines_kept_are_in_the_order_of_the_runs(tmp_path, monkeypatch):
    # The second chunk (databases 2 and 3) fails once and is retried while the first waits for the retry: its lines
    # are printed, and come back to the runner, before the first chunk's (the fixture's markers make it so).
    monkeypatch.setenv("MIAUDIT_TEST_MARKERS", str(tmp_path))
    with _runner("prints_out_of_order", workers=2, chunk_size=2, retries=1) as runner:
        runner.probe(np.full((2, 1), -1.0), 0)  # prints nothing, and makes the probe's calls not wait
        runner.sample(_numbered(4), np.random.default_rng(0))
        printed = runner.printed
        [note] = runner.call_notes()
    assert (tmp_path / "retried").exists()
    # In the order of the runs: databases 0 and 1, then database 2's failed attempt, its retry, database 3.
    assert printed.lines == 5
    assert printed.first == ("database 0", "database 1", "database 2 attempt 1")
    assert note.endswith("; the first 3 in the order of the runs: 'database 0' | 'database 1' | 'database 2 attempt 1'")
