"""An exception raised at random as one of a case's outputs: an opt-in of a profile's family.

A library whose call raises with a probability that depends on the data releases, through the raise, one bit
about the data: the event "the call raised" is an event on its output like any other, and under an (ε, δ)-DP
claim P(raise | D) ≤ e^ε · P(raise | D′) + δ (Dwork and Roth 2014, Definition 2.4, applied to that event).
A family that opts in (its ``raises_as_output(obj, settings)`` is True at a grid point: PyDP's approximate bounds
search, :mod:`audit.scan.profiles.python_dp`) has its call source wrapped in :data:`PREAMBLE`'s ``released``:
the release is the call's value, or where it raises the string ``"raised: <type>: <message's first line>"``.
The output encoder reads a string as a category (``y='raised: …'``), as it reads a released NaN (``y=nan``,
:mod:`mechanisms.outputs.encoding`), so a release that is sometimes a number and sometimes a raise is a mixed
output the audit's tests read unchanged (the wrapper is a fixed function of the call's outcome: post-processing,
Dwork and Roth 2014, Proposition 2.1).

A call that raises on every call on both databases is no random output: its case is skipped with its reason,
as a case without the opt-in whose probe raises (:func:`always_raises`). :class:`RaiseCounter` counts the raises
of each database over the probe and the audit's calls, for the case's notes and its finding's files.
"""

from __future__ import annotations

import collections

import numpy as np

#: What a raised call's category starts with (:data:`PREAMBLE`).
PREFIX = "raised: "

#: The helper a wrapped call source calls: run in the audited function's namespace and written atop a finding's
#: reproduction files (the library and NumPy only, no miaudit).
PREAMBLE = '''def released(call):
    """The call's value, or where it raises, the category 'raised: <type>: <message's first line>'."""
    try:
        return call()
    except Exception as exc:  # a raise is one of the release's outputs (miaudit's raised-as-output opt-in)
        lines = str(exc).strip().splitlines()
        return f"raised: {type(exc).__name__}: {lines[0] if lines else ''}"'''

#: Calls on each database that must all raise before a case whose two probe calls raised is skipped as raising on
#: every call: a call raising with probability p on both databases is skipped wrongly with probability p^(2·50),
#: 2.7·10⁻⁵ at p = 0.9.
ALWAYS_CALLS = 50


def wrapped(call_source: str) -> str:
    """``call_source`` as an opted-in case calls it: ``released(lambda: <call>)``."""
    return f"released(lambda: {call_source})"


def is_raised(value) -> bool:
    """Whether a release is a raised call's category (:data:`PREAMBLE`)."""
    return isinstance(value, str) and value.startswith(PREFIX)


class RaiseCounter:
    """Call ``function(db, rng)`` and count, for the pair's first and second database, the calls and the raised
    categories among their releases (the calls on any other database are not counted)."""

    def __init__(self, function, first, second):
        self.function = function
        self.pair = (np.asarray(first), np.asarray(second))
        self.calls = [0, 0]
        self.raised = [collections.Counter(), collections.Counter()]

    def __call__(self, db, rng):
        value = self.function(db, rng)
        for side, database in enumerate(self.pair):
            if np.shape(db) == database.shape and np.array_equal(db, database, equal_nan=True):
                self.calls[side] += 1
                if is_raised(value):
                    self.raised[side][value] += 1
                break
        return value

    def summary(self) -> dict:
        """The counts, JSON-able: ``{"calls": [n1, n2], "raised": [k1, k2], "categories": [{…}, {…}]}``."""
        return {"calls": list(self.calls), "raised": [sum(c.values()) for c in self.raised],
                "categories": [dict(c) for c in self.raised]}

    def note(self) -> str:
        """The counts in words, for the case's notes."""
        counts = self.summary()
        categories = sorted(set(counts["categories"][0]) | set(counts["categories"][1]))
        named = "; ".join(f"'{c}'" for c in categories[:3]) + (", …" if len(categories) > 3 else "")
        return (f"the call's exception is one of its outputs (raised-as-output opt-in): it raised on "
                f"{counts['raised'][0]} of {counts['calls'][0]} calls on the first database and "
                f"{counts['raised'][1]} of {counts['calls'][1]} on the second" + (f" ({named})" if named else ""))


def always_raises(function, first, second, seed: int, calls: int = ALWAYS_CALLS) -> str | None:
    """The category a wrapped ``function`` released on every one of ``calls`` calls on each database, where it
    did (the case is skipped), else None; stops at the first call that does not raise."""
    rng = np.random.default_rng(seed)
    seen = None
    for _ in range(calls):
        for db in (first, second):
            value = function(db, rng)
            if not is_raised(value):
                return None
            seen = value
    return seen


def finding_note(summary: dict) -> str:
    """What a finding of an opted-in case says of its event."""
    (k1, k2), (n1, n2) = summary["raised"], summary["calls"]
    return (f"the event is the exception: the release counts a raise as an output category ('raised: …'), and the "
            f"call raised on {k1} of {n1} calls on the first database vs {k2} of {n2} on the second; a raise whose "
            "probability depends on the data breaks the claim by itself")
