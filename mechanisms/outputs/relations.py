"""Relations between released numbers as named features: equalities, order, differences at neighbouring places.

A mechanism may leak through how its released numbers relate rather than through any one of them: a
random forest whose split bounds are inferred from the data releases predictions at x = 8, 9, 10
that are all equal unless a record lies beyond 8 (then a split falls between them in most runs).
Each number alone varies from run to run under both inputs; their equality does not.

For every run of consecutive numbers of one released container — the elements along the last axis
of an array, the numeric values of a mapping's keys in sorted order — holding at most
:data:`MAX_RELATION_ELEMENTS` numbers, :func:`relation_features` names

- ``(equal neighbours of y)``: how many neighbouring pairs ``u = y[i]``, ``v = y[i+1]`` are equal, a value
  (for a row of an array, ``(equal neighbours of y[2,:])``);
- ``(y[i+1] - y[i])`` for each neighbouring pair: the difference v − u, a value; its sign is the order of
  the two. Where v − u is past float64's largest number (u and v finite, near ±1.8e308, of opposite signs) it is
  a category instead, ``(y[1] - y[0])=inf`` or ``=-inf``: the order, as a released infinity is
  (:func:`mechanisms.outputs.encoding.output_features`), not a value clipped to the largest one.

Equalities are counted in one number per container, not named one by one as support facts: a noisy
integer release (geometric noise on counts) makes neighbours equal at random, and a support fact per pair
that flips from run to run would multiply the support's patterns beyond what the support statistic counts
(:data:`audit.statistics.classifier.MAX_EMPIRICAL_VALUES`) and silence it on the release's keys. The count
of a container whose numbers are all equal under one input and seldom under the other takes few values,
so the support statistic (which counts every column of few values) and the support differences see it;
a count that takes many values is left to the logistic statistics. The order is likewise a value's sign.

Containers inside a fitted estimator (:func:`in_estimator`: a model's coefficients, a tree's arrays) get
none: their neighbours are not neighbouring keys of a released curve, and their names would crowd the
encoder's buckets. The names are parenthesized (:func:`is_relation`): no other feature name starts with a parenthesis.

Every feature is a fixed function of the output, so any event on them is an event on the output
(post-processing, Dwork and Roth 2014, Proposition 2.1): a test on them keeps its level.
"""

from __future__ import annotations

import math
import re

__all__ = ["MAX_RELATION_ELEMENTS", "in_estimator", "is_relation", "relation_features"]

#: Containers of more numbers than this get no relation features (a model's weights are not a curve of predictions).
MAX_RELATION_ELEMENTS = 32


def relation_features(places: list, out: dict, container: str) -> None:
    """Add the relations of neighbouring numbers of one container to ``out`` (module docstring).

    Parameters
    ----------
    places : list of (str, float)
        Consecutive numbers of the container, in order, each with its feature name (``y[0]``,
        ``y{'a'}``); containers longer than :data:`MAX_RELATION_ELEMENTS` or shorter than 2 add nothing.
    out : dict
        The output's features (``{name: value}``), added to in place.
    container : str
        The container's path, for the name of its count of equal neighbours.

    Examples
    --------
    >>> out = {}
    >>> relation_features([("y[0]", 1.0), ("y[1]", 1.0), ("y[2]", 3.0)], out, "y")
    >>> sorted(out.items())
    [('(equal neighbours of y)', 1.0), ('(y[1] - y[0])', 0.0), ('(y[2] - y[1])', 2.0)]
    >>> out = {}
    >>> relation_features([("y[0]", -1.7e308), ("y[1]", 1.7e308)], out, "y")
    >>> sorted(out)
    ['(equal neighbours of y)', '(y[1] - y[0])=inf']
    """
    if not 2 <= len(places) <= MAX_RELATION_ELEMENTS:
        return
    equal = 0
    for (left, u), (right, v) in zip(places, places[1:]):
        u, v = float(u), float(v)  # Python floats: an overflowing difference is inf, with no RuntimeWarning
        if not (math.isfinite(u) and math.isfinite(v)):
            continue
        equal += u == v
        difference = v - u
        if math.isfinite(difference):
            out[f"({right} - {left})"] = difference
        else:  # |v − u| past float64's largest number: its sign, a category as a released infinity is
            out[f"({right} - {left})={difference!r}"] = 0.0
    out[f"(equal neighbours of {container})"] = float(equal)


def is_relation(name: str) -> bool:
    """Whether a feature name is one of :func:`relation_features`' (they alone start with a parenthesis: every
    other name starts with its output's path)."""
    return name.startswith("(")


_FITTED_ATTRIBUTE = re.compile(r"\.\w*_(?=$|[.\[{=])")


def in_estimator(path: str) -> bool:
    """Whether a feature path lies inside a fitted estimator: it passes through a fitted attribute (``.coef_``,
    ``.estimators_``), whose name ends in ``_`` (:mod:`mechanisms.outputs.estimators`).

    Examples
    --------
    >>> in_estimator("y.coef_"), in_estimator("y.0{'a'}"), in_estimator("y.estimators_[0].tree_.value")
    (True, False, True)
    """
    return _FITTED_ATTRIBUTE.search(path) is not None
