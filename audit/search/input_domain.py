"""The input domain a library mechanism declares, the pairs at its ends, and whether an audit reaches it.

A DP guarantee is over every pair of neighbouring databases of the mechanism's input domain. An
OpenDP measurement declares that domain (``input_domain``: a vector domain whose atom domain may
carry ``bounds``); a diffprivlib object may carry ``bounds``. A prior whose records span less than
the domain tests only part of it: a pipeline whose noise covers records in [0, 10] but whose
domain is [0, 100] leaks only for records more than 10 apart, which a 0/1 prior never draws
(issue 29, item 4). A pipeline on an unbounded domain that clamps its records (``then_clamp``)
declares the clamp's bounds instead, read from the construction record OpenDP keeps
(:func:`opendp_clamp_bounds`). :func:`domain_check` says so in a note, and where the domain is bounded adds
the pair at its two ends (one record at the low end vs the high end, the others at the low end) to
the audit's pairs: it joins Θ as a two-point prior like a ``--pair``, and its critic is a
candidate of the MI test's union bound as every searched prior's is (:mod:`audit.search.prior_search`),
so the α spent stays the same.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from estimators.validation import InputError
from mechanisms.inputs.neighbouring_pair import NeighbouringPair

#: Prior draws read to find the span of the audited records.
SPAN_DRAWS = 1000


def number_text(value: float) -> str:
    """``value`` short (``%g``) where that reads back as the same float, else in full (2⁵⁰ + 0.25, not 1.1259e+15)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


