"""The SmartNoise SQL scan profile: its listing, grid, claims, pairs and call source, on stand-ins for ``snsql`` and
``pandas`` shaped as the profile calls them (snsql is not in the test environment), and on snsql itself where it is
installed (its own venv: ``miaudit experiment scans``)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from mechanisms.inputs.relation import ADD_REMOVE

from audit.scan.cases import build_cases, discover
from audit.scan.profiles import LIBRARIES, profile_for
from audit.scan.profiles.smartnoise_sql import PROFILE, PrivateQuery


class _Frame:
    """pandas.DataFrame as the preamble builds it: a dict of columns."""

    def __init__(self, columns):
        self.columns = {name: list(values) for name, values in columns.items()}


class _Privacy:
    def __init__(self, *ignore, epsilon=1.0, delta=10e-16):
        self.epsilon, self.delta = epsilon, delta


class _Reader:
    """A PrivateReader without noise: ``execute`` returns the exact aggregates, the column names first; its
    ``get_privacy_cost`` returns a cost that tells the query, the ε and the δ it was given apart."""

    def __init__(self, frame, privacy, metadata):
        self.frame, self.privacy, self.metadata = frame, privacy, metadata

    def execute(self, sql):
        groups, values = self.frame.columns["g"], self.frame.columns["v"]
        if "GROUP BY g" in sql:
            return [["g", "n"]] + [[g, groups.count(g)] for g in sorted(set(groups))]
        return [["s"], [sum(values)]] if "SUM" in sql else [["n"], [len(values)]]

    def get_privacy_cost(self, sql):
        if "AVG" in sql:
            return 2 * self.privacy.epsilon, 0.0
        return self.privacy.epsilon, self.privacy.delta / 2


@pytest.fixture
def fake_snsql(monkeypatch):
    """``snsql`` (``from_df``, ``from_connection``, ``Privacy`` in its ``__all__``) and ``pandas`` stand-ins; the
    readers ``from_df`` built are in ``module.readers``."""
    module = types.ModuleType("snsql")
    module.readers = []

    def from_df(df, *ignore, privacy, metadata, **kwargs):
        module.readers.append(_Reader(df, privacy, metadata))
        return module.readers[-1]

    def from_connection(conn, *ignore, privacy, metadata, engine=None, **kwargs):
        return from_df(conn, privacy=privacy, metadata=metadata)

    for function in (from_df, from_connection, _Privacy):
        function.__module__ = "snsql.connect"
    module.from_df, module.from_connection, module.Privacy = from_df, from_connection, _Privacy
    module.__all__ = ["from_connection", "from_df", "Privacy"]
    monkeypatch.setitem(sys.modules, "snsql", module)
    monkeypatch.setitem(sys.modules, "pandas", types.SimpleNamespace(DataFrame=_Frame))
    return module


def _cases(epsilons=(0.1, 1.0, 4.0)):
    entries, skipped = discover(PROFILE)
    cases, unbuilt = build_cases(entries, epsilons)
    return entries, skipped, cases, unbuilt


def test_the_profile_is_listed_and_lists_from_df_alone(fake_snsql):
    assert LIBRARIES["smartnoise-sql"] == "audit.scan.profiles.smartnoise_sql"
    assert profile_for("smartnoise-sql").distribution == "smartnoise-sql"
    entries, skipped, cases, unbuilt = _cases()
    # Privacy is the parameters' object (excluded); from_connection takes no ε: neither is an entry point
    assert [e.qualified for e in entries] == ["snsql.from_df"] and not skipped and not unbuilt
    assert isinstance(entries[0].family, PrivateQuery)


def test_the_grid_is_each_query_at_epsilon_1_and_the_claim_is_snsqls_cost(fake_snsql):
    *_, cases, _ = _cases()
    rows = [(c.settings["sql"], c.pair.family, c.claim, c.relation) for c in cases]
    count, total = "SELECT COUNT(*) AS n FROM S.T", "SELECT SUM(v) AS s FROM S.T"
    grouped = "SELECT g, COUNT(*) AS n FROM S.T GROUP BY g"
    # the stand-in's cost: (ε, δ/2), AVG (2ε, 0); the grid's ε is 1 alone, δ 1e-6 but 0.05 for the censored GROUP BY
    assert rows == [(count, "removed", "dp:1.0:5e-07", ADD_REMOVE),
                    (total, "ends", "dp:1.0:5e-07", ADD_REMOVE),
                    (total, "beyond", "dp:1.0:5e-07", ADD_REMOVE),
                    (total, "removed", "dp:1.0:5e-07", ADD_REMOVE),
                    ("SELECT AVG(v) AS a FROM S.T", "removed", "dp:2.0", ADD_REMOVE),
                    ("SELECT VAR(v) AS var_v FROM S.T", "removed", "dp:1.0:5e-07", ADD_REMOVE),
                    (grouped, "removed", "dp:1.0:0.025", ADD_REMOVE),
                    (total, "removed user", "dp:1.0:5e-07", "add-remove:3"),
                    (grouped, "removed", "dp:1.0:5e-07", ADD_REMOVE)]
    assert [c.settings["epsilon"] for c in cases] == [1.0] * 9
    assert cases[6].settings == {"sql": grouped, "censor_dims": True, "epsilon": 1.0, "delta": 0.05}
    assert cases[7].source == ("query(db, sql='SELECT SUM(v) AS s FROM S.T', row_privacy=False, max_ids=2, "
                               "epsilon=1.0, delta=1e-06)")
    # a scan at other ε alone keeps them (the family's range keeps none of them)
    assert {c.settings["epsilon"] for c in _cases((0.5, 2.0))[2]} == {0.5, 2.0}


def test_the_pairs_move_clamp_and_remove_a_record_and_an_individual(fake_snsql):
    *_, cases, _ = _cases((1.0,))
    by_pair = {c.pair.family: c.pair for c in cases if c.settings["sql"] == "SELECT SUM(v) AS s FROM S.T"}
    assert set(by_pair) == {"ends", "beyond", "removed", "removed user"}
    np.testing.assert_array_equal(by_pair["ends"].first, [[0, 0, 0], [1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(by_pair["ends"].second, [[0, 0, 10], [1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(by_pair["beyond"].second, [[0, 0, 110], [1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(by_pair["removed"].first, [[0, 1, 10], [1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(by_pair["removed"].second, [[1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(by_pair["removed user"].first,
                                  [[0, 0, 10], [0, 0, 10], [0, 0, 10], [1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(by_pair["removed user"].second, [[1, 0, 0], [2, 0, 0]])
    assert by_pair["removed"].relation == ADD_REMOVE and by_pair["removed user"].relation == "add-remove:3"


def test_a_call_builds_the_reader_from_the_records_and_releases_each_groups_row(fake_snsql):
    *_, cases, _ = _cases((1.0,))
    rng = np.random.default_rng(0)
    removed = next(c for c in cases if c.settings["sql"] == "SELECT SUM(v) AS s FROM S.T"
                   and c.pair.family == "removed")
    assert removed.function()(removed.pair.first, rng) == {0: [10.0]}
    reader = fake_snsql.readers[-1]
    assert reader.frame.columns == {"user": [0, 1, 2], "g": [1, 0, 0], "v": [10.0, 0.0, 0.0]}
    assert (reader.privacy.epsilon, reader.privacy.delta) == (1.0, 1e-6)
    table = reader.metadata["Db"]["S"]["T"]
    assert table == {"row_privacy": True, "max_ids": 1, "censor_dims": False, "use_dpsu": False,
                     "g": {"type": "int"}, "v": {"type": "float", "lower": 0.0, "upper": 10.0}}
    grouped = next(c for c in cases if c.settings.get("censor_dims") and not c.settings.get("use_dpsu"))
    assert grouped.function()(grouped.pair.first, rng) == {0: [2.0], 1: [1.0]}
    assert fake_snsql.readers[-1].metadata["Db"]["S"]["T"]["censor_dims"] is True
    user = next(c for c in cases if c.pair.family == "removed user")
    assert user.function()(user.pair.first, rng) == {0: [30.0]}
    table = fake_snsql.readers[-1].metadata["Db"]["S"]["T"]
    assert (table["row_privacy"], table["max_ids"], table["user"]) == (False, 2, {"type": "int", "private_id": True})


def test_on_snsql_the_claim_is_its_odometers_composition():
    """Where snsql is installed: the claims are Kairouz, Oh and Viswanath's composition as snsql's odometer
    writes it (``snsql/sql/odometer.py``), each noisy aggregate at the Privacy's ε: k·ε, and δ = 1 − (1 − δ/2)
    ∏(1 − δᵢ), δᵢ the Privacy's δ for the count of individuals (COUNT(*) under row_privacy), else 0."""
    pytest.importorskip("snsql")
    *_, cases, _ = _cases((1.0,))
    by_sql = {c.settings["sql"]: c.claim for c in cases if len(c.settings) == 3}  # the queries without options
    half = 1e-6 / 2
    # COUNT(*) under row_privacy is the count of individuals: its mechanism carries the Privacy's δ, censored or not
    epsilon, delta = (float(v) for v in by_sql["SELECT COUNT(*) AS n FROM S.T"][3:].split(":"))
    assert epsilon == 1.0 and delta == pytest.approx(1 - (1 - half) * (1 - 1e-6), rel=1e-9)
    epsilon, delta = (float(v) for v in by_sql["SELECT AVG(v) AS a FROM S.T"][3:].split(":"))
    assert epsilon == 2.0 and delta == pytest.approx(half, rel=1e-9)  # SUM and COUNT
    epsilon, delta = (float(v) for v in by_sql["SELECT VAR(v) AS var_v FROM S.T"][3:].split(":"))
    assert epsilon == 3.0 and delta == pytest.approx(half, rel=1e-9)  # SUM of squares, SUM, COUNT
    censored = next(c for c in cases if c.settings.get("censor_dims") and not c.settings.get("use_dpsu"))
    epsilon, delta = (float(v) for v in censored.claim[3:].split(":"))
    assert epsilon == 1.0 and delta == pytest.approx(1 - (1 - 0.025) * (1 - 0.05), rel=1e-9)
    released = censored.function()(censored.pair.first, np.random.default_rng(0))
    assert set(released) <= {0, 1} and all(len(v) == 1 for v in released.values())
