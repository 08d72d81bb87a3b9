"""The mechanism files of the ``real-bugs`` cases that ``miaudit scan`` found (experiments/real_bugs.py).

Each file calls its library the way its documentation does, with the parameters its claim is read from, and
needs only the library and NumPy: ``python FILE`` simulates both inputs of the pair directly and prints how
often the refuting event occurs under each (no miaudit), and ``miaudit audit --mechanism FILE:NAME`` audits it.
Each docstring gives the event's exact probabilities, or for the floating-point leaks the argument why the
event cannot occur under one input (IEEE 754 round-to-nearest; Mironov 2012 for the attack).
"""

from __future__ import annotations

#: pure-ldp 1.2.0 ``RAPPORClient._perturb`` sets a bit to 1 with probability 1 − f/2 (a 1) or f/2 (a 0) and
#: otherwise leaves it as it is, so the item's own bit, already 1, is never reported as 0. With one cohort and
#: the hash function ``item -> bit item`` (m = 4), bit 0 is 0 with probability 0 for item 0 and 1 − f/2 = 0.62
#: for item 1 (f = 0.76 = ``convert_eps_to_f(1)``): ε = ∞ against the library's ``convert_f_to_eps(0.76, k=1)``
#: = 2 log((1 − f/2)/(f/2)) = 0.979.
PURE_LDP_RAPPOR = '''import random

import numpy as np
from pure_ldp.frequency_oracles import RAPPORClient

# f = 0.76 is RAPPORClient.convert_eps_to_f(1.0); the claim is convert_f_to_eps(0.76, k=1) = 0.979 (one hash).
client = RAPPORClient(f=0.76, m=4, hash_funcs=[[lambda item: int(item)]], num_of_cohorts=1,
                      index_mapper=lambda value: int(value))


def rappor(dbs, rng):
    """The reported Bloom filter (4 bits) of each database's one record (an item in {0, 1, 2, 3}); pure-ldp
    draws from random's global generator, seeded here from the audit's generator."""
    random.seed(int(rng.integers(2**63)))
    return np.array([client.privatise(int(db[0, 0]))[0] for db in dbs], dtype=np.float64)


if __name__ == "__main__":
    random.seed(0)
    runs = 100_000
    for item in (0, 1):
        zeros = sum(client.privatise(item)[0][0] == 0 for _ in range(runs))
        print(f"item {item}: bit 0 reported as 0 in {zeros}/{runs} runs")  # 0 vs about 0.62 * runs
'''

#: pure-ldp 1.2.0 ``HadamardMechClient.privatise`` returns the list of (j, coefficient) when it keeps the true
#: coefficients (probability p = e^ε/(e^ε + 2^t − 1)) and a ``zip`` of them with a replaced coefficient otherwise.
#: At d = 4, t = 1, ε = 1 the coefficient of item 0 is always +1 and that of item 1 is −1 for j odd, so "a list
#: with coefficient −1" has probability 0 for item 0 and p/2 = e/(2(e + 1)) = 0.366 for item 1: ε = ∞. The
#: values alone (j, coefficient) are 1-LDP: the report's type is the leak.
PURE_LDP_HADAMARD = '''import random

import numpy as np
from pure_ldp.frequency_oracles import HadamardMechClient

client = HadamardMechClient(epsilon=1.0, d=4, t=1, index_mapper=lambda value: int(value))


def report(item):
    """(the report is a list, its j, its coefficient): privatise returns a list or a zip of (j, coefficient)."""
    released = client.privatise(item)
    (j, coefficient), = list(released)
    return isinstance(released, list), j, coefficient


def hadamard(dbs, rng):
    """The report of each database's one record (an item in {0, 1, 2, 3}) as (is a list, j, coefficient); pure-ldp
    draws from random's global generator, seeded here from the audit's generator."""
    random.seed(int(rng.integers(2**63)))
    return np.array([report(int(db[0, 0])) for db in dbs], dtype=np.float64)


if __name__ == "__main__":
    random.seed(0)
    runs = 100_000
    for item in (0, 1):
        seen = sum(kept and coefficient == -1 for kept, _, coefficient in (report(item) for _ in range(runs)))
        print(f"item {item}: a list with coefficient -1 in {seen}/{runs} runs")  # 0 vs about 0.366 * runs
'''

