"""The profile of multi-freq-ldpy (0.2): its clients, local randomizers of one value or of one tuple.

multi-freq-ldpy's clients are functions (several compiled by Numba) of one client's value and the protocol's
parameters, returning that client's report; each ``…_Aggregator_…`` function is the server's estimate from
all reports (post-processing, not scanned).

- ``pure_frequency_oracles``: ``GRR_Client(input_data, k, epsilon)``, ``UE_Client``, ``HE_Client``,
  ``SS_Client``, ``LH_Client``, ``ADP_Client``: ε-LDP at ``epsilon`` on a value in 0, …, k − 1.
- ``long_freq_est``: longitudinal clients ``L_GRR_Client(input_data, k, eps_perm, eps_1)`` and the like:
  one report is ``eps_1``-LDP (``eps_1 < eps_perm``, the bound over infinitely many reports). The scan
  claims the single report's ``eps_1`` = ε from the grid, with ``eps_perm`` = 2ε. ``dBitFlipPM_Client``
  has one permanent round: ``eps_perm``-LDP.
- ``mdim_freq_est`` and ``long_mdim_freq_est``: clients of a tuple ``input_tuple`` of d attributes
  (``SMP_…``: one sampled attribute; ``SPL_…``: the budget split; ``RSpFD_…``: one sampled attribute plus
  fake data), claiming ε-LDP at ``epsilon`` (``eps_1``, ``eps_perm``) for the client's tuple. The pairs are
  two tuples: every attribute moved (local DP's any two inputs) and attribute 0 alone.

The scan uses k = 4 values per attribute, d = 2 attributes (the smallest that exercise the sampling), and
for dBitFlipPM b = 4 buckets and 2 bits reported; the pair is 0 vs 3, the ends of the domain.
"""

from __future__ import annotations

from audit.scan.profiles.base import LocalRandomizer, OptionalArgument, Profile, TupleRandomizer

#: Values per attribute (0..k-1), attributes per tuple, and dBitFlipPM's buckets and bits reported.
K, D, B, BITS = 4, 2, 4, 2
#: Runs per case: RS+FD's clients at ε = 1 are 1.49-LDP on tuples that differ in every attribute, a ratio of
#: 4.44 against e = 2.72 on an event of probability 0.149 (experiments/_scan_bug_sources.py); at the scan's α/K
#: (K = 276) 6,000 runs certified it in some seeds, 20,000 in every one tried.
LIBRARY_MAX_RUNS = 20_000
#: Where a longitudinal client's claim is its single report's eps_1 = ε, its eps_perm is this multiple of ε.
EPS_PERM_FACTOR = 2.0

_OPTIMAL = (OptionalArgument("optimal", (None, False)),)
_DOMAIN = dict(bounds=(0.0, float(K - 1)), optional=_OPTIMAL)
_TUPLE = dict(fixed={"lst_k": [K] * D, "d": D, "lst_b": [B] * D, "d_bits": BITS}, width=D, **_DOMAIN)
_VALUE = dict(fixed={"k": K, "b": B, "d_bits": BITS}, value_names=("input_data",), value_source="int(db[0, 0])",
              **_DOMAIN)

#: The modules holding the clients (their packages' ``__init__`` import nothing).
MODULES = tuple(f"multi_freq_ldpy.{package}.{module}" for package, modules in (
    ("pure_frequency_oracles", ("GRR", "UE", "HE", "SS", "LH", "ADP")),
    ("long_freq_est", ("L_GRR", "L_OUE", "L_OSUE", "L_SUE", "L_SOUE", "L_ADP", "L_LH", "dBitFlipPM")),
    ("mdim_freq_est", ("SMP_solution", "SPL_solution", "RSpFD_solution")),
    ("long_mdim_freq_est", ("L_SMP_Solution", "L_SPL_Solution"))) for module in modules)

#: The servers' estimators and the variance formulas: post-processing and helpers, not clients.
SERVERS = tuple(f"{protocol}_Aggregator_{estimator}" for protocol in (
    "GRR", "UE", "HE", "SS", "LH", "ADP", "L_GRR", "L_OUE", "L_OSUE", "L_SUE", "L_SOUE", "L_ADP", "L_LH",
    "dBitFlipPM", "RSpFD_GRR", "RSpFD_UE_zero", "RSpFD_UE_rnd", "RSpFD_ADP",
    *(f"{split}_{p}" for split in ("SMP", "SPL") for p in (
        "GRR", "UE", "LH", "SS", "ADP", "L_GRR", "L_OUE", "L_OSUE", "L_SUE", "L_SOUE", "L_ADP", "dBitFlipPM")))
    for estimator in ("MI", "IBU")) + ("find_tresh",)

PROFILE = Profile(
    name="multi-freq-ldpy",
    modules=MODULES,
    families=(
        TupleRandomizer(epsilon_name="eps_1", requires=("eps_1",), scaled={"eps_perm": EPS_PERM_FACTOR}, **_TUPLE),
        TupleRandomizer(epsilon_name="eps_perm", requires=("eps_perm",), **_TUPLE),
        TupleRandomizer(**_TUPLE),
        LocalRandomizer(epsilon_name="eps_1", requires=("eps_1",), scaled={"eps_perm": EPS_PERM_FACTOR}, **_VALUE),
        LocalRandomizer(epsilon_name="eps_perm", requires=("eps_perm",), **_VALUE),
        LocalRandomizer(**_VALUE),
    ),
    distribution="multi-freq-ldpy",
    max_runs=LIBRARY_MAX_RUNS,
    exclude=SERVERS,
)
