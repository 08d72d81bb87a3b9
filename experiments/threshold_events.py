"""Which event the audit certifies on a seeded copy of OpenDP's Laplace threshold release, and the δ̲ it
certifies: ``python -m experiments.threshold_events``.

OpenDP 0.16.0's ``make_count_by >> then_laplace_threshold(scale=1, threshold=5)`` (OpenDP issue #2922) releases
each key's count plus discrete Laplace noise of scale 1 when it is at least 5. OpenDP's noise takes no seed, so
this study audits a NumPy copy of it whose noise does (:func:`released_keys`): 20 users hold key 0 in both
databases and one more user holds key 1 in the first (add/remove neighbours), so key 1 is released with
probability π = P(1 + Z ≥ 5) = e⁻⁴/(1 + e⁻¹) = 0.0134 with that user and never without, and every output without
key 1 is (1 − π) times as likely with the user as without. The claim is the map's (1, 0.00493) at d_in = 1, as
in ``experiments/real_bugs.py``. The key set certifies δ̲ near π on fresh runs; an event that adds outputs
without key 1 (a two-tailed event's lower tail {s ≤ t}) loses about (e − 1)·P(those outputs) of it.

Each of ``--audits`` seeded audits per sample size (``--samples``) reports whether it refuted the claim, its δ̲ at
the claim's ε, and whether the event certified is two-tailed (a lower tail of key-absent outputs riding along).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from audit.engine import run_audit
from audit.spec import AuditSpec
from mechanisms.adapters.callables import PerDatabaseMechanism
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.outputs.encoding import OutputEncoder

#: The privacy map's (ε, δ) of the threshold release at d_in = 1 (OpenDP 0.16.0; OpenDP issue #2922).
CLAIM = "dp:1:0.004925833956035741"
#: P(key 1 released | its user present) = P(Z ≥ 4) for discrete Laplace Z of scale 1: e⁻⁴/(1 + e⁻¹).
KEY_RELEASED = math.exp(-4) / (1 + math.exp(-1))


def released_keys(db: np.ndarray, rng: np.random.Generator) -> dict:
    """Each key's count (column 0 holds one key per user) plus discrete Laplace noise of scale 1 (a difference of two
    geometric variables of ratio e⁻¹: P(Z = z) ∝ e^−|z|), released where at least 5: OpenDP's threshold release."""
    keys, counts = np.unique(db[:, 0].astype(int), return_counts=True)
    p = 1 - math.exp(-1.0)
    noisy = counts + rng.geometric(p, len(counts)) - rng.geometric(p, len(counts))
    return {f"key{key}": int(count) for key, count in zip(keys, noisy) if count >= 5}


def audit_once(seed: int, samples: int) -> dict:
    """One seeded audit of the threshold release: its verdict, δ̲ and event form."""
    pair = NeighbouringPair(np.array([[0.0]] * 20 + [[1.0]]), np.array([[0.0]] * 20))
    spec = AuditSpec(mechanism=PerDatabaseMechanism(released_keys, "threshold", encoder=OutputEncoder()),
                     priors=(pair.prior(),), samples=samples, records=(20,), seed=seed,
                     claim=parse_claim(CLAIM, relation="add-remove"), relation="add-remove")
    result = run_audit(spec)
    event = result.event_test
    return {"refuted": result.claim_verdict == "refuted", "delta": float(event.delta_lower_bound),
            "two_tailed": event.event.get("form") == "two-tailed"}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", default="20000,10000", help="sample sizes, comma-separated")
    parser.add_argument("--audits", type=int, default=40, help="seeded audits per sample size (seeds 0, 1, …)")
    args = parser.parse_args(argv)
    for samples in (int(s) for s in args.samples.split(",")):
        started = time.perf_counter()
        rows = [audit_once(seed, samples) for seed in range(args.audits)]
        deltas = np.array([row["delta"] for row in rows])
        print(f"{samples} samples, {args.audits} audits: refuted {sum(row['refuted'] for row in rows)}, two-tailed "
              f"event {sum(row['two_tailed'] for row in rows)}; certified δ̲ min {deltas.min():.4f}, median "
              f"{np.median(deltas):.4f}, mean {deltas.mean():.4f} (key set π = {KEY_RELEASED:.4f}); below 0.008: "
              f"{int((deltas < 0.008).sum())} ({time.perf_counter() - started:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
