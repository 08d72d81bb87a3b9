"""Output features held in every run of one input and never in the other: where the privacy loss is unbounded.

A mechanism that is ε-DP for some finite ε gives every event the same support under neighbouring
inputs: P(M(D) ∈ E) ≤ e^ε P(M(D′) ∈ E) (Dwork and Roth 2014, Definition 2.4), so an output
feature that takes value v under D always and never under D′ is, if that holds in law, an event of
probability 1 against 0, and no finite ε bounds the privacy loss on the pair. A finite number of
runs shows it only as counts — k of k runs against 0 of m — which is what
:func:`unbounded_differences` states, in words, for the user to reproduce: a shape, a key, a class
(the encoder's support block, :mod:`mechanisms.outputs.encoding`), a relation between released
numbers (:mod:`mechanisms.outputs.relations`), or a numeric value (a count that is exactly 0).
These are counts, not a test: the event test's certificate, on its own runs, stays the only thing
that refutes a claim (:mod:`audit.search.event_search`).
"""

from __future__ import annotations

import re

import numpy as np

from mechanisms.outputs.encoding import _present_text, _rank, _value_text

__all__ = ["MIN_UNBOUNDED_RUNS", "UNBOUNDED", "unbounded_differences"]

#: Both inputs need at least this many runs before a feature seen in all of one's and none of the other's is named.
MIN_UNBOUNDED_RUNS = 20

#: The words that end each sentence of :func:`unbounded_differences`.
UNBOUNDED = "the privacy loss on this pair is unbounded"

#: Sentences :func:`unbounded_differences` returns at most.
MAX_UNBOUNDED = 3


def _column_words(encoder, column: int, value: float) -> tuple[int, str]:
    """(rank, words) for an output column at a constant ``value``: the encoder's bucket in words where the
    outputs are encoded, else ``y[column] = value``; rank 0 for a key or class, 1 for other parts, 2 for relations."""
    if encoder is None:
        return 1, f"value y[{column}] = {value:g}"
    bucket = column % encoder.width
    names, complete = encoder.names_in(bucket)
    single = names[0] if len(names) == 1 and complete else None
    if column >= encoder.width:  # the support block: how many of the bucket's names are present
        if value > 0:
            return _rank(single), _present_text(names, complete, single, value, None)
        listed = ", ".join(names) + ("" if complete else ", …")
        return _rank(single), f"none of ({listed}) released" if names else "a bucket of no part"
    if single is not None:
        return _rank(single), f"value {_value_text(single, value)}"
    listed = ", ".join(names) + ("" if complete else ", …")
    return 1, f"value {value:g} of the sum of ({listed})"


