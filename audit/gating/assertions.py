"""Privacy checks in a test suite: ``assert_claim(mechanism, claim, ...)``.

>>> from audit.gating.assertions import assert_claim                        # doctest: +SKIP
>>> assert_claim(my_mechanism, "dp:1", pairs=[(db, neighbour)])    # doctest: +SKIP

:func:`assert_claim` runs a sequential audit (:func:`audit.gating.sequential.run_sequential_audit`) of
``mechanism`` against ``claim`` and raises :class:`ClaimRefuted` (an ``AssertionError``) when the
audit refutes it. A mechanism that meets its claim fails with probability at most ``alpha`` (the
audit's type-I error); a broken one fails as soon as a look shows it, with a message that gives
the event, its counts, the certificate and the command that reproduces the failure. The audit is
deterministic for a ``seed`` (for mechanisms that take the audit's generator; an OpenDP
measurement draws its own noise, as the result's notes say).

Under pytest, the ``assert_claim`` fixture of :mod:`audit.pytest_plugin` splits one session-level
α across the tests that use it, so the whole suite's false-alarm rate is at most that α.
"""

from __future__ import annotations

import dataclasses
import math

from estimators.validation import InputError
from mechanisms.claims.claim import Claim
from mechanisms.claims.parsing import parse_claim
from mechanisms.inputs.relation import REPLACE_ONE, check_relation

#: The default run budget of one check: the default fixed audit's (20,000 samples, about 60,000 runs).
MAX_RUNS = 60000
#: The default type-I error of one check outside the pytest plugin.
ALPHA = 0.01


class ClaimRefuted(AssertionError):
    """Raised by :func:`assert_claim` when its audit refutes the claim (``audit.ClaimRefuted``).

    An ``AssertionError``, so a test that raises it fails. Its message is the verdict line (the
    claim, the certified bound, the look and the runs) followed by the event, its counts on the two
    databases, the certificate and the command that reproduces the failure.

    Attributes
    ----------
    audit : SequentialAudit
        The audit that refuted the claim (:class:`~audit.gating.sequential.SequentialAudit`).
    """

    def __init__(self, message: str, audit):
        super().__init__(message)
        self.audit = audit


# Its public name: a failing test reads ``audit.ClaimRefuted: ...``, the name a suite catches it by.
ClaimRefuted.__module__ = "audit"


def _claim(claim) -> Claim:
    if isinstance(claim, Claim):
        return claim
    from mechanisms.claims.guarantee import Guarantee

    if isinstance(claim, Guarantee):
        return claim.as_claim(origin="stated guarantee")
    if isinstance(claim, str):
        return parse_claim(claim, argument="claim")
    raise InputError(f"argument 'claim' must be a claim such as 'dp:1' or a Claim, got {type(claim).__name__}")


def _pairs(pairs, relation: str | None = None, allow_nan: bool = False) -> tuple:
    from mechanisms.inputs.neighbouring_pair import NeighbouringPair, checked_pair, refuse_equal_pair

    out = []
    for number, pair in enumerate(pairs or ()):
        if isinstance(pair, NeighbouringPair):
            out.append(refuse_equal_pair(pair, f"pairs[{number}]"))
            continue
        try:
            first, second = pair
        except (TypeError, ValueError):
            raise InputError(f"argument 'pairs' entry {number} must be (first, second) databases or a "
                             "NeighbouringPair") from None
        # The CLI's check of --pair: equal or non-neighbouring databases are refused, never audited.
        out.append(checked_pair(first, second, f"pairs[{number}]", given="given to assert_claim", relation=relation,
                                allow_nan=allow_nan))
    return tuple(out)


