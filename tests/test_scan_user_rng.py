"""``miaudit scan`` of a user's module written as ``miaudit audit --per-database`` teaches (docs/getting-started.md):
``f(db, rng)`` drawing its noise from the given ``numpy.random.Generator``, with the privacy parameter named ``epsilon``
or ``eps`` (:mod:`audit.scan.profiles.user_module`, :data:`audit.scan.profiles.base.GENERATOR_NAMES`).

The planted module's counts are of records ≥ 5, which one record moves by at most 1 (sensitivity 1), with Laplace noise
rounded to an integer, so that no float bit of the output can refute a claim (rounding is post-processing):

- ``count(db, rng, epsilon)``: Laplace noise of scale 1/ε, ε-DP (Dwork, McSherry, Nissim and Smith 2006, the Laplace
  mechanism); the scan's claim ``dp:ε`` holds, so a case is refuted with probability at most its α share;
- ``short_count(db, rng, epsilon)``: scale 0.1/ε, ten times too small, so 10ε-DP and no better: on a = [0, 0, 0]
  (count 0) and b = [10, 0, 0] (count 1) the output 2 has probability P(L ∈ [1.5, 2.5)) on a and P(L ∈ [0.5, 1.5))
  on b, a ratio of exactly e^(10ε) (the Laplace density's ratio at distance 1, both intervals on one side of 0);
  at ε = 1 its claim is refuted, and the certified ε lies between the claim 1 and the truth 10;
- ``eps_count(array, eps, random_state)``: the same count at scale 1/eps, the claim read from ``eps``.
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

MODULE = '''
import numpy as np


def _count(db):
    return int(np.sum(np.asarray(db)[:, 0] >= 5))


def count(db, rng, epsilon=1.0):
    return int(round(_count(db) + rng.laplace(0.0, 1.0 / epsilon)))


def short_count(db, rng, epsilon=1.0):
    return int(round(_count(db) + rng.laplace(0.0, 0.1 / epsilon)))


def eps_count(array, eps=1.0, random_state=None):
    rng = np.random.default_rng(random_state)
    return int(round(int(np.sum(np.asarray(array) >= 5)) + rng.laplace(0.0, 1.0 / eps)))


def no_claim(db, rng):
    return int(round(_count(db) + rng.laplace(0.0, 1.0)))
'''

GLOBAL = '''
import numpy as np


def takes_rng(db, rng, epsilon=1.0):
    return int(round(float(np.sum(db[:, 0] >= 5)) + np.random.laplace(0.0, 1.0 / epsilon)))


def takes_seed(array, epsilon=1.0, random_state=None):
    return int(round(float(np.sum(np.asarray(array) >= 5)) + np.random.laplace(0.0, 1.0 / epsilon)))


def takes_none(array, epsilon=1.0):
    return int(round(float(np.sum(np.asarray(array) >= 5)) + np.random.laplace(0.0, 1.0 / epsilon)))
'''


@pytest.fixture
def listed(plant):
    """The planted module's (skipped, cases by id) at ε ∈ {0.1, 1}, and the module the cases call."""
    from audit.scan.case_audit import list_cases

    path = plant("rng_counts", MODULE)
    sys.modules.pop("rng_counts", None)
    skipped, cases = list_cases(str(path), (0.1, 1.0))
    yield path, skipped, {c.id: c for c in cases}, importlib.import_module("rng_counts")
    sys.modules.pop("rng_counts", None)


