"""Black-box mechanisms, priors, claims, noise calibrations, the reference catalog, LIP/PML constructions.

>>> from mechanisms import parse_claim
>>> parse_claim("zcdp:0.5").implied_mi_budget().value  # ρ-zCDP bounds the conditional MI by ρ nats
0.5

The names below are the public, documented surface; everything else is internal. They load on
first use (PEP 562), so importing the package (as ``miaudit --help`` does) pulls in neither
torch nor scipy.
"""

from estimators.lazy_exports import lazy_exports

_EXPORTS = {
    "parse_claim": "mechanisms.claims",
    "Claim": "mechanisms.claims",
    "Guarantee": "mechanisms.guarantee",
    "NeighbouringPair": "mechanisms.neighbouring_pair",
    "get_entry": "mechanisms.catalog",
    "calibrate": "mechanisms.calibration.dispatch",
    "Prior": "mechanisms.priors",
    "ProductBernoulli": "mechanisms.priors",
    "ProductGaussian": "mechanisms.priors",
    "UniformBox": "mechanisms.priors",
    "TwoPoint": "mechanisms.priors",
    "UserPrior": "mechanisms.priors",
    "PerDatabaseMechanism": "mechanisms.adapters",
    "ExternalCommandMechanism": "mechanisms.adapters",
    "opendp_mechanism": "mechanisms.adapters",
    "diffprivlib_mechanism": "mechanisms.adapters",
    "MechanismError": "mechanisms.errors",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
