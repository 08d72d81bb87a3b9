"""Structured Pufferfish privacy frameworks (G, W, E, Θ) of Definition 4 of ``pufferfish-mi-privacy.txt``.

A framework holds finite sets of private functions G and public functions W of the
database, a bipartite edge set E between them (an edge g ~ w means g(X) must stay hidden
from an adversary who knows w(X)), and a set Θ of priors. ε-MI PP (Definition 5) asks

    sup_{P_X ∈ Θ, g ~ w} I(g(X); M(X) | w(X)) ≤ ε.

When W = E = ∅ (attribute privacy without public information, Remark 2 part 2) every
g ∈ G is a secret on its own and the quantity is I(g(X); M(X)).

Functions act on database batches: ``g(dbs) -> (m, dg)`` and ``w(dbs) -> (m, dw)`` for
``dbs`` of shape ``(m, n, k)``. Each secret pair also says what the audit engine needs to
choose how to test it (DESIGN.md, "The statistical core"): whether g(X) and w(X) are
independent under a prior (then a certified bound on I(g; M, w) is one on
I(g; M | w)), and whether w(X) is discrete (then the engine can condition on each value).

Factories: :func:`differential_privacy` (Remark 2 part 1, Fig. 2), :func:`attribute_privacy`
(Remark 2 part 2, with or without public rest) and :func:`salary_example` (Section I-A, Fig. 1).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from estimators.validation import InputError, check_choice, check_int, check_nonnegative, check_positive
from mechanisms.base import MechanismError, as_database_batch, check_batch_output
from mechanisms.calls.later_bound import later_call_bound
from mechanisms.calls.user_call import call_user_code
from mechanisms.inputs.priors import Prior

__all__ = [
    "INDEPENDENCE_RULES",
    "STRATEGIES",
    "PufferfishFramework",
    "SecretFunction",
    "SecretPair",
    "attribute_privacy",
    "differential_privacy",
    "salary_example",
    "salary_query",
]

#: When g(X) and w(X) are known to be independent: ``"always"`` (no w, or w constant),
#: ``"rows"`` (g and w read disjoint records; independent under a prior with independent
#: rows), ``"columns"`` (disjoint columns; prior with independent columns), ``"unknown"``.
INDEPENDENCE_RULES = ("always", "rows", "columns", "unknown")

#: How the audit engine can test a secret pair under a prior, best first.
STRATEGIES = ("certify", "stratify", "estimate-only")


def _check_flag(value, name: str) -> None:
    """Structure flags must be real booleans: a string such as "false" would be truthy."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"argument '{name}' must be True or False, got {value!r}")


@dataclass(frozen=True, eq=False)
class SecretFunction:
    """A private (g) or public (w) function of the database, evaluated on batches.

    Parameters
    ----------
    name : str
        Readable name, e.g. ``"g_1"`` or ``"rows except 1"``.
    function : callable
        ``function(dbs) -> (m, d)`` for ``dbs`` of shape ``(m, n, k)``.
    always_discrete : bool
        The function takes finitely many values whatever the prior (e.g. an indicator).
        Otherwise it is discrete exactly when the prior is.
    timeout : float, optional
        Seconds one call may take (an audit sets ``--timeout``; default: no limit but the one
        ``first_seconds`` sets). A call that does not return in time is an error naming the
        function, like a hanging mechanism or prior (:func:`mechanisms.calls.user_call.call_user_code`).
    first_seconds : float, optional
        Seconds a database took in the function's first call (:meth:`PufferfishFramework.probed`): where no
        ``timeout`` is given, each later call is bounded by a multiple of them
        (:func:`~mechanisms.calls.later_bound.later_call_bound`). Default: not timed, no bound.
    """

    name: str
    function: Callable
    always_discrete: bool = False
    timeout: float | None = None
    first_seconds: float | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"argument 'name' must be a non-empty string, got {self.name!r}")
        if not callable(self.function):
            raise InputError(f"argument 'function' of {self.name!r} must be callable")
        _check_flag(self.always_discrete, "always_discrete")
        if self.timeout is not None:
            object.__setattr__(self, "timeout", check_positive(self.timeout, "timeout"))
        if self.first_seconds is not None:
            object.__setattr__(self, "first_seconds", check_nonnegative(self.first_seconds, "first_seconds"))

    def __call__(self, dbs) -> np.ndarray:
        """Evaluate on a batch; raise :class:`~mechanisms.base.MechanismError` naming the function
        when it raises, calls ``sys.exit``, outlives ``timeout`` (else the bound ``first_seconds`` sets) or its
        result is not a finite numeric (m, d) array."""
        batch = as_database_batch(dbs)
        who = f"secret function '{self.name}'"
        where = f" on a batch of {batch.shape[0]} databases"
        timeout, hint = later_call_bound(self.timeout, self.first_seconds, batch.shape[0], each="call", per="database")
        try:
            values = call_user_code(self.function, (batch,), who=who, timeout=timeout, where=where, hint=hint)
        except Exception as exc:  # noqa: BLE001 - a user's function may raise anything
            if isinstance(exc, MechanismError) and str(exc).startswith(who):  # out of time or sys.exit: named
                raise
            raise MechanismError(f"{who} raised {type(exc).__name__}{where}: {exc}", mechanism=who) from exc
        return check_batch_output(values, batch.shape[0], who)

    def is_discrete(self, prior: Prior) -> bool:
        """Whether the values are discrete under ``prior`` (a function of a discrete X is discrete)."""
        return self.always_discrete or prior.discrete


