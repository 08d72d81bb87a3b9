"""The profile of SmartNoise SQL (``smartnoise-sql`` 1.0, module ``snsql``): one private reader's ``execute`` per query.

SmartNoise SQL answers SQL queries over a table with noise: ``snsql.from_df(df, privacy=snsql.Privacy(epsilon=…,
delta=…), metadata=…)`` builds a ``PrivateReader`` over a pandas DataFrame (its SQL runs in SQLite), and
``reader.execute("SELECT …")`` returns the rows, the column names first. The metadata bounds each numeric column
(``lower``, ``upper``) and says who a record belongs to: ``row_privacy`` (each row its own individual) or a
``private_id`` column with at most ``max_ids`` rows kept per individual; ``censor_dims`` drops a group whose noisy
count of individuals is below a threshold (on by default). The family :class:`PrivateQuery` calls it through one
helper the profile's preamble defines, ``query(db, sql=…, …)``: ``db``'s records are (user, group, value), the table
``S.T`` has the columns ``g`` (the group, an int) and ``v`` (the value, a float in [0, 10]), and the release is
``{group: [the row's aggregates]}`` (group 0 for a query without ``GROUP BY``; a censored group is absent).

**The claim** of one ``execute`` is what snsql says that query spends, ``reader.get_privacy_cost(sql)``
(``snsql/sql/private_reader.py``, ``get_privacy_cost``; ``_execute_ast`` spends the same mechanisms on the reader's
odometer as it returns). ``Privacy``'s ε is "the epsilon value for each statistic" (``snsql/sql/privacy.py``): every
noisy aggregate of the rewritten query (a SUM, a COUNT, the count of individuals a censored query thresholds on)
gets all of it, AVG is a noisy SUM over a noisy COUNT (2 mechanisms), VAR three; the cost composes them with
``OdometerHeterogeneous`` (``snsql/sql/odometer.py``: the smallest of k·ε and Kairouz, Oh and Viswanath 2015,
Theorem 3.5's two bounds; δ = 1 − (1 − δ/2) ∏(1 − δᵢ), δᵢ the Privacy's δ for the count of individuals, COUNT(*)
under ``row_privacy``, censored or not, else 0). At ε = 1, δ = 10⁻⁶ a SUM claims (1, 5·10⁻⁷), a COUNT(*)
(1, 1.5·10⁻⁶), an AVG (2, 5·10⁻⁷). It is stated for one individual added or removed (the sensitivities are the
add/remove ones: 1 for a count, max(|lower|, |upper|) for a sum, times ``max_ids``): the ``removed`` pairs are audited at it, the replace-one
pairs (``ends``; ``beyond`` the bounds: snsql clamps in the SQL it runs) at its group-privacy form.

**The grid**: COUNT(*), SUM(v), AVG(v) and VAR(v) over every row (``row_privacy``, ``censor_dims`` off: one group,
whose presence is no secret); the censored ``SELECT g, COUNT(*) … GROUP BY g`` (the default ``censor_dims``); SUM(v)
with a ``private_id`` column and ``max_ids`` = 2 (each individual's rows sampled down to 2 in SQL); and the
same censored GROUP BY with ``use_dpsu`` (a private set union choosing the groups first), each at δ = 10⁻⁶ and at the
scan's ε up to :attr:`PrivateQuery.max_epsilon`. A call costs 0.1–0.2 s (each aggregate's noise scale is found by
OpenDP's binary search at each ``execute``), so the replace-one pairs are kept for SUM alone (for the others the
``removed`` pair, at ε where the replace-one pairs are audited at 2ε, is the sharper test) and the grid stops at ε = 1
(at ε = 4 a claim of 4, or 8 on a replace-one pair, is beyond the runs a case gets). Left out: the Gaussian mechanism
(``privacy.mechanisms.map``), 1.3 s a call; aggregates over expressions, which snsql refuses ("We don't support
aggregation over expressions").

snsql draws its noise from OpenDP's own generator (``make_laplace``), which takes no seed; its per-individual sampling
from SQLite's ``RANDOM()`` and its set union from ``random.SystemRandom``: no run can be seeded (the family's
``seeded = False``), so a case's runs cannot be reproduced from the scan's seed; its verdict, within α, can. The
notes that a case draws from NumPy's global generator are of ``np.random.choice`` naming the output columns' bindings
in ``PrivateReader._execute_ast``, which adds no noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mechanisms.inputs.relation import ADD_REMOVE

from audit.scan.profiles.base import EPSILONS, Family, Profile, _public_function

#: The helpers every call source uses (``entry`` is ``snsql.from_df``): the reader over ``db``'s records, one query
#: through it, and the cost snsql states for that query (the claim).
PRELUDE = '''import pandas as pd
import snsql


def reader(db, *, epsilon, delta, row_privacy=True, max_ids=1, censor_dims=False, use_dpsu=False):
    """snsql's private reader over db's records (user, group, value): the table S.T of columns g (int) and v in [0, 10]."""
    table = {"row_privacy": row_privacy, "max_ids": max_ids, "censor_dims": censor_dims, "use_dpsu": use_dpsu,
             "g": {"type": "int"}, "v": {"type": "float", "lower": 0.0, "upper": 10.0}}
    if not row_privacy:
        table["user"] = {"type": "int", "private_id": True}
    frame = pd.DataFrame({"user": np.asarray(db[:, 0], dtype=int), "g": np.asarray(db[:, 1], dtype=int),
                          "v": np.asarray(db[:, 2], dtype=float)})
    return entry(frame, privacy=snsql.Privacy(epsilon=epsilon, delta=delta), metadata={"Db": {"S": {"T": table}}})


def query(db, *, sql, **settings):
    """One execute of sql: {group: [the row's other columns]}, group 0 for a query without GROUP BY."""
    header, *rows = reader(db, **settings).execute(sql)
    grouped = header[0] == "g"
    return {(int(row[0]) if grouped else 0): [float(value) for value in row[grouped:]] for row in rows}


def privacy_cost(*, sql, **settings):
    """(epsilon, delta) snsql says one execute of sql spends: PrivateReader.get_privacy_cost."""
    return reader(np.zeros((0, 3)), **settings).get_privacy_cost(sql)'''

#: Runs per case: the fewest with which every case's audit has a look that can refute, 400 samples with the float-bit
#: event test's runs (2,000), plus the float-bit probe's 64 runs (the VAR case needed 2,064 at the seed-0 scan); a
#: call takes 0.1-0.2 s, so a case takes 3-6 minutes on a loaded 2-core machine.
LIBRARY_MAX_RUNS = 2100
#: The δ the censored GROUP BY gives ``Privacy``, which its threshold is set by: a group of one individual is released
#: with probability δ, which a few thousand runs can see exceeded (as :data:`audit.scan.profiles.opendp.DELTAS`' 0.05);
#: the other queries are given 10⁻⁶.
CENSOR_DELTA = 0.05
_COUNT_ROWS = "SELECT COUNT(*) AS n FROM S.T"
_GROUPED_COUNT = "SELECT g, COUNT(*) AS n FROM S.T GROUP BY g"


@dataclass(frozen=True)
class Query:
    """One grid row: the SQL, the metadata's table options (beyond :data:`PRELUDE`'s defaults) and its pairs."""

    sql: str
    options: tuple = ()
    pairs: tuple = ("removed",)
    delta: float = 1e-6


def _recipes() -> tuple:
    return (Query(_COUNT_ROWS),
            Query("SELECT SUM(v) AS s FROM S.T", pairs=("ends", "beyond", "removed")),
            Query("SELECT AVG(v) AS a FROM S.T"),
            Query("SELECT VAR(v) AS var_v FROM S.T"),
            Query(_GROUPED_COUNT, (("censor_dims", True),), delta=CENSOR_DELTA),
            Query("SELECT SUM(v) AS s FROM S.T", (("row_privacy", False), ("max_ids", 2)), ("removed user",)),
            Query(_GROUPED_COUNT, (("row_privacy", False), ("censor_dims", True), ("use_dpsu", True))))


@dataclass(frozen=True)
class PrivateQuery(Family):
    """``snsql.from_df(…).execute(sql)`` through the preamble's ``query(db, sql=…, …)`` (module docstring).

    Parameters
    ----------
    recipes : tuple of Query
        The queries, their table options and their pairs.
    max_epsilon : float
        The grid keeps the scan's ε from ``min_epsilon`` to it (all of them where none is): ε = 1 alone by default.
    """

    recipes: tuple = field(default_factory=_recipes)
    min_epsilon: float = 1.0
    max_epsilon: float = 1.0
    bounds: tuple = (0.0, 10.0)
    relation: str = ADD_REMOVE
    kind = "private SQL query (PrivateReader.execute)"
    preamble = PRELUDE
    seeded = False

    def matches(self, obj) -> bool:
        return _public_function(obj) and getattr(obj, "__name__", "") == "from_df"

    def settings(self, obj, epsilons=EPSILONS) -> list:
        kept = [float(e) for e in epsilons if self.min_epsilon <= e <= self.max_epsilon] or [float(e) for e in epsilons]
        return [{"sql": recipe.sql, **dict(recipe.options), "epsilon": epsilon, "delta": recipe.delta}
                for recipe in self.recipes for epsilon in kept]

    def call_source(self, obj, settings: dict) -> str:
        return "query(db, " + ", ".join(f"{k}={v!r}" for k, v in settings.items()) + ")"

    def claim(self, obj, settings: dict) -> str:
        """snsql's own cost of the query, ``reader.get_privacy_cost(sql)`` (module docstring): ``dp:ε:δ``."""
        namespace = {"entry": obj, "np": np}
        exec(compile(PRELUDE, "<smartnoise-sql preamble>", "exec"), namespace)  # noqa: S102 - the profile's own text
        epsilon, delta = (float(v) for v in namespace["privacy_cost"](**settings))
        return f"dp:{epsilon!r}" + (f":{delta!r}" if delta > 0 else "")

    def database(self, values, labels=None) -> np.ndarray:
        """Records (user, group, value) from ``values`` given as such triples."""
        return np.asarray(values, dtype=np.float64).reshape(-1, 3)

    def _recipe(self, settings: dict) -> Query:
        options = tuple((k, v) for k, v in settings.items() if k not in ("sql", "epsilon", "delta"))
        return next(r for r in self.recipes if r.sql == settings["sql"] and tuple(r.options) == options)

    def pairs(self, obj, settings: dict) -> list:
        from audit.scan.cases import BEYOND_WIDTHS, PairSpec

        low, high = (float(v) for v in self.bounds)
        base = [(user, 0, low) for user in range(self.rows)]
        others = base[1:]
        made = {
            "ends": lambda: PairSpec("ends", self.database(base), self.database([(0, 0, high)] + others),
                                     f"record 0's value {low:g} vs {high:g}, the ends of [{low:g}, {high:g}]"),
            "beyond": lambda: PairSpec(
                "beyond", self.database(base),
                self.database([(0, 0, high + BEYOND_WIDTHS * (high - low))] + others),
                f"record 0's value {low:g} vs {high + BEYOND_WIDTHS * (high - low):g}, beyond the metadata's upper: "
                "snsql must clamp it"),
            "removed": lambda: PairSpec("removed", self.database([(0, 1, high)] + others), self.database(others),
                                        f"record 0 (value {high:g}, alone in group 1) present vs removed", ADD_REMOVE),
            "removed user": lambda: PairSpec(
                "removed user", self.database([(0, 0, high)] * 3 + others), self.database(others),
                f"individual 0 with 3 rows (value {high:g}), one more than max_ids = 2, present vs removed",
                f"{ADD_REMOVE}:3")}
        return [made[name]() for name in self._recipe(settings).pairs]


PROFILE = Profile(
    name="smartnoise-sql",
    modules=("snsql",),
    families=(PrivateQuery(),),
    distribution="smartnoise-sql",
    exclude=("Privacy",),
    max_runs=LIBRARY_MAX_RUNS,
)
