"""The scan's own bounds on listing the cases, in a module that imports nothing, so that ``miaudit scan --help`` states
them without importing the scan (:func:`audit.cli.scan_command._listing_timeout_help`).

Each is re-exported where the scan's code reads it, and read there: :data:`LISTING_TIMEOUT` by
:mod:`audit.scan.running`, :data:`WORKER_LISTING_TIMEOUTS` by :mod:`audit.scan.isolation`,
:data:`WORKER_START_SECONDS` by :mod:`audit.scan.processes`. A test that changes one changes it in that module
(``monkeypatch.setattr(processes, "WORKER_START_SECONDS", 1.0)``), which is the name that module's code reads; the
help reads this module's.
"""

from __future__ import annotations

#: Seconds one call of the listing may take at least by default (:func:`audit.scan.running.listing_timeout_default`).
LISTING_TIMEOUT = 60.0

#: A worker's listing bounds each of the library's calls by this many of the scan's ``listing_timeout``
#: (:func:`audit.scan.isolation.list_in_worker`): what the scan's process listed in time, a fresh worker, importing
#: the library from scratch on a loaded machine, must list too (a case it lacks stops the scan); a call that hung in
#: the scan's process (skipped there) costs a worker this long once.
WORKER_LISTING_TIMEOUTS = 4

#: Seconds a fresh worker may take to start (an interpreter, the scan's modules and
#: :data:`~audit.scan.isolation.WARM_MODULES`: seconds, PyTorch's and scikit-learn's imports on a loaded machine)
#: within the bound of its listing (:func:`audit.scan.processes.listing_bound`).
WORKER_START_SECONDS = 60.0
