"""The README's examples run as written and print what it shows; its MI-PP example, run again at a
reduced budget, finds what the README says against the leakage computed here in closed form."""

import json
import math

import pytest
from docs_examples import ROOT, code_block, run_page

from audit.cli.main import main

README = ROOT / "README.md"


@pytest.mark.integration
@pytest.mark.train
def test_readme_examples_run_and_print_what_they_show(tmp_path, monkeypatch):
    assert run_page(README, tmp_path, monkeypatch) == 7  # 3 files, 3 console blocks, the Python example



def test_readme_keeps_the_set_up_commands():
    text = README.read_text()
    assert 'pip install "torch==2.13.0" -e . && miaudit demo' in text
    assert 'pip install "torch==2.13.0" -e ".[test]" && pytest' in text
    assert len(text.splitlines()) <= 250


@pytest.mark.train
def test_readme_mi_pp_example(tmp_path, capsys):
    (tmp_path / "team.py").write_text(code_block(README, "python", "team.py"))
    (tmp_path / "audit.toml").write_text(code_block(README, "toml", "audit.toml"))
    code = main(["audit", str(tmp_path / "audit.toml"), "--json", "--set", "audit.samples=10000",
                 "--set", "audit.slices=4", "--set", "critic.max_steps=800"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    payload = json.loads(captured.out)
    truth = 0.5 * math.log(2)  # the README's closed form: ½ log(1 + (1/10)² / 0.1²)
    assert payload["verdict"] == "violation"
    assert payload["lower_bound"] < truth
    assert abs(payload["estimate"] - truth) < 0.08
