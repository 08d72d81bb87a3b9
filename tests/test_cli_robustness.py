"""The CLI reads negative numbers (and lists starting with one) as values, and ends quietly
when the reader of its output goes away (``miaudit ... --json | head``).

Expected numbers are computed here: the MI of a discrete input through Gaussian noise by
numerical integration of the output entropy.
"""

import json
import math
import os
import sys

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import norm

from audit.cli.main import BROKEN_PIPE_STATUS, main

SUPPORT = (-1.0, 0.0, 1.0)
PMF = (0.3, 0.4, 0.3)


def discrete_gaussian_mi_nats(support, pmf, sigma):
    """I(X; X + N(0, σ²)) = h(Y) − ½ log(2πe σ²), h(Y) by adaptive quadrature."""
    def density(y):
        return sum(p * norm.pdf(y, loc=x, scale=sigma) for x, p in zip(support, pmf))

    def integrand(y):
        f = density(y)
        return -f * math.log(f) if f > 0 else 0.0

    lo, hi = min(support) - 12 * sigma, max(support) + 12 * sigma
    h_y, _ = integrate.quad(integrand, lo, hi, points=list(support), limit=200, epsabs=1e-12)
    return h_y - 0.5 * math.log(2 * math.pi * math.e * sigma ** 2)


def run_json(argv, capsys):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("support_args", [
    ["--support", "-1,0,1"],      # a list that starts with a minus sign
    ["--support=-1,0,1"],         # the '=' form always worked
])
def test_negative_list_is_a_value(support_args, capsys):
    out = run_json(["bounds", "gaussian-lmip-cd", "--sigma", "1", *support_args, "--pmf", "0.3,0.4,0.3", "--json"],
                   capsys)
    assert out["unit"] == "nats"
    assert out["mu"] == pytest.approx(discrete_gaussian_mi_nats(SUPPORT, PMF, 1.0), rel=1e-6)


def test_list_starting_with_a_negative_fraction(capsys):
    out = run_json(["bounds", "gaussian-lmip-cd", "--sigma", "0.5", "--support", "-.5,.5", "--pmf", "0.5,0.5",
                    "--json"], capsys)
    assert out["mu"] == pytest.approx(discrete_gaussian_mi_nats((-0.5, 0.5), (0.5, 0.5), 0.5), rel=1e-6)


def test_negative_scientific_value_reaches_validation(capsys):
    # Without the parser rule argparse would say "expected one argument"; the value must
    # instead reach the calculator, whose error names the flag.
    status = main(["bounds", "gaussian-ldp", "--sigma", "1", "--sensitivity", "1", "--epsilon", "-1e-3"])
    err = capsys.readouterr().err
    assert status == 2
    assert "argument '--epsilon' must be > 0" in err
    assert "expected one argument" not in err


def test_a_real_option_after_a_flag_is_still_an_option(capsys):
    with pytest.raises(SystemExit) as info:
        main(["bounds", "gaussian-ldp", "--sigma", "1", "--sensitivity", "--epsilon", "1"])
    assert info.value.code == 2
    assert "argument --sensitivity: expected one argument" in capsys.readouterr().err


def test_closed_pipe_exits_quietly(monkeypatch, capsys):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone away, as `head` does after its lines
    closed_pipe = os.fdopen(write_end, "w")
    monkeypatch.setattr(sys, "stdout", closed_pipe)
    try:
        status = main(["bounds", "gaussian-ldp", "--sigma", "1", "--sensitivity", "1", "--epsilon", "1", "--json"])
        closed_pipe.write("x" * 10)  # stdout now points at devnull: later writes and flushes succeed
        closed_pipe.flush()
    finally:
        closed_pipe.close()
    assert status == BROKEN_PIPE_STATUS == 141
    assert capsys.readouterr().err == ""


def test_open_pipe_still_gets_the_output(capsys):
    out = run_json(["bounds", "gaussian-ldp", "--sigma", "1", "--sensitivity", "1", "--epsilon", "1", "--json"],
                   capsys)
    # Balle–Wang Thm 8 at Δ/σ = 1, ε = 1: Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2), μ = Δ/σ.
    expected = norm.cdf(-1 + 0.5) - math.e * norm.cdf(-1 - 0.5)
    assert out["delta"] == pytest.approx(expected, rel=1e-12)
    assert np.isfinite(out["delta"])


