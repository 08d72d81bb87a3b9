"""What an audit did not show, for a report's "Limits" or "What this audit did not show" part: how far a refutation
reaches (the inputs and event named), that not refuted is not a proof, and the MI test's own limits (the critics'
class, the priors examined, and with no violation found the power the audit had)."""

from __future__ import annotations

from audit.report.text import number
from audit.result import AuditResult


def _claim_limits(result: AuditResult) -> list:
    if result.claim is None:
        return []
    label = result.claim["label"]
    if result.refuted:
        return [f"The refutation of {label} is shown for the neighbouring inputs and event (or prior) named in the "
                "evidence; how far the mechanism is from the claim elsewhere is not measured."]
    return [f"Not refuted is not a proof that {label} holds: the tests examined only the inputs, events and priors "
            "named here, with this sample budget."]


def limits(result: AuditResult) -> list:
    """What the audit did not show; with no violation found, also the power it had."""
    return _claim_limits(result) + _mi_limits(result)


def _mi_limits(result: AuditResult) -> list:
    unit = result.unit
    examined = (f"Only the declared prior(s) were examined ({', '.join(result.priors)})" if result.priors
                else "Only the declared prior was examined")
    critics = (f"The {result.estimator} critics form a restricted class: leakage they cannot represent is "
               f"invisible to this audit.")
    if result.estimate_only:
        # The verdict then rests on the point estimate alone (either way), with no type-I error control.
        return [f"No certificate: the verdict '{result.verdict}' rests on the point estimate "
                f"{number(result.estimate)} {unit} only and carries no error guarantee (the public information "
                f"is continuous and was not declared independent of the secret, so no secret could be certified).",
                "Neither a violation nor privacy is shown.", critics, f"{examined}."]
    if result.violation:
        return [f"The certified value is a lower bound: the actual leakage may be larger than "
                f"{number(result.lower_bound)} {unit}.",
                f"{examined}; the violation is shown for them."]
    out = ["This is not a proof of privacy. A lower bound that stays below ε says only that this audit "
           "found no evidence of a violation."]
    if result.lower_bound is not None and result.epsilon is not None:
        margin = result.estimate - result.lower_bound
        k = result.candidates_certified
        level = result.claim_alpha.get("mi", result.alpha)  # the MI test's share of α when it tests a claim
        candidates = (f"one candidate certified at level {level:.3g}" if k == 1
                      else f"{k} candidates certified at {level:.3g}/{k} each")
        out.append(
            f"Power: with {result.samples} mechanism runs in all and {candidates}, the certified bound sat {number(margin)} {unit} "
            f"below the point estimate, so a leakage would have needed a point estimate above about "
            f"ε + {number(margin)} = {number(result.epsilon + margin)} {unit} to be flagged. "
            f"More samples narrow this margin.")
    else:
        out.append(f"No certified lower bound was produced with {result.samples} samples.")
    out += [critics, f"{examined}; other priors may leak more."]
    return out
