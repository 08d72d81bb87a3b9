"""The README's worked MI-PP example runs as written (at a reduced budget) and finds what it says."""

import json
import math
import re
from pathlib import Path

import pytest

from audit.cli.main import main

README = Path(__file__).resolve().parents[1] / "README.md"


def code_block(language: str, first_line: str) -> str:
    """The README code block in ``language`` whose first line is ``first_line``."""
    for block in re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S):
        if block.splitlines()[0].strip() == first_line:
            return block
    raise AssertionError(f"README has no ```{language} block starting with {first_line!r}")


@pytest.mark.train
def test_readme_mi_pp_example(tmp_path, capsys):
    (tmp_path / "team.py").write_text(code_block("python", "# team.py"))
    (tmp_path / "audit.toml").write_text(code_block("toml", "# audit.toml"))
    code = main(["audit", str(tmp_path / "audit.toml"), "--json", "--set", "audit.samples=10000",
                 "--set", "audit.slices=4", "--set", "critic.max_steps=800"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads(captured.out)
    truth = 0.5 * math.log(2)  # the README's closed form: ½ log(1 + (1/10)² / 0.1²)
    assert payload["verdict"] == "violation"
    assert payload["lower_bound"] < truth
    assert abs(payload["estimate"] - truth) < 0.08


@pytest.mark.train
def test_readme_smi_dp_example_mechanism(tmp_path, capsys):
    (tmp_path / "counts.py").write_text(code_block("python", "# counts.py"))
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
def test_readme_salary_example():
    """Runs the README's Fig. 1 example as written; its exact leakage comes from quadrature here."""
    import numpy as np
    from scipy import integrate, stats

    namespace = {}
    exec(compile(code_block("python", "# salary.py"), "salary.py", "exec"), namespace)
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
