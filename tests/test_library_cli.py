"""The OpenDP, diffprivlib, external-program and pairs examples of docs/how-to/libraries.md, end to
end through the CLI.

Each example runs as written (at a reduced budget: the flags appended last override the
page's): the correct mechanism is not refuted, the misconfigured one is, and the result's notes
say where the claim came from and whether the mechanism follows the seed.
"""

import json
import re
import shlex
import shutil

import numpy as np
import pytest
from docs_examples import DOCS, blocks
from docs_examples import code_block as page_block

from audit.cli.main import main

SMALL_BUDGET = ["--samples", "2000", "--event-runs", "2000", "--slices", "0", "--set", "critic.max_steps=300",
                "--json", "--quiet"]


PAGE = DOCS / "how-to" / "libraries.md"


def code_block(language: str, title: str) -> str:
    """The file ``title`` (a ```LANGUAGE title="..." block) of the libraries how-to."""
    return page_block(PAGE, language, title)


def readme_commands(section: str) -> list:
    """The ``miaudit`` commands of the first console block after the page's heading ``section``."""
    text = PAGE.read_text()
    start = text.index(f"## {section}\n")
    block = next(b for b in blocks(text) if b.start > start and b.language == "console")
    lines = block.body.replace("\\\n", " ").splitlines()
    return [shlex.split(line[2:])[1:] for line in lines if line.startswith("$ miaudit ")]


def _without(argv, flags) -> list:
    """``argv`` without the ``flags`` that take a value (and their values): each flag may be given once."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in flags:
            skip = True
        else:
            kept.append(arg)
    return kept


def run_cli(argv, capsys) -> dict:
    valued = {flag for flag in SMALL_BUDGET if flag.startswith("--") and flag not in ("--json", "--quiet", "--set")}
    code = main(_without(argv, valued) + SMALL_BUDGET)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def refuted(payload) -> bool:
    """The claim's verdict where the result gives one, else whether a cross-check refuted the claim."""
    if payload.get("claim_verdict") is not None:
        return payload["claim_verdict"] == "refuted"
    return any(check["certified_contradiction"] for check in payload["cross_checks"])


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.train
def test_readme_opendp_example(in_tmp, capsys):
    pytest.importorskip("opendp.prelude")
    (in_tmp / "opendp_sum.py").write_text(code_block("python", "opendp_sum.py"))
    correct, misconfigured = readme_commands("OpenDP")
    payload = run_cli(correct, capsys)
    # The correct measurement is exactly 0.5-DP on the 0/1 pair, on its claim's boundary, and OpenDP's noise takes
    # no seed: an audit refutes it with probability at most α. At the default 0.05 none of 100 audits at this budget
    # refuted it (ε̲ at most 0.45), 1 of 80 at the page's 4,000 samples did (ε̲ = 0.503); the page's --alpha 0.001
    # bounds this assertion's failure at 1 in 1,000.
    assert payload["alpha"] == 0.001
    assert not refuted(payload)
    assert any("OpenDP privacy map at d_in = 2" in note and "dp:0.5" in note for note in payload["notes"])
    assert any("takes no seed" in note for note in payload["notes"])
    payload = run_cli(misconfigured, capsys)
    # Bounds (0, 0.1) fed 0/1 records: Laplace(0.2) on a change of 1 is 5-DP, not 0.5-DP.
    assert refuted(payload) and payload["dp_epsilon_lower_bound_event"] > 0.5


@pytest.mark.train
def test_library_claim_is_overridden_by_claim_flag(in_tmp, capsys):
    pytest.importorskip("opendp.prelude")
    (in_tmp / "opendp_sum.py").write_text(code_block("python", "opendp_sum.py"))
    correct, _ = readme_commands("OpenDP")
    payload = run_cli(correct + ["--claim", "dp:0.01", "--report", str(in_tmp / "report.html")], capsys)
    assert {check["claim"] for check in payload["cross_checks"]} == {"0.01-DP"}
    assert any(note.startswith("claim from --claim / [claim], overriding the claim dp:0.5") for note in payload["notes"])
    # The reproducibility note reaches the report.
    assert "takes no seed" in (in_tmp / "report.md").read_text()


@pytest.mark.train
def test_readme_diffprivlib_example(in_tmp, capsys):
    pytest.importorskip("diffprivlib.mechanisms", exc_type=ImportError)
    (in_tmp / "dpl_sum.py").write_text(code_block("python", "dpl_sum.py"))
    correct, misconfigured = readme_commands("diffprivlib")
    payload = run_cli(correct, capsys)
    # Whether the "correct" one stands is not asked here: its double-precision Laplace is refuted
    # through the float bits of sum + noise (docs/how-to/libraries.md). The route is: the claim is
    # read from the library, and the audit is seeded.
    assert any(note.startswith("claim dp:0.5 from diffprivlib Laplace") for note in payload["notes"])
    assert not any("takes no seed" in note for note in payload["notes"])
    first = payload["estimate"]
    assert run_cli(correct, capsys)["estimate"] == first  # seeded: the same seed reproduces the audit
    payload = run_cli(misconfigured, capsys)
    # Sensitivity 0.1 for a sum that moves by 1: Laplace(0.2), truly 5-DP.
    assert refuted(payload) and payload["dp_epsilon_lower_bound_event"] > 0.5