def test_a_function_of_db_and_rng_is_called_with_the_audit_generator_and_eps_is_read(listed):
    _, skipped, cases, module = listed
    assert set(cases) == {f"rng_counts.{name}({parameter}={e}) / ends" for name, parameter in
                          (("count", "epsilon"), ("short_count", "epsilon"), ("eps_count", "eps")) for e in (0.1, 1.0)}
    case = cases["rng_counts.count(epsilon=1.0) / ends"]
    assert case.source == "entry(db, epsilon=1.0, rng=rng)" and case.claim == "dp:1.0"
    assert case.pair.first.tolist() == [[0.0], [0.0], [0.0]] and case.pair.second.tolist() == [[10.0], [0.0], [0.0]]
    # The generator the audit hands the case's function is the one the entry point draws from: the same draws as the
    # function called directly as the audit's --per-database calls it, f(db, rng), with a generator of the same seed.
    function = case.function()
    assert [function(case.pair.second, np.random.default_rng(seed)) for seed in range(20)] == \
        [module.count(case.pair.second, np.random.default_rng(seed)) for seed in range(20)]
    eps = cases["rng_counts.eps_count(eps=0.1) / ends"]
    assert eps.settings == {"eps": 0.1} and eps.claim == "dp:0.1"
    assert eps.source == "entry(db[:, 0], eps=0.1, random_state=int(rng.integers(2**31)))"
    # A function of db and rng with no privacy parameter states no claim: skipped, saying which names are read.
    assert [(s.what, s.reason) for s in skipped] == [("rng_counts.no_claim",
                                                      "unknown signature: no parameter 'epsilon' or 'eps'")]


def test_the_scan_finds_the_short_noise_and_keeps_the_correct_counts_as_controls(listed):
    from audit.scan.running import scan

    path, _, _, _ = listed
    result = scan(str(path), epsilons=(1.0,), max_runs=3000, timeout=30, seed=0, in_process=True)
    status = {o["id"]: o["status"] for o in result.outcomes}
    # count and eps_count are 1-DP at their claim dp:1.0 (module docstring); short_count is 10-DP.
    assert status == {"rng_counts.count(epsilon=1.0) / ends": "control",
                      "rng_counts.eps_count(eps=1.0) / ends": "control",
                      "rng_counts.short_count(epsilon=1.0) / ends": "finding"}
    (finding,) = result.findings
    assert finding["claim"] == "dp:1.0" and 1.0 < finding["epsilon_lower_bound"] <= 10.0
    assert {o["claim"] for o in result.controls} == {"dp:1.0"}


def test_the_global_generator_note_names_what_the_function_takes(plant):
    from audit.scan.case_audit import audit_case, global_generator_note, list_cases

    path = plant("global_draws", GLOBAL)
    sys.modules.pop("global_draws", None)
    try:
        _, cases = list_cases(str(path), (1.0,))
        entries = {c.entry.name: c.entry for c in cases}
        notes = {name: global_generator_note(entry.family, entry.obj) for name, entry in entries.items()}
        assert notes == {
            "takes_rng": "draws from NumPy's global generator, not from the rng it is given (the audit's runner seeds "
                         "and restores it per chunk)",
            "takes_seed": "draws from NumPy's global generator, not from the random_state it is given (the audit's "
                          "runner seeds and restores it per chunk)",
            "takes_none": "draws from NumPy's global generator, and takes no seed or generator to draw from instead "
                          "(no parameter random_state or rng or generator; the audit's runner seeds and restores the "
                          "global one per chunk)"}
        # The note is the one a case's audit writes: its probe sees the global generator's state change, also where
        # the generator is part-way through its key (other draws before), so that a few draws do not renew the key.
        (case,) = [c for c in cases if c.entry.name == "takes_rng"]
        for drawn_before in (0, 10):
            np.random.seed(1)
            np.random.random(drawn_before)
            outcome = audit_case(case, alpha=0.05, max_runs=600, timeout=30, seed=0)
            assert notes["takes_rng"] in outcome["notes"], drawn_before
    finally:
        sys.modules.pop("global_draws", None)


