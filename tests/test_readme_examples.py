"""The README's worked MI-PP example runs as written (at a reduced budget) and finds what it says."""

import json
import math
import re
from pathlib import Path

from audit.cli.main import main

README = Path(__file__).resolve().parents[1] / "README.md"


def code_block(language: str, first_line: str) -> str:
    """The README code block in ``language`` whose first line is ``first_line``."""
    for block in re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.S):
        if block.splitlines()[0].strip() == first_line:
            return block
    raise AssertionError(f"README has no ```{language} block starting with {first_line!r}")


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
