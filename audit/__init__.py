"""Audits: Pufferfish frameworks, hypothesis tests, certified and conversion bounds, reports, the CLI.

>>> from audit import AuditSpec, run_audit, write_reports
>>> sorted(__import__("audit").__all__)[:3]
['AuditResult', 'AuditSpec', 'ClaimRefuted']

The names below are the public, documented surface; everything else is internal. They load on
first use (PEP 562), so importing the package (as ``miaudit --help`` does) pulls in neither
torch nor scipy.
"""

import sys as _sys

try:
    from estimators.package_names import check_package_names as _check_package_names
except ImportError:  # 'estimators' itself is not miaudit's, so its checker cannot run: name the module here
    _shadow = getattr(_sys.modules.get("estimators"), "__file__", None) or "a module on sys.path"
    raise ImportError(f"{_shadow} shadows miaudit's package 'estimators': rename it") from None

_check_package_names(("estimators", "mechanisms"))  # named here, before miaudit's own imports fail on them
from estimators.lazy_exports import lazy_exports

_EXPORTS = {
    "run_audit": "audit.engine",
    "run_sequential_audit": "audit.gating.sequential",
    "assert_claim": "audit.gating.assertions",
    "ClaimRefuted": "audit.gating.assertions",
    "AuditSpec": "audit.spec",
    "AuditResult": "audit.result",
    "write_reports": "audit.report.writing",
    "PufferfishFramework": "audit.frameworks",
    "SecretPair": "audit.frameworks",
    "SecretFunction": "audit.frameworks",
    "differential_privacy": "audit.frameworks",
    "attribute_privacy": "audit.frameworks",
    "salary_example": "audit.frameworks",
    "load_config": "audit.config.files",
    "build_spec": "audit.config.building",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
