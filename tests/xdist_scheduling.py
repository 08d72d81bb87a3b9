"""A pytest plugin: ``--dist loadgroup`` that survives a worker process dying mid-run.

The suite runs under ``pytest -n 2 --dist loadgroup`` (tests/conftest.py): every test is a work unit of its
own except the groups that share a module-scoped fixture. pytest-xdist 3.8's scheduler for it then hangs
for ever when a worker dies (a test that crashes the interpreter, the kernel's out-of-memory killer), in two
ways, both reported upstream (pytest-xdist issues 1327 and 1378):

- the dead worker's *completed* units go back on the queue; each is later sent as an empty list of tests,
  which the receiving worker never reports done, so the last workers wait for work that never comes;
- the replacement worker is sent one test, and a worker runs a test only once it knows the next one (or
  that there is none), so it waits for ever.

:class:`CrashTolerantLoadGroup` puts back only the units with tests still to run, marks the test the worker
died in as done (xdist reports it failed; run again, it would take the replacement down too), and keeps at
least two tests, or the end of the run, queued on every worker. A crash then costs its test, reported by
name, and the run finishes with its summary.
"""

from __future__ import annotations

import pytest

try:
    from xdist.scheduler import LoadGroupScheduling
except ImportError:  # pragma: no cover - pytest-xdist is a test dependency; without it there is no scheduler
    LoadGroupScheduling = None


if LoadGroupScheduling is not None:

    class CrashTolerantLoadGroup(LoadGroupScheduling):
        """:class:`xdist.scheduler.LoadGroupScheduling` that finishes the run after a worker dies (module docstring)."""

        def remove_node(self, node):
            workload = self.assigned_work.pop(node)
            pending = [(scope, nodeid) for scope, unit in workload.items() for nodeid, done in unit.items()
                       if not done]
            if not pending:
                return None
            scope, crashed = pending[0]  # the worker runs its tests in the order they were sent
            workload[scope][crashed] = True
            for scope, unit in workload.items():
                if not all(unit.values()):
                    self.workqueue[scope] = unit
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

        def _reschedule(self, node):
            if node.shutting_down or node not in self.registered_collections:  # a replacement still collecting
                return
            if self.workqueue and self._pending_of(self.assigned_work[node]) <= 2:
                self._assign_work_unit(node)
                while self.workqueue and self._pending_of(self.assigned_work[node]) < 2:
                    self._assign_work_unit(node)
            if not self.workqueue:
                node.shutdown()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """The scheduler of ``--dist loadgroup``; any other ``--dist`` keeps xdist's own (None)."""
    if LoadGroupScheduling is None or config.getvalue("dist") != "loadgroup":
        return None
    return CrashTolerantLoadGroup(config, log)