@dataclass(frozen=True, eq=False)
class SecretPair:
    """An edge g ~ w of the bipartite graph (w is ``None`` when there is no public information).

    Parameters
    ----------
    g : SecretFunction
        The private function.
    w : SecretFunction or None
        The public function the adversary knows.
    independence : {"always", "rows", "columns", "unknown"}
        The rule that says when g(X) and w(X) are independent (see :data:`INDEPENDENCE_RULES`).
    """

    g: SecretFunction
    w: SecretFunction | None
    independence: str = "unknown"

    def __post_init__(self):
        if not isinstance(self.g, SecretFunction) or not (self.w is None or isinstance(self.w, SecretFunction)):
            raise InputError("arguments 'g' and 'w' must be SecretFunction objects (w may be None)")
        check_choice(self.independence, "independence", INDEPENDENCE_RULES)
        if self.w is None and self.independence != "always":
            object.__setattr__(self, "independence", "always")

    @property
    def name(self) -> str:
        return self.g.name if self.w is None else f"{self.g.name} ~ {self.w.name}"

    def evaluate(self, dbs) -> tuple[np.ndarray, np.ndarray | None]:
        """``(g(dbs), w(dbs))`` with shapes ``(m, dg)`` and ``(m, dw)`` (``None`` without w)."""
        return self.g(dbs), (None if self.w is None else self.w(dbs))

    def g_w_independent(self, prior: Prior) -> bool:
        """True when g(X) and w(X) are guaranteed independent under ``prior``; False when not guaranteed."""
        if self.independence == "always":
            return True
        if self.independence == "rows":
            return bool(prior.independent_rows)
        if self.independence == "columns":
            return bool(prior.independent_columns)
        return False

    def w_discrete(self, prior: Prior) -> bool:
        """Whether w(X) is discrete under ``prior`` (True without w: nothing to condition on)."""
        return self.w is None or self.w.is_discrete(prior)

    def strategy(self, prior: Prior) -> str:
        """How the pair can be audited under ``prior`` (DESIGN.md, "The statistical core").

        ``"certify"`` when g(X) ⟂ w(X) (I(g; M | w) = I(g; M, w) ≥ any certified bound on the
        latter), ``"stratify"`` when w(X) is discrete (condition on each value exactly),
        else ``"estimate-only"`` (chain rule I(g; M, w) − I(g; w), no certificate).
        """
        if self.g_w_independent(prior):
            return "certify"
        if self.w_discrete(prior):
            return "stratify"
        return "estimate-only"