def claim_spec(mechanism, claim, *, pairs=None, prior=None, relation: str = REPLACE_ONE, alpha: float = ALPHA,
               seed: int = 0, name: str | None = None, query=None, params=None, per_database: bool = False,
               allow_nan: bool = False):
    """The :class:`~audit.spec.AuditSpec` :func:`assert_claim` audits (its arguments).

    ``relation`` is the relation ``claim`` is stated for (a string claim is read at it; a library's
    own claim is read at it). The audited pairs' relation is the pairs' own (same row counts:
    replace; n and n − j rows: add/remove, at the distance of ``relation`` for (first, second) pairs), or
    ``relation`` for a ``prior``; where it differs
    from the claim's, the audit converts the claim where a theorem allows and refuses otherwise
    (:func:`mechanisms.claims.conversion.convert_claim`).
    """
    from mechanisms.adapters.recognition import per_database_mechanism, recognize_mechanism

    from audit.search.prior_search import differing_record
    from audit.spec import AuditSpec

    relation = check_relation(relation, "relation")
    pairs = _pairs(pairs, relation, allow_nan)
    if prior is None and not pairs:
        raise InputError("assert_claim needs the databases to compare: argument 'pairs' (neighbouring "
                         "(first, second) databases) or 'prior'")
    kinds = {pair.relation for pair in pairs}
    if len(kinds) > 1:
        raise InputError("argument 'pairs' mixes replace pairs (same row counts) and add/remove pairs (n and n − j "
                         "rows), or pairs of several distances: give pairs of one relation")
    audited = kinds.pop() if kinds else relation
    label = name or getattr(mechanism, "__name__", None) or type(mechanism).__name__
    if not isinstance(per_database, bool):
        raise InputError(f"argument 'per_database' must be True or False, got {per_database!r}")
    if per_database:
        if query is not None or params is not None:
            raise InputError("arguments 'query' and 'params' apply to library mechanisms, not to a per-database "
                             "function (per_database=True)")
        recognized = per_database_mechanism(mechanism, label, what="argument 'mechanism'", option="per_database=True")
    else:
        recognized = recognize_mechanism(mechanism, label, query=query, params=params, what="argument 'mechanism'")
    if claim is None:
        stated, why = recognized.claim_at(relation)
        if stated is None:
            raise InputError(f"argument 'claim' is required: {label} states no claim of its own at the {relation} "
                             "relation" + (f" ({why})" if why else ""))
        claim = parse_claim(stated.text, argument="the library's claim", origin=why)
        claim = dataclasses.replace(claim, relation=stated.relation)
    elif isinstance(claim, str):
        claim = dataclasses.replace(_claim(claim), relation=relation)
    claim = _claim(claim)
    if prior is not None:
        priors, rest, records = [prior], pairs, None
    else:  # under DP, Θ may be the pairs' two-point priors alone; only the records that switch can leak
        priors, rest = [pair.prior() for pair in pairs], ()
        records = tuple(sorted({differing_record(pair) for pair in pairs} - {None})) or None
    return AuditSpec(mechanism=recognized.mechanism, priors=priors, pairs=rest, claim=claim, alpha=alpha, seed=seed,
                     name=label, notes=tuple(recognized.notes), relation=audited, records=records, allow_nan=allow_nan)


def assert_claim(mechanism, claim, *, pairs=None, prior=None, relation: str = REPLACE_ONE,
                 max_runs: int = MAX_RUNS, alpha: float = ALPHA, seed: int = 0, time_limit: float | None = None,
                 name: str | None = None, query=None, params=None, per_database: bool = False,
                 allow_nan: bool = False, _reproduce: str | None = None):
    """Assert that ``mechanism`` meets ``claim``: raise :class:`ClaimRefuted` when an audit refutes it.

    Parameters
    ----------
    mechanism : callable or library mechanism
        A batched mechanism ``mech(dbs, rng) -> (m, d)``, an OpenDP ``Measurement`` or a diffprivlib
        mechanism (object, or class with ``params``), as ``miaudit audit`` takes them; with
        ``per_database=True``, a function of one database ``f(db, rng) -> output``.
    claim : str, Claim, Guarantee or None
        ``"dp:1"``, ``"dp:1:1e-5"``, ``"zcdp:0.5"``, ... (:mod:`mechanisms.claims.claim`); ``None``: the
        claim an OpenDP or diffprivlib mechanism states (its privacy map at ``relation``).
    pairs : sequence of (first, second), optional
        Neighbouring databases the audit compares, each joining Θ as a two-point prior: arrays of
        one shape (n, k) that differ in exactly one record (replace-one), or of n and n − 1 rows,
        the second the first without one row or the reverse (add/remove); under a user-level
        ``relation`` (``replace:K``, ``add-remove:K``), in up to K records or rows. Equal databases, or
        databases that differ in more records than that, are refused (as ``--pair`` refuses them).
        A :class:`~mechanisms.inputs.neighbouring_pair.NeighbouringPair` carries its own relation:
        a per-record claim audited on pairs built with ``relation="add-remove:K"`` is converted
        by group privacy.
    prior : Prior, optional
        A prior over databases instead of (or besides) ``pairs``.
    relation : str
        The neighbouring relation ``claim`` is stated for (:mod:`mechanisms.inputs.relation`):
        ``"replace-one"``, ``"add-remove"``, or a user-level ``"replace:K"`` / ``"add-remove:K"``
        (the claim holds for databases that differ in up to K records, as stated). A claim at
        another relation than the pairs' is converted where a theorem allows (group privacy: a
        replace-one pair is two add/remove steps; K records are K steps), else refused.
    max_runs : int
        Mechanism runs at most (a sequential audit: it stops at the first refutation).
    alpha : float
        Type-I error: the probability that a mechanism meeting ``claim`` fails the check.
    seed : int
        The audit's seed: the same seed gives the same audit.
    time_limit : float, optional
        Seconds (:func:`audit.gating.sequential.run_sequential_audit`).
    name : str, optional
        Display name (default: the mechanism's).
    query, params
        Library mechanisms only (:func:`mechanisms.adapters.recognition.recognize_mechanism`).
    per_database : bool
        ``mechanism`` is a function of one database whose outputs, of any structure, are encoded
        (:mod:`mechanisms.outputs.encoding`), as ``miaudit audit --per-database``.
    allow_nan : bool
        Let ``pairs`` (and the prior's draws) hold NaN, a missing value that reaches the mechanism
        unchanged, as ``miaudit audit --allow-nan``; without it a NaN is refused naming the pair (an
        infinity is refused either way).

    Returns
    -------
    SequentialAudit
        The audit, when the claim was not refuted.

    Raises
    ------
    ClaimRefuted
        The audit refuted the claim (type-I error ≤ ``alpha``).
    InputError
        Bad arguments.
    """
    __tracebackhide__ = True  # pytest shows the test's line and the verdict, not this function
    from audit.gating.sequential import run_sequential_audit

    try:
        spec = claim_spec(mechanism, claim, pairs=pairs, prior=prior, relation=relation, alpha=alpha, seed=seed,
                          name=name, query=query, params=params, per_database=per_database, allow_nan=allow_nan)
        audit = run_sequential_audit(spec, max_runs, time_limit=time_limit)
    except InputError as error:
        # One line naming the argument, or the user function that failed (a MechanismError): raised
        # afresh here, without miaudit's frames that found it (its message names what failed and where).
        raise error.with_traceback(None) from None
    if audit.refuted:
        reproduce = _reproduce or (f"assert_claim({spec.mechanism_label}, {spec.claim.text!r}, pairs=..., "
                                   f"{'per_database=True, ' if per_database else ''}max_runs={max_runs}, "
                                   f"alpha={alpha!r}, seed={seed})")
        raise ClaimRefuted(failure_message(audit, reproduce), audit)
    return audit


