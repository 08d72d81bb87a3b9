"""Study of which record an audit chooses at small budgets: ``python -m experiments.record_choice``.

Under a prior that is not a two-point prior an audit of a DP notion trains one critic per record and chooses the
record its tests run on before they run (:func:`audit.certificates.secret_bounds.certify`: the MI test's candidate;
the event test's structured pairs on that candidate's record, :func:`audit.search.event_candidates.event_candidates`).
This study audits mechanisms in which exactly one record leaks (or two, at different strengths) under a product
Bernoulli(½) prior on 4 records of one bit (replace-one), over seeds, and counts

- how often each record is the MI test's candidate (``certified_secret``) and the event test's record;
- how often a DP claim below the true ε is refuted (``dp:`` claim, every test at its share of α), and how often the
  true claim is (``rr_record_1_eps_1_true_claim``: at most Binomial(seeds, α) whatever the choice);
- how often the MI test's certified bound (at its share of α, α/2 here) exceeds an MI-DP level below the record's
  exact MI: the MI-DP claim ``mi-dp:LEVEL`` would be refuted at least that often (the MI test gets all of α there);
- each record's validation score (the selection's statistic) and test-split estimate, against its exact MI.

The exact MI of each record, I(X_i; M | X_−i) in nats, is computed by :func:`exact_mi` in closed form: a record
released by randomized response keeping it with probability p = e^ε/(1 + e^ε) (Warner 1965) under a Bernoulli(½)
prior has I = log 2 − h(p), h the binary entropy in nats (Cover and Thomas 2006, Eq. (2.5); the channel is a binary
symmetric channel with uniform input, Section 7.1.4); one released as X_i + Laplace(b) has
I = h(Y) − h(Laplace(b)), h(Laplace(b)) = 1 + log 2b (Cover and Thomas 2006, Table 17.1), h(Y) of the two-component
mixture integrated numerically (scipy.integrate.quad); records the mechanism does not read have I = 0.

Selection uses the MI sample only; the MI test certifies on its held-out split, the event test on fresh runs, so the
choice changes power, never the level.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter

import numpy as np
from scipy import integrate

import audit.certificates.secret_bounds as secret_bounds
from audit.engine import run_audit
from audit.spec import AuditSpec
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.priors import ProductBernoulli

#: Records of the audited databases (one bit each, Bernoulli(½)).
RECORDS = 4
ALPHA = 0.05


def _kept(epsilon: float) -> float:
    return float(np.exp(epsilon) / (1 + np.exp(epsilon)))


def randomized_response(bits: np.ndarray, epsilon: float, rng) -> np.ndarray:
    """``bits`` each kept with probability e^ε/(1 + e^ε), else flipped (Warner 1965): exactly ε-DP in the bit."""
    return np.where(rng.random(len(bits)) < _kept(epsilon), bits, 1 - bits)


def rr_of_record_one(epsilon: float):
    """A mechanism releasing record 1 by randomized response at ``epsilon``, nothing of records 0, 2, 3."""
    def mechanism(dbs, rng):
        return randomized_response(dbs[:, 1, 0], epsilon, rng)[:, None].astype(float)
    mechanism.__name__ = f"rr_record_1_eps_{epsilon:g}"
    return mechanism


def laplace_of_record_one(dbs, rng):
    """Record 1 plus Laplace(1): exactly 1-DP in record 1 (sensitivity 1, Dwork et al. 2006), nothing of the others."""
    return (dbs[:, 1, 0] + rng.laplace(0.0, 1.0, len(dbs)))[:, None]


def rr_of_records_one_and_three(dbs, rng):
    """(record 1 by randomized response at ε = 2, record 3 by randomized response at ε = 0.5): exactly 2-DP."""
    return np.stack([randomized_response(dbs[:, 1, 0], 2.0, rng),
                     randomized_response(dbs[:, 3, 0], 0.5, rng)], axis=1).astype(float)


def _binary_entropy(p: float) -> float:
    return float(-p * np.log(p) - (1 - p) * np.log(1 - p))


def _laplace_mi(scale: float) -> float:
    """I(X; X + Laplace(scale)) for X ~ Bernoulli(½): h(Y) − (1 + log 2·scale), h(Y) integrated numerically."""
    def density(y):
        return 0.25 / scale * (np.exp(-abs(y) / scale) + np.exp(-abs(y - 1) / scale))

    def integrand(y):
        f = density(y)
        return -f * np.log(f) if f > 0 else 0.0
    h_y = sum(integrate.quad(integrand, a, b, limit=200)[0] for a, b in ((-60, 0), (0, 1), (1, 61)))
    return h_y - (1 + np.log(2 * scale))


def _rr_mi(epsilon: float) -> float:
    """I(X; RR_ε(X)) for X ~ Bernoulli(½): log 2 − h(e^ε/(1 + e^ε)) (module docstring)."""
    return float(np.log(2) - _binary_entropy(_kept(epsilon)))


def exact_mi(name: str) -> list:
    """Each record's I(X_i; M | X_−i) in nats under the study's prior (module docstring)."""
    out = [0.0] * RECORDS
    if name == "laplace_record_1":
        out[1] = _laplace_mi(1.0)
    elif name == "rr_records_1_and_3":
        out[1], out[3] = _rr_mi(2.0), _rr_mi(0.5)
    else:
        out[1] = _rr_mi(MECHANISMS[name][1])
    return [float(v) for v in out]


#: name → (mechanism, its true DP ε, the DP claim audited: below the true ε, or at it for the type-I row).
MECHANISMS = {
    "rr_record_1_eps_0.5": (rr_of_record_one(0.5), 0.5, 0.25),
    "rr_record_1_eps_1": (rr_of_record_one(1.0), 1.0, 0.5),
    "rr_record_1_eps_2": (rr_of_record_one(2.0), 2.0, 1.0),
    "laplace_record_1": (laplace_of_record_one, 1.0, 0.5),
    "rr_records_1_and_3": (rr_of_records_one_and_three, 2.0, 1.0),
    "rr_record_1_eps_1_true_claim": (rr_of_record_one(1.0), 1.0, 1.0),  # refuted in at most an α share of seeds
}


def _record(label) -> int | None:
    return None if label is None else int(label.split()[1])


def one_audit(name: str, samples: int, seed: int) -> dict:
    """One audit of ``name``'s mechanism at ``samples``: the records chosen, the verdict, the per-record scores."""
    mechanism, _, claim = MECHANISMS[name]
    scores = {}
    original = secret_bounds.candidates

    def seen(fits):
        found = original(fits)
        for c in found:
            scores[c.cell.record] = max(scores.get(c.cell.record, -np.inf), float(c.score))
        return found

    secret_bounds.candidates = seen
    try:
        result = run_audit(AuditSpec(mechanism=mechanism, priors=[ProductBernoulli(np.full(RECORDS, 0.5))],
                                     claim=parse_claim(f"dp:{claim:g}"), samples=samples, seed=seed, alpha=ALPHA))
    finally:
        secret_bounds.candidates = original
    return {
        "mi_record": _record(result.certified_secret),
        "event_record": None if result.event_test is None else _record(result.event_test.secret),
        "refuted": result.claim_verdict == "refuted",
        "refuted_by": sorted({r["test"] for r in result.refuted_by}),
        "mi_bound": result.lower_bound,
        "validation": [scores.get(r) for r in range(RECORDS)],
        "estimates": [e.estimate for e in sorted(result.per_record, key=lambda e: e.record)],
    }


