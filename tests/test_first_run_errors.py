"""A newcomer's first ``miaudit audit`` of their own function: each mistake ends in one line naming the argument and
what to type instead, built from the values typed, without argparse's usage block (exit status 2).

The CLI runs in process (``main``); every case stops before any mechanism run.
"""

from __future__ import annotations

import numpy as np
import pytest

from audit.cli.main import main
from audit.config.hints import corrected_claim

SYNTAX = "dp:EPS, dp:EPS:DELTA, zcdp:RHO, rdp:ALPHA:EPS, gdp:MU, ldp:EPS, mi-dp:EPS or mi-pp:EPS"
FUNCTIONS = '''
def count(db, rng):
    return db.sum() + rng.laplace(scale=1.0)

def database_only(db):
    return db.sum()
'''
PRIOR = ["--per-database", "--prior", "builtin:bernoulli", "--n", "10"]


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A folder holding f.py, the newcomer's file, as the current folder."""
    (tmp_path / "f.py").write_text(FUNCTIONS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def error_line(argv, capsys) -> str:
    """The one line ``miaudit audit argv`` writes on stderr, without its prefix; exit status 2, nothing on stdout."""
    status = main(["audit", *argv])
    captured = capsys.readouterr()
    assert status == 2 and captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("miaudit audit: error: "), captured.err
    return lines[0].removeprefix("miaudit audit: error: ")


def claim_error(typed: str, fixed: str) -> str:
    return (f"argument '--claim': {typed!r} is not a claim; a claim is NOTION:PARAMS, its parts joined by ':' "
            f"({SYNTAX}): here --claim {fixed}")


@pytest.mark.parametrize("argv,expected", [
    # A claim's notion where the MI notion goes: the claim the user meant, from the --epsilon (and --delta) typed.
    (["--notion", "dp", "--epsilon", "1"],
     "argument '--notion': 'dp' is a claim's notion, and --notion picks the MI notion to audit (mi-dp, smi-dp or "
     "mi-pp); to check a DP claim give --claim dp:EPS instead of --notion and --epsilon: here --claim dp:1"),
    (["--notion", "(eps,delta)-DP", "--epsilon", "0.5", "--delta", "1e-5"],
     "argument '--notion': '(eps,delta)-DP' is a claim's notion, and --notion picks the MI notion to audit (mi-dp, "
     "smi-dp or mi-pp); to check a DP claim give --claim dp:EPS:DELTA instead of --notion and --epsilon: here "
     "--claim dp:0.5:1e-05"),
    (["--notion", "zcdp"],
     "argument '--notion': 'zcdp' is a claim's notion, and --notion picks the MI notion to audit (mi-dp, smi-dp or "
     "mi-pp); to check a ZCDP claim give --claim zcdp:RHO instead of --notion: here --claim zcdp:RHO"),
    # Any other choice flag: the schema's line, not argparse's usage block.
    (["--notion", "renyi", "--epsilon", "1"], "[audit] notion (--notion) must be one of mi-dp, smi-dp, mi-pp, got 'renyi'"),
    (["--arithmetic", "exact", "--claim", "dp:1"],
     "[audit] arithmetic (--arithmetic) must be one of float, ideal, got 'exact'"),
])
def test_a_claim_notion_given_as_notion_says_the_claim_to_give(folder, capsys, argv, expected):
    assert error_line(["--mechanism", "f.py:count", *PRIOR, *argv], capsys) == expected


@pytest.mark.parametrize("typed,fixed", [
    ("dp=1", "dp:1"), ("eps:1", "dp:1"), ("epsilon=1", "dp:1"), ("dp 1", "dp:1"), ("dp(1)", "dp:1"),
    ("dp:1,1e-5", "dp:1:1e-5"), ("dp:(1, 1e-5)", "dp:1:1e-5"), ("1-DP", "dp:1"), ("(1, 1e-05)-DP", "dp:1:1e-05"),
    ("1", "dp:1"), ("zcdp=0.5", "zcdp:0.5"), ("rdp 2 0.3", "rdp:2:0.3"),
])
def test_a_claim_in_another_form_says_the_form_it_means(folder, capsys, typed, fixed):
    assert error_line(["--mechanism", "f.py:count", *PRIOR, "--claim", typed], capsys) == claim_error(typed, fixed)


def test_a_bare_notion_takes_the_epsilon_typed_beside_it(folder, capsys):
    argv = ["--mechanism", "f.py:count", *PRIOR, "--claim", "dp", "--epsilon", "2"]
    assert error_line(argv, capsys) == claim_error("dp", "dp:2")


@pytest.mark.parametrize("words,fixed", [(["dp", "1"], "dp:1"), (["dp:1", "1e-5"], "dp:1:1e-5")])
def test_a_claim_typed_as_two_words_is_not_read_as_a_configuration_file(folder, capsys, words, fixed):
    expected = (f"argument '--claim' takes one value, NOTION:PARAMS joined by ':': '--claim {' '.join(words)}' gave it "
                f"{words[0]!r} and read {words[1]!r} as the CONFIG file; here --claim {fixed}")
    assert error_line(["--mechanism", "f.py:count", *PRIOR, "--claim", *words], capsys) == expected


def test_claims_that_mean_nothing_else_keep_their_error(folder, capsys):
    assert corrected_claim("dp:1") is None and corrected_claim("foo:1") is None and corrected_claim("dp") is None
    assert error_line(["--mechanism", "f.py:count", *PRIOR, "--claim", "foo:1"], capsys) == (
        f"argument '--claim': unknown notion 'foo' in 'foo:1'; choose from dp, ldp, zcdp, rdp, gdp, mi-dp, mi-pp ({SYNTAX})")


def test_epsilon_repeating_the_claims_epsilon_is_said_to_be_the_mi_level(folder, capsys):
    # Stopped by --samples 10 once the flags are read: the warning comes first, on its own line. 1-DP implies
    # min(1, 1²/2) = 0.5 nats of MI-DP (Nuradha and Goldfeld 2023, Theorem 1).
    status = main(["audit", "--mechanism", "f.py:count", *PRIOR, "--claim", "dp:1", "--epsilon", "1", "--samples", "10"])
    lines = capsys.readouterr().err.splitlines()
    assert status == 2 and lines[0] == (
        "miaudit audit: warning: --epsilon 1 is the MI level audited beside the claim, in nats, not the claim's ε, which "
        "--claim dp:1 gives already (alone it audits MI-DP at the 0.5 nats it implies); drop --epsilon unless you mean "
        "that MI level")


@pytest.mark.parametrize("spec,expected", [
    ("count", "--mechanism 'count' names a function without its file (FILE.py:count): here --mechanism f.py:count"),
    ("f.py", "--mechanism 'f.py' names a file without the function to audit in it (FILE.py:NAME): here --mechanism "
             "f.py:count, or another of its functions (database_only)"),
    ("laplace_sum", "--mechanism 'laplace_sum' names a catalog mechanism: give --mechanism catalog:laplace_sum"),
    ("g.py", "--mechanism 'g.py': no such file '{folder}/g.py'; give the file that defines your function, with the "
             "function's name: --mechanism FILE.py:NAME"),
    ("nothing", "--mechanism 'nothing' names a function without its file (FILE.py:nothing), and no .py file in "
                "'{folder}' defines nothing: give --mechanism FILE.py:nothing with the file that does"),
])
def test_a_mechanism_without_its_file_or_function_says_the_spec_to_type(folder, capsys, spec, expected):
    assert error_line(["--mechanism", spec, *PRIOR, "--claim", "dp:1"], capsys) == expected.format(folder=folder)


def test_a_home_relative_path_is_read_as_the_shell_would(folder, capsys, monkeypatch):
    # Quoted (or in a TOML file), ~ reaches miaudit unexpanded: it is the home folder, as for the shell.
    monkeypatch.setenv("HOME", str(folder))
    argv = ["--mechanism", "~/f.py:database_only", *PRIOR, "--claim", "dp:1"]
    assert error_line(argv, capsys).startswith("--mechanism '~/f.py:database_only' cannot be called as f(db, rng)")


def write(folder, text: str) -> str:
    (folder / "audit.toml").write_text(text)
    return str(folder / "audit.toml")


def test_a_configurations_type_errors_come_before_what_it_lacks(folder, capsys):
    # No claim, and two keys of the wrong type: the first one written is named, not the missing claim.
    config = write(folder, '[mechanism]\nspec = "f.py:count"\nper_database = true\n'
                           '[prior]\nspec = "builtin:bernoulli"\nn = "10"\n[audit]\nsamples = "1000"\n')
    assert error_line([config], capsys) == "[prior] n (--n) must be an integer, got a string '10'"
    config = write(folder, '[audit]\nsamples = "1000"\n[mechanism]\nspec = "f.py:count"\n')
    assert error_line([config], capsys) == "[audit] samples (--samples) must be an integer, got a string '1000'"


def test_a_configurations_claim_notion_and_claim_form_say_what_to_write(folder, capsys):
    head = '[mechanism]\nspec = "f.py:count"\nper_database = true\n[prior]\nspec = "builtin:bernoulli"\n'
    assert error_line([write(folder, head + '[audit]\nnotion = "dp"\nepsilon = 1\n')], capsys) == (
        "[audit] notion (--notion): 'dp' is a claim's notion, and [audit] notion picks the MI notion to audit (mi-dp, "
        "smi-dp or mi-pp); to check a DP claim write it in [claim]: here [claim] spec = \"dp:1\" (and no [audit] notion "
        "or epsilon)")
    assert error_line([write(folder, head + '[claim]\nspec = "dp=1"\n')], capsys) == (
        f"argument '[claim] spec': 'dp=1' is not a claim; a claim is NOTION:PARAMS, its parts joined by ':' ({SYNTAX}): "
        "here [claim] spec = \"dp:1\"")


def test_pair_files_of_different_shapes_name_the_files_typed(folder, capsys):
    np.save(folder / "a.npy", np.zeros((10, 1)))
    np.save(folder / "c.npy", np.zeros((5, 2)))
    line = error_line(["--mechanism", "f.py:count", "--per-database", "--pair", "a.npy,c.npy", "--claim", "dp:1"], capsys)
    assert line == ("argument '--pair a.npy,c.npy': the two databases must have the same shape (n, k) (replace-one "
                    "neighbours) or n and n − 1 rows (add/remove neighbours), got (10, 1) and (5, 2)")


def test_the_second_pair_flag_is_named_as_typed(folder, capsys):
    np.save(folder / "a.npy", np.zeros((10, 1)))
    np.save(folder / "b.npy", np.eye(10, 1))  # record 0 differs: neighbours
    argv = ["--mechanism", "f.py:count", "--per-database", "--pair", "a.npy,b.npy", "--pair", "b.npy,b.npy",
            "--claim", "dp:1"]
    assert error_line(argv, capsys) == ("argument '--pair b.npy,b.npy': the two databases are equal; a neighbouring "
                                        "pair differs in one record")


def test_pairs_of_a_configuration_keep_their_entry(folder, capsys):
    np.save(folder / "a.npy", np.zeros((10, 1)))
    config = write(folder, '[mechanism]\nspec = "f.py:count"\nper_database = true\n[claim]\nspec = "dp:1"\n'
                           '[[pairs]]\nfirst = "a.npy"\nsecond = "a.npy"\n')
    assert error_line([config], capsys) == ("argument '[[pairs]] entry 1 first, second (--pair)': the two databases are "
                                            "equal; a neighbouring pair differs in one record")


# A mechanism file that fails at import: the error says the line, counted here in the text written.
RAISES_AT_IMPORT = "import numpy as np\n\nraise RuntimeError('boom at import')\n"
RAISES_IN_A_HELPER = "def helper():\n    return {}['key']\n\n\nTABLE = helper()\n"
SYNTAX_ERROR = "def count(db, rng):\n    return db.sum( +\n\nx = 1\n"


@pytest.mark.parametrize("text,expected", [
    (RAISES_AT_IMPORT, "executing 'bad.py' failed: RuntimeError: boom at import (at bad.py line 3)"),
    (RAISES_IN_A_HELPER, "executing 'bad.py' failed: KeyError: 'key' (at bad.py line 2, in helper)"),
    (SYNTAX_ERROR, "executing 'bad.py' failed: SyntaxError: '(' was never closed (at bad.py line 2)"),
])
def test_a_file_that_fails_at_import_says_the_line(folder, capsys, text, expected):
    (folder / "bad.py").write_text(text)
    assert error_line(["--mechanism", "bad.py:count", *PRIOR, "--claim", "dp:1"], capsys) == (
        f"--mechanism 'bad.py:count': {expected}")


def test_a_file_whose_own_import_fails_says_the_line_in_the_imported_file_and_the_import(folder, capsys):
    # bad.py imports tools.py of its folder, whose line 2 raises inside lookup(); a library's frames (numpy's) are
    # not the user's to fix and are not named.
    (folder / "tools.py").write_text("def lookup():\n    return {}['key']\n\n\nTABLE = lookup()\n")
    (folder / "bad.py").write_text("import numpy as np\nimport tools\n")
    assert error_line(["--mechanism", "bad.py:count", *PRIOR, "--claim", "dp:1"], capsys) == (
        "--mechanism 'bad.py:count': executing 'bad.py' failed: KeyError: 'key' (at tools.py line 2, in lookup, "
        "reached from bad.py line 2)")
    (folder / "bad.py").write_text("import numpy as np\n\nnp.load('no-such-file.npy')\n")
    assert error_line(["--mechanism", "bad.py:count", *PRIOR, "--claim", "dp:1"], capsys).endswith(
        "No such file or directory: 'no-such-file.npy' (at bad.py line 3)")


def test_a_module_that_fails_at_import_says_the_line(folder, capsys, monkeypatch):
    (folder / "failing_module_xyz.py").write_text(RAISES_AT_IMPORT)
    monkeypatch.syspath_prepend(str(folder))
    assert error_line(["--mechanism", "failing_module_xyz:count", *PRIOR, "--claim", "dp:1"], capsys) == (
        "--mechanism 'failing_module_xyz:count': importing 'failing_module_xyz' failed: RuntimeError: boom at import "
        "(at failing_module_xyz.py line 3)")


def test_a_missing_file_says_the_folder_and_the_file_nearby(folder, capsys):
    assert error_line(["--mechanism", "nodir/f.py:count", *PRIOR, "--claim", "dp:1"], capsys) == (
        f"--mechanism 'nodir/f.py:count': file 'nodir/f.py' does not exist in the working directory '{folder}'; f.py "
        "is there: here --mechanism f.py:count")
    assert error_line(["--mechanism", "nodir/g.py:count", *PRIOR, "--claim", "dp:1"], capsys) == (
        f"--mechanism 'nodir/g.py:count': file 'nodir/g.py' does not exist in the working directory '{folder}'")


def test_a_missing_file_of_a_configuration_says_its_folder(folder, capsys):
    # The configuration in a folder of its own, its spec written from the working directory: f.py is one up.
    (folder / "configs").mkdir()
    (folder / "configs" / "audit.toml").write_text('[mechanism]\nspec = "f.py:count"\nper_database = true\n'
                                                   '[prior]\nspec = "builtin:bernoulli"\n[claim]\nspec = "dp:1"\n')
    assert error_line([str(folder / "configs" / "audit.toml")], capsys) == (
        f"--mechanism 'f.py:count': file 'f.py' does not exist in the configuration file's folder '{folder}/configs'; "
        f"f.py is in the working directory '{folder}': here --mechanism ../f.py:count")
    (folder / "configs" / "audit.toml").write_text('[mechanism]\nspec = "f.py:count"\nper_database = true\n'
                                                   '[prior]\nspec = "priors/p.py:draw"\n[claim]\nspec = "dp:1"\n')
    (folder / "configs" / "f.py").write_text(FUNCTIONS)
    assert error_line([str(folder / "configs" / "audit.toml")], capsys) == (
        f"[prior] spec (--prior) 'priors/p.py:draw': file 'priors/p.py' does not exist in the configuration file's "
        f"folder '{folder}/configs'")


def test_too_few_samples_name_the_argument_its_flag_and_key(folder, capsys):
    # Stopped before any mechanism run by the engine's floor of held-out draws (audit.engine).
    status = main(["audit", "--mechanism", "f.py:count", *PRIOR, "--claim", "dp:1", "--samples", "10"])
    line = capsys.readouterr().err.splitlines()[-1]
    assert status == 2 and line == (
        "miaudit audit: error: argument 'samples' (--samples, [audit] samples) is 10: too small to certify anything, "
        "the held-out split "
        "would have fewer than 200 samples; use at least 400")
