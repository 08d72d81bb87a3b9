"""The exact output laws of the sparse vector variants on given query answers, and the ε a pair attains.

With the threshold noise ρ fixed, the queries' comparisons are independent: query i is above
(⊤) with probability P(ν_i ≥ T + ρ − q_i) and below (⊥) with P(ν_i < T + ρ − q_i), so an
output pattern has probability ∫ f_ρ(r) Π_i P(o_i | r) dr (Lyu, Su and Li 2017, proof of
Theorem 2). Variant 2 redraws ρ after each ⊤, so its pattern splits into independent
segments; variant 5 has no query noise, so a pattern is an interval of ρ. Variant 3 (c = 1)
releases the value v = q_j + ν_j of its first ⊤, with density
f_ν(v − q_j) ∫_{r ≤ v − T} f_ρ(r) Π_{i<j} F_ν(T + r − q_i) dr. Numerical SVT releases a fresh
q_i + Lap(b_z) on each ⊤, whose log density ratio reaches |Δq_i|/b_z in the tails.

The integrals over r use the grid of :mod:`mechanisms.catalog.exposure`; the tests check them
against :func:`scipy.integrate.quad`.
"""

from __future__ import annotations

import math

import numpy as np

from mechanisms.catalog.exposure import (integration_grid, laplace_log_cdf, laplace_log_pdf, laplace_log_sf, log_integral,
                       log_ratio_extremes)

__all__ = ["MAX_PATTERNS", "indicator_patterns", "pattern_count", "pattern_log_probabilities", "svt_log_ratio_extremes"]

MAX_PATTERNS = 4096  # beyond this many output patterns the pair's ε is not computed
MAX_PATTERN_SYMBOLS = 4096  # ... nor beyond this many symbols in all (patterns × queries): listing stays cheap
ABOVE, BELOW, NOT_ANSWERED = 1, 0, -1
_PATTERN_BLOCK = 64  # patterns integrated at once (a block's integrand: 64 x grid floats)


def pattern_count(queries: int, cutoff: int | None) -> int:
    """How many distinct ⊤/⊥/not-answered patterns a run can output, counted without listing them.

    Without a cutoff every ⊤/⊥ string is one: 2^q. With cutoff c a pattern either has j < c
    tops, all queries answered (C(q, j) of them), or stops at its c-th top at position p, the
    p − 1 before holding c − 1 tops (Σ_p C(p − 1, c − 1) = C(q, c) by the hockey-stick
    identity): Σ_{j ≤ c} C(q, j) in all.
    """
    if cutoff is None or cutoff >= queries:
        return 2 ** queries
    return sum(math.comb(queries, j) for j in range(cutoff + 1))


def indicator_patterns(queries: int, cutoff: int | None) -> list:
    """Every ⊤/⊥/not-answered pattern a run can output (``cutoff=None``: no cutoff), or [] if too many.

    The count is checked first (:func:`pattern_count`), so the work and memory are bounded by
    :data:`MAX_PATTERNS` patterns and :data:`MAX_PATTERN_SYMBOLS` symbols whatever ``queries`` is (listing all 2^q strings to find the
    distinct ones took 2 GB at q = 1,000, issue 32 B1).
    """
    count = pattern_count(queries, cutoff)
    if count > MAX_PATTERNS or count * queries > MAX_PATTERN_SYMBOLS:
        return []
    patterns, stack = [], [((), 0)]
    while stack:  # depth-first, without recursion (q may exceed the recursion limit)
        prefix, tops = stack.pop()
        if len(prefix) == queries:
            patterns.append(prefix)
        elif cutoff is not None and tops >= cutoff:
            patterns.append(prefix + (NOT_ANSWERED,) * (queries - len(prefix)))
        else:
            stack.extend(((prefix + (bit,), tops + bit) for bit in (BELOW, ABOVE)))
    return sorted(patterns)


def _segments(pattern: tuple, redraw: bool) -> list:
    """The runs of the pattern that share one threshold draw: all of it, or up to each ⊤ when ρ is redrawn."""
    if not redraw:
        return [pattern]
    segments, current = [], []
    for symbol in pattern:
        current.append(symbol)
        if symbol == ABOVE:
            segments.append(current)
            current = []
    if current:
        segments.append(current)
    return [tuple(s) for s in segments]


