"""What an audit is asked to do: the mechanism, Θ, the secrets, the notion, ε, α and the budget."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field, fields
from typing import Callable, Mapping

import numpy as np

from estimators.choices import MI_CRITICS, OTHERS
from estimators.critic_config import NEURAL_ESTIMATORS, CriticConfig
from estimators.validation import InputError, check_choice, check_int, check_nonnegative, check_positive, check_probability
from mechanisms.adapters.callables import check_two_arguments
from mechanisms.base import mechanism_name
from mechanisms.claims.guarantee import Guarantee
from mechanisms.inputs.missing_values import ALLOW_NAN_HINT, rows_differ
from mechanisms.inputs.neighbouring_pair import NeighbouringPair
from mechanisms.execution.memory import audit_flag
from mechanisms.execution.runner import PROBE_TIMEOUT, ExecutionSettings
from mechanisms.inputs.bounded_draws import draw_bounded
from mechanisms.claims.claim import AUDIT_NOTIONS as NOTIONS, RECORD_AUDIT_NOTIONS, Claim
from mechanisms.inputs.priors import Prior
from mechanisms.inputs.relation import (ADD_REMOVE, REPLACE_ONE, PresentRecords, check_relation, relation_at,
                                        relation_distance, relation_kind, relation_words)
from mechanisms.claims.conversion import convert_claim

from estimators.validation import plain_toml
from audit.certificates.claim_tests import (ARITHMETICS, record_support, smallest_certifying_runs,
                                           uses_ratio_certificates)
from audit.frameworks import PufferfishFramework, differential_privacy
from audit.search.input_domain import DeclaredDomain
from audit.search.prior_search import check_search_count


# The event test's certification runs per neighbouring input, per database of the MI sample
# (``samples``): by default the event test runs each of its two inputs as often as the MI test
# draws databases from each prior, plus as many again for choosing the event.
EVENT_RUNS_PER_SAMPLE = 1.0


def audit_argument(key: str) -> str:
    """The :class:`AuditSpec` field ``key`` as the audit's messages name it: the Python argument, its flag and its
    configuration key: ``argument 'KEY' (--KEY, [audit] KEY)``, the flag as the mechanism layer writes it
    (:func:`mechanisms.execution.memory.audit_flag`: underscores as hyphens)."""
    return f"argument '{key}' ({audit_flag(key)}, [audit] {key})"


@dataclass(frozen=True, eq=False)
class AuditSpec:
    """The inputs of :func:`audit.engine.run_audit`.

    Parameters
    ----------
    mechanism : callable
        The black box ``mechanism(dbs, rng) -> (m, d)``.
    priors : sequence of Prior
        Θ for this audit: the declared priors (for DP semantics, any priors of interest).
    notion : {"mi-dp", "smi-dp", "mi-pp"}, optional
        ε-MI DP (I(X_i; M(X) | X_−i) ≤ ε for every record i), ε-SMI DP (the sliced version,
        Pufferfish paper Eq. (6)), or ε-MI PP (I(g(X); M(X) | w(X)) ≤ ε for every secret pair of
        ``framework``, Definition 5). Default with a claim: the claim's
        (:attr:`~mechanisms.claims.claim.Claim.default_audit_notion`: mi-dp for the DP family).
    epsilon : float > 0, optional
        The audited MI level ε, in nats. Default with a claim: the MI budget the claim implies
        (:meth:`~mechanisms.claims.claim.Claim.implied_mi_budget`); ``None`` when it implies none (the
        MI-notion verdict is then not given).
    framework : PufferfishFramework, optional
        The secrets for ``mi-pp`` (required there). DP notions build the DP framework (each
        record against the others) from the priors' shape.
    alpha : float in (0, 1)
        The type-I error of a ``violation`` verdict is at most α.
    samples : int
        Databases drawn per prior (each run once through the mechanism).
    slices : int, optional
        Random slices per secret (0: none; ``smi-dp`` needs at least 1). Default: 32 for
        ``smi-dp`` (it averages over slices), none for the other notions
        (:func:`audit.audit_plan.resolve_slices`; slices of an ``mi-dp`` / ``mi-pp`` audit are extra
        candidates, by data processing).
    records : sequence of int, optional
        DP notions: audit only these records (default: all).
    estimator : {"dv", "mine", "nwj"}
        Training objective of the neural critics.
    mi_critic : {"auto", "neural", "classifier"}
        The MI test's critics (:func:`audit.audit_plan.resolve_mi_critic`): ``"auto"`` gives a
        DP-family claim under two-point priors on neighbouring databases classifier critics
        (:mod:`audit.statistics.classifier_critic`, no neural network) and every other audit neural ones.
    others : {"records", "sums"}
        DP notions: what a record's neural critic reads of the other records: all of them (default: the
        MI-DP definition's condition), or their column sums (k numbers; priors with independent rows only),
        whose certified bound is a lower bound of the audited MI, equal to it for mechanisms that read the
        other records through their sums (:func:`audit.statistics.secret_critics.secret_values`).
    candidates : int
        How many candidates, chosen on the select split, are certified (union bound α/K).
    delta : float, optional
        δ for the event-based DP bound (also reported at δ = 0); default the claim's δ, else 0.
    event_runs : int, optional
        Mechanism runs per neighbouring input for certifying the event test (0: skip it), at most:
        a rate-ratio certificate makes a Poisson number of runs within them
        (:mod:`audit.certificates.rate_ratio`); default ``EVENT_RUNS_PER_SAMPLE × samples`` (the event test's
        budget follows ``samples``).
    claim : Claim or Guarantee, optional
        The guarantee the mechanism claims (:mod:`mechanisms.claims.claim`; a catalog
        :class:`Guarantee` is turned into its claim).
    prior_search : int
        DP notions only (Θ = all distributions): add this many two-point priors on random
        neighbouring pairs built from the first declared prior (:mod:`audit.search.prior_search`).
    pairs : sequence of NeighbouringPair
        DP notions only: neighbouring pairs whose two-point priors join Θ (user-supplied, or a
        catalog entry's exposing pairs).
    execution : ExecutionSettings
        Where the mechanism runs (in process, worker processes, Ray), its timeout, chunk size
        and retries.
    mechanism_source : str or mapping, optional
        The specification that loaded the mechanism (``FILE.py:NAME``, ``package.module:NAME``,
        ``catalog:NAME``), or the ``[mechanism]`` table that did (a library mechanism, a program):
        how worker processes load it (:class:`mechanisms.execution.worker.MechanismReference`).
    notes : tuple of str
        Notes the result carries from the start (where a library's claim came from, whether the
        mechanism follows the seed).
    relation : str
        The neighbouring relation of the audited pairs (:mod:`mechanisms.inputs.relation`):
        ``"replace-one"``, ``"add-remove"``, or a user-level ``"replace:K"`` / ``"add-remove:K"``
        (pairs that differ in up to K records). A claim stated for another relation is converted where
        a theorem allows (group privacy, :func:`mechanisms.claims.conversion.convert_claim`, said in the
        notes), else refused. Under any relation but replace-one the audit needs a DP-family claim (the
        MI notions are replace-one only).
    presence_column : bool, optional
        add-remove only: whether the databases carry a presence column that the runner strips
        (default True: the declared priors are wrapped by
        :class:`~mechanisms.inputs.relation.PresentRecords`, add/remove pairs come from
        :class:`~mechanisms.inputs.neighbouring_pair.NeighbouringPair`). False: the priors' pairs encode
        absence themselves (e.g. a null record the mechanism ignores), and are used as given.
    arithmetic : {"float", "ideal"}
        What is audited (:mod:`audit.statistics.arithmetic`): ``"float"`` (default) the program's float64
        outputs, by the event test on statistics that read no bits and by the float-bit event test, each at
        its share of α; ``"ideal"`` the mechanism's real-arithmetic behaviour alone: every output rounded
        to 32 significant bits before any statistic, and no float-bit statistic.
    domain : DeclaredDomain, optional
        The records' declared range (:class:`audit.search.input_domain.DeclaredDomain`: ``--domain``, a
        library object's bounds, a function's ``bounds=`` arguments): the result says whether the audited
        records reached it (:attr:`audit.result.AuditResult.domain_reach`), and a not-refuted verdict whose
        records did not says so in a note. The pairs built from it are in ``pairs`` (the configuration
        adds them: :mod:`audit.search.family_pilot`). Default None: no domain declared.
    pilot_for_runs : int, optional
        Set by a budget plan's pilot (:func:`audit.gating.budget_forecast.plan_budget`), not by an audit: the
        event test chooses its event for this many certification runs per input instead of
        ``event_runs`` (the runs it still makes) and keeps the chosen statistic's scores for the
        plan's forecast (:func:`audit.search.event_search.event_search`'s ``predict_runs`` and
        ``keep_scores``). It changes only which event is chosen, so α is unchanged. Default
        None: the event is chosen for the runs made.
    statistic : callable or UserStatistic, optional
        A user's statistic ``statistic(output) -> number or vector`` (``--statistic FILE.py:fn``): one more
        event-test candidate, fitted and chosen on the MI sample and certified like the others
        (:mod:`audit.statistics.user_statistic`). A per-database mechanism's encoder appends its values to
        each encoded row, so the function gets the output before encoding; with worker processes or Ray the
        statistic travels with the mechanism (as its specification where it was loaded from one,
        :meth:`UserStatistic.load`, else pickled) and runs there, inside the function's calls.
    allow_nan : bool
        Whether the audited databases may hold NaN, missing values (``--allow-nan``, ``[audit] allow_nan``;
        :mod:`mechanisms.inputs.missing_values`): pairs and prior draws with NaN reach the mechanism unchanged,
        a NaN the mechanism releases becomes a value (0) and a bit of a missing mark, one mark column for every 4
        output columns (:func:`mechanisms.base.with_missing_marks`), and a declared domain's families gain pairs of a missing
        value next to present ones (:func:`audit.search.pair_families.domain_pair_families`). Default False: a
        pair holding NaN is refused.
    companion : AuditSpec, optional
        Set by the configuration where neither the claim nor the mechanism states a neighbouring relation
        (:mod:`audit.both_relations`): the audit of the same claim under the other relation. Both this spec and
        the companion carry level α/2 (Bonferroni over the two audits: the claim is refuted when either
        refutes it, with type-I error at most α/2 + α/2); :func:`audit.engine.run_audit` runs both and merges
        their results, naming the relation that refuted. Default None: one relation.
    """

    mechanism: Callable
    priors: tuple
    notion: str | None = None
    epsilon: float | None = None
    framework: PufferfishFramework | None = None
    alpha: float = 0.05
    samples: int = 20000
    slices: int | None = None
    records: tuple | None = None
    estimator: str = "dv"
    mi_critic: str = "auto"
    others: str = "records"
    critic: CriticConfig = field(default_factory=CriticConfig)
    candidates: int = 1
    delta: float | None = None
    event_runs: int | None = None
    claim: Claim | None = None
    prior_search: int = 0
    pairs: tuple = ()
    notes: tuple = ()
    seed: int = 0
    device: str = "auto"
    name: str | None = None
    quiet: bool = True
    execution: ExecutionSettings = field(default_factory=ExecutionSettings)
    mechanism_source: str | Mapping | None = None
    relation: str = REPLACE_ONE
    presence_column: bool | None = None
    domain: DeclaredDomain | None = None
    pilot_for_runs: int | None = None
    arithmetic: str = "float"
    statistic: Callable | None = None
    allow_nan: bool = False
    companion: "AuditSpec | None" = None

    def __post_init__(self):
        if not callable(self.mechanism):
            raise InputError("argument 'mechanism' must be callable: mechanism(dbs, rng) -> (m, d)")
        # Before any run, as the command line checks a loaded mechanism (mechanisms.adapters.recognition): a function
        # that cannot take (dbs, rng) would otherwise fail on its first call with Python's TypeError.
        check_two_arguments(self.mechanism, "argument 'mechanism'", "mech(dbs, rng) -> (m, d)")
        if self.statistic is not None:
            self._attach_statistic()
        priors = tuple(self.priors) if isinstance(self.priors, (list, tuple)) else (self.priors,)
        if not priors or not all(isinstance(p, Prior) for p in priors):
            # A neighbouring pair is the audit's input through its two-point prior: say the call that makes it.
            pair = "" if not any(isinstance(p, NeighbouringPair) for p in priors) else (
                ", and a NeighbouringPair is none: give its two-point prior, priors=[pair.prior()]")
            raise InputError(f"argument 'priors' must be a non-empty sequence of Prior objects{pair}")
        relation = check_relation(self.relation, "relation")
        presence = relation_kind(relation) == ADD_REMOVE and self.presence_column is not False
        if presence:
            if any(p.shape[0] < 2 and not getattr(p, "presence_column", False) for p in priors):
                # Each audited record is taken out of a drawn database: one record leaves none to run on.
                raise InputError(f"argument 'priors' (--n): under {relation} each audited record is taken out of a "
                                 "database the prior draws, and its databases hold 1 record, which would leave none; "
                                 "draw 2 or more records (--n 2), or audit replace-one (--relation replace-one)")
            priors = tuple(p if getattr(p, "presence_column", False) else PresentRecords(p) for p in priors)
        elif any(getattr(p, "presence_column", False) for p in priors):
            # The runner strips the presence column only under add/remove: the mechanism would see it.
            raise InputError("argument 'priors' holds the prior of an add/remove pair (row counts that differ by one); "
                             "audit it with relation='add-remove'")
        shapes = {p.shape for p in priors}
        if len(shapes) != 1:
            raise InputError(f"argument 'priors' must share one database shape, got {sorted(shapes)}")
        claim = self.claim
        if isinstance(claim, Guarantee):
            claim = claim.as_claim(origin=f"stated guarantee: {claim.note}" if claim.note else "stated guarantee")
        elif isinstance(claim, str):  # the command line's form: parse_claim reads it (and names a wrong one)
            raise InputError(f"argument 'claim' must be a Claim or a Guarantee, got the text {claim!r}: here "
                             f"claim=parse_claim({claim!r}) (from mechanisms import parse_claim)")
        elif claim is not None and not isinstance(claim, Claim):
            raise InputError("argument 'claim' must be a Claim (mechanisms.claims.claim) or a Guarantee")
        notes = tuple(self.notes)
        if relation != REPLACE_ONE and (claim is None or not claim.has_profile):
            raise InputError(f"argument 'relation': an audit under {relation} tests a DP-family claim (dp, zcdp, rdp, "
                             f"gdp; --claim with --relation {relation}); the MI notions are defined for replace-one "
                             "neighbours only")
        if claim is not None and claim.relation != relation:
            stated = claim
            claim = convert_claim(claim, relation)  # raises, with the reason, where no theorem converts it
            notes += (f"the claim {stated.label} is stated for neighbours that {relation_words(stated.relation)}; the "
                      f"audited pairs {relation_words(relation)}, so it is audited as {claim.label}: {claim.origin}",)
        notion = self.notion
        if notion is None:
            if claim is None:
                raise InputError("argument 'notion' is required without a claim")
            notion = claim.default_audit_notion
        check_choice(notion, "notion", NOTIONS)
        object.__setattr__(self, "notion", notion)
        epsilon = self.epsilon
        if epsilon is None:
            if claim is None:
                raise InputError("argument 'epsilon' is required without a claim")
            epsilon = claim.implied_mi_budget(notion, record_support(priors)).value
        else:
            check_positive(epsilon, "epsilon")
        check_probability(self.alpha, "alpha")
        check_int(self.samples, "samples", 1)
        if self.slices is not None:
            check_int(self.slices, "slices", 0)
        check_int(self.candidates, "candidates", 1)
        if self.pilot_for_runs is not None:
            check_int(self.pilot_for_runs, "pilot_for_runs", 1)
        event_runs = self.event_runs
        if event_runs is None:
            event_runs = int(math.ceil(EVENT_RUNS_PER_SAMPLE * self.samples))
        check_int(event_runs, "event_runs", 0)
        delta = self.delta
        if delta is None:
            delta = claim.delta if claim is not None else 0.0
        delta = check_nonnegative(delta, "delta")
        if delta >= 1:
            raise InputError(f"argument 'delta' must be < 1, got {plain_toml(self.delta)}")
        # The odds and rate ratios certify from fewer runs than the Clopper–Pearson pair, where the event test uses them.
        fewest = smallest_certifying_runs(self.alpha, ratio_certificates=uses_ratio_certificates(claim, delta))
        if notion in RECORD_AUDIT_NOTIONS and 0 < event_runs < fewest:
            # Said before any run: such an event test would spend its runs and certify nothing.
            raise InputError(f"{audit_argument('event_runs')} is {event_runs}: with so few "
                             f"runs per input the event test cannot certify any ε > 0 at α = {self.alpha:g}, even "
                             f"for perfectly separated inputs; use at least {fewest} "
                             "(the default is --samples), or 0 to skip the event test")
        check_search_count(self.prior_search)
        check_int(self.seed, "seed", 0)
        if self.domain is not None and not isinstance(self.domain, DeclaredDomain):
            raise InputError(f"argument 'domain' must be a DeclaredDomain (audit.search.input_domain.parse_domain('0,10') "
                             f"builds one) or None, got {type(self.domain).__name__}")
        if not isinstance(self.pairs, (list, tuple)):
            raise InputError(f"argument 'pairs' must be a list or tuple of NeighbouringPair objects (empty for none), "
                             f"got {type(self.pairs).__name__}")
        pairs = tuple(self.pairs)
        if (self.prior_search or pairs) and self.notion == "mi-pp":
            raise InputError("arguments 'prior_search' and 'pairs' apply to the DP notions only "
                             "(DP semantics: Θ is all distributions)")
        for pair in pairs:
            if not isinstance(pair, NeighbouringPair) or pair.record_shape != priors[0].shape:
                raise InputError(f"argument 'pairs' must hold NeighbouringPair objects of shape {priors[0].shape}")
            if relation_kind(pair.relation) == ADD_REMOVE and not presence:
                raise InputError("argument 'pairs' holds an add/remove pair (row counts that differ by one); audit it "
                                 "with relation='add-remove'")
            differing = int(np.count_nonzero(rows_differ(pair.first, pair.second)))  # NaN equals NaN
            if differing > relation_distance(relation):
                # The claim is read (converted) at the audit's relation: it says nothing about a pair farther apart.
                raise InputError(f"argument 'pairs' holds a pair that differs in {differing} records; neighbours under "
                                 f"relation {relation!r} differ in at most {relation_distance(relation)} (audit it with "
                                 f"relation='{relation_at(relation_kind(relation), differing)}')")
        check_choice(self.estimator, "estimator", NEURAL_ESTIMATORS)
        check_choice(self.arithmetic, "arithmetic", ARITHMETICS)
        check_choice(self.mi_critic, "mi_critic", MI_CRITICS)
        check_choice(self.others, "others", OTHERS)
        if self.others == "sums":
            if self.notion not in RECORD_AUDIT_NOTIONS:
                raise InputError(f"argument 'others' (--others) is 'sums', which applies to the record notions "
                                 f"(mi-dp, smi-dp), not {self.notion}")
            dependent = [p.describe() for p in priors if not p.independent_rows]
            if dependent:
                raise InputError("argument 'others' (--others) is 'sums', which needs priors with independent rows "
                                 f"(the sums' MI bounds the audited one only then), but {dependent[0]} may have "
                                 "dependent rows")
        if self.notion == "smi-dp" and self.slices is not None and self.slices < 1:
            raise InputError("argument 'slices' must be >= 1 for notion 'smi-dp'")
        if not isinstance(self.execution, ExecutionSettings):
            raise InputError("argument 'execution' must be an ExecutionSettings")
        if not isinstance(self.allow_nan, bool):
            raise InputError(f"argument 'allow_nan' must be True or False, got {self.allow_nan!r}")
        if not self.allow_nan and any(np.isnan(p.first).any() or np.isnan(p.second).any() for p in pairs):
            raise InputError(f"argument 'pairs' holds NaN; {ALLOW_NAN_HINT}")
        if self.allow_nan and not self.execution.allow_nan:  # the runner keeps the NaN (mechanisms.base)
            object.__setattr__(self, "execution", dataclasses.replace(self.execution, allow_nan=True))
        n, _ = priors[0].shape
        framework = self.framework
        if self.notion == "mi-pp":
            if not isinstance(framework, PufferfishFramework):
                raise InputError("notion 'mi-pp' needs the secret: argument 'framework' (a PufferfishFramework "
                                 "with the secret g and public w; on the command line --secret and --public)")
            if framework.shape is not None and framework.shape != priors[0].shape:
                raise InputError(f"argument 'framework' is for databases of shape {framework.shape}, "
                                 f"the priors have {priors[0].shape}")
            # Call g and w once on two databases now, so that a secret function that raises,
            # hangs or returns the wrong shape is named before the mechanism runs (which may take
            # long). Every call is bounded by --timeout, the first one as the mechanism's is, the later ones
            # without --timeout by a multiple of the first one's time (SecretFunction.first_seconds), as the
            # prior's draws are (draw_bounded).
            probe = draw_bounded(priors[0], 2, np.random.default_rng(0), timeout=self.execution.timeout,
                                 where=" drawing 2 databases to try the secret functions on")
            framework = framework.probed(probe, self.execution.timeout or PROBE_TIMEOUT)
            framework = framework.with_timeout(self.execution.timeout)
        else:
            framework = differential_privacy(*priors[0].shape)
        records = self.records
        if records is not None and (isinstance(records, (str, bytes)) or not hasattr(records, "__iter__")):
            raise InputError(f"argument 'records' must be a sequence of record indices such as (0,), or None for "
                             f"every record, got {plain_toml(records)}")
        if records is not None:
            if self.notion == "mi-pp":
                raise InputError("argument 'records' applies to the DP notions only")
            records = tuple(check_int(r, "records", 0) for r in records)
            if not records or max(records) >= n:
                raise InputError(f"argument 'records' must be record indices in [0, {n}), got {plain_toml(list(self.records))}")
        object.__setattr__(self, "priors", priors)
        object.__setattr__(self, "notes", notes)
        object.__setattr__(self, "relation", relation)
        object.__setattr__(self, "presence_column", presence)
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "framework", framework)
        object.__setattr__(self, "records", records)
        object.__setattr__(self, "claim", claim)
        object.__setattr__(self, "epsilon", None if epsilon is None else float(epsilon))
        object.__setattr__(self, "delta", float(delta))
        object.__setattr__(self, "event_runs", int(event_runs))
        critic = self.critic
        if isinstance(critic, dict):  # CriticConfig's fields by name, as in the [critic] table
            unknown = sorted(set(critic) - {f.name for f in fields(CriticConfig)})
            if unknown:
                raise InputError(f"argument 'critic' has unknown key(s) {', '.join(map(str, unknown))} "
                                 "(the fields of estimators.critic_config.CriticConfig)")
            critic = CriticConfig(**critic)
        if not isinstance(critic, CriticConfig):
            raise InputError(f"argument 'critic' must be a CriticConfig (or a dict of its fields), got "
                             f"{type(critic).__name__}")
        object.__setattr__(self, "critic", critic.validated())
        companion = self.companion
        if companion is not None and (not isinstance(companion, AuditSpec) or companion.relation == relation
                                      or companion.companion is not None or companion.mechanism is not self.mechanism):
            raise InputError("argument 'companion' must be the AuditSpec of the same mechanism under the other "
                             "relation (itself without a companion), or None")

    def _attach_statistic(self) -> None:
        """Wrap a plain function as a :class:`~audit.statistics.user_statistic.UserStatistic` and give it to the
        mechanism's output encoder, if it has one (which then appends the statistic's values to each row, in
        whichever process runs the mechanism's calls: :class:`mechanisms.execution.worker.MechanismReference`)."""
        from mechanisms.outputs.encoding import encoder_of

        from audit.statistics.user_statistic import UserStatistic

        statistic = self.statistic
        if not isinstance(statistic, UserStatistic):
            statistic = UserStatistic(statistic, getattr(statistic, "__name__", "statistic"))
            object.__setattr__(self, "statistic", statistic)
        encoder = encoder_of(self.mechanism)
        if encoder is not None:  # inside the mechanism's calls: bounded by their timeout
            encoder.statistic = statistic
        else:  # on the outputs after the runs: each call bounded by --timeout, else the first call by the
            # first-call bound and each later one by later_call_bound of the first's seconds (UserStatistic._bound)
            from mechanisms.calls.user_call import FIRST_CALL_TIMEOUT

            statistic.timeout = self.execution.timeout or FIRST_CALL_TIMEOUT
            statistic.later_bounded = self.execution.timeout is None

    @property
    def mechanism_label(self) -> str:
        return self.name or mechanism_name(self.mechanism)

    def secret_pairs(self) -> list:
        """(record index or None, SecretPair) for every secret to audit."""
        pairs = list(self.framework.secret_pairs)
        if self.notion == "mi-pp":
            return [(None, pair) for pair in pairs]
        chosen = self.records if self.records is not None else range(len(pairs))
        return [(i, pairs[i]) for i in chosen]
