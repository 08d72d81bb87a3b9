"""The built-in demonstration: a correct mechanism, a buggy one and an MI-PP case, audited on CPU.

Small budgets keep it within a few minutes on a 2-core CPU; every number it prints is a
real audit of that budget, not a canned value.
"""

from __future__ import annotations


from estimators.neural import CriticConfig
from mechanisms.calibration import gaussian_mi_pp
from mechanisms.catalog import get_entry
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.priors import ProductGaussian

from audit.frameworks import attribute_privacy
from audit.spec import AuditSpec

DEMO_SAMPLES = 10000
DEMO_CRITIC = CriticConfig(max_steps=1000)


def _column_mean(dbs):
    return dbs.mean(axis=1)


def _column_mean_secret(column):
    return column.mean(axis=1, keepdims=True)


def _catalog_spec(name: str, seed: int, device: str, quiet: bool) -> AuditSpec:
    entry = get_entry(name)
    eps = entry.claimed.epsilon
    return AuditSpec(mechanism=entry.mechanism, priors=[entry.prior], notion="mi-dp",
                     epsilon=min(eps, eps**2 / 2),  # what the DP claim implies (Theorem 1)
                     samples=DEMO_SAMPLES, slices=8, event_runs=DEMO_SAMPLES, claim=entry.claimed, name=name,
                     critic=DEMO_CRITIC, seed=seed, device=device, quiet=quiet)


def _mi_pp_spec(seed: int, device: str, quiet: bool, epsilon: float = 0.5, n: int = 5) -> AuditSpec:
    """Attribute privacy of a column mean released with Theorem 4's Gaussian noise for ε-MI PP."""
    prior = ProductGaussian.iid_rows([0.0], [[1.0]], n)
    calibration = gaussian_mi_pp(epsilon, [1.0 / n])  # Var(column mean) = 1/n under the prior
    framework = attribute_privacy(n, 1, statistic=_column_mean_secret)
    return AuditSpec(mechanism=calibration.mechanism(_column_mean), priors=[prior], notion="mi-pp",
                     epsilon=epsilon, framework=framework, samples=DEMO_SAMPLES, slices=8,
                     claim=Guarantee("mi-pp", epsilon, note=calibration.rule),
                     name=f"column mean + Theorem 4 noise (σ = {calibration.scale:.3g})",
                     critic=DEMO_CRITIC, seed=seed, device=device, quiet=quiet)


def demo_specs(seed: int = 0, device: str = "auto", quiet: bool = True) -> list:
    """The demo's audits: correct DP, buggy DP, and an MI-PP calibrated mechanism."""
    return [
        _catalog_spec("laplace_sum", seed, device, quiet),
        _catalog_spec("histogram_buggy", seed, device, quiet),
        _mi_pp_spec(seed, device, quiet),
    ]