def pattern_log_probabilities(answers, patterns, threshold: float, rho_scale: float, nu_scale: float,
                              redraw: bool = False) -> np.ndarray:
    """log P(pattern) for each pattern on the query answers (see the module docstring).

    ``nu_scale = 0`` is variant 5 (no query noise): a pattern is the event
    max_{⊥}(q_i − T) < ρ ≤ min_{⊤}(q_i − T), whose probability is a Laplace CDF difference.
    With ``redraw`` (variant 2) a segment restarts the query positions at its own offset.
    """
    answers = np.asarray(answers, dtype=np.float64)
    if nu_scale == 0.0:
        out = []
        for pattern in patterns:
            tops = [answers[i] - threshold for i, s in enumerate(pattern) if s == ABOVE]
            bottoms = [answers[i] - threshold for i, s in enumerate(pattern) if s == BELOW]
            upper = min(tops) if tops else math.inf
            lower = max(bottoms) if bottoms else -math.inf
            mass = _laplace_cdf(upper, rho_scale) - _laplace_cdf(lower, rho_scale)
            out.append(math.log(mass) if mass > 0 else -math.inf)
        return np.array(out)
    r, log_w = integration_grid(answers - threshold, max(rho_scale, nu_scale))
    gap = threshold + r[None, :] - answers[:, None]           # (k, grid): ν_i must exceed this for ⊤
    log_top, log_bottom = laplace_log_sf(gap, nu_scale), laplace_log_cdf(gap, nu_scale)
    log_rho = laplace_log_pdf(r, rho_scale)
    if not redraw:
        # One threshold draw per pattern: log f = log f_ρ + Σ_⊤ log P(⊤) + Σ_⊥ log P(⊥) for every
        # pattern at once, as two products of 0/1 pattern matrices with the (finite) log terms.
        # In blocks of patterns, so that a block's (patterns, grid) integrand stays small.
        symbols = np.asarray(patterns, dtype=np.int8).reshape(len(patterns), answers.size)
        out = np.empty(len(patterns))
        for start in range(0, len(patterns), _PATTERN_BLOCK):
            block = symbols[start:start + _PATTERN_BLOCK]
            log_f = (log_rho[None, :] + (block == ABOVE).astype(np.float64) @ log_top
                     + (block == BELOW).astype(np.float64) @ log_bottom)
            out[start:start + _PATTERN_BLOCK] = log_integral(log_f, log_w[None, :])
        return out
    segment_mass = {}  # (first query, segment) -> log mass: patterns share most of their segments
    out = []
    for pattern in patterns:
        total, start = 0.0, 0
        for segment in _segments(pattern, redraw):
            if (start, segment) not in segment_mass:
                rows = range(start, start + len(segment))
                log_f = log_rho + sum(log_top[i] if s == ABOVE else log_bottom[i]
                                      for i, s in zip(rows, segment) if s != NOT_ANSWERED)
                segment_mass[start, segment] = float(log_integral(log_f, log_w))
            total += segment_mass[start, segment]
            start += len(segment)
        out.append(total)
    return np.array(out)


def _laplace_cdf(x: float, scale: float) -> float:
    if x == math.inf:
        return 1.0
    if x == -math.inf:
        return 0.0
    return float(np.exp(laplace_log_cdf(x, scale)))


def _value_release_log_densities(answers, r, log_w, threshold: float, rho_scale: float, nu_scale: float):
    """Variant 3 with c = 1: log density of (first ⊤ at j, value v = T + r) for every j on the grid r, and log P(all ⊥)."""
    answers = np.asarray(answers, dtype=np.float64)
    log_bottom = laplace_log_cdf(threshold + r[None, :] - answers[:, None], nu_scale)
    log_rho = laplace_log_pdf(r, rho_scale)
    v = threshold + r
    half_gaps = np.log(np.diff(r) / 2.0)
    densities = []
    prefix = np.zeros_like(r)
    for j in range(answers.size):
        log_f = log_rho + prefix
        # cumulative trapezoid of f from the grid's left end to each point, in log space
        pieces = np.logaddexp(log_f[:-1], log_f[1:]) + half_gaps
        cumulative = np.concatenate([[-np.inf], np.logaddexp.accumulate(pieces)])
        densities.append(laplace_log_pdf(v - answers[j], nu_scale) + cumulative)
        prefix = prefix + log_bottom[j]
    all_below = float(log_integral(log_rho + prefix, log_w))
    return np.concatenate(densities), all_below


def svt_log_ratio_extremes(first, second, *, variant: int, threshold: float, rho_scale: float,
                           nu_scale: float, cutoff: int | None, redraw: bool = False,
                           value_scale: float | None = None):
    """(sup log p/q, sup log q/p) over the outputs of a sparse vector run on answers ``first`` vs ``second``.

    ``variant=3`` releases values (only ``cutoff=1`` is computed); ``value_scale`` is numerical
    SVT's fresh release noise b_z. Returns ``None`` where the pattern count exceeds
    :data:`MAX_PATTERNS` or the variant-3 cutoff is above 1.
    """
    first, second = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    if variant == 3:
        if cutoff != 1:
            return None
        # one grid for both, so that the densities are compared at the same values v
        r, log_w = integration_grid(np.concatenate([first, second]) - threshold, max(rho_scale, nu_scale))
        logs = [_value_release_log_densities(a, r, log_w, threshold, rho_scale, nu_scale) for a in (first, second)]
        dens_fwd, dens_bwd = log_ratio_extremes(logs[0][0], logs[1][0])
        atom_fwd, atom_bwd = log_ratio_extremes([logs[0][1]], [logs[1][1]])
        return max(dens_fwd, atom_fwd), max(dens_bwd, atom_bwd)
    patterns = indicator_patterns(first.size, cutoff)
    if not patterns:
        return None
    log_p = pattern_log_probabilities(first, patterns, threshold, rho_scale, nu_scale, redraw)
    log_q = pattern_log_probabilities(second, patterns, threshold, rho_scale, nu_scale, redraw)
    if value_scale is not None:
        # each released value adds sup_v log f(v − q_i)/f(v − q'_i) = |q_i − q'_i|/b_z, in either direction
        tops = np.array([[s == ABOVE for s in p] for p in patterns], dtype=np.float64)
        release = tops @ (np.abs(first - second) / value_scale)
        return (float(np.max(log_p - log_q + release)), float(np.max(log_q - log_p + release)))
    return log_ratio_extremes(log_p, log_q)
