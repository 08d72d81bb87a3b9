"""Runs to refute an (ε, δ) claim whose δ is a tenth of the truth, with and without the δ-optimal event
(issue 39 §1): ``python -m experiments.delta_events``.

The mechanism adds N(0, 2²) to one record in {−1, 1} (μ = 1 Gaussian DP between the two values; the
exact δ(ε) = Φ(−ε + ½) − e^ε Φ(−ε − ½), Balle and Wang 2018, Theorem 8, as
:func:`mechanisms.claims.dp_curves.gaussian_dp_delta` computes it). It is audited on that pair
against (ε, δ(ε)/10) at several budgets (``--samples``; the event test's certification runs per input
equal them) over ``--seeds`` seeds, once as miaudit audits it (the event search chooses between the
ε-optimal and the δ-optimal event on the held-out draws, :mod:`audit.search.claim_events`) and once with
the ε-optimal event only (the event search before it), on the same seeds. Only which event is chosen
changes, on draws the certificate never sees, so α is the same in both.
"""

from __future__ import annotations

import argparse
import contextlib

import numpy as np

import audit.search.claim_events as claim_events
from experiments._ablation import refuted_counts_by_variant
from mechanisms.claims.dp_curves import gaussian_dp_delta
from mechanisms.claims.notions import DifferentialPrivacy
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

#: The claims' ε (dp-accounting's RDP ε at δ = 1e-5 for this Gaussian, issue 39's case, and 1) and the budgets
#: (samples) each is audited at by default: around where half the audits refute.
BUDGETS = {2.166: (2500, 5000, 10000, 20000), 1.0: (400, 800, 1600)}
#: The noise's standard deviation and the ℓ₂ distance between the record's two values (1 and −1): μ = 1.
SIGMA, SENSITIVITY = 2.0, 2.0


def gaussian_record(dbs, rng):
    """The record (column 0 of row 0, ±1) plus N(0, SIGMA²): μ = SENSITIVITY/SIGMA = 1 between the two values."""
    return dbs[:, 0, 0:1] + rng.normal(0.0, SIGMA, (dbs.shape[0], 1))


@contextlib.contextmanager
def epsilon_optimal_only():
    """The event search without its δ-optimal event (every claim ranked as a pure one would be)."""
    saved = claim_events.ranks_by_delta
    claim_events.ranks_by_delta = lambda claim: False
    try:
        yield
    finally:
        claim_events.ranks_by_delta = saved


def refuted_counts(epsilon: float, samples: int, seeds: int) -> dict:
    """{"δ-optimal": refuted audits, "ε-optimal only": refuted audits} over ``seeds`` seeds."""
    pair = NeighbouringPair(np.array([[1.0]]), np.array([[-1.0]]))
    claim = DifferentialPrivacy(epsilon, gaussian_dp_delta(epsilon, SIGMA, SENSITIVITY) / 10)
    return refuted_counts_by_variant(gaussian_record, pair, claim, samples, seeds,
                                     (("δ-optimal", contextlib.nullcontext), ("ε-optimal only", epsilon_optimal_only)))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", default=None, help="budgets, comma-separated (default: BUDGETS)")
    parser.add_argument("--seeds", type=int, default=40)
    args = parser.parse_args(argv)
    for epsilon, budgets in BUDGETS.items():
        truth = gaussian_dp_delta(epsilon, SIGMA, SENSITIVITY)
        for samples in budgets if args.samples is None else (int(s) for s in args.samples.split(",")):
            counts = refuted_counts(epsilon, samples, args.seeds)
            print(f"(ε, δ) = ({epsilon:g}, {truth / 10:.3g}) claimed, true δ {truth:.3g}, {samples} samples: refuted "
                  + ", ".join(f"{name} {count}/{args.seeds}" for name, count in counts.items()), flush=True)


if __name__ == "__main__":
    main()
