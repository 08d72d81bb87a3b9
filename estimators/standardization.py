"""The inputs a neural critic sees: each feature standardized by robust statistics of the training split,
then compressed logarithmically far out, in float32.

The map is fixed by the training split and invertible, so it is part of a fixed critic: mutual information is
invariant under invertible maps of each variable separately (Cover and Thomas, *Elements of Information Theory*,
2nd ed., Sec. 8.6), and a certified bound on the critics' values stays valid on fresh data.
"""

from __future__ import annotations

import math

import torch

from .device import samples_of
from .scaling import order_statistics

__all__ = ["COMPRESS_BEYOND", "compressed", "critic_inputs", "overflows", "paired_inputs", "reaches_far",
           "robust_standardization", "standardized"]


#: Data within ± this size have differences within float64's range (1.8e308).
HALF_RANGE = torch.finfo(torch.float64).max / 2


def robust_standardization(u: torch.Tensor, train: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-critic, per-feature centre and scale from the training split: the median and the
    interquartile range / 1.349 (the standard deviation for Gaussian data). Unlike the mean and
    standard deviation, these are not dragged by heavy tails, which would squash the bulk of
    the data into a sliver of the critic's input range.

    ``u`` is float64. The statistics returned are those of u / 2 (what :func:`critic_inputs` expects): every
    difference of two halves of finite float64 values is finite, so data of any finite size (1e300) standardize
    without overflow. Data within ±:data:`HALF_RANGE` are measured as they are and the statistics halved after
    (the same numbers, halving being exact above 2.2e-308), so that subnormal data keep their last bit; a
    positive scale stays at least the smallest subnormal (5e-324) when halved.
    """
    sample = samples_of(u, train)
    low, high = torch.aminmax(sample) if sample.numel() else (torch.zeros(()), torch.zeros(()))
    if -HALF_RANGE <= float(low) and float(high) <= HALF_RANGE:
        centre, scale = _median_and_spread(sample)
        centre, scale = centre * 0.5, torch.where(scale > 0, (scale * 0.5).clamp_min(math.ulp(0.0)), scale)
    else:
        centre, scale = _median_and_spread(sample * 0.5)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))  # a constant feature carries nothing
    return centre, scale


def _median_and_spread(sample: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The median and IQR / 1.349 of each critic's feature (axis 1), or the standard deviation where the IQR is 0
    (0 for a constant feature); every difference of two values of ``sample`` must be finite."""
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

    Every finite ``u`` gives finite inputs. The quotient is computed as (u − 2·centre) / (2·scale), the same
    numbers without the rounding of an odd subnormal u / 2 (2·centre and 2·scale are exact, and a difference
    that comes out subnormal is exact); a feature whose scale passes half of float64's range (where 2·scale
    would overflow) is computed as (u / 2 − centre) / scale. The difference or the quotient can pass float64's
    range (1e308 over a scale of 1e-300); there the logarithm of |t| / c is taken apart,
    log|u / 2 − centre| − log(scale) − log(c), which is at most about 1,450, so the input stays below 1.5e7.
    """
    return compressed(standardized(u, centre, scale), u, centre, scale)


def standardized(u: torch.Tensor, centre: torch.Tensor, scale: torch.Tensor, wide: bool | None = None) -> torch.Tensor:
    """:func:`critic_inputs`' quotient t in float64, before its compression. ``wide``: whether some 2·scale
    overflows (None: read from the device). The halving form is the plain one where no 2·scale overflows (u·1,
    centre·2 and scale·2 are the same doubles), so a ``wide`` of True for all features gives the same t."""
    doubled = scale * 2.0
    if bool(torch.isinf(doubled).any()) if wide is None else wide:  # 2·scale overflows there: that feature halves u
        half = torch.where(torch.isinf(doubled), 0.5, 1.0).to(scale)
        return (u.double() * half).sub_(centre * (2.0 * half)).div_(scale * (2.0 * half))
    return (u.double() - centre * 2.0).div_(doubled)  # in place: one temporary, two passes over it


def reaches_far(t: torch.Tensor) -> torch.Tensor:
    """Whether some value of ``t`` passes ±:data:`COMPRESS_BEYOND`, as a 0-d bool tensor on its device (no read)."""
    if not t.numel():
        return torch.zeros((), dtype=torch.bool, device=t.device)
    return (torch.stack(torch.aminmax(t)).abs() > COMPRESS_BEYOND).any()


def compressed(t: torch.Tensor, u: torch.Tensor, centre: torch.Tensor, scale: torch.Tensor,
               far: bool | None = None) -> torch.Tensor:
    """:func:`critic_inputs` of the quotient ``t`` of :func:`standardized`, in float32. ``far``: whether some value
    passes ±:data:`COMPRESS_BEYOND` (None: read from the device, :func:`reaches_far`)."""
    if bool(reaches_far(t)) if far is None else far:  # no mask unless needed
        far = t.abs() > COMPRESS_BEYOND
        log_ratio = t.abs().div_(COMPRESS_BEYOND).log_()
        overflowed = torch.isinf(t)
        if bool(overflowed.any()):  # the difference or the quotient passed float64's range, their logarithms did not
            gap = (u.double() * 0.5).sub_(centre).abs_()
            apart = torch.log(gap).sub_(torch.log(scale)).sub_(math.log(COMPRESS_BEYOND))
            log_ratio = torch.where(overflowed, apart, log_ratio)
        # sign(t)·c·(1 + log(|t|/c)) in place: (1 + log) > 1 where far, so the sign is t's
        t = torch.where(far, log_ratio.add_(1.0).mul_(COMPRESS_BEYOND).copysign_(t), t)
    return t.float()


def paired_inputs(u: torch.Tensor, v: torch.Tensor, u_stats, v_stats, wide=(None, None)):
    """(:func:`critic_inputs` of u, of v) at their (centre, scale) ``u_stats`` and ``v_stats``, with one read of the
    device for both, whether either passes ±:data:`COMPRESS_BEYOND` (the critic scorer's; ``wide``: each one's
    :func:`standardized` flag, known beforehand, else read too). The same tensors as two calls of critic_inputs."""
    tu, tv = standardized(u, *u_stats, wide[0]), standardized(v, *v_stats, wide[1])
    far_u, far_v = torch.stack([reaches_far(tu), reaches_far(tv)]).tolist()
    return compressed(tu, u, *u_stats, far_u), compressed(tv, v, *v_stats, far_v)


def overflows(*scales: torch.Tensor) -> list:
    """For each scale, whether some 2·scale overflows (:func:`standardized`'s ``wide``), in one read of the device."""
    return torch.stack([torch.isinf(scale * 2.0).any() for scale in scales]).tolist()
