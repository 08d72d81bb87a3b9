"""Claims from text (``dp:EPS``, ``zcdp:RHO``, ...) and from a TOML ``[claim]`` table.
"""

from __future__ import annotations

import math


from estimators.validation import InputError, parse_decimal

from mechanisms.inputs.relation import RELATION_SYNTAX, REPLACE_ONE, check_relation
from mechanisms.claims.claim import CLAIM_NOTIONS, CLAIM_SYNTAX, Claim
from mechanisms.claims.notions import DifferentialPrivacy, GaussianDP, LocalDP, MIDP, MIPP, RenyiDP, ZeroConcentratedDP

__all__ = ["claim_from_table", "parse_claim"]


# notion -> (class, parameter names in the order of the written form, their symbols)
_FORMS = {
    "dp": (DifferentialPrivacy, ("epsilon", "delta"), ("EPS", "DELTA")),
    "ldp": (LocalDP, ("epsilon",), ("EPS",)),
    "zcdp": (ZeroConcentratedDP, ("rho",), ("RHO",)),
    "rdp": (RenyiDP, ("order", "epsilon"), ("ALPHA", "EPS")),
    "gdp": (GaussianDP, ("mu",), ("MU",)),
    "mi-dp": (MIDP, ("epsilon",), ("EPS",)),
    "mi-pp": (MIPP, ("epsilon",), ("EPS",)),
}


def _checked(notion: str, name: str, value, label: str, shown: str) -> float:
    """One parameter of a written claim, checked; errors start with ``label`` and name the symbol."""
    _, names, symbols = _FORMS[notion]
    symbol = symbols[names.index(name)]
    form = ":".join((notion,) + symbols)
    try:
        # Written text must be a plain ASCII decimal: float() would read "1_0" as 10 and accept full-width digits.
        number = parse_decimal(value) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        comma = isinstance(value, str) and "," in value  # dp:1,1e-5 written for dp:1:1e-5
        raise InputError(f"{label}: {symbol} in {form} must be a number in ASCII decimal notation, got {shown}"
                         + ("; the parameters are separated by ':', not ','" if comma else "")) from None
    if isinstance(value, bool) or not math.isfinite(number):
        raise InputError(f"{label}: {symbol} in {form} must be a finite number, got {shown}")
    if name == "delta":
        if not 0 <= number < 1:
            raise InputError(f"{label}: DELTA in {form} must be in [0, 1), got {shown}")
    elif name == "order":
        if number <= 1:
            raise InputError(f"{label}: ALPHA in {form} (the Rényi order) must be > 1, got {shown}")
    elif number <= 0:
        raise InputError(f"{label}: {symbol} in {form} must be > 0, got {shown}")
    return number


def parse_claim(text, *, argument: str = "--claim", origin: str | None = None, relation: str | None = None) -> Claim:
    """Parse a written claim, e.g. ``"dp:1"``, ``"dp:1:1e-5"``, ``"zcdp:0.5"``, ``"rdp:2:0.3"``.

    Parameters
    ----------
    text : str
        ``NOTION:PARAMETERS`` in one of the forms of the module docstring.
    argument : str
        The user's name for the value, used in errors (``--claim``, ``[claim] spec``).
    origin : str, optional
        Where the claim came from (default: ``argument``).
    relation : str, optional
        The neighbouring relation the claim is stated for (default replace-one; add-remove, or a
        user-level ``replace:K`` / ``add-remove:K``: :mod:`mechanisms.inputs.relation`).

    Raises
    ------
    InputError
        Naming ``argument``, for an unknown notion, a wrong number of parameters or a value
        out of range.

    Examples
    --------
    >>> claim = parse_claim("dp:1")
    >>> claim.label, claim.implied_mi_budget("mi-dp").value  # min(ε, ε²/2) nats
    ('1-DP', 0.5)
    """
    if isinstance(text, Claim):
        return text if relation is None or relation == text.relation else _with_relation(text, relation, argument)
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"argument '{argument}' must be a claim such as {CLAIM_SYNTAX}; got {text!r}")
    notion, *parts = [p.strip() for p in text.strip().split(":")]
    notion = notion.lower()
    if notion not in _FORMS:
        raise InputError(f"argument '{argument}': unknown notion {notion!r} in {text!r}; "
                         f"choose from {', '.join(CLAIM_NOTIONS)} ({CLAIM_SYNTAX})")
    _, names, symbols = _FORMS[notion]
    optional = 1 if notion == "dp" else 0
    if not len(names) - optional <= len(parts) <= len(names):
        forms = " or ".join(":".join((notion,) + symbols[:k]) for k in range(len(names) - optional, len(names) + 1))
        raise InputError(f"argument '{argument}' must be {forms}, got {text!r}")
    try:
        values = {name: _checked(notion, name, part, f"argument '{argument}'", repr(text))
                  for name, part in zip(names, parts)}
    except InputError as exc:
        swapped = _swapped_dp(notion, parts)
        if swapped is None:
            raise
        here = f"{argument} {swapped}" if argument.startswith("--") else f"{argument} = \"{swapped}\""
        raise InputError(f"{exc}; EPS comes first, then DELTA: here {here}") from None
    return _build(notion, values, origin if origin is not None else argument, relation, argument)


