"""The profile of IBM's diffprivlib (0.6): its tools on arrays, its models and its mechanisms.

diffprivlib states its guarantees at the replace-one relation: its tools calibrate to a known
number of records (``mean``'s sensitivity is (upper − lower)/n, ``sum``'s upper − lower). Its tools
and models take ``bounds`` (a model's as (lower, upper) per feature), ``epsilon`` and
``random_state``; its mechanisms take ``epsilon``, ``delta``, ``sensitivity`` and ``random_state`` and
release ``randomise(value)``. A tool or model left without ``bounds`` reads them from the data (it
warns with ``PrivacyLeakWarning``): the grid leaves them out too, as a user may.
"""

from __future__ import annotations

from audit.scan.profiles.base import ArrayTool, FittedModel, LocalRandomizer, OptionalArgument, Profile

#: Values for the required or state-changing arguments of diffprivlib's entry points.
FIXED = {"quant": 0.5, "percent": 50.0, "sensitivity": 1.0, "delta": 1e-5, "lower": 0.0, "upper": 1.0,
         "data_norm": 10.0}

PROFILE = Profile(
    name="diffprivlib",
    modules=("diffprivlib.tools", "diffprivlib.models", "diffprivlib.mechanisms"),
    families=(
        ArrayTool(fixed={k: FIXED[k] for k in ("quant", "percent")}),
        FittedModel(bounds_names=("bounds",), fixed={"data_norm": FIXED["data_norm"]},
                    optional=(OptionalArgument("n_components", (None,)),)),
        LocalRandomizer(fixed={k: FIXED[k] for k in ("sensitivity", "delta", "lower", "upper")}),
    ),
    distribution="diffprivlib",
    exclude=("DPMechanism", "TruncationAndFoldingMixin", "DPMachine", "Budget", "BudgetAccountant"),
)
