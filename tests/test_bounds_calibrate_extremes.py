"""Every ``miaudit bounds`` calculator and ``miaudit calibrate`` rule, run in-process through the
CLI entry point with extreme values in each numeric flag (issue 12, A5, C and E).

The contract checked: exit 0 with only finite numbers in the output, or exit 2 with a single
line that names a flag; never a traceback (an exception escaping ``main`` fails the test).
"""

import re

import numpy as np
import pytest

import audit.cli.main as cli
from audit.cli.main import main

EXTREMES = ("1e-320", "1e308", "0", "-1", "inf", "nan", "-1e308")
INT_EXTREMES = ("0", "-1", "1000000000", "1e9", "1000000000000000000", "1.5", "inf")
LIST_EXTREMES = ("1e-320", "1e308,1e308", "0,0", "-1,2", "nan,1", "inf")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("extremes")
    paths = {}
    for name, array in {"kernel": np.array([[0.6, 0.4], [0.3, 0.7]]),
                        "pxgy": np.array([[1 / 4, 2 / 5], [3 / 4, 3 / 5]]), "py": np.array([1 / 4, 3 / 4])}.items():
        paths[name] = str(folder / f"{name}.npy")
        np.save(paths[name], array)
    return paths


@pytest.fixture(scope="module")
def parsers():
    """The parsers built so far in this module, by command."""
    return {}


@pytest.fixture
def one_parser_per_command(parsers, monkeypatch):
    """``main`` builds each command's parser once in this module instead of once a case.

    Building the parser is most of a case's cost (``bounds`` configures some twenty calculators),
    and what :func:`audit.cli.main.build_parser` builds depends on ``argv[0]`` alone; parsing leaves
    a parser as it was (every case gets a fresh namespace), so a case that reuses one parses its
    arguments as with a parser of its own. Nothing in this module patches the commands.
    """
    build = cli.build_parser

    def built_once(argv=None):
        key = None if argv is None else tuple(argv[:1])
        if key not in parsers:
            parsers[key] = build(argv)
        return parsers[key]

    monkeypatch.setattr(cli, "build_parser", built_once)


# name (":variant" for a second set of base arguments): (base arguments, float flags, int flags, list flags)
BOUNDS = {
    "pp-to-mipp": (["--epsilon", "1"], ["--epsilon"], [], []),
    "mipp-to-pp": (["--mi", "0.1"], ["--mi", "--epsilon-prime"], [], []),
    "approx-pp-to-mipp": (["--epsilon", "1", "--delta", "0.1", "--support", "4"], ["--epsilon", "--delta"],
                          ["--support", "--secret-values"], []),
    "approx-pp-to-mipp:density": (["--epsilon", "1", "--delta", "0.1", "--alpha", "0.5", "--beta", "0.5",
                                   "--u", "2", "--ell", "1"], ["--epsilon", "--delta"], [],
                                  ["--alpha", "--beta", "--u", "--ell"]),
    "dp-epsilon-from-mi": (["--mi", "0.1"], ["--mi"], [], []),
    "composition": (["--mi-epsilons", "0.1,0.2"], ["--eta"], [], ["--mi-epsilons"]),
    "utility": (["--mi-epsilon", "0.2", "--h-f-given-g", "0.9", "--h-g-given-f", "0", "--h-g", "0.69"],
                ["--mi-epsilon", "--h-f-given-g", "--h-g-given-f", "--h-g"], [], []),
    "bac-capacity": (["--p0", "0.1", "--p1", "0.2"], ["--p0", "--p1"], [], []),
    "ldp-from-lmip": (["--mu", "0.1", "--epsilon", "1"], ["--mu", "--epsilon"], [], []),
    "ldp-floor": (["--mu", "0.1"], ["--mu"], [], []),
    "lmip-from-ldp": (["--gaussian-sigma", "1", "--sensitivity", "1"], ["--gaussian-sigma", "--sensitivity"], [], []),
    "lip-from-lmip": (["--mu", "0.1", "--epsilon", "1"], ["--mu", "--epsilon"], [], []),
    "lip-floor": (["--mu", "0.1"], ["--mu"], [], []),
    "lmip-from-lip": (["--sigma", "1", "--support=-1,1", "--pmf", "0.5,0.5"], ["--sigma"], [], ["--support"]),
    "gaussian-ldp": (["--sigma", "1", "--sensitivity", "1", "--epsilon", "1"],
                     ["--sigma", "--sensitivity", "--epsilon"], [], []),
    "gaussian-lmip-ci": (["--sigma", "1", "--amplitude", "1"], ["--sigma", "--amplitude"], ["--dim"], []),
    "gaussian-lmip-cd": (["--sigma", "1", "--support=-1,1", "--pmf", "0.5,0.5"], ["--sigma"], [], ["--support"]),
    "gaussian-lip": (["--sigma", "1", "--support=-1,1", "--pmf", "0.5,0.5", "--epsilon", "1"],
                     ["--sigma", "--epsilon"], [], ["--support"]),
    "pml-kernel": (["--kernel", "{kernel}", "--c", "0.1"], ["--c"], [], []),
    "pml-dobrushin": (["--epsilon", "1", "--c", "0.05", "--n", "10"], ["--epsilon", "--c"], ["--n"], []),
    "pml-kl": (["--epsilon", "1", "--c", "0.05", "--n", "10", "--tv", "0.2"], ["--epsilon", "--c", "--tv"], ["--n"], []),
    "pml-hellinger": (["--epsilon", "1", "--c", "0.05", "--n", "10", "--tv", "0.2"], ["--epsilon", "--tv"], [], []),
    "lip-design": (["--pxgy", "{pxgy}", "--py", "{py}", "--epsilon", "0.05"], ["--epsilon"], [], []),
}