def test_one_commands_defaults_do_not_leak_into_another(monkeypatch):
    import types

    import audit.cli.main as cli

    def configure_own_default(parser):
        parser.set_defaults(seed=None)  # as a command with its own seed rule may do

    fake = {
        "first": types.SimpleNamespace(HELP="sets its own seed default", configure=configure_own_default),
        "second": types.SimpleNamespace(HELP="keeps the common default", configure=lambda parser: None),
    }
    monkeypatch.setattr(cli, "_available_commands", lambda only=None: fake)
    parser, _ = cli.build_parser()
    assert parser.parse_args(["first"]).seed is None
    assert parser.parse_args(["second"]).seed == 0  # the documented default of --seed
    assert parser.parse_args(["second", "--seed", "7"]).seed == 7


@pytest.mark.parametrize("value", ["-inf", "-Infinity", "-nan", "-NaN", "-1e-3", "-.5"])
def test_non_finite_and_negative_values_reach_validation(value, capsys):
    # argparse alone would answer "expected one argument"; the value must reach validation,
    # which rejects it naming the flag's argument.
    status = main(["audit", "--mechanism", "catalog:laplace_mean", "--notion", "mi-dp", "--epsilon", value])
    err = capsys.readouterr().err
    assert status == 2
    assert "expected one argument" not in err
    assert err.count("\n") == 1 and "epsilon" in err


@pytest.mark.parametrize("argv", [["demo", "--seed", "-1"], ["experiment", "pufferfish-fig3a", "--seed", "-1"]])
def test_negative_seed_is_one_line_naming_the_flag(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "argument '--seed' must be a whole number >= 0, got -1" in err


@pytest.mark.parametrize("value", ["1.5", "x"])
def test_non_integer_seed_is_a_usage_error(value, capsys):
    with pytest.raises(SystemExit) as info:
        main(["catalog", "--seed", value])
    assert info.value.code == 2
    assert "argument --seed: invalid integer value" in capsys.readouterr().err


def _heavy_libraries_loaded(code: str, *argv) -> str:
    """Run ``code`` in a fresh interpreter; the last line it prints: which of torch, SciPy and
    matplotlib were imported by the end (the code prints it)."""
    import subprocess
    from pathlib import Path

    code += "\nprint(sorted(m for m in ('torch', 'scipy', 'matplotlib') if m in sys.modules))"
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, cwd=root,
                          env=dict(os.environ, PYTHONPATH=str(root)))
    assert done.stdout.strip(), done.stderr
    return done.stdout.strip().splitlines()[-1]


# How long these take is measured by `python -m experiments.cli_startup`, not here.
@pytest.mark.integration
@pytest.mark.parametrize("argv", [
    ["--help"], [], ["nonsense"], ["demo", "--help"], ["experiment", "--bogus"], ["catalog", "--help"],
    ["catalog", "--seed", "x"], ["audit", "--help"], ["audit", "--epsilon"],
    ["estimate", "--help"], ["estimate", "--x"], ["estimate", "--x", "x.npy"],
    ["calibrate", "--help"], ["calibrate", "laplace", "--help"], ["calibrate", "laplace"], ["calibrate", "--bogus"],
    ["bounds", "--help"], ["bounds", "nonsense"], ["bounds", "mipp-to-pp", "--help"], ["bounds", "mipp-to-pp"],
    ["bounds", "lip-design", "--help"], ["bounds", "gaussian-lmip-ci", "--help"],
])
def test_help_and_usage_errors_load_no_heavy_library(argv):
    code = "import sys\nfrom audit.cli.main import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass"
    assert _heavy_libraries_loaded(code, *argv) == "[]"


@pytest.mark.integration
def test_building_every_sub_command_parser_loads_no_heavy_library():
    code = ("import sys\nfrom audit.cli.main import build_parser\nparser, modules = build_parser()\n"
            "assert {'audit', 'estimate', 'calibrate', 'bounds'} <= set(modules), sorted(modules)")
    assert _heavy_libraries_loaded(code) == "[]"


