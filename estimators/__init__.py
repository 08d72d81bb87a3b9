"""MI estimators: batched neural critics, sliced MI, classical baselines and result types.

>>> from estimators import estimate_mi, exact_mi
>>> round(exact_mi([[0.5, 0.0], [0.0, 0.5]]), 6)  # one fair bit shared: log 2 nats
0.693147

The names below are the public, documented surface; everything else is internal. They load on
first use (PEP 562), so importing the package (as ``miaudit --help`` does) pulls in neither
torch nor scipy.
"""

from estimators.lazy_exports import lazy_exports

_EXPORTS = {
    "estimate_mi": "estimators.estimate",
    "MIEstimate": "estimators.results",
    "fit_critics": "estimators.neural",
    "CriticConfig": "estimators.critic_config",
    "ksg_mi": "estimators.ksg",
    "gaussian_mi": "estimators.gaussian",
    "plugin_mi": "estimators.discrete",
    "exact_mi": "estimators.discrete",
    "load_npy_array": "estimators.array_files",
    "InputError": "estimators.validation",
}

__all__, __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
