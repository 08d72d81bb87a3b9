"""``miaudit scan``: audit a library's whole API unattended (issue 40).

:func:`scan` discovers a library's public entry points through its profile
(:mod:`audit.scan.profiles`), builds the cases (:mod:`audit.scan.cases`), audits each as an
early-stopping audit at its share of the scan's α (:mod:`audit.scan.running`, one case in
:mod:`audit.scan.case_audit`), each case in a process of its own on worker processes or Ray tasks
(:mod:`audit.scan.isolation`), and
:mod:`audit.scan.report` writes the findings, controls and skipped cases.
"""

from __future__ import annotations


def __getattr__(name):
    if name in ("scan", "ScanResult"):
        from audit.scan import running

        return getattr(running, name)
    raise AttributeError(f"module 'audit.scan' has no attribute {name!r}")


__all__ = ["ScanResult", "scan"]
