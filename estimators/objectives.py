"""Variational MI objectives, batched over critics.

Each function takes critic values on joint samples ``t_joint`` of shape (M, b) and on
product-of-marginals samples ``t_marginal`` of shape (M, b') and returns per-critic values
of shape (M,). Training maximizes the objective; the loss is its negative, summed over critics.
:func:`delta_method_stderr` is the standard error of a critic's DV or NWJ value.
"""

from __future__ import annotations

import math

import numpy as np

import torch


def log_mean_exp(t: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """log( mean(exp(t)) ) along ``dim``, computed stably with logsumexp."""
    return torch.logsumexp(t, dim=dim) - math.log(t.shape[dim])


def donsker_varadhan(t_joint: torch.Tensor, t_marginal: torch.Tensor) -> torch.Tensor:
    """DV(T) = E_P[T] − log E_{P_X ⊗ P_Y}[e^T] ≤ I(X; Y) for every fixed T.

    Donsker and Varadhan (1983); the variational form in Section VI-C of the Pufferfish
    paper and in MINE (Belghazi et al. 2018, Eq. (2)).
    """
    return t_joint.mean(dim=-1) - log_mean_exp(t_marginal)


def nwj(t_joint: torch.Tensor, t_marginal: torch.Tensor) -> torch.Tensor:
    """NWJ(T) = E_P[T] − E_{P_X ⊗ P_Y}[e^{T−1}] ≤ DV(T) ≤ I(X; Y).

    Nguyen, Wainwright and Jordan (2010), the f-divergence variational bound for KL.
    """
    return t_joint.mean(dim=-1) - torch.exp(log_mean_exp(t_marginal) - 1.0)


class MineMovingAverage:
    """MINE's bias-corrected gradient (Belghazi et al. 2018, Section 3.2).

    The gradient of log E_Q[e^T] estimated on a mini-batch is biased; MINE replaces the
    denominator E_Q[e^T] by an exponential moving average. The surrogate loss
    −(E_P[T] − E_Q[e^T] / sg(ma)) has exactly that gradient. The moving average is kept in
    log space per critic, so large critic values do not overflow.
    """

    def __init__(self, n_critics: int, rate: float = 0.01, device=None):
        self.rate = rate
        self.log_ma = torch.full((n_critics,), float("nan"), device=device)

    def surrogate(self, t_joint: torch.Tensor, t_marginal: torch.Tensor) -> torch.Tensor:
        """Per-critic surrogate objective (M,) whose gradient is MINE's corrected gradient."""
        lme = log_mean_exp(t_marginal)
        current = lme.detach()
        first = torch.isnan(self.log_ma)
        blended = torch.logaddexp(self.log_ma + math.log1p(-self.rate), current + math.log(self.rate))
        self.log_ma = torch.where(first, current, blended)
        return t_joint.mean(dim=-1) - torch.exp(lme - self.log_ma)


def objective_value(name: str, t_joint: torch.Tensor, t_marginal: torch.Tensor) -> torch.Tensor:
    """The estimate reported for objective ``name``: NWJ for ``"nwj"``, else DV (MINE reports DV)."""
    if name == "nwj":
        return nwj(t_joint, t_marginal)
    return donsker_varadhan(t_joint, t_marginal)


def delta_method_stderr(t_joint: torch.Tensor, t_prod: torch.Tensor, objective: str) -> np.ndarray:
    """Standard error of E_P[T] − log E_Q[e^T] (or − E_Q[e^{T−1}] for NWJ) by the delta method (Casella and
    Berger 2002, Theorem 5.5.24, applied to the two independent sample means): Var(T_P)/n + Var(e^T_Q)/(n E_Q[e^T]²)
    for DV, Var(T_P)/n + Var(e^{T_Q − 1})/n for NWJ.

    The product scores from cyclic shifts are not independent, so their sample count is taken
    as n_test (one shift's worth), a conservative choice. Computed in float64.
    """
    t_joint, t_prod = t_joint.double(), t_prod.double()
    n = t_joint.shape[-1]
    var_joint = t_joint.var(dim=-1) / n
    if objective == "nwj":
        var_prod = torch.exp(t_prod - 1.0).var(dim=-1) / n
    else:
        e = torch.exp(t_prod - t_prod.amax(dim=-1, keepdim=True))
        var_prod = e.var(dim=-1) / (n * e.mean(dim=-1) ** 2)
    return torch.sqrt(var_joint + var_prod).cpu().numpy()