#: multi-freq-ldpy 0.2.5 ``SS_Client(v, k=4, epsilon=0.1)`` reports a subset of size
#: rint(k/(e^ε + 1)) = 2: with probability p = 2e^ε/(2e^ε + 2) = 0.525 the true value *first*, then one of the
#: other 3; otherwise 2 of the other values. So the ordered report (0, 1) has probability p/3 = 0.175 for
#: v = 0 and 0 for v = 1 (1 would come first, or not at all): ε = ∞. As a set the report is 0.1-LDP.
MULTI_FREQ_SS = '''import numba
import numpy as np
from multi_freq_ldpy.pure_frequency_oracles.SS import SS_Client


@numba.njit
def seed_numba(seed):
    """SS_Client is compiled by numba, whose generator is seeded only from compiled code."""
    np.random.seed(seed)


def subset(dbs, rng):
    """The reported subset, in the order SS_Client returns it, of each database's one record (k = 4, epsilon = 0.1)."""
    seed_numba(int(rng.integers(2**32)))
    return np.array([SS_Client(int(db[0, 0]), 4, 0.1) for db in dbs], dtype=np.float64)


if __name__ == "__main__":
    seed_numba(0)
    runs = 100_000
    for value in (0, 1):
        seen = sum(list(SS_Client(value, 4, 0.1)) == [0, 1] for _ in range(runs))
        print(f"value {value}: report (0, 1) in {seen}/{runs} runs")  # about 0.175 * runs vs 0
'''

#: multi-freq-ldpy 0.2.5 ``RSpFD_GRR_Client(t, lst_k=[4, 4], d=2, epsilon=1)`` (Random Sampling plus Fake Data,
#: Arcolezi et al. 2021) samples one attribute j uniformly, reports GRR of t_j at the "amplified" ε' = ln(d(e^ε − 1)
#: + 1) = ln(2e − 1) = 1.49, and a uniform fake value for the other attribute. The report (0, 0) has probability
#: (1/2)(p/4) + (1/2)(p/4) = p/4 from t = (0, 0) and q/4 from t = (3, 3), with p = e^ε'/(e^ε' + 3) = 0.5966 and
#: q = 1/(e^ε' + 3) = 0.1345 (GRR over k = 4 values): 0.1491 against 0.0336, a ratio e^ε' = 2e − 1 = 4.44, so the
#: client is 1.49-LDP, not 1-LDP. Amplification by sampling bounds the ratio only for tuples that differ in one
#: attribute (there it is 2e^ε'/(e^ε' + 1) = e^0.49); local DP covers any two tuples, and these differ in both.
MULTI_FREQ_RSPFD = '''import numpy as np
from multi_freq_ldpy.mdim_freq_est.RSpFD_solution import RSpFD_GRR_Client


def report(dbs, rng):
    """RSpFD_GRR_Client's report of each database's one tuple (lst_k = [4, 4], d = 2, epsilon = 1)."""
    np.random.seed(int(rng.integers(2**32)))  # the client draws from NumPy's global generator
    return np.array([RSpFD_GRR_Client([int(v) for v in db[0]], [4, 4], 2, 1.0) for db in dbs], dtype=np.float64)


if __name__ == "__main__":
    np.random.seed(0)
    runs = 100_000
    for tuple_ in ([0, 0], [3, 3]):
        seen = sum(list(RSpFD_GRR_Client(tuple_, [4, 4], 2, 1.0)) == [0, 0] for _ in range(runs))
        print(f"tuple {tuple_}: report (0, 0) in {seen}/{runs} runs")  # about 0.1491 * runs vs 0.0336 * runs
'''

