"""The profile of IBM's diffprivlib (0.6): its tools on arrays, its models and its mechanisms.

diffprivlib states its guarantees at the replace-one relation: its tools calibrate to a known
number of records (``mean``'s sensitivity is (upper − lower)/n, ``sum``'s upper − lower). Its tools
and models take ``bounds`` (a model's as (lower, upper) per feature), ``epsilon`` and
``random_state``; its mechanisms take ``epsilon``, ``delta``, ``sensitivity`` and ``random_state`` and
release ``randomise(value)``. A tool or model left without ``bounds`` reads them from the data (it
warns with ``PrivacyLeakWarning``): the grid leaves them out too, as a user may.

Its models are the scan's slowest entry points (a fit takes milliseconds, a tool's call a fraction of
one), so they are scanned at the smallest sizes that run their code: a forest of two trees
(``n_estimators=2``: the ensemble's split of the data and its vote, at a fifth of the default ten
trees' cost) and trees of depth 2 (``max_depth=2``: a split and its leaves; the default 5 builds 32
leaves on 4 records), and at ε ≥ 1 only (``min_epsilon``): a model's ε scales its noise, so every ε
runs the same code, and ε = 0.1 would add a third to the scan's time without a code path of its own.

Its histograms add noise for sensitivity 1 to each bin (``GeometricTruncated(sensitivity=1)`` in
``diffprivlib/tools/histograms.py``): one record added or removed changes one bin by one, so their ε
is stated at the add/remove relation; a record replaced changes two bins, and the scan audits the
claim's group-privacy form, 2ε, on its replace-one pairs. ``histogramdd`` takes its ``range`` as one
(low, high) per dimension: the grid gives ``((0.0, 10.0),)`` for the one column it is called on. The
``Binary`` mechanism randomises one of the two labels it is given (``value0="0"``, ``value1="1"``): its
record is the label of the value 0 or 1. ``Exponential`` and ``PermuteAndFlip`` release one of three
candidates by the utilities they are built with (sensitivity 1): the record is candidate 0's utility, 0 vs 1,
and ``randomise(None)`` the release.
"""

from __future__ import annotations

from mechanisms.inputs.relation import ADD_REMOVE

from audit.scan.profiles.base import ArrayTool, Expression, FittedModel, LocalRandomizer, OptionalArgument, Profile

#: Values for the required arguments of diffprivlib's entry points (``data_norm``: given, not left to the data).
FIXED = {"quant": 0.5, "percent": 50.0, "sensitivity": 1.0, "delta": 1e-5, "lower": 0, "upper": 1,
         "data_norm": 10.0}
#: A budget accountant of the call's own, new at each call: left out, every call of a tool or model spends from
#: diffprivlib's default accountant, whose list of spends grows by one a call (over a million in a scan) and is
#: summed at each spend, and a forest deep-copies it into each tree (scikit-learn's ``clone``): the scan's forests,
#: after some hundred thousand calls, took about a second a fit instead of 2.4 ms.
FRESH_ACCOUNTANT = Expression("__import__('diffprivlib').BudgetAccountant()")
#: The utility of three candidates: candidate 0's is the record's value, the others' 0 (a pair moves it by the
#: sensitivity, 1: the ends of the domain [0, 1]).
UTILITY = Expression("[float(db[0, 0]), 0.0, 0.0]")
#: Mechanisms that randomise integers only.
INTEGER_MECHANISMS = ("Geometric", "GeometricFolded", "GeometricTruncated", "GaussianDiscrete")

PROFILE = Profile(
    name="diffprivlib",
    modules=("diffprivlib.tools", "diffprivlib.models", "diffprivlib.mechanisms"),
    families=(
        ArrayTool(fixed={k: FIXED[k] for k in ("quant", "percent")},
                  optional=(OptionalArgument("accountant", (FRESH_ACCOUNTANT,)),), per_dimension=("histogramdd",)),
        FittedModel(bounds_names=("bounds",), optional=(OptionalArgument("data_norm", (FIXED["data_norm"],)),
                                                         OptionalArgument("n_clusters", (2,)),
                                                         OptionalArgument("n_estimators", (2,)),
                                                         OptionalArgument("max_depth", (2,)),
                                                         OptionalArgument("accountant", (FRESH_ACCOUNTANT,))),
                    min_epsilon=1.0),
        # The exponential mechanisms and permute-and-flip release a candidate by its utility, a vector they are built
        # with, and randomise nothing (None): the record is candidate 0's utility, in [0, sensitivity]
        LocalRandomizer(fixed={"sensitivity": FIXED["sensitivity"], "utility": UTILITY}, requires=("utility",),
                        value_source="None"),
        # Binary randomises one of two labels it is given: "0" and "1", the record's value as that label
        LocalRandomizer(fixed={"value0": "0", "value1": "1"}, requires=("value0", "value1"),
                        value_source="str(int(db[0, 0]))"),
        LocalRandomizer(fixed={k: FIXED[k] for k in ("sensitivity", "delta", "lower", "upper")},
                        integer_entry_points=INTEGER_MECHANISMS),
    ),
    distribution="diffprivlib",
    relations={"histogram": ADD_REMOVE, "histogramdd": ADD_REMOVE, "histogram2d": ADD_REMOVE},
    exclude=("DPMechanism", "TruncationAndFoldingMixin", "DPMachine", "Budget", "BudgetAccountant"),
)
