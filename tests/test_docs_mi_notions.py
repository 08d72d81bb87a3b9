"""The MI-notions how-to's examples, checked against what is computed here independently: the
SMI-DP count at a reduced budget, and the salary example's exact leakage by quadrature."""

import json

import pytest
from docs_examples import DOCS, code_block

from audit.cli.main import main

PAGE = DOCS / "how-to" / "mi-notions.md"


@pytest.mark.train
def test_smi_dp_example_mechanism(tmp_path, capsys):
    (tmp_path / "counts.py").write_text(code_block(PAGE, "python", "counts.py"))
    code = main(["audit", "--mechanism", f"{tmp_path / 'counts.py'}:noisy_count", "--prior", "builtin:bernoulli",
                 "--n", "4", "--k", "1", "--p", "0.5", "--notion", "smi-dp", "--epsilon", "0.05",
                 "--samples", "6000", "--slices", "4", "--records", "0", "--event-runs", "4000", "--claim", "dp:1",
                 "--json", "--set", "critic.max_steps=500"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads(captured.out)
    assert payload["verdict"] == "violation"
    assert payload["dp_epsilon_lower_bound_event"] > 1.0


@pytest.mark.train
def test_salary_example(tmp_path, monkeypatch, capsys):
    """Runs the page's Fig. 1 example as written; its exact leakage comes from quadrature here."""
    import numpy as np
    from scipy import integrate, stats

    namespace = {}
    exec(compile(code_block(PAGE, "python", "salary.py"), "salary.py", "exec"), namespace)
    result = namespace["result"]
    # The raises R ~ Bin(4, ½) are independent of the 2022 salaries, so given w the output is
    # R/4 + N(0, 0.1²) and I(g; M | w) = I(1{R > 2}; R/4 + N).
    p_r = stats.binom.pmf(np.arange(5), 4, 0.5)

    def density(z, raises):
        return sum(p_r[r] * stats.norm.pdf(z, r / 4, 0.1) for r in raises)

    groups = {0: (0, 1, 2), 1: (3, 4)}
    p_g = {g: p_r[list(r)].sum() for g, r in groups.items()}
    truth = sum(integrate.quad(lambda z, g=g: density(z, groups[g]) * np.log(
        density(z, groups[g]) / p_g[g] / density(z, range(5))), -1, 2, limit=200)[0] for g in groups)
    assert result.verdict == "violation"
    assert 0.05 < result.lower_bound < truth
    assert result.estimate < truth + 0.05  # the kept strata cover 87.5% of the mass