@dataclass(frozen=True, eq=False)
class PufferfishFramework:
    """A structured Pufferfish framework (G, W, E, Θ) of Definition 4.

    Parameters
    ----------
    name : str
        Readable name.
    private : sequence of SecretFunction
        G, the private functions.
    public : sequence of SecretFunction
        W, the public functions (may be empty).
    edges : sequence of SecretPair
        E, each pair joining a member of ``private`` with a member of ``public``; must be
        empty when ``public`` is.
    priors : sequence of Prior
        Θ (may be empty: the audit then supplies the prior).
    shape : (int, int), optional
        The database shape ``(n, k)`` the functions apply to; every prior must have it.
    description : str
        What the framework protects, in words.
    """

    name: str
    private: tuple
    public: tuple = ()
    edges: tuple = ()
    priors: tuple = ()
    shape: tuple | None = None
    description: str = ""

    def __post_init__(self):
        private, public, edges, priors = (tuple(v) for v in (self.private, self.public, self.edges, self.priors))
        if not private or not all(isinstance(g, SecretFunction) for g in private):
            raise InputError("argument 'private' must be a non-empty sequence of SecretFunction objects")
        if not all(isinstance(w, SecretFunction) for w in public):
            raise InputError("argument 'public' must hold SecretFunction objects")
        if not all(isinstance(e, SecretPair) for e in edges):
            raise InputError("argument 'edges' must hold SecretPair objects")
        if not public and edges:
            raise InputError("argument 'edges' must be empty when there are no public functions")
        # Membership by identity through id sets: one pass over the edges, not edges × functions
        # (a DP framework on n records has n edges; the nested scan was O(n²) set-up).
        private_ids, public_ids = {id(g) for g in private}, {id(w) for w in public}
        for edge in edges:
            if edge.w is None or id(edge.g) not in private_ids or id(edge.w) not in public_ids:
                raise InputError(f"argument 'edges': {edge.name!r} must join a member of 'private' "
                                 "with a member of 'public'")
        if not all(isinstance(p, Prior) for p in priors):
            raise InputError("argument 'priors' must hold Prior objects")
        shape = self.shape
        if shape is not None:
            shape = (check_int(shape[0], "shape[0] (n)", 1), check_int(shape[1], "shape[1] (k)", 1))
        for index, prior in enumerate(priors):
            if shape is not None and prior.shape != shape:
                raise InputError(f"argument 'priors': prior {index} has shape {prior.shape}, "
                                 f"the framework needs {shape}")
            shape = prior.shape if shape is None else shape
        for field_name, value in (("private", private), ("public", public), ("edges", edges),
                                  ("priors", priors), ("shape", shape)):
            object.__setattr__(self, field_name, value)

    @property
    def secret_pairs(self) -> tuple:
        """The secrets to audit: the edges, or every g alone when W = E = ∅ (Remark 2 part 2)."""
        if self.public:
            return self.edges
        return tuple(SecretPair(g, None, "always") for g in self.private)

    def secrets_words(self, priors: int) -> str:
        """What an ε-MI PP claim audited on this framework with ``priors`` declared priors is stated over, in words:
        every secret pair g ~ w and every prior in Θ (Definition 5 takes the supremum over both), e.g.
        ``"attribute 0, under the declared prior"``; the first 3 pairs by name, then how many more."""
        names = [pair.name for pair in self.secret_pairs]
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        return f"{shown}, under " + ("the declared prior" if priors == 1 else f"each of the {priors} declared priors")

    def with_priors(self, *priors: Prior) -> "PufferfishFramework":
        """The same (G, W, E) with Θ replaced by ``priors``."""
        return dataclasses.replace(self, priors=priors)

    def with_timeout(self, seconds: float | None) -> "PufferfishFramework":
        """The same framework with every call of every g and w bounded by ``seconds`` (None: no limit but the one
        their ``first_seconds`` sets)."""
        return self._with_functions(lambda f: dataclasses.replace(f, timeout=seconds))

    def probed(self, dbs, timeout: float) -> "PufferfishFramework":
        """Every g and w of the secret pairs called on ``dbs``, each call bounded by ``timeout`` (a first call's
        bound), in the order the audit calls them (g then w, pair by pair); the same framework with each function's
        seconds a database in its slower call (:attr:`SecretFunction.first_seconds`), which bound its later calls
        where no ``timeout`` is given. A function that raises, hangs or returns a wrong shape is named now."""
        seconds = {}
        for pair in self.secret_pairs:
            for function in (pair.g, pair.w):
                if function is not None:
                    started = time.perf_counter()
                    dataclasses.replace(function, timeout=timeout)(dbs)
                    taken = (time.perf_counter() - started) / len(dbs)
                    seconds[id(function)] = max(seconds.get(id(function), 0.0), taken)
        return self._with_functions(lambda f: dataclasses.replace(f, first_seconds=seconds.get(id(f), f.first_seconds)))

    def _with_functions(self, change) -> "PufferfishFramework":
        """The same framework with every g and w replaced by ``change(function)``, the edges joining the new ones."""
        changed = {id(f): change(f) for f in self.private + self.public}
        edges = tuple(SecretPair(changed[id(e.g)], changed[id(e.w)], e.independence) for e in self.edges)
        return dataclasses.replace(self, private=tuple(changed[id(g)] for g in self.private),
                                   public=tuple(changed[id(w)] for w in self.public), edges=edges)

    def strategies(self) -> list[dict]:
        """For every secret pair and prior in Θ: independence, discreteness of w, and the strategy."""
        return [{
            "secret": pair.name,
            "prior": index,
            "g_w_independent": pair.g_w_independent(prior),
            "w_discrete": pair.w_discrete(prior),
            "strategy": pair.strategy(prior),
        } for index, prior in enumerate(self.priors) for pair in self.secret_pairs]

    def to_dict(self) -> dict:
        """A JSON-ready summary of the framework."""
        # Not the field walk of estimators.result_forms: secrets are named, not walked, and
        # the strategies are computed.
        return {
            "name": self.name,
            "description": self.description,
            "shape": None if self.shape is None else list(self.shape),
            "private": [g.name for g in self.private],
            "public": [w.name for w in self.public],
            "edges": [[e.g.name, e.w.name] for e in self.edges],
            "priors": [p.to_dict() for p in self.priors],
            "strategies": self.strategies(),
        }