#: Generator parameters with other names (:meth:`audit.scan.profiles.base.Family.generator_arguments`): annotations as
#: text (``from __future__ import annotations``), read in the module's names (``Generator`` imported from numpy).
OTHER_NAMES = '''
from __future__ import annotations

import numpy as np
from numpy.random import Generator


def _count(values):
    return int(np.sum(np.asarray(values) >= 5))


def by_gen(db, gen, epsilon=1.0):
    return int(round(_count(db[:, 0]) + gen.laplace(0.0, 1.0 / epsilon)))


def by_annotation(db, source: np.random.Generator, epsilon=1.0):
    return int(round(_count(db[:, 0]) + source.laplace(0.0, 1.0 / epsilon)))


def by_imported_name(array, noise: Generator | None = None, epsilon=1.0):
    return int(round(_count(array) + noise.laplace(0.0, 1.0 / epsilon)))


def by_default_none(array, random_generator=None, epsilon=1.0):
    return int(round(_count(array) + random_generator.laplace(0.0, 1.0 / epsilon)))


def two_like(db, gen, noise_rng, epsilon=1.0):
    return _count(db[:, 0])


def unnamed(db, source, epsilon=1.0):
    return _count(db[:, 0])


def key_not_generator(db, rng_key, epsilon=1.0):
    return _count(db[:, 0])
'''

#: The same rule on annotations as objects (no ``from __future__``): ``Optional[np.random.Generator]``, and a
#: ``typing.Generator`` annotation, which is not NumPy's.
OBJECT_ANNOTATIONS = '''
import typing

import numpy as np


def optional(db, draws: typing.Optional[np.random.Generator] = None, epsilon=1.0):
    return float(np.sum(db[:, 0]) + draws.laplace(0.0, 10.0 / epsilon))


def coroutine(db, feed: typing.Generator, epsilon=1.0):
    return float(np.sum(db[:, 0]))
'''


@pytest.mark.parametrize("name, source", [("other_names", OTHER_NAMES), ("object_annotations", OBJECT_ANNOTATIONS)])
def test_a_generator_with_another_name_is_given_where_the_signature_says_which(plant, name, source):
    from audit.scan.case_audit import list_cases

    path = plant(name, source)
    sys.modules.pop(name, None)
    try:
        skipped, cases = list_cases(str(path), (1.0,))
        module = importlib.import_module(name)
    finally:
        sys.modules.pop(name, None)
    sources = {c.entry.name: c.source for c in cases}
    reasons = {s.what.rsplit(".", 1)[1]: s.reason for s in skipped}
    rename = ("rename it rng or generator, or annotate it numpy.random.Generator; if it takes an integer seed, rename "
              "it random_state")
    if name == "other_names":
        assert sources == {"by_gen": "entry(db, epsilon=1.0, gen=rng)",
                           "by_annotation": "entry(db, epsilon=1.0, source=rng)",
                           "by_imported_name": "entry(db[:, 0], epsilon=1.0, noise=rng)",
                           "by_default_none": "entry(db[:, 0], epsilon=1.0, random_generator=rng)"}
        required = "unknown signature: required parameter(s) {} the profile gives no value: "
        assert reasons == {
            "two_like": required.format("gen, noise_rng") + "gen and noise_rng are each named like a generator, so "
                        "neither is given the audit's numpy Generator; rename the one that takes it to rng or "
                        "generator, or annotate it numpy.random.Generator",
            "unnamed": required.format("source") + "if source takes a numpy Generator, " + rename,
            "key_not_generator": required.format("rng_key") + "if rng_key takes a numpy Generator, " + rename}
    else:
        assert sources == {"optional": "entry(db, epsilon=1.0, draws=rng)"}
        assert reasons == {"coroutine": "unknown signature: required parameter(s) feed the profile gives no value: "
                                        "if feed takes a numpy Generator, " + rename}
    # Each case's function draws from the generator it is given, as miaudit audit --per-database calls f(db, rng) by
    # position: the same values as the module's function called directly, positionally, on a generator of one seed.
    for case in cases:
        function = case.function()
        entry = getattr(module, case.entry.name)
        data = case.pair.second if case.source.startswith("entry(db,") else case.pair.second[:, 0]
        assert [function(case.pair.second, np.random.default_rng(seed)) for seed in range(10)] == \
            [entry(data, np.random.default_rng(seed)) for seed in range(10)]