@dataclass(frozen=True)
class DeclaredDomain:
    """A record's declared range and where it was read.

    Attributes
    ----------
    low, high : float
        The smallest and largest value any attribute may take (each may be infinite).
    source : str
        Where the domain was read, for notes ("OpenDP input domain ...", "--domain 0,10").
    lows, highs : tuple of float, optional
        Per attribute, where the domain gives one range per column (``low``/``high`` are then their
        smallest and largest); None: every attribute ranges over [low, high].
    integer : bool
        Whether only integers are representable (an OpenDP integer atom domain): the grids of
        :mod:`audit.search.pair_families` then step by 1 rather than to the next float.
    """

    low: float
    high: float
    source: str
    lows: tuple | None = None
    highs: tuple | None = None
    integer: bool = False

    @property
    def bounded(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    def text(self) -> str:
        if self.lows is not None and len(set(zip(self.lows, self.highs))) > 1:
            return "[" + "; ".join(f"{number_text(a)}, {number_text(b)}" for a, b in zip(self.lows, self.highs)) \
                + "] per attribute"
        return f"[{number_text(self.low)}, {number_text(self.high)}]"

    def columns(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(lows, highs) of the ``k`` attributes, as float64 arrays of length ``k``.

        Raises
        ------
        InputError
            Naming ``domain`` when the domain gives one range per column for another number of columns.
        """
        if self.lows is None:
            return np.full(k, self.low, dtype=np.float64), np.full(k, self.high, dtype=np.float64)
        if len(self.lows) != k:
            raise InputError(f"argument 'domain' ({self.source}) gives {len(self.lows)} per-attribute ranges, but the "
                             f"audited records have {k} attribute{'' if k == 1 else 's'}")
        return np.asarray(self.lows, dtype=np.float64), np.asarray(self.highs, dtype=np.float64)


def domain_from_ranges(ranges, source: str, argument: str = "domain") -> DeclaredDomain:
    """A :class:`DeclaredDomain` from ``(low, high)`` (one range for every attribute) or a sequence of
    ``(low, high)`` ranges, one per attribute; ``source`` says where it was given.

    Raises
    ------
    InputError
        Naming ``argument`` for anything else: a range that is not two numbers, NaN, low > high.
    """
    try:
        array = np.asarray(ranges, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is None or array.ndim not in (1, 2) or array.shape[-1] != 2 or array.size == 0:
        raise InputError(f"argument '{argument}' must be LOW,HIGH (one range for every attribute) or one LOW,HIGH "
                         f"range per attribute, got {ranges!r}")
    if np.isnan(array).any() or (array[..., 0] > array[..., 1]).any():
        raise InputError(f"argument '{argument}': every range must be LOW,HIGH with LOW <= HIGH (no NaN), got "
                         f"{array.tolist()!r}")
    if array.ndim == 1:
        return DeclaredDomain(float(array[0]), float(array[1]), source)
    return DeclaredDomain(float(array[:, 0].min()), float(array[:, 1].max()), source,
                          tuple(map(float, array[:, 0])), tuple(map(float, array[:, 1])))


def parse_domain(value, argument: str = "--domain", base_dir=None) -> DeclaredDomain:
    """The domain a user declares: ``--domain LOW,HIGH``, ``L0,H0;L1,H1;...`` (one range per attribute), a
    file holding either text, or a ``.npy`` file of shape (2,) or (k, 2); in a configuration
    (``[mechanism] domain``) also ``[LOW, HIGH]`` or ``[[L0, H0], [L1, H1], ...]``.

    Raises
    ------
    InputError
        Naming ``argument`` when the value is none of these, a file cannot be read, or a range is
        not LOW <= HIGH.
    """
    if isinstance(value, DeclaredDomain):
        return value
    if isinstance(value, (list, tuple)):
        return domain_from_ranges(value, f"{argument} {value!r}", argument)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"argument '{argument}' must be LOW,HIGH, L0,H0;L1,H1;... or a file, got {value!r}")
    text = value.strip()
    path = text if base_dir is None or os.path.isabs(text) else os.path.join(str(base_dir), text)
    if text.endswith(".npy"):
        from estimators.array_files import load_npy_array

        return domain_from_ranges(load_npy_array(path, argument), f"{argument} {text}", argument)
    if os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as handle:
                content = handle.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"argument '{argument}': cannot read {text!r} ({exc})") from None
        lines = [line.split("#")[0].strip() for line in content.splitlines()]
        text_ranges, source = ";".join(line for line in lines if line), f"{argument} {text} (file)"
    else:
        text_ranges, source = text, f"{argument} {text}"
    try:
        ranges = [[float(part) for part in chunk.split(",")] for chunk in text_ranges.split(";") if chunk.strip()]
    except ValueError:
        raise InputError(f"argument '{argument}' must be LOW,HIGH (numbers; inf allowed), L0,H0;L1,H1;... (one range "
                         f"per attribute) or an existing file holding them, got {value!r}") from None
    return domain_from_ranges(ranges[0] if len(ranges) == 1 else ranges, source, argument)


def check_pair_in_domain(pair, domain: DeclaredDomain | None, argument: str):
    """``pair`` (a :class:`~mechanisms.inputs.neighbouring_pair.NeighbouringPair`), checked against the domain the
    user declared (``--domain``): a record of it outside the domain is one error naming ``argument`` and the domain.

    A claim holds for records in the declared domain; a pair beyond it would audit the mechanism where nothing is
    claimed and could refute a true claim, so the two contradict each other. Records absent from an add/remove
    database (presence column 0) and missing values (NaN, ``--allow-nan``) are not compared.

    Raises
    ------
    InputError
        Naming ``argument``, the record, the attribute and the domain.
    """
    if domain is None:
        return pair
    k = pair.database_shape[1]
    lows, highs = domain.columns(k)
    for which, database in (("first", pair.first), ("second", pair.second)):
        present = database[:, k] == 1 if database.shape[1] > k else np.ones(len(database), dtype=bool)
        values = np.where(present[:, None], database[:, :k], np.nan)
        with np.errstate(invalid="ignore"):
            outside = (values < lows) | (values > highs)
        if outside.any():
            record, attribute = (int(i) for i in np.argwhere(outside)[0])
            raise InputError(f"argument '{argument}': record {record} of the {which} database has attribute "
                             f"{attribute} = {number_text(float(values[record, attribute]))}, outside the declared "
                             f"domain {domain.text()} ({domain.source}); the claim is stated for records in the domain: "
                             "give pairs within it or declare the domain they are drawn from")
    return pair


def check_priors_in_domain(priors, domain: DeclaredDomain | None, argument: str, seed: int = 0) -> None:
    """Refuse ``priors`` whose draws leave the domain the user declared (``--domain``), as
    :func:`check_pair_in_domain` refuses such a pair: the audit's pairs come from the priors' draws, and a pair
    beyond the domain audits the mechanism where nothing is claimed (a Gaussian prior under ``--domain=-3,3``
    refuted a claim on a record at -3.47). :data:`SPAN_DRAWS` draws of each prior, seeded by ``seed``, are read
    (:func:`audited_columns`); missing values (NaN, ``--allow-nan``) are not compared.

    Raises
    ------
    InputError
        Naming ``argument``, the attribute, the value drawn and the domain.
    """
    if domain is None or not priors:
        return
    k = priors[0].shape[1]
    lows, highs = audited_columns(priors, (), k, np.random.default_rng(seed))
    wanted_lows, wanted_highs = domain.columns(k)
    outside = (lows < wanted_lows) | (highs > wanted_highs)
    if outside.any():
        attribute = int(np.argmax(outside))
        value = lows[attribute] if lows[attribute] < wanted_lows[attribute] else highs[attribute]
        raise InputError(f"argument '{argument}': the prior draws attribute {attribute} = {float(value):g}, "
                         f"outside the declared domain {domain.text()} ({domain.source}); the claim is stated for "
                         "records in the domain and the audited pairs come from the prior's draws: give a prior within "
                         "it (builtin:uniform --low/--high, builtin:bernoulli) or declare the domain it draws from")


def declared_domain(mechanism, user_domain: DeclaredDomain | None = None) -> DeclaredDomain | None:
    """The record domain of ``mechanism``, or None where none is declared that miaudit can read.

    In order: ``user_domain`` (``--domain``, ``[mechanism] domain``, ``AuditSpec(domain=...)``); an OpenDP
    dataset measurement (not one on an aggregate: its domain is the query's) gives its input domain's atom
    ``bounds`` (integer carriers marked ``integer``); else the bounds of the clamps inside the pipeline that
    act on its input domain (:func:`opendp_clamp_bounds`); else (−∞, ∞) for a float or integer atom domain;
    a diffprivlib object its ``bounds`` (a (low, high) pair of numbers or of per-feature arrays); a plain or
    per-database function the literal ``bounds=``/``range=`` arguments of the calls in its source
    (:func:`source_bounds`).
    """
    if user_domain is not None:
        return user_domain
    if getattr(mechanism, "library", None) == "OpenDP":
        if mechanism.aggregate:
            return None
        domain = mechanism.measurement.input_domain
        element = getattr(domain, "element_domain", domain)
        bounds = getattr(element, "bounds", None)
        carrier = str(getattr(element, "carrier_type", "")).lower()
        if bounds is not None:
            return DeclaredDomain(float(bounds[0]), float(bounds[1]), f"OpenDP input domain {domain!r}",
                                  integer=carrier[:1] in ("i", "u"))
        if "bool" in carrier:
            return None
        clamps = opendp_clamp_bounds(mechanism.measurement)
        if clamps:
            low, high = min(c[0] for c in clamps), max(c[1] for c in clamps)
            return DeclaredDomain(low, high, f"the clamp inside the OpenDP pipeline (make_clamp, bounds "
                                             f"{', '.join(f'({a:g}, {b:g})' for a, b in clamps)}) on its input "
                                             f"domain {domain!r}", integer=carrier[:1] in ("i", "u"))
        return DeclaredDomain(-math.inf, math.inf, f"OpenDP input domain {domain!r} (no bounds)")
    template = getattr(mechanism, "_template", None)
    bounds = getattr(template, "bounds", None)
    if getattr(mechanism, "library", None) == "diffprivlib":
        if bounds is None:
            return None
        lows, highs = np.ravel(np.asarray(bounds[0], dtype=np.float64)), np.ravel(np.asarray(bounds[1], dtype=np.float64))
        per_feature = len(lows) > 1 and len(lows) == len(highs)
        return DeclaredDomain(float(lows.min()), float(highs.max()), f"diffprivlib bounds {bounds!r}",
                              tuple(map(float, lows)) if per_feature else None,
                              tuple(map(float, highs)) if per_feature else None)
    found = source_bounds(getattr(mechanism, "function", mechanism))
    return found[0] if found else None


#: Keyword arguments whose literal (low, high) value :func:`source_bounds` reads as the records' range
#: (diffprivlib's tools and models take ``bounds=``; NumPy's and diffprivlib's histograms ``range=``).
RANGE_KEYWORDS = ("bounds", "range", "data_range")


def source_bounds(function) -> list:
    """[domain] read from the calls in ``function``'s source that pass a literal range, else [].

    A per-database function that calls, say, ``diffprivlib.tools.mean(db[:, 0], epsilon=1, bounds=(0, 10))``
    states in its source that its records lie in [0, 10]: every keyword argument of
    :data:`RANGE_KEYWORDS` whose value is a literal pair of numbers (``ast.literal_eval``) is read, and
    the domain spans them all. Nothing is run; a function without readable source (a builtin, a
    lambda typed at the prompt) gives [].
    """
    import ast
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(function))
        tree = ast.parse(source)
        first_line = inspect.getsourcelines(function)[1]
    except (OSError, TypeError, SyntaxError, IndentationError):
        return []
    ranges, said = [], []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg not in RANGE_KEYWORDS:
                continue
            try:
                low, high = (float(v) for v in ast.literal_eval(keyword.value))
            except (ValueError, TypeError, SyntaxError):
                continue  # not a literal pair of numbers (a name, per-feature arrays)
            if low <= high:
                ranges.append((low, high))
                said.append(f"{ast.unparse(node.func)}({keyword.arg}=({low:g}, {high:g})) at line "
                            f"{first_line + node.lineno - 1}")
    if not ranges:
        return []
    name = getattr(function, "__qualname__", getattr(function, "__name__", "the function"))
    return [DeclaredDomain(min(r[0] for r in ranges), max(r[1] for r in ranges),
                           f"the range arguments in the source of {name}: {'; '.join(said)}")]


#: Nodes of an OpenDP pipeline's construction record that :func:`opendp_clamp_bounds` reads at most.
MAX_PIPELINE_NODES = 10_000


def opendp_clamp_bounds(measurement) -> list[tuple[float, float]]:
    """The bounds of every ``make_clamp`` in an OpenDP pipeline that acts on the pipeline's own input
    domain (the records as given), read from the construction record OpenDP keeps on each object.

    OpenDP's Python constructors (0.16) record the call that built each Transformation and
    Measurement, with its arguments, in ``__opendp_dict__`` (``__function__``, ``__kwargs__``: what
    ``opendp.prelude.serialize`` writes); a chain's record holds its components. A clamp whose
    ``input_domain`` is the measurement's is a clamp of the records themselves (a clamp after a cast
    or a map acts on other values and is left out). [] where the object keeps no such record (another
    OpenDP version) or the record holds no such clamp; at most :data:`MAX_PIPELINE_NODES` nodes read.
    """
    target = repr(getattr(measurement, "input_domain", None))
    found, seen, stack = [], set(), [measurement]
    while stack and len(seen) < MAX_PIPELINE_NODES:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        record = getattr(node, "__opendp_dict__", None)
        if not isinstance(record, dict) or not isinstance(record.get("__kwargs__"), dict):
            continue
        arguments = record["__kwargs__"]
        if record.get("__function__") == "make_clamp" and repr(arguments.get("input_domain")) == target:
            try:
                low, high = (float(v) for v in arguments["bounds"])
            except (KeyError, TypeError, ValueError):
                low = high = math.nan
            if low <= high and (low, high) not in found:
                found.append((low, high))
        stack.extend(value for value in arguments.values() if hasattr(value, "__opendp_dict__"))
    return found


def audited_columns(priors, pairs, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(smallest, largest) value of each of the first ``k`` attributes among :data:`SPAN_DRAWS` draws of
    each prior and the given pairs (a presence column beyond them is left out)."""
    values = [np.asarray(p(SPAN_DRAWS, rng), dtype=np.float64)[..., :k].reshape(-1, k) for p in priors]
    values += [np.concatenate([pair.first[:, :k], pair.second[:, :k]]) for pair in pairs]
    values = np.concatenate(values)
    return np.fmin.reduce(values, axis=0), np.fmax.reduce(values, axis=0)  # a missing value (NaN) spans nothing


def audited_span(priors, pairs, rng: np.random.Generator) -> tuple[float, float]:
    """(smallest, largest) record value among :data:`SPAN_DRAWS` draws of each prior and the given pairs."""
    values = [np.asarray(p(SPAN_DRAWS, rng), dtype=np.float64).ravel() for p in priors]
    values += [np.concatenate([pair.first.ravel(), pair.second.ravel()]) for pair in pairs]
    values = np.concatenate(values)
    return float(np.fmin.reduce(values)), float(np.fmax.reduce(values))  # a missing value (NaN) spans nothing


def read_number(value: float, end: float) -> str:
    """An audited record's value as a person reads it beside the domain's ``end`` it falls short of: short (``%g``)
    where that is exact, else to the fewest significant figures, 4 at least, at which it and ``end`` read apart
    (0.007939 and 99.9997 against [0, 100], not 0.007938861796163987 and 99.99967667212489; 2⁵⁰ + 0.25 in full
    against 2⁵⁰ + 0.5), so that a span short of the domain never reads as reaching it."""
    value, end = float(value), float(end)
    if value == end or float(f"{value:g}") == value:
        return number_text(value)
    for digits in range(4, 17):
        if f"{value:.{digits}g}" != f"{end:.{digits}g}":
            return f"{value:.{digits}g}"
    return repr(value)


def span_text(lows, highs, wanted_lows, wanted_highs, exact: bool = True) -> str:
    """The audited records' span in words: ``[low, high]`` over every attribute, and with several attributes the
    first attribute short of its declared range too (``[0, 1] ([0, 0] in attribute 3)``: each column of a one-hot
    prior spans [0, 1] but its last, and the overall span alone reads as if the domain [0, 1] were reached).
    ``exact``: every value in full (:func:`number_text`), as ``domain_reach`` keeps it; else as a person reads it
    beside the domain's ends (:func:`read_number`), as the warning prints it."""
    def text(value, end):
        return number_text(float(value)) if exact else read_number(value, end)

    out = (f"[{text(np.min(lows), np.min(wanted_lows))}, {text(np.max(highs), np.max(wanted_highs))}]")
    short = np.flatnonzero((lows > wanted_lows) | (highs < wanted_highs))
    if len(lows) > 1 and len(short):
        j = int(short[0])
        out += f" ([{text(lows[j], wanted_lows[j])}, {text(highs[j], wanted_highs[j])}] in attribute {j})"
    return out


def domain_reach(domain: DeclaredDomain, priors, pairs, k: int, seed: int = 0) -> dict:
    """Whether the audited records (the priors' draws and the pairs) reach both ends of ``domain`` in each of
    the ``k`` attributes: ``{"domain", "source", "audited", "reached"}`` (the audited span in words), for the
    result (:attr:`audit.result.AuditResult.domain_reach`). ``seed`` seeds the prior draws."""
    return reach_and_note(domain, priors, pairs, k, seed)[0]


def reach_and_note(domain: DeclaredDomain, priors, pairs, k: int, seed: int = 0) -> tuple[dict, str]:
    """(:func:`domain_reach`'s dict, the note of a not-refuted verdict whose audited records did not reach
    ``domain``) from one reading of the audited span: the dict keeps the span exact for the JSON, the note prints
    it as a person reads it beside the domain's ends (:func:`read_number`), as :func:`domain_check`'s warning does.
    The note is the caller's to show only where ``reached`` is False."""
    lows, highs = audited_columns(priors, pairs, k, np.random.default_rng(seed))
    wanted_lows, wanted_highs = domain.columns(k)
    reached = bool(np.all(lows <= wanted_lows) and np.all(highs >= wanted_highs))
    reach = {"domain": domain.text(), "source": domain.source,
             "audited": span_text(lows, highs, wanted_lows, wanted_highs), "reached": reached}
    note = (f"the audited pairs did not reach the declared domain: records span "
            f"{span_text(lows, highs, wanted_lows, wanted_highs, exact=False)}, the domain is {domain.text()} "
            f"({domain.source}); a leak at the domain's ends was not tested")
    return reach, note


def domain_check(mechanism, priors, pairs, shape, seed: int = 0, *, user_domain: DeclaredDomain | None = None,
                 ends_pair: bool = True) -> tuple[tuple, str | None]:
    """(pairs to add, note or None) for an audit of ``mechanism`` under ``priors`` and ``pairs``.

    The note says when the audited records (the priors' draws and the pairs) span less than the
    declared domain (:func:`declared_domain`, ``user_domain`` first), and what the audit does about it:
    a bounded domain gets the pair at its ends (record 0 at the low end vs the high end, the other
    records at the low end), or, with ``ends_pair`` False, the note says that pairs from the domain's
    families join Θ (:mod:`audit.search.family_pilot` chooses them); an unbounded one cannot be reached by
    any finite pair, so the note says to give ``--domain`` or ``--pair`` with records at the clamp bounds
    the pipeline applies. ``seed`` seeds the prior draws that read the span.
    """
    domain = declared_domain(mechanism, user_domain)
    if domain is None:
        return (), None
    k = shape[1]
    lows, highs = audited_columns(priors, pairs, k, np.random.default_rng(seed))
    wanted_lows, wanted_highs = domain.columns(k)
    if np.all(lows <= wanted_lows) and np.all(highs >= wanted_highs):
        return (), None
    # Printed for a person to read (the JSON's domain_reach keeps the span exact).
    reach = f"the audited records span {span_text(lows, highs, wanted_lows, wanted_highs, exact=False)} but the mechanism " \
            f"declares records in {domain.text()} ({domain.source})"
    if not domain.bounded:
        return (), (reach + ": a leak that needs records further apart than the audited ones (a clamp wider than "
                    "the noise covers) cannot be seen; give --pair with records at the ends of the range the pipeline "
                    "clamps to, or --domain LOW,HIGH with that range")
    if not ends_pair:
        return (), reach + "; pairs from the declared domain's families join Θ (scored on pilot runs)"
    first = np.tile(wanted_lows, (shape[0], 1))
    second = first.copy()
    second[0] = wanted_highs
    pair = NeighbouringPair(first, second, why=f"the ends of the declared input domain {domain.text()}")
    return (pair,), (reach + f"; the pair at the domain's ends (record 0 at {number_text(domain.low)} vs {number_text(domain.high)}, the "
                             "others at the low end) joins Θ as a two-point prior")
