"""The result of an audit: the verdict, the certified evidence, and what was not shown.

The JSON form (:meth:`AuditResult.to_dict`) carries every field of the command-line contract
in DESIGN.md, always present (``None`` where not applicable), plus the evidence the reports
plot: per-secret and per-slice values, training curves and the DP event test.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from audit.mi_statement import mi_statement
from estimators.result_forms import fields_to_dict, headline_repr, to_jsonable
from mechanisms.inputs.relation import relation_words
from mechanisms.papers import PUFFERFISH

VERDICTS = ("violation", "no-violation-detected")

# The version of the audit's JSON output (``AuditResult.to_dict``, ``miaudit audit --json``,
# report.json): raised when a key is removed or renamed or its meaning changes; new keys keep it.
JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class SecretEvidence:
    """What the audit found for one secret (a record under DP, a pair g ~ w under PP) and prior.

    Attributes
    ----------
    secret : str
        Name of the secret (``"record 3"``, ``"g ~ w"``).
    record : int or None
        The record index for DP notions.
    prior : str
        Description of the prior (member of Θ) this evidence is about.
    strategy : {"certify", "stratify", "estimate-only", "constant"}
        How the secret could be tested under this prior (``"constant"``: g never changes under it,
        so its MI with the output is 0 exactly and it has no critic; :mod:`audit.audit_plan`).
    estimate : float
        Point estimate of the audited quantity on the held-out split (nats).
    lower_bound : float or None
        Certified lower bound on the audited quantity, valid simultaneously for all secrets
        and priors at confidence 1 − α (union bound); ``None`` for estimate-only secrets.
    per_slice : list of float or None
        Per-slice estimates (sliced notions, or when slices were used as candidates).
    """

    secret: str
    record: int | None
    prior: str
    strategy: str
    estimate: float
    lower_bound: float | None
    per_slice: list | None = None

    def to_dict(self) -> dict:
        return fields_to_dict(self)


@dataclass(frozen=True)
class EventTest:
    """The likelihood-ratio event test between two neighbouring inputs (DESIGN.md).

    The critic, thresholded on the select split, defines an event E. Its probabilities under
    the two inputs are bounded with Clopper–Pearson intervals from fresh, independent runs
    of the mechanism (p̲ = ``p_first_lower`` at level αs, p̄ = ``p_second_upper`` at α(1 − s), with
    α = ``alpha`` and s = ``lower_share``, ½ unless the selection runs predicted an uneven split to
    certify more; together they hold with probability ≥ 1 − α), and
    ε ≥ max(log((p̲ − δ) / p̄), log((1 − p̄ − δ) / (1 − p̲))) — the event, or its
    complement with the inputs swapped — is certified at confidence 1 − α
    (:func:`audit.certificates.event_bounds.certified_epsilon`).
    ``selection_runs`` counts the runs spent choosing the pair and the event (on other runs),
    ``pairs_considered`` the candidate pairs they chose among. ``event`` is the event as data, set by the event
    search (:func:`audit.search.event_search.event_search`; ``None`` only in a result built by hand): its form
    (:meth:`audit.search.event_choice.ScoreEvent.to_dict`: ``form``, ``threshold``, ``second_threshold``,
    ``boundary_weight``, ``first_input``), ``statistic``, the label of the statistic it thresholds, and
    ``statistic_words``, what that statistic is (``None`` where the label says it all), and the pair: ``record``, the
    record it is built on, ``differing_records``, every record its databases differ in, and ``record_values``, that
    record's values ``a`` and ``b`` as printed; a report says and explains the event and its pair from these
    (:func:`audit.report.content.deciding_evidence`, :func:`audit.report.content.event_explanation`),
    ``description`` says them in words.

    ``certificate`` says what certifies ``epsilon_lower_bound``: ``"clopper-pearson"`` (the two
    bounds above) or, for pure DP where the selection runs predicted it to do better,
    ``"odds-ratio"``: ε ≥ log(ψ̲)/2 from the exact conditional lower bound ψ̲ =
    ``odds_ratio_lower`` on the event's odds ratio at level α (:mod:`audit.certificates.odds_ratio`), or
    ``"rate-ratio"``: each input was run a Poisson number of times, at most ``runs_per_input``
    (``runs_made``: first input, second input), and ε ≥ log ρ̲ from the exact conditional lower
    bound ρ̲ = ``rate_ratio_lower`` on p₁/p₂ at level α (:mod:`audit.certificates.rate_ratio`). p̲ and p̄ (on
    the runs made, at αs and α(1 − s)) are then reported but certify nothing.

    ``gaussian_dp`` (:class:`audit.certificates.gaussian_dp.GDPCertificate`) is a certified lower bound on μ of
    Gaussian DP from the trade-off curve of an event statistic on the same certification runs. For a GDP
    claim it is one of the claim's tests, at its own share of α (:class:`audit.certificates.claim_tests.ClaimPlan`);
    otherwise it is a separate statement at level ``alpha`` that does not enter the verdict. Beside it,
    the ε at δ it implies under the GDP assumption (an estimate) and the best certified ε any threshold
    event would reach at these runs (the budget's optimum).

    ``support_differences``: for a mechanism whose outputs of any structure are encoded
    (:mod:`mechanisms.outputs.encoding`), the support facts (a key, a class, a shape) that the
    certification runs of one input held and the other's never did, each with its counts, in words
    (:meth:`~mechanisms.outputs.encoding.OutputEncoder.describe_differences`): what to reproduce a bug
    by; counts, not a test. ``unbounded_differences``: the output features (of any mechanism: a shape, a
    key, a class, a relation, a numeric value) constant in every certification run of one input at a value
    the other input's runs never take, each said to make the privacy loss on the pair unbounded
    (:func:`mechanisms.outputs.unbounded.unbounded_differences`); counts too, beside the certificate.
    """

    secret: str
    description: str
    threshold: float
    runs_per_input: int
    p_first: float
    p_second: float
    p_first_lower: float
    p_second_upper: float
    delta: float
    epsilon_lower_bound: float
    epsilon_lower_bound_at_delta: float | None
    alpha: float | None = None
    selection_runs: int = 0
    event: dict | None = None  # the event's form, its statistic's label and words, and its pair (see above)
    pairs_considered: int = 1  # candidate neighbouring pairs the selection runs chose among
    certificate: str = "clopper-pearson"
    odds_ratio_lower: float | None = None
    lower_share: float = 0.5
    rate_ratio_lower: float | None = None
    runs_made: list | None = None  # [first, second]: the Poisson numbers of runs of a rate-ratio certificate
    # μ̲ of Gaussian DP from the same certification runs' scores (audit.certificates.gaussian_dp.GDPCertificate): a test of
    # a GDP claim at its own share of α, else a separate statement at this test's level.
    gaussian_dp: object | None = None
    # An (ε, δ) claim: δ ≥ delta_lower_bound at ε = delta_epsilon (the claim's ε), from p̲ and p̄
    # (audit.certificates.event_bounds.certified_delta); ≤ 0 certifies nothing.
    delta_lower_bound: float | None = None
    delta_epsilon: float | None = None
    # A claim that is not pure DP (audit.search.claim_events): "ε-optimal" or "δ-optimal", the event certified.
    event_objective: str | None = None
    # Outputs of any structure (mechanisms.outputs.encoding): the support facts (keys, classes, shapes) the
    # certification runs of one input held and the other's never did, in words with their counts; not a test.
    support_differences: list | None = None
    # The event's frequencies under the first and second input on the draws it was chosen on (selection runs or
    # held-out draws), and those draws' numbers: the selection's own estimate of its effect (the forecast reads it).
    chosen_frequencies: list | None = None
    chosen_runs: list | None = None
    # Output features constant in every certification run of one input at a value the other's never take ("value v
    # in k of k runs of A, never in the k runs of B: the privacy loss on this pair is unbounded";
    # mechanisms.outputs.unbounded); counts beside the certificate, which alone refutes.
    unbounded_differences: list | None = None
    # The statistics the event search chose among (labels, in order), and those whose event, on the draws it was
    # chosen on, was predicted to refute the claim (audit.search.event_search._with_evidence; None without a
    # claim): a statement about the selection, no test.
    statistics_tried: list | None = None
    statistics_with_evidence: list | None = None
    # A budget plan's pilot only (audit.search.event_search.event_search's keep_scores): the chosen statistic's scores,
    # {"chosen_on": (first database's, second's), "certification": (the same)}; kept out of the JSON.
    scores: dict | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return fields_to_dict(self, exclude=("scores",))


@dataclass(frozen=True)
class CrossCheck:
    """One test of a claim against the audit's evidence (:mod:`audit.certificates.claim_tests`).

    Attributes
    ----------
    claim : str
        The claim, in words.
    implied_mi_upper_bound : float or None
        The MI test: the claim's MI budget (nats), ``None`` for the event test or no budget.
    certified_contradiction : bool
        Whether this test refutes the claim (only a test with an α share can).
    estimate_consistent : bool or None
        The MI test: whether the point estimate is within the budget (no error guarantee).
    theorems : list of str
    detail : str
    test : {"mi", "event", "float", "gdp"}
    statistic, threshold : float or None
        What was compared: the certified MI lower bound against the budget; for the event test
        p̲ − e^ε′ p̄ (or its complement form) against δ(ε′) at ``epsilon_prime``.
    alpha_spent : float or None
        This test's share of α (``None``: it does not test the claim, see the notes).
    epsilon_prime : float or None
        The event test's ε′.
    relation : str or None
        The neighbouring relation the test ran under, where a claim stated for none was audited under both
        (:mod:`audit.both_relations`); ``None`` otherwise (the audit's one relation).
    """

    claim: str
    implied_mi_upper_bound: float | None
    certified_contradiction: bool
    estimate_consistent: bool | None
    theorems: list
    detail: str
    test: str = "mi"
    statistic: float | None = None
    threshold: float | None = None
    alpha_spent: float | None = None
    epsilon_prime: float | None = None
    relation: str | None = None

    def refutation(self) -> dict:
        """The evidence as ``refuted_by`` lists it (with ``relation`` where the claim was audited under both)."""
        out = {"test": self.test, "statistic": self.statistic, "threshold": self.threshold,
               "alpha_spent": self.alpha_spent, "detail": self.detail}
        if self.epsilon_prime is not None:
            out["epsilon_prime"] = self.epsilon_prime
        if self.relation is not None:
            out["relation"] = self.relation
        return to_jsonable(out)

    def to_dict(self) -> dict:
        return fields_to_dict(self)


@dataclass(frozen=True)
class AuditResult:
    """The outcome of one audit.

    ``verdict`` is ``"violation"`` iff the certified lower bound exceeds ε; the type-I error
    of that verdict is then at most α whatever the mechanism (DESIGN.md, statistical core).
    It is ``None`` when no MI level was audited (a claim that implies no MI budget, with no
    ``epsilon`` given).

    With a claim, ``claim_verdict`` is ``"refuted"`` when a test with a share of α refutes it
    (``refuted_by``); the shares (``claim_alpha``) sum to α, so its type-I error is at most α.

    ``estimator`` names the MI test's critics: the neural objective (``"dv"``, ``"mine"``,
    ``"nwj"``), or ``"classifier"`` for classifier critics (:mod:`audit.statistics.classifier_critic`).

    ``sequential`` is set on the deciding look of a sequential audit: its looks, runs and why it
    stopped (:meth:`audit.gating.sequential.SequentialAudit.block`); ``None`` for a fixed audit.
    ``domain_reach`` (where a domain was declared, :attr:`audit.spec.AuditSpec.domain`): the declared
    domain, its source, the span of the audited records and whether they reached both ends
    (:func:`audit.search.input_domain.domain_reach`).
    ``probe_calls``: the calls of the mechanism its runner's probe made beyond ``samples`` (the runs), on one
    database twice under one seed, to check that its output is fixed by its seed (a third call where the two
    differ; :attr:`mechanisms.execution.runner.MechanismRunner.probe_calls`); every call that returned is
    ``samples + probe_calls``. 0 where no probe was made.
    ``relations`` (where a claim stated for no relation was audited under both replace-one and add-remove,
    :mod:`audit.both_relations`): the relations tested, each one's level (α/2, Bonferroni), those under which
    the claim was refuted, ``relation`` the one whose evidence the result shows when refuted, and each audit's
    summary; ``None`` for an audit of one relation.
    """

    verdict: str | None
    notion: str
    epsilon: float | None
    alpha: float
    lower_bound: float | None
    estimate: float
    paper_statistic: float | None
    dp_epsilon_lower_bound_mi: float | None
    dp_epsilon_lower_bound_event: float | None
    per_record: list
    cross_checks: list
    samples: int
    seconds: float
    seed: int
    mechanism: str = ""
    priors: list = field(default_factory=list)
    theta_statement: str = ""
    certified_secret: str | None = None
    estimate_only: bool = False
    candidates_certified: int = 1
    event_test: EventTest | None = None
    # arithmetic = "float": the event test on the float-bit statistics, at its own share of α (audit.statistics.arithmetic).
    float_event_test: EventTest | None = None
    arithmetic: str = "float"
    slices: int | None = None
    estimator: str = "dv"
    device: str = "cpu"
    training_history: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    unit: str = "nats"
    claim: dict | None = None
    claim_verdict: str | None = None
    claim_alpha: dict = field(default_factory=dict)
    samples_by_purpose: dict = field(default_factory=dict)
    probe_calls: int = 0
    sequential: dict | None = None
    domain_reach: dict | None = None
    relations: dict | None = None

    @property
    def refuting_event_test(self):
        """The event test whose evidence a report of the refutation shows: the float-bit event test
        (``float_event_test``) where it refuted the claim and the event test did not, else ``event_test``."""
        tests = [r.get("test") for r in self.refuted_by]
        if "float" in tests and "event" not in tests and self.float_event_test is not None:
            return self.float_event_test
        return self.event_test

    @property
    def violation(self) -> bool:
        return self.verdict == "violation"

    @property
    def refuted(self) -> bool:
        return self.claim_verdict == "refuted"

    @property
    def refuted_by(self) -> list:
        """The tests that refuted the claim: test, statistic, threshold, alpha_spent, detail."""
        return [c.refutation() for c in self.cross_checks if c.certified_contradiction]

    def claim_statement(self) -> str:
        """The verdict about the claim in plain words (empty without a claim): the claim, its verdict, then
        :meth:`claim_explanation`."""
        if self.claim is None:
            return ""
        label, origin = self.claim["label"], self.claim.get("origin")
        source = f" (from {origin})" if origin else ""
        if self.claim_scope():
            source = f" ({self.claim_scope()})" + source
        explanation = self.claim_explanation(standalone=False)
        if self.refuted:  # then, as under a report's headline, what to check when the output's values refuted it
            verdict = f"REFUTED{self.float_refutation_words()}." + (f" {as_sentence(self.value_explanation())}"
                                                                     if self.value_explanation() else "")
        elif not self.claim_alpha:  # "cannot be refuted at this budget: no test ...", one sentence
            verdict, explanation = "cannot be refuted at this budget:", explanation[:1].lower() + explanation[1:]
        else:
            verdict = "not refuted."
        return f"Claim {label}{source}: {verdict} {explanation}"

    def claim_scope(self) -> str:
        """What the claim is stated over, in words: ``"neighbours: …"`` (the neighbouring relation of a claim about
        records), ``"secrets: …"`` (an MI-PP claim's secret pairs and priors, Pufferfish paper, Definition 5:
        :meth:`mechanisms.claims.claim.Claim.to_dict`); "" without a claim, or where the claim says neither."""
        claim = self.claim or {}
        if claim.get("secrets"):
            return f"secrets: {claim['secrets']}"
        return f"neighbours: {claim['relation_text']}" if claim.get("relation_text") else ""

    def claim_explanation(self, evidence: bool = True, standalone: bool = True) -> str:
        """What the claim's verdict means, without the verdict's own words: the confidence, what was shown
        (with ``evidence``, each refuting test's detail) and how α was split between the tests that can
        refute the claim; empty without a claim. A report that states the verdict and the evidence
        elsewhere (the terminal's headline and its ``refuted by`` lines) prints it with ``evidence=False``,
        so that no fact is said twice. ``standalone``: it is read apart from the claim's name, so it says
        "the claim" where :meth:`claim_statement`, which follows the name, says "it"."""
        if self.claim is None:
            return ""
        confidence = f"{100 * (1 - self.alpha):.4g}%"
        label = self.claim["label"]
        it = "the claim" if standalone else "it"
        tests = ", ".join(f"{_test_name(name)} at α = {share:.3g}" for name, share in self.claim_alpha.items())
        if self.relations is not None:
            split = " " + self.relations_split_words(it)
        elif len(self.claim_alpha) > 1:
            split = f" α = {self.alpha:g} was split between the tests that can refute {it}: {tests}."
        else:
            split = f" The {tests} is the one test that can refute {it}." if tests else ""
        if self.refuted:
            shown = ": " + "; ".join((f"under {r['relation']}, " if r.get("relation") else "") + r["detail"]
                                     for r in self.refuted_by) if evidence else ""
            return (f"With probability at least {confidence} over this audit's randomness, the mechanism does not "
                    f"satisfy {label}{shown}.{split}")
        if not self.claim_alpha:
            return f"No test of this audit could refute {it} (the notes say why and what would)."
        # What a newcomer should do next with a claim that stands: look harder, or elsewhere.
        return (f"No test found evidence against {it} at {confidence} confidence; "
                f"this is not a proof that the claim holds: a larger budget (--samples, AuditSpec.samples) or inputs "
                f"it did not try may find evidence.{split}")

    def relations_split_words(self, it: str = "the claim") -> str:
        """How α was divided under both relations (:attr:`relations`), in one sentence: first between the two relations
        (Bonferroni), then each relation's level between the tests that can refute ``it`` under that relation; the
        shares said once where both relations split their level alike, else under each relation by name."""
        levels = self.relations["alpha_each"]
        each = (f"α = {next(iter(levels.values())):.3g} each" if len(set(levels.values())) == 1
                else " and ".join(f"α = {level:.3g} for {relation}" for relation, level in levels.items()))
        head = f"α = {self.alpha:g} was split between the two relations (Bonferroni), {each}"
        results = self.relations["results"]
        if not results:  # a result built without each relation's summary: the split between the relations alone
            return head + "."

        def shares(claim_alpha: dict) -> str:
            return (", ".join(f"{_test_name(name)} {share:.3g}" for name, share in claim_alpha.items())
                    or f"none (no test can refute {it} under that relation)")

        splits = [r["claim_alpha"] for r in results]
        if all(split == splits[0] for split in splits):
            tests = shares(splits[0])
        else:
            tests = "; ".join(f"under {r['relation']}, {shares(r['claim_alpha'])}" for r in results)
        return f"{head}, and each relation's α between the tests that can refute {it} under that relation: {tests}."

    def relations_words(self) -> str:
        """The relations of an audit under both (:attr:`relations`), in words: the refuting one(s), else both."""
        refuted = self.relations["refuted_under"]
        if refuted:
            return " and ".join(relation_words(r) for r in refuted) + (
                ", refuted under this relation" if len(refuted) == 1 else ", refuted under both")
        return "; ".join(relation_words(r) for r in self.relations["tested"]) + ", each tested"

    @property
    def refuted_through_float_only(self) -> bool:
        """Whether only the float-bit event test refuted the claim (the tests that read no bits did not)."""
        tests = {r["test"] for r in self.refuted_by}
        return tests == {"float"}

    def float_refutation_words(self) -> str:
        """What a float-bit refutation means, as the JSON's ``statement`` says it after the verdict (empty for any
        other verdict): :meth:`float_headline_words` and :meth:`float_explanation` in one clause.

        The float-bit statistics (:mod:`audit.statistics.float_bits`) read the rounding that float64
        arithmetic leaves in an output's low bits (Mironov 2012, Section 3); the fix is Mironov's snapping
        (Section 5.2) or a sampler that samples exactly.
        """
        return self._float_words()[2]

    def float_headline_words(self) -> str:
        """The few words a report's headline adds to a refutation the float-bit event test took part in: through the
        floating-point representation, or (the tests that read no bits refuted it too) in real arithmetic too; empty
        for any other verdict. :meth:`float_explanation` says the rest, on the line below."""
        return self._float_words()[0]

    def float_explanation(self) -> str:
        """What :meth:`float_headline_words` means and what to do, for the line under a report's headline: the
        algorithm holds its claim, its float implementation does not, and the fix (Mironov 2012, Section 5.2); or
        that the float representation refutes the claim as well; empty for any other verdict."""
        return self._float_words()[1]

    def value_explanation(self) -> str:
        """What to check when tests that read no bits of the output refuted a claim about records: the output's values
        themselves tell neighbouring databases apart more than the claim allows, so the noise is too small for what
        one record changes (the usual bug: a wrong sensitivity or noise scale), or, where the output never varied on
        either database of the event's pair, that it adds no noise (:func:`mechanisms.outputs.unbounded.never_varied`);
        empty for any other verdict, for a
        refutation through the float representation alone (:meth:`float_explanation` says its fix) and for an MI-PP
        claim, whose secrets need not be records."""
        if not self.refuted or self.refuted_through_float_only or (self.claim or {}).get("secrets"):
            return ""
        # Where the output (or a part of it) never varied on either database, that is the fact, said plainly.
        from mechanisms.outputs.unbounded import never_varied

        return never_varied(self.event_test.unbounded_differences if self.event_test else None)[0] or _VALUE_MEANING

    def _float_words(self) -> tuple:
        """(headline words, the line below the headline, the JSON statement's clause) of a refutation the float-bit
        event test took part in; three empty strings for any other verdict."""
        if not self.refuted or not any(r["test"] == "float" for r in self.refuted_by):
            return "", "", ""
        if not self.refuted_through_float_only:
            # Unbracketed in the headline, as the float-only words are: it follows the neighbours' brackets.
            return (f" {_FLOAT_TOO}", f"{_FLOAT_AS_WELL}: {_FLOAT_HOW_TO}",
                    f" ({_FLOAT_TOO}; {_FLOAT_AS_WELL}: {_FLOAT_HOW_TO})")
        return (f" {_FLOAT_ONLY}", f"{_NOT_NOISE}: {_FLOAT_MEANING}; {_FLOAT_HOW_TO}",
                f" {_FLOAT_ONLY}, {_NOT_NOISE}: {_FLOAT_HOW_TO}; {_FLOAT_MEANING}")

    def statement(self) -> str:
        """The verdicts in plain words: the claim's first (when there is one), then the MI notion's."""
        return " ".join(part for part in (self.claim_statement(), self.mi_statement()) if part)

    def mi_statement(self, dp_bounds: bool = True) -> str:
        """The MI notion's verdict in plain words (a statement of its own, beside the claim's).

        ``dp_bounds``: end with the largest certified DP ε lower bound ("It is not ε-DP for any ε < …"), as the
        JSON's ``statement`` does. A report that states the claim's tests and their bounds elsewhere (the summary
        table's DP ε lower bounds, each refuting test's line) prints the MI part without it, so that it is said once.
        """
        return mi_statement(self, dp_bounds)

    # The JSON contract's key order (README, ``miaudit audit``); a field not listed here (a new
    # one) follows these keys.
    _JSON_ORDER = ("schema_version", "claim", "claim_verdict", "refuted_by", "claim_alpha", "verdict", "notion", "epsilon", "alpha",
                   "unit", "lower_bound", "estimate", "paper_statistic", "dp_epsilon_lower_bound_mi",
                   "dp_epsilon_lower_bound_event", "per_record", "cross_checks", "samples", "samples_by_purpose",
                   "probe_calls", "seconds", "seed", "statement", "mechanism", "priors", "theta", "certified_secret",
                   "estimate_only", "candidates_certified", "event_test", "float_event_test", "arithmetic", "slices", "estimator", "device",
                   "training_history", "notes", "domain_reach", "relations")

    def to_dict(self) -> dict:
        """The JSON form: ``schema_version``, every field (``theta_statement`` as ``theta``), ``refuted_by``
        and ``statement``.

        ``schema_version`` (:data:`JSON_SCHEMA_VERSION`) names the contract documented in
        ``docs/reference/json-output.md``; it changes when a key is removed, renamed or changes meaning
        (a new key is added without a change of version).
        """
        return fields_to_dict(self, order=self._JSON_ORDER, exclude=("theta_statement",),
                              extra={"schema_version": JSON_SCHEMA_VERSION, "refuted_by": self.refuted_by, "statement": self.statement(),
                                     "theta": self.theta_statement})

    def __repr__(self) -> str:
        headline = ("mechanism", "notion", "verdict", "epsilon", "lower_bound", "estimate", "alpha")
        claim = None if self.claim is None else self.claim.get("label")
        return headline_repr(self, headline, extra={"claim": claim, "claim_verdict": self.claim_verdict,
                                                    "samples": self.samples})


#: The words of a refutation the float-bit event test took part in (:meth:`AuditResult.float_refutation_words`): refuted
#: through the float representation alone, or by the tests that read no bits too; what that means; where to read more.
_FLOAT_ONLY = "through the floating-point representation of the output"
_NOT_NOISE = "not the noise distribution (Mironov 2012)"
_FLOAT_TOO = "by the tests that read no bits, so in real arithmetic too"
_FLOAT_AS_WELL = "the floating-point representation of the output refutes it as well"
_FLOAT_HOW_TO = "see how-to/floating-point"
_FLOAT_MEANING = ("the algorithm holds its claim; its float implementation does not (the tests that read no bits, on "
                  "outputs rounded to 32 significant bits, did not refute it); fix: round the noisy release onto a "
                  "power-of-two grid (snapping, Mironov 2012 Section 5.2) or use an exact sampler (e.g. OpenDP's); "
                  "a zero's sign (-0.0 against 0.0) goes by adding 0.0")


#: What a refutation by the tests that read no bits means, and what to check (:meth:`AuditResult.value_explanation`).
_VALUE_MEANING = ("the output's values, not only their float bits, tell neighbouring databases apart more than the claim "
                  "allows: the noise is too small for what one record changes; check the sensitivity (how far one "
                  "record can move the output before noise), the noise scale, and that every released value is noised")


#: Each test of a claim in words (:mod:`audit.certificates.claim_tests`), as every line of a report names it.
TEST_NAMES = {"mi": "MI test", "event": "event test", "float": "float-bit event test", "gdp": "μ-GDP test"}


def _test_name(test: str) -> str:
    """A claim test's name in words (:data:`TEST_NAMES`): ``"float"`` is the float-bit event test."""
    return TEST_NAMES.get(test, f"{test} test")


#: The paper the MI notions and Theorem 1 (ε-DP ⇒ MI-DP) come from, by its authors and title.
PUFFERFISH_PAPER = PUFFERFISH.named


def as_sentence(words: str) -> str:
    """Words as a sentence: a capital first letter and a full stop ("" stays "")."""
    return f"{words[:1].upper()}{words[1:]}." if words else ""


def named_papers(text: str) -> str:
    """``text`` with "Pufferfish paper" (the code's short name) written as the paper's authors and title."""
    return str(text).replace("Pufferfish paper", PUFFERFISH_PAPER)


def finite_or_none(value) -> float | None:
    """``None`` for missing or non-finite values (JSON has no inf/NaN)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
