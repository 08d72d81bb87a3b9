"""The inputs a neural critic sees: each feature standardized by robust statistics of the training split,
then compressed logarithmically far out, in float32.

The map is fixed by the training split and invertible, so it is part of a fixed critic: mutual information is
invariant under invertible maps of each variable separately (Cover and Thomas, *Elements of Information Theory*,
2nd ed., Sec. 8.6), and a certified bound on the critics' values stays valid on fresh data.
"""

from __future__ import annotations

import torch

from .device import samples_of
from .scaling import order_statistics

__all__ = ["COMPRESS_BEYOND", "critic_inputs", "robust_standardization"]


def robust_standardization(u: torch.Tensor, train: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-critic, per-feature centre and scale from the training split: the median and the
    interquartile range / 1.349 (the standard deviation for Gaussian data). Unlike the mean and
    standard deviation, these are not dragged by heavy tails, which would squash the bulk of
    the data into a sliver of the critic's input range.

    ``u`` is float64. The statistics are those of u / 2 (what :func:`critic_inputs` expects):
    halving is exact and makes every difference of two finite float64 values finite, so data
    of any finite size (1e300) standardize without overflow.
    """
    sample = samples_of(u, train) * 0.5
    ranks = [int(round(q * (sample.shape[1] - 1))) for q in (0.25, 0.5, 0.75)]
    if sample.device.type == "cpu":  # one partition for the three (order_statistics), not three selections
        lower, centre, upper = (torch.from_numpy(s) for s in order_statistics(sample.numpy(), ranks, axis=1))
    else:
        lower, centre, upper = (sample.kthvalue(rank + 1, dim=1, keepdim=True).values for rank in ranks)
    scale = (upper - lower) / 1.349
    if not bool((scale > 0).all()):  # the fallback's passes over the sample cost more than the quartiles
        # Discrete data can have a zero IQR: fall back to the standard deviation, computed on
        # deviations divided by their largest magnitude so that squaring cannot overflow.
        deviation = sample - centre
        top = deviation.abs().amax(dim=1, keepdim=True)
        fallback = (deviation / torch.where(top > 0, top, torch.ones_like(top))).std(dim=1, keepdim=True) * top
        scale = torch.where(scale > 0, scale, fallback)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # a constant feature carries nothing
    return centre, scale


# Standardized critic inputs beyond this magnitude are compressed logarithmically (see
# critic_inputs): normal data never get there (1e4 robust standard deviations), extreme
# outliers (a mechanism output of 1e300 among values near 1) stay far inside float32 range.
COMPRESS_BEYOND = 1e4


def critic_inputs(u: torch.Tensor, centre: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The float32 inputs a critic sees: (u / 2 − centre) / scale from :func:`robust_standardization`,
    computed in float64, then t ↦ sign(t)·c·(1 + log(|t|/c)) beyond c = ``COMPRESS_BEYOND``.

    The compression is continuous, strictly increasing and invertible, so the critics see the
    same information (MI is invariant under invertible maps of each variable); it keeps data
    of any finite float64 size within float32 range (3.4e38), where a plain cast would give
    inf and then NaN critic values. Being fixed by the training split, the whole map is part
    of a fixed critic and the certified bound stays valid.
    """
    t = (u.double() * 0.5).sub_(centre).div_(scale)  # in place: the same values, a third of the time
    if t.numel() and bool((torch.stack(torch.aminmax(t)).abs() > COMPRESS_BEYOND).any()):  # no mask unless needed
        far = t.abs() > COMPRESS_BEYOND
        t = torch.where(far, torch.sign(t) * COMPRESS_BEYOND * (1.0 + torch.log(t.abs() / COMPRESS_BEYOND)), t)
    return t.float()