def failure_message(audit, reproduce: str) -> str:
    """What failed, verdict first: the claim and the certified bound, the event and its counts, how to reproduce it."""
    result = audit.result
    event = result.refuting_event_test  # a float bug's evidence is the float-bit event test's
    tests = [refutation["test"] for refutation in result.refuted_by]
    test = "float" if event is not None and event is result.float_event_test else "event"
    certified = (f", ε ≥ {event.epsilon_lower_bound:.4g} certified" if event is not None and test in tests
                 and event.epsilon_lower_bound is not None else "")
    lines = [f"{result.mechanism} does not meet {result.claim['label']}: REFUTED at α = {audit.alpha:g}{certified} "
             f"(look {len(audit.looks)} of a sequential audit, {audit.runs} mechanism runs)"]
    if event is not None:
        runs = event.runs_made or [event.runs_per_input, event.runs_per_input]
        hits = [int(round(p * n)) for p, n in zip((event.p_first, event.p_second), runs)]
        lines.append(f"  event: {event.description}")
        # In the event's roles (its first input, the one E is more likely on, first), each database named a or b as
        # the event's line names them: "the first database" would read as a where the first input is b.
        first = (event.event or {}).get("first_input")
        names = (first, "b" if first == "a" else "a") if first in ("a", "b") else ("its first input", "its second")
        lines.append(f"  counts: E held in {hits[0]} of {runs[0]} runs on {names[0]}, {hits[1]} of {runs[1]} on "
                     f"{names[1]}")
        lines.append(f"  certificate: {event.certificate}, ε ≥ {event.epsilon_lower_bound:.4g} at level "
                     f"{event.alpha:.3g} (its share of α = {audit.alpha:g} at this look)")
    # Each refuting test by its name, said once (the detail starts with it), its symbols said in words where first used.
    from audit.report.plain_words import claim_test_form, explain_symbols
    from audit.result import TEST_NAMES

    refuted = []
    for refutation in result.refuted_by:
        name = TEST_NAMES.get(refutation["test"], f"{refutation['test']} test")
        form, detail = claim_test_form(name, refutation["detail"])
        refuted.append(f"  refuted by the {name}" + (f" ({form})" if form else "") + f": {detail}")
    lines += explain_symbols(refuted)
    lines.append(f"  reproduce: {reproduce}")
    return "\n".join(lines)


def bonferroni_share(alpha: float, tests: int) -> float:
    """α / K: each of ``tests`` checks at this level keeps the chance of any false alarm ≤ α (union bound)."""
    if tests < 1 or not 0 < alpha < 1 or not math.isfinite(alpha):
        raise InputError(f"argument 'alpha' must be in (0, 1) and 'tests' >= 1, got {alpha}, {tests}")
    return alpha / tests


__all__ = ["ClaimRefuted", "assert_claim", "bonferroni_share", "claim_spec", "failure_message"]