# ----------------------------------------------------------------- function objects
# Small picklable callables (rather than closures) so frameworks survive worker processes.


@dataclass(frozen=True)
class _Record:
    index: int

    def __call__(self, dbs: np.ndarray) -> np.ndarray:
        return dbs[:, self.index, :]


@dataclass(frozen=True)
class _OtherRecords:
    index: int

    def __call__(self, dbs: np.ndarray) -> np.ndarray:
        return np.delete(dbs, self.index, axis=1).reshape(dbs.shape[0], -1)


def leaves_out_record(function, record) -> bool:
    """Whether the secret function ``function`` is DP's public part of ``record``, the other records
    (:func:`differential_privacy`): its values hold none of that record's, the same bits whatever value it takes."""
    return (isinstance(function, SecretFunction) and isinstance(function.function, _OtherRecords)
            and function.function.index == record)


@dataclass(frozen=True)
class _ColumnStatistic:
    index: int
    statistic: Callable | None

    def __call__(self, dbs: np.ndarray) -> np.ndarray:
        column = dbs[:, :, self.index]
        return column if self.statistic is None else self.statistic(column)


@dataclass(frozen=True)
class _OtherColumns:
    index: int

    def __call__(self, dbs: np.ndarray) -> np.ndarray:
        return np.delete(dbs, self.index, axis=2).reshape(dbs.shape[0], -1)


def _shape(n, k) -> tuple[int, int]:
    return check_int(n, "n", 1), check_int(k, "k", 1)


def differential_privacy(n: int, k: int, priors=()) -> PufferfishFramework:
    """DP as a structured framework (Remark 2 part 1, Fig. 2 of the Pufferfish paper).

    g_i(x) = x(i, ·) (record i, shape ``(m, k)``), w_i(x) = (x(j, ·))_{j ≠ i} (the other
    records flattened, shape ``(m, (n-1) k)``), E = {{g_i, w_i}}. With Θ = all distributions
    ε-MI PP is ε-MI DP (Definition 2). g_i and w_i are independent under a prior with
    independent rows. With ``n = 1`` there are no other records: W = E = ∅.
    """
    n, k = _shape(n, k)
    private = tuple(SecretFunction(f"record {i}", _Record(i)) for i in range(n))
    public = tuple(SecretFunction(f"records except {i}", _OtherRecords(i)) for i in range(n)) if n > 1 else ()
    edges = tuple(SecretPair(g, w, "rows") for g, w in zip(private, public))
    return PufferfishFramework("differential privacy", private, public, edges, tuple(priors), (n, k),
                               "each record hidden from an adversary who knows all other records "
                               "(Remark 2 part 1)")