def summarize(name: str, samples: int, rows: list) -> dict:
    exact = exact_mi(name)
    leaking = [r for r in range(RECORDS) if exact[r] > 0]
    top = max(range(RECORDS), key=lambda r: exact[r])
    mi_level = exact[top] / 2  # an MI-DP claim below the top record's MI
    valid = np.array([row["validation"] for row in rows], dtype=float)
    tests = np.array([row["estimates"] for row in rows], dtype=float)
    return {
        "mechanism": name, "samples": samples, "seeds": len(rows), "exact_mi": exact,
        "mi_record": dict(sorted(Counter(row["mi_record"] for row in rows).items(), key=str)),
        "event_record": dict(sorted(Counter(row["event_record"] for row in rows).items(), key=str)),
        "useless_chosen": sum(row["mi_record"] not in leaking for row in rows),
        "dp_claim": MECHANISMS[name][2], "dp_refuted": sum(row["refuted"] for row in rows),
        "dp_refuted_by": dict(Counter(t for row in rows for t in row["refuted_by"])),
        "mi_level": mi_level, "mi_bound_above_level": sum((row["mi_bound"] or -np.inf) > mi_level for row in rows),
        "validation_mean": np.round(valid.mean(axis=0), 4).tolist(),
        "validation_sd": np.round(valid.std(axis=0), 4).tolist(),
        "test_estimate_mean": np.round(tests.mean(axis=0), 4).tolist(),
        "test_argmax": dict(sorted(Counter(int(np.argmax(t)) for t in tests).items())),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--samples", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=list(MECHANISMS))
    parser.add_argument("--out", help="a JSON lines file receiving each audit's row and each summary")
    args = parser.parse_args(argv)
    for name in args.mechanisms:
        for samples in args.samples:
            started, rows = time.perf_counter(), []
            for seed in range(args.seeds):
                rows.append(one_audit(name, samples, seed))
            summary = summarize(name, samples, rows)
            summary["seconds"] = round(time.perf_counter() - started, 1)
            print(json.dumps(summary), flush=True)
            if args.out:
                with open(args.out, "a") as out:
                    for seed, row in enumerate(rows):
                        out.write(json.dumps({"mechanism": name, "samples": samples, "seed": seed, **row}) + "\n")
                    out.write(json.dumps({"summary": summary}) + "\n")


if __name__ == "__main__":
    main()