#: python-dp 1.1.5 ``GaussianMechanism(epsilon=1, delta=1e-5, sensitivity=1).add_noise(x)`` returns x + n in float64,
#: n = fl(k·g) PyDP's binomial sample k on the granularity g = 2⁻⁵⁴ (the power of two just above 2σ/2⁵⁷, σ = 3.73:
#: ``GaussianDistribution::Sample`` of Google's C++ library). Every output is a multiple of 2⁻⁵⁴, but that grid is
#: finer than the doubles from ½ up (spacing 2⁻⁵³ in [½, 1), 2⁻⁵² in [1, 2)), where k·g and x + n are rounded to the
#: coarser grid, so the grid does not hide which x was added (PyDP's Laplace noise, on g = 2⁻⁴⁰, does: neither event
#: below occurs on 0 or 1 in 100,000 runs each). For any double n, fl(1 + n) is a multiple of 2⁻⁵³: where |n| ≥ 1/2,
#: n is one and so is the exact sum (rounded, or exact below 1/2 by Sterbenz's lemma); where |n| < 1/2, 1 + n lies in
#: (1/2, 3/2), whose doubles are. On input 0 the output is n itself, which near 0 is not (5.4% of 200,000 runs here):
#: δ at ε = 1 is at least that share, against 10⁻⁵ (Mironov 2012's attack on float noise). The event miaudit
#: certifies is wider, y ≠ fl(fl(y − 1) + 1) (the round trip through input 1's grid, audit/statistics/float_bits.py):
#: 15.4% of 200,000 runs on input 0, none on input 1.
PYDP_GAUSSIAN = '''import numpy as np
from pydp.algorithms.numerical_mechanisms import GaussianMechanism

gaussian = GaussianMechanism(epsilon=1.0, delta=1e-5, sensitivity=1.0)


def add_noise(dbs, rng):
    """add_noise of each database's one value; PyDP draws from its own secure generator, which takes no seed."""
    return np.array([[gaussian.add_noise(float(db[0, 0]))] for db in dbs])


if __name__ == "__main__":
    runs = 200_000
    for value in (0.0, 1.0):
        outputs = np.array([gaussian.add_noise(value) for _ in range(runs)])
        odd = np.count_nonzero(np.ldexp(outputs, 53) % 1)
        moved = np.count_nonzero((outputs - 1.0) + 1.0 != outputs)
        # input 0: about 5% and 15%; input 1: none
        print(f"input {value:g}: of {runs} outputs, {odd} not a multiple of 2^-53, {moved} not fixed by y - 1 + 1")
'''

#: PipelineDP 0.3.1 ``DPEngine.aggregate`` SUM with Gaussian noise, values in [0, 10], one contribution per
#: privacy unit, (ε, δ) = (1, 10⁻⁶) from its ``NaiveBudgetAccountant``: adding the unit of value 10 changes the
#: sum from 0 to 10, released as fl(s + n). An output in (−2, 2) from s = 10 needs n in (−12, −8), a multiple
#: of 2⁻⁴⁹ there, and 10 + n is then exact (Sterbenz's lemma): a multiple of 2⁻⁴⁹. From s = 0 the output is n
#: itself, which in (−2, 2) often is not (about 2% of runs): δ at ε = 1 is at least that share, against 10⁻⁶.
#: miaudit's wider event y ≠ fl(fl(y − 10) + 10) held in 11.8% of 20,000 runs without the unit, none with it.
PIPELINE_DP_SUM = '''import numpy as np
import pipeline_dp

PARAMS = pipeline_dp.AggregateParams(metrics=[pipeline_dp.Metrics.SUM], noise_kind=pipeline_dp.NoiseKind.GAUSSIAN,
                                     max_partitions_contributed=1, max_contributions_per_partition=1,
                                     min_value=0.0, max_value=10.0)
EXTRACTORS = pipeline_dp.DataExtractors(privacy_id_extractor=lambda row: row[0], partition_extractor=lambda row: 0,
                                        value_extractor=lambda row: row[1])


def dp_sum(values):
    """The DP sum of values, each its own privacy unit, in public partition 0, at (1, 1e-6) in total."""
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=1.0, total_delta=1e-6)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    released = engine.aggregate(list(enumerate(values)), PARAMS, EXTRACTORS, public_partitions=[0])
    accountant.compute_budgets()
    return dict(released)[0].sum


def total(db, rng):
    """The DP sum of the database's column 0; PipelineDP's noise comes from PyDP's generator, which takes no seed."""
    return [dp_sum([float(v) for v in db[:, 0]])]


if __name__ == "__main__":
    runs = 20_000
    for values in ([0.0], [0.0, 10.0]):
        outputs = np.array([dp_sum(values) for _ in range(runs)])
        seen = np.count_nonzero((np.abs(outputs) < 2) & (np.ldexp(outputs, 49) % 1 != 0))
        moved = np.count_nonzero((outputs - 10.0) + 10.0 != outputs)
        # without the unit of value 10: about 2% and 12%; with it: none
        print(f"values {values}: of {runs} outputs, {seen} in (-2, 2) off the multiples of 2^-49, "
              f"{moved} not fixed by y - 10 + 10")
'''