CALIBRATE = {
    "laplace-dp": (["laplace", "--notion", "dp", "--epsilon", "1", "--l1-sensitivity", "1"],
                   ["--epsilon", "--l1-sensitivity"], ["--dim"], []),
    "laplace-approx-dp": (["laplace", "--notion", "approx-dp", "--epsilon", "1", "--delta", "0.1",
                           "--l1-sensitivity", "1"], ["--epsilon", "--delta", "--l1-sensitivity"], [], []),
    "laplace-mi-dp": (["laplace", "--notion", "mi-dp", "--epsilon", "1", "--l1-sensitivity", "1"],
                      ["--epsilon", "--l1-sensitivity"], ["--dim"], []),
    "laplace-mi-pp": (["laplace", "--notion", "mi-pp", "--epsilon", "1", "--cond-std", "1,2"],
                      ["--epsilon"], [], ["--cond-std"]),
    "laplace-mi-pp-one-value": (["laplace", "--notion", "mi-pp", "--epsilon", "1", "--cond-std", "1", "--dim", "3"],
                                ["--epsilon", "--cond-std"], ["--dim"], []),
    "gaussian-mi-pp-one-value": (["gaussian", "--notion", "mi-pp", "--epsilon", "1", "--cond-var", "1", "--dim", "3"],
                                 ["--epsilon", "--cond-var"], ["--dim"], []),
    "gaussian-approx-dp": (["gaussian", "--notion", "approx-dp", "--epsilon", "0.5", "--delta", "1e-5",
                            "--l2-sensitivity", "1"], ["--epsilon", "--delta", "--l2-sensitivity"], ["--dim"], []),
    "gaussian-analytic": (["gaussian", "--notion", "approx-dp", "--epsilon", "2", "--delta", "1e-5",
                           "--l2-sensitivity", "1", "--analytic"], ["--epsilon", "--delta", "--l2-sensitivity"], [], []),
    "gaussian-mi-dp": (["gaussian", "--notion", "mi-dp", "--epsilon", "1", "--l2-sensitivity", "1"],
                       ["--epsilon", "--l2-sensitivity"], ["--dim"], []),
    "gaussian-mi-dp-compact": (["gaussian", "--notion", "mi-dp", "--epsilon", "1", "--l2-sensitivity", "1",
                                "--compact"], ["--epsilon", "--l2-sensitivity"], [], []),
    "gaussian-mi-pp": (["gaussian", "--notion", "mi-pp", "--epsilon", "1", "--cond-var", "1,2"],
                       ["--epsilon"], [], ["--cond-var"]),
    "gaussian-projection": (["gaussian", "--notion", "mi-pp", "--epsilon", "1", "--projection-dim", "2",
                             "--op-norm", "1", "--dim", "4"], ["--epsilon", "--op-norm", "--max-column-norm"],
                            ["--projection-dim", "--dim"], []),
    "gaussian-random-projection": (["gaussian", "--notion", "mi-pp", "--epsilon", "1", "--projection-dim", "2",
                                    "--op-norm", "1", "--dim", "4", "--random-projection", "--mean-sq-norm", "1"],
                                   ["--epsilon", "--op-norm", "--mean-sq-norm"], ["--projection-dim"], []),
}


def _with(argv, flag, value):
    """``argv`` with ``flag`` set to ``value`` (replaced, or appended when absent)."""
    out, i, found = [], 0, False
    while i < len(argv):
        if argv[i] == flag:
            out += [f"{flag}={value}"]
            i, found = i + 2, True
        elif argv[i].startswith(flag + "="):
            out += [f"{flag}={value}"]
            i, found = i + 1, True
        else:
            out.append(argv[i])
            i += 1
    return out if found else out + [f"{flag}={value}"]


def _cases(table, command):
    for name, (base, floats, ints, lists) in table.items():
        for flags, values in ((floats, EXTREMES), (ints, INT_EXTREMES), (lists, LIST_EXTREMES)):
            for flag in flags:
                for value in values:
                    prefix = [command, name.split(":")[0]] if command == "bounds" else [command]
                    yield pytest.param(prefix, base, flag, value, id=f"{command}-{name}-{flag}={value}")


NUMBER = re.compile(r"(?<![\w.])-?(nan|inf)(?![\w])", re.IGNORECASE)


@pytest.mark.parametrize("prefix, base, flag, value", [*_cases(BOUNDS, "bounds"), *_cases(CALIBRATE, "calibrate")])
@pytest.mark.usefixtures("one_parser_per_command")
def test_extreme_value_gives_finite_numbers_or_one_line_naming_a_flag(prefix, base, flag, value, files, capsys):
    argv = [*prefix, *_with([arg.format(**files) for arg in base], flag, value)]
    try:
        status = main(argv)
    except SystemExit as exc:  # argparse: a value of the wrong type (e.g. 1e9 for an int flag)
        status = exc.code
        assert status == 2
        assert flag in capsys.readouterr().err.strip().splitlines()[-1]
        return
    captured = capsys.readouterr()
    if status == 0:
        assert not NUMBER.search(captured.out), captured.out
    else:
        assert status == 2
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1, captured.err
        assert "'--" in lines[0], lines[0]
        assert "np.float64" not in lines[0] and "array(" not in lines[0]