@pytest.mark.train
def test_readme_diffprivlib_class_route(in_tmp, capsys):
    pytest.importorskip("diffprivlib.mechanisms", exc_type=ImportError)
    payload = run_cli(["audit", "--mechanism", "diffprivlib.mechanisms:Laplace", "--set", "mechanism.params.epsilon=0.5",
                       "--set", "mechanism.params.sensitivity=0.1", "--prior", "builtin:bernoulli", "--n", "10",
                       "--notion", "mi-dp", "--epsilon", "0.125", "--records", "0"], capsys)
    assert refuted(payload)


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("awk") is None or shutil.which("sh") is None, reason="needs sh and awk")
@pytest.mark.train
def test_readme_external_program_example(in_tmp, capsys):
    (in_tmp / "mech.sh").write_text(code_block("sh", "mech.sh"))
    correct, misconfigured = readme_commands("An external program")
    payload = run_cli(correct, capsys)
    # As with diffprivlib, awk's float Laplace printed with %.17g is refuted through its float bits
    # (docs/how-to/libraries.md); the route is checked: the seed reaches the program.
    assert any("MIAUDIT_SEED" in note for note in payload["notes"])
    assert run_cli(correct, capsys)["estimate"] == payload["estimate"]  # awk seeds from MIAUDIT_SEED
    payload = run_cli(misconfigured, capsys)
    assert refuted(payload) and payload["dp_epsilon_lower_bound_event"] > 0.5


@pytest.mark.train
def test_readme_pairs_example(in_tmp, capsys):
    pytest.importorskip("opendp.prelude")
    (in_tmp / "opendp_sum.py").write_text(code_block("python", "opendp_sum.py"))
    a = np.zeros((10, 1))
    b = a.copy()
    b[0] = 1
    np.save(in_tmp / "a.npy", a)
    np.save(in_tmp / "b.npy", b)
    (command,) = readme_commands("Neighbouring pairs without a prior")
    payload = run_cli(command, capsys)
    assert refuted(payload)
    assert [row["record"] for row in payload["per_record"]] == [0]  # only the record that switches
    assert len(payload["priors"]) == 1 and payload["priors"][0].startswith("two-point")


@pytest.mark.train
def test_pairs_from_a_configuration_file(in_tmp, capsys):
    (in_tmp / "mech.py").write_text("def mech(dbs, rng):\n"
                                    "    return dbs.sum(axis=1) + rng.laplace(0.0, 0.1, (dbs.shape[0], 1))\n")
    base = np.zeros((3, 1))
    other = base.copy()
    other[2] = 1
    np.save(in_tmp / "base.npy", base)
    np.save(in_tmp / "other.npy", other)
    (in_tmp / "audit.toml").write_text('[mechanism]\nspec = "mech.py:mech"\n[audit]\nnotion = "mi-dp"\n'
                                       'epsilon = 0.125\n[[pairs]]\nfirst = "base.npy"\nsecond = "other.npy"\n'
                                       '[claim]\nnotion = "dp"\nepsilon = 1.0\n')
    payload = run_cli(["audit", str(in_tmp / "audit.toml")], capsys)
    assert [row["record"] for row in payload["per_record"]] == [2]
    assert refuted(payload)  # Laplace(0.1) on a change of 1 is 10-DP


@pytest.mark.parametrize("argv, message", [
    (["--pair", "a.npy"], "--pair' must be A.npy,B.npy"),
    (["--pair", "missing.npy,b.npy"], "no such file"),
    (["--pair", "a.npy,a.npy"], "the two databases are equal"),
    (["--pair", "a.npy,far.npy"], "differ in records \\[0, 1\\]"),
    (["--pair", "a.npy,flat.npy"], "shape \\(n, k\\).*reshape"),
])
def test_pair_errors_name_the_flag(in_tmp, capsys, argv, message):
    np.save(in_tmp / "a.npy", np.zeros((3, 1)))
    np.save(in_tmp / "b.npy", np.eye(3)[:, :1])
    np.save(in_tmp / "far.npy", np.array([[1.0], [1.0], [0.0]]))
    np.save(in_tmp / "flat.npy", np.zeros(3))
    (in_tmp / "mech.py").write_text("def mech(dbs, rng):\n    return dbs.sum(axis=1)\n")
    code = main(["audit", "--mechanism", "mech.py:mech", "--notion", "mi-dp", "--epsilon", "0.1"] + argv)
    captured = capsys.readouterr()
    assert code == 2
    assert re.search(message, captured.err), captured.err


def test_opendp_zcdp_claim_reaches_the_audit_spec(in_tmp):
    pytest.importorskip("opendp.prelude")
    from audit.config.building import build_spec

    (in_tmp / "gauss.py").write_text(
        "import opendp.prelude as dp\n"
        "dp.enable_features('contrib')\n"
        "space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=5), dp.symmetric_distance()\n"
        "gaussian_sum = space >> dp.t.then_sum() >> dp.m.then_gaussian(2.0)\n")
    config = {"mechanism": {"spec": str(in_tmp / "gauss.py") + ":gaussian_sum"},
              "prior": {"spec": "builtin:bernoulli", "n": 5}, "audit": {"notion": "mi-dp", "epsilon": 0.1}}
    spec = build_spec(config)
    # σ = 2 on a sum that moves by 1: ρ = 1 / (2σ²) = 0.125 (Bun & Steinke 2016, Prop. 1.6).
    assert spec.claim.notion == "zcdp"
    assert spec.claim.parameters()["rho"] == pytest.approx(0.125, rel=1e-9)
    assert any("ZeroConcentratedDivergence -> zCDP" in note for note in spec.notes)
    overridden = build_spec({**config, "claim": {"spec": "dp:1"}})
    assert overridden.claim.notion == "dp"
    assert any("overriding the claim zcdp:" in note for note in overridden.notes)