def attribute_privacy(n: int, k: int, *, statistic: Callable | None = None, public_rest: bool = False,
                      statistic_discrete: bool = False, priors=()) -> PufferfishFramework:
    """Attribute privacy (AP) as a structured framework (Remark 2 part 2 of the Pufferfish paper).

    g_j(x) = g̃_j(x(·, j)) for each column j. Without public information W = E = ∅ (the
    secrets are the g_j alone); with ``public_rest=True``, w_j(x) = (x(·, i))_{i ≠ j} (the
    other columns, shape ``(m, n (k-1))``) and E = {{g_j, w_j}}; g_j and w_j are then
    independent under a prior with independent columns.

    Parameters
    ----------
    n, k : int
        Database shape.
    statistic : callable, optional
        g̃, mapping a column batch ``(m, n)`` to ``(m, d)``. Default: the whole column
        (hiding it hides every statistic of it, by data processing).
    public_rest : bool
        Give the adversary the other columns (needs k >= 2).
    statistic_discrete : bool
        g̃ takes finitely many values whatever the prior.
    priors : sequence of Prior
        Θ.
    """
    n, k = _shape(n, k)
    _check_flag(public_rest, "public_rest")
    _check_flag(statistic_discrete, "statistic_discrete")
    if public_rest and k < 2:
        raise InputError("argument 'public_rest' needs k >= 2 columns (the public part is the other columns)")
    if statistic is not None and not callable(statistic):
        raise InputError("argument 'statistic' must be callable")
    private = tuple(SecretFunction(f"attribute {j}", _ColumnStatistic(j, statistic), statistic_discrete)
                    for j in range(k))
    public = tuple(SecretFunction(f"attributes except {j}", _OtherColumns(j)) for j in range(k)) if public_rest else ()
    edges = tuple(SecretPair(g, w, "columns") for g, w in zip(private, public))
    what = "with the other attributes public" if public_rest else "with no public information"
    return PufferfishFramework("attribute privacy" + (" with public rest" if public_rest else ""),
                               private, public, edges, tuple(priors), (n, k),
                               f"each attribute (column) hidden, {what} (Remark 2 part 2)")


#: Column of the 2022 and of the 2023 salary in the salary example's databases.
SALARY_2022, SALARY_2023 = 0, 1


@dataclass(frozen=True)
class _MoreRaisesThan:
    threshold: int

    def __call__(self, dbs: np.ndarray) -> np.ndarray:
        raises = (dbs[:, :, SALARY_2022] < dbs[:, :, SALARY_2023]).sum(axis=1)
        return (raises > self.threshold).astype(np.float64)[:, None]


def _mean_salary_2022(dbs: np.ndarray) -> np.ndarray:
    return dbs[:, :, SALARY_2022].mean(axis=1, keepdims=True)


def salary_query(dbs) -> np.ndarray:
    """The published query of the salary example: f(x) = (1/n) Σ_i x(i, 2023), shape ``(m, 1)``."""
    batch = as_database_batch(dbs)
    if batch.shape[2] != 2:
        raise InputError(f"argument 'dbs' must have k = 2 columns (2022, 2023 salaries), got {batch.shape[2]}")
    return batch[:, :, SALARY_2023].mean(axis=1, keepdims=True)


def salary_example(n: int = 4, threshold: int = 2, priors=()) -> PufferfishFramework:
    """The salary example of Section I-A and Fig. 1 of the Pufferfish paper, as a framework.

    A database is one department: ``n`` employees (records) with k = 2 attributes, the
    2022 salary (column 0) and the 2023 salary (column 1). The company publishes the
    average 2023 salary (:func:`salary_query`, plus noise) and must hide

    - g(x) = 1{|{i : x(i, 2022) < x(i, 2023)}| > threshold}, whether more than
      ``threshold`` employees got a raise (discrete by construction),

    from an adversary who knows

    - w(x) = (1/n) Σ_i x(i, 2022), the average 2022 salary (public knowledge).

    G = {g}, W = {w}, E = {{g, w}}. Fig. 1 has n = 4 and threshold m = 2: there HR and IT
    have g = 1, PR and R&D have g = 0, and only g⁻¹(0) and g⁻¹(1) need be indistinguishable
    rather than every pair of departments with different g (as a DP formulation would ask).
    Whether g(X) and w(X) are independent depends on how salaries are modelled, so the
    pair declares it unknown: the audit stratifies on w when the prior is discrete and
    otherwise only estimates.
    """
    n = check_int(n, "n", 1)
    threshold = check_int(threshold, "threshold", 0)
    if threshold >= n:
        raise InputError(f"argument 'threshold' must be < n = {n} (else g is always 0)")
    g = SecretFunction(f"more than {threshold} raises", _MoreRaisesThan(threshold), always_discrete=True)
    w = SecretFunction("average 2022 salary", _mean_salary_2022)
    return PufferfishFramework("salary example (Fig. 1)", (g,), (w,), (SecretPair(g, w, "unknown"),),
                               tuple(priors), (n, 2),
                               "whether more than the threshold number of employees got a raise, hidden "
                               "from an adversary who knows the average 2022 salary (Section I-A, Fig. 1)")
