"""The README's "Auditing DP-SGD" example runs as written and refutes the unclipped variant."""

import re
from pathlib import Path

import pytest

from conftest import needs

pytestmark = needs("opacus", "dp_accounting")

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow  # an audit with critics on 2 × 3000 training runs
@pytest.mark.train
def test_readme_dpsgd_example():
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
              if b.splitlines()[0].strip() == "# dpsgd_audit.py"]
    assert len(blocks) == 1
    namespace = {}
    exec(compile(blocks[0], "dpsgd_audit.py", "exec"), namespace)
    assert namespace["claim"].parameters()["epsilon"] == pytest.approx(1.0, abs=0.05)
    assert namespace["refuted"]
    assert namespace["result"].dp_epsilon_lower_bound_event > namespace["claim"].parameters()["epsilon"]