def test_numpy_scalars_in_error_messages_are_shown_as_numbers(monkeypatch, capsys):
    import types

    import audit.cli.main as cli
    from estimators.validation import InputError

    def run(args):
        raise InputError(f"argument '--sigma' must be > 0, got {np.float64(-0.25)!r}")

    fake = {"fake": types.SimpleNamespace(HELP="raises", configure=lambda parser: None, run=run)}
    monkeypatch.setattr(cli, "_available_commands", lambda only=None: fake)
    monkeypatch.setitem(cli.COMMANDS, "fake", "raises")
    assert main(["fake"]) == 2
    assert capsys.readouterr().err == "miaudit fake: error: argument '--sigma' must be > 0, got -0.25\n"


@pytest.mark.parametrize("argv,message", [
    (["catalog", "--name", "nope"], "argument '--name': no catalog mechanism 'nope'"),
    (["experiment", "--list", "--out", "somewhere"], "argument '--out' applies to running an experiment"),
    (["experiment", "--list", "--quick"], "argument '--quick' applies to running an experiment"),
    (["experiment", "no-such-experiment"], "unknown experiment 'no-such-experiment'"),
    (["demo", "--out", ""], "argument '--out' must be a path"),
])
def test_hostile_catalog_experiment_and_demo_input_gets_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def _one_line_error(argv, capsys) -> str:
    """The error a usage error prints: exit status 2 (returned, or argparse's SystemExit), one line."""
    try:
        status = main(argv)
    except SystemExit as exit:
        status = exit.code
    err = capsys.readouterr().err
    assert status == 2, err
    lines = [line for line in err.splitlines() if line and not line.startswith("usage:") and not line.startswith(" ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


_LAPLACE = ["audit", "--mechanism", "catalog:laplace_sum", "--samples", "400"]


@pytest.mark.parametrize("argv,message", [
    # issue 32 A4: a typo is not read as a number, nothing is silently the last or ignored
    ([*_LAPLACE, "--claim", "dp:1_0"], "argument '--claim': EPS in dp:EPS:DELTA must be a number in ASCII decimal"),
    ([*_LAPLACE, "--claim", "dp:\uff11"], "argument '--claim': EPS"),
    ([*_LAPLACE, "--claim", "zcdp:0.\u0661"], "argument '--claim': RHO"),
    ([*_LAPLACE, "--claim", "dp:1", "--claim", "dp:2"], "argument --claim: given more than once"),
    ([*_LAPLACE, "--samples", "500"], "argument --samples: given more than once"),
    ([*_LAPLACE, "--report", ""], "argument '--report' must be a path"),
    ([*_LAPLACE, "--report", "a.html", "--report", "b.html"], "argument --report: given more than once"),
    ([*_LAPLACE, "--epsilon", "1_0"], "argument --epsilon: invalid number value"),
    (["audit", "--mechanism", "catalog:laplace_sum", "--samples", "4_000"], "argument --samples: invalid integer value"),
    (["bounds", "gaussian-lmip-cd", "--sigma", "1_0", "--support", "0,1", "--pmf", "0.5,0.5"],
     "argument --sigma: invalid number value"),
])
def test_typos_repeats_and_empty_values_are_one_line(argv, message, capsys):
    assert message in _one_line_error(argv, capsys)


_NEWCOMER_MECHANISMS = '''
def no_argument():
    return 1.0

def database_only(db):
    return db.sum()

def keyword_only(*, db, rng):
    return db.sum()
'''


@pytest.mark.parametrize("argv,message", [
    # A function of the wrong signature is named before any run, with the form it is called in and its signature
    # (Python's TypeError named neither the flag nor f(db, rng)).
    (["--mechanism", "{mech}:no_argument", "--per-database"],
     "--mechanism '{mech}:no_argument' cannot be called as f(db, rng) (--per-database): its signature is ()"),
    (["--mechanism", "{mech}:database_only", "--per-database"],
     "--mechanism '{mech}:database_only' cannot be called as f(db, rng) (--per-database): its signature is (db)"),
    (["--mechanism", "{mech}:keyword_only", "--per-database"], "its signature is (*, db, rng)"),
    (["--mechanism", "{mech}:database_only"],
     "--mechanism '{mech}:database_only' cannot be called as mech(dbs, rng) -> (m, d): its signature is (db)"),
    # A mechanism or a database given where the configuration file goes (a forgotten flag, a space for a comma).
    (["{mech}:database_only", "--per-database"],
     "argument 'CONFIG' must be a TOML configuration file, got '{mech}:database_only', which names a mechanism: "
     "give it as --mechanism {mech}:database_only"),
    (["catalog:laplace_sum"], "give it as --mechanism catalog:laplace_sum"),
    (["--mechanism", "{mech}:database_only", "--per-database", "--pair", "{a}", "{b}"],
     "got '{b}', a database file: a pair of databases is --pair A.npy,B.npy, the two files joined by a comma"),
    (["--mechanism", "{mech}:database_only", "--per-database", "--claim", "dp:1,1e-5"],
     "argument '--claim': 'dp:1,1e-5' is not a claim; a claim is NOTION:PARAMS, its parts joined by ':' "
     "(dp:EPS, dp:EPS:DELTA, zcdp:RHO, rdp:ALPHA:EPS, gdp:MU, ldp:EPS, mi-dp:EPS or mi-pp:EPS): here --claim dp:1:1e-5"),
])
def test_a_newcomers_mistakes_are_one_line_naming_the_argument(argv, message, tmp_path, capsys):
    mech = tmp_path / "mine.py"
    mech.write_text(_NEWCOMER_MECHANISMS)
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, np.zeros((3, 1)))
    np.save(b, np.eye(3, 1))
    names = {"mech": mech, "a": a, "b": b}
    argv = [part.format(**names) for part in argv]
    claim = [] if "--claim" in argv else ["--claim", "dp:1"]
    prior = [] if "--pair" in argv else ["--prior", "builtin:bernoulli", "--n", "3"]
    assert message.format(**names) in _one_line_error(["audit", *argv, *claim, *prior, "--samples", "400"], capsys)


def test_no_prior_and_no_pair_names_both_ways_to_give_the_databases(tmp_path, capsys):
    mech = tmp_path / "mine.py"
    mech.write_text("def f(db, rng):\n    return db.sum() + rng.laplace()\n")
    line = _one_line_error(["audit", "--mechanism", f"{mech}:f", "--per-database", "--claim", "dp:1"], capsys)
    assert "(--prior)" in line and "--pair A.npy,B.npy" in line


def test_no_claim_leads_with_the_claim_flag_and_its_forms(tmp_path, capsys):
    mech = tmp_path / "mine.py"
    mech.write_text("def f(db, rng):\n    return db.sum() + rng.laplace()\n")
    line = _one_line_error(["audit", "--mechanism", f"{mech}:f", "--per-database", "--prior", "builtin:bernoulli",
                            "--n", "3"], capsys)
    assert line.startswith("miaudit audit: error: the audit needs a claim to audit, --claim NOTION:PARAMS (e.g. "
                           "--claim dp:1; dp:EPS, dp:EPS:DELTA"), line


def test_too_few_samples_to_certify_names_the_flag_and_the_floor(capsys):
    """The held-out split must hold MIN_TEST_SAMPLES (200) draws: at the default split's test fraction 0.5 that is
    400 samples (200 / 0.5); 10 samples are refused in one line naming --samples and [audit] samples."""
    from audit.cli.main import main

    code = main(["audit", "--mechanism", "catalog:laplace_sum", "--claim", "dp:1", "--samples", "10"])
    err = capsys.readouterr().err
    assert code == 2
    error_lines = [line for line in err.splitlines() if "error:" in line]
    assert error_lines == ["miaudit audit: error: argument 'samples' (--samples, [audit] samples) is 10: too small "
                           "to certify anything, the held-out split would have fewer than 200 samples; use at "
                           "least 400"]
