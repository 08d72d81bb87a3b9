"""Black-box mechanisms, priors, claims, noise calibrations, the reference catalog, LIP/PML constructions.

>>> from mechanisms import parse_claim
>>> parse_claim("zcdp:0.5").implied_mi_budget().value  # ρ-zCDP bounds the conditional MI by ρ nats
0.5

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

_check_package_names(("estimators",))  # named here, before miaudit's own imports fail on them
from estimators.lazy_exports import lazy_exports

_EXPORTS = {
    "parse_claim": "mechanisms.claims.parsing",
    "Claim": "mechanisms.claims.claim",
    "Guarantee": "mechanisms.claims.guarantee",
    "NeighbouringPair": "mechanisms.inputs.neighbouring_pair",
    "get_entry": "mechanisms.catalog",
    "calibrate": "mechanisms.calibration.dispatch",
    "Prior": "mechanisms.inputs.priors",
    "ProductBernoulli": "mechanisms.inputs.priors",
    "ProductGaussian": "mechanisms.inputs.priors",
    "UniformBox": "mechanisms.inputs.priors",
    "TwoPoint": "mechanisms.inputs.priors",
    "UserPrior": "mechanisms.inputs.user_priors",
    "PerDatabaseMechanism": "mechanisms.adapters.callables",
    "ExternalCommandMechanism": "mechanisms.adapters.callables",
    "opendp_mechanism": "mechanisms.adapters.callables",
    "diffprivlib_mechanism": "mechanisms.adapters.callables",
    "MechanismError": "mechanisms.errors",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
