"""The names the estimators answer to, in a module that imports neither torch nor SciPy: the
command line builds its choices from them, so ``miaudit estimate --help`` and its usage errors
load neither (issue 13, §3)."""

from __future__ import annotations

__all__ = ["CLASSICAL_ESTIMATORS", "CONDITIONAL_FORMS", "DEFAULT_ALPHA", "DEFAULT_BOUND", "DEFAULT_CONDITIONAL",
           "DEFAULT_CORRECTION", "DEFAULT_DEVICE", "DEFAULT_K", "DEFAULT_SLICES", "DEFAULT_SLICE_DIM", "ESTIMATORS", "MI_CRITICS",
           "NEURAL_ESTIMATORS", "OTHERS", "UNSET", "Unset"]

# The neural MI estimators, by the variational bound their critics maximize: Donsker–Varadhan,
# MINE (Belghazi et al. 2018) and NWJ (Nguyen, Wainwright and Jordan 2010).
NEURAL_ESTIMATORS = ("dv", "mine", "nwj")
# Kraskov–Stögbauer–Grassberger (2004), the Gaussian closed form, and the plug-in estimator.
CLASSICAL_ESTIMATORS = ("ksg", "gaussian", "plugin")
ESTIMATORS = NEURAL_ESTIMATORS + CLASSICAL_ESTIMATORS
# I(X; Y, Z) for independent X, Z (= I(X; Y | Z)), or by the chain rule I(X; Y, Z) − I(X; Z).
CONDITIONAL_FORMS = ("independent", "chain")


class Unset:
    """The type of :data:`UNSET`, the default of every setting that only some estimates use: "not given", told
    apart from every value a caller can pass (``correction=None`` means no bias correction). One instance; it
    shows as ``UNSET`` in signatures and pickles as that instance."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self):
        return "UNSET"


UNSET = Unset()

# The settings only some estimates use, where the caller leaves them UNSET (estimators.estimate.estimate_mi;
# miaudit estimate's flags, whose unset default is None): a sliced estimate's random slices and their dimension,
# KSG's neighbours, the neural certificate's level and inequality, where the critics train, the plug-in estimator's
# bias correction, the form of a conditional estimate. A setting given to an estimate that does not use it is refused (validation.refuse_unused).
DEFAULT_SLICES = 128
DEFAULT_SLICE_DIM = 1
DEFAULT_K = 3
DEFAULT_ALPHA = 0.05
DEFAULT_BOUND = "bernstein"
DEFAULT_DEVICE = "auto"
DEFAULT_CORRECTION = "miller-madow"
DEFAULT_CONDITIONAL = "independent"
# The audit's MI-test critics: chosen by the plan (audit.audit_plan.resolve_mi_critic), neural networks
# (estimators.neural), or classifiers' Barber–Agakov critics (audit.statistics.classifier_critic).
MI_CRITICS = ("auto", "neural", "classifier")
# What a record's critic reads of the other records under the record notions: all of them, or their column sums
# (audit.statistics.secret_critics.secret_values).
OTHERS = ("records", "sums")