def _swapped_dp(notion: str, parts: list) -> str | None:
    """``dp:EPS:DELTA`` written with its parameters swapped (``dp:1e-5:1``, δ before ε), where that order alone is
    wrong: the claim in the right order; else None."""
    if notion != "dp" or len(parts) != 2:
        return None
    try:
        _checked("dp", "epsilon", parts[1], "", ""), _checked("dp", "delta", parts[0], "", "")
    except InputError:
        return None
    return f"dp:{parts[1]}:{parts[0]}"


def _build(notion: str, values: dict, origin: str, relation: str | None, argument: str) -> Claim:
    """The claim of ``notion`` at ``values`` stated for ``relation``; errors name ``argument``."""
    cls = _FORMS[notion][0]
    relation = _relation_applies(cls, relation, argument)
    return cls(**values, origin=origin, relation=relation or REPLACE_ONE)


def _relation_applies(cls, relation: str | None, argument: str) -> str | None:
    """``relation`` in its one written form (None stays None), checked for a claim of ``cls``."""
    if relation is None:
        return None
    try:
        relation = check_relation(relation)
    except InputError:
        raise InputError(f"argument '{argument}': the relation must be one of {RELATION_SYNTAX}, "
                         f"got {relation!r}") from None
    if relation != REPLACE_ONE and not cls.allows_add_remove:
        raise InputError(f"argument '{argument}': {cls.notion} claims are stated for replace-one neighbours only "
                         "(add/remove and user-level relations apply to dp, zcdp, rdp and gdp)")
    return relation


def _with_relation(claim: Claim, relation: str, argument: str) -> Claim:
    """``claim`` stated for ``relation`` instead (the same parameters)."""
    from dataclasses import replace

    return replace(claim, relation=_relation_applies(type(claim), relation, argument))


def claim_from_table(table: dict, *, where: str = "[claim]", origin: str | None = None) -> Claim:
    """A claim from a configuration table: ``spec = "zcdp:0.5"``, or ``notion`` plus the
    parameters by name (``epsilon``, ``delta``, ``rho``, ``order``, ``mu``); optional
    ``relation`` (``"replace-one"``, the default, ``"add-remove"``, or a user-level ``"replace:K"`` /
    ``"add-remove:K"``).

    Errors name the table's keys (e.g. ``[claim] rho``).
    """
    if not isinstance(table, dict):
        raise InputError(f"configuration entry '{where}' must be a table")
    origin = origin if origin is not None else where
    relation = table.get("relation")
    table = {key: value for key, value in table.items() if key != "relation"}
    if "spec" in table:
        extra = sorted(set(table) - {"spec"})
        if extra:
            raise InputError(f"{where}: give either 'spec' or 'notion' with its parameters, not both ({', '.join(extra)})")
        return parse_claim(table["spec"], argument=f"{where} spec", origin=origin, relation=relation)
    if "notion" not in table:
        raise InputError(f"{where} needs 'spec' (e.g. \"dp:1\") or 'notion' with its parameters")
    notion = table["notion"]
    if notion not in _FORMS:
        raise InputError(f"{where}: unknown notion {notion!r}; choose from {', '.join(CLAIM_NOTIONS)}")
    _, names, _ = _FORMS[notion]
    unknown = sorted(set(table) - {"notion", *names})
    if unknown:
        raise InputError(f"{where}: unknown key(s) {', '.join(unknown)} for notion {notion!r}; "
                         f"its parameters are {', '.join(names)}")
    for name in names:
        if name != "delta" and name not in table:
            raise InputError(f"{where} needs '{name}' for notion {notion!r}")
    values = {name: _checked(notion, name, table[name], f"{where} {name}", repr(table[name]))
              for name in names if name in table}
    return _build(notion, values, origin, relation, f"{where} relation")
