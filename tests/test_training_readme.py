"""The "Auditing DP-SGD" page's example runs as written and refutes the unclipped variant."""

import pytest

from conftest import needs
from docs_examples import DOCS, code_block

pytestmark = needs("opacus", "dp_accounting")

PAGE = DOCS / "explanation" / "dpsgd-study.md"


@pytest.mark.slow  # an audit with critics on 2 × 3000 training runs
@pytest.mark.train
def test_readme_dpsgd_example():
    namespace = {}
    exec(compile(code_block(PAGE, "python", "dpsgd_audit.py"), "dpsgd_audit.py", "exec"), namespace)
    assert namespace["claim"].parameters()["epsilon"] == pytest.approx(1.0, abs=0.05)
    assert namespace["refuted"]
    assert namespace["result"].dp_epsilon_lower_bound_event > namespace["claim"].parameters()["epsilon"]