def unbounded_differences(rows_first, rows_second, first: str = "a", second: str = "b", encoder=None) -> list:
    """The output columns constant in every run of one input at a value the other input's runs never take, in words.

    Parameters
    ----------
    rows_first, rows_second : array-like of shape (k, d), (m, d)
        The outputs of each input's runs (encoded rows where ``encoder`` is given).
    first, second : str
        The inputs' names: a and b, as the audit's pair line names its databases.
    encoder : OutputEncoder, optional
        The outputs' encoder, to name a column by the parts of the output it holds.

    Returns
    -------
    list of str
        At most :data:`MAX_UNBOUNDED` sentences "value v in k of k runs of A, never in the m runs of B: the
        privacy loss on this pair is unbounded" (module docstring), keys and classes first, then other parts,
        then relations; [] where either input has fewer than :data:`MIN_UNBOUNDED_RUNS` runs.

    Examples
    --------
    >>> a = np.zeros((30, 2)); b = np.column_stack([np.arange(1.0, 31.0), np.zeros(30)])
    >>> unbounded_differences(a, b, "A", "B")
    ['value y[0] = 0 in 30 of 30 runs of A, never in the 30 runs of B: the privacy loss on this pair is unbounded']
    """
    a, b = np.asarray(rows_first, dtype=np.float64), np.asarray(rows_second, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or min(len(a), len(b)) < MIN_UNBOUNDED_RUNS:
        return []
    found = []  # (rank, column, sentence, whether it says a part is absent)
    for held, other, held_name, other_name in ((a, b, first, second), (b, a, second, first)):
        constant = np.all(held == held[0], axis=0)
        named = set()  # the encoder's buckets whose count is named: their value column says the same again
        for column in np.flatnonzero(constant)[::-1]:  # the support block first
            value = held[0, column]
            if np.any(other[:, column] == value):
                continue
            if encoder is not None and column % encoder.width in named:
                continue
            if encoder is not None and column >= encoder.width:
                named.add(column - encoder.width)
            rank, words = _column_words(encoder, int(column), float(value))
            absent = encoder is not None and column >= encoder.width and value == 0
            found.append((rank, int(column), f"{words} in {len(held)} of {len(held)} runs of {held_name}, never in "
                                             f"the {len(other)} runs of {other_name}: {UNBOUNDED}", absent))
    # A part absent from every run of one input says again what the other input's part present in every run says.
    present = {column for _, column, _, absent in found if not absent}
    found = [item for item in found if not (item[3] and item[1] in present)]
    found.sort(key=lambda item: item[:2])
    return [sentence for _, _, sentence, _ in found[:MAX_UNBOUNDED]]


#: A sentence of :func:`mechanisms.outputs.unbounded.unbounded_differences` about a feature constant in one database's
#: runs: "value NAME = V in K of K runs of a, never in the M runs of b: ..." (a JSON written before the databases
#: were named a and b says "of the first database" and "of the second").
_CONSTANT = re.compile(r"^value (?P<name>.+?) = (?P<value>\S+) in (?P<runs>\d+) of (?P=runs) runs of "
                       r"(?P<held>a|b|the first database|the second), never in the \d+ runs of ")


#: Parts of a feature's name that mark a structure (:func:`mechanisms.outputs.encoding.output_features`) or a relation
#: (:mod:`mechanisms.outputs.relations`), not a released value.
_NOT_VALUES = ("shape[", ".len", ".ndim", "len(", "(", "classes_")


def never_varied(sentences) -> tuple:
    """(words, facts) for the output features that took one value in every certification run of database a and
    another in every run of database b (the pair's databases as the audit names them): the function added no noise to
    them. ``words`` is the advice under the headline ("" where no feature is constant on both databases); ``facts``
    the (name, value) pairs it says, which the terminal's lists of outputs seen on one database need not say again.
    ``sentences``: an event's :func:`unbounded_differences` (None or empty: nothing to say); read here, where they are
    written."""
    seen: dict = {}
    for sentence in sentences or []:
        match = _CONSTANT.match(sentence)
        if match:
            side = "a" if match["held"] in ("a", "the first database") else "b"
            seen.setdefault(match["name"], {})[side] = (match["value"], match["runs"])
    # A released value, not a shape, a length, a class set or a relation between values (their fix is not noise).
    both = {name: sides for name, sides in seen.items()
            if len(sides) == 2 and not any(part in name for part in _NOT_VALUES)}
    if not both:
        return "", set()
    values = "; ".join(f"{name} = {sides['a'][0]} in all {sides['a'][1]} runs on a and {sides['b'][0]} in all "
                       f"{sides['b'][1]} on b" for name, sides in both.items())
    subject = "the output" if set(both) == {"y"} else ", ".join(both)
    words = (f"{subject} never varied: {values}; the function adds no noise to it (it is deterministic), so no ε can "
             "hold (the privacy loss on this pair is unbounded); add random noise drawn from rng, scaled to how far "
             "one record can move the output (its sensitivity), e.g. rng.laplace(0, sensitivity / ε)")
    facts = {(name, sides[side][0]) for name, sides in both.items() for side in sides}
    return words, facts
