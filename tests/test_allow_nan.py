"""Missing values with --allow-nan: pair files and priors holding NaN, the NaN reaching the mechanism, NaN outputs,
the declared domain's missing-value family, and a mechanism whose missing-value handling leaks
(mechanisms.inputs.missing_values)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from audit import AuditSpec, run_audit
from audit.config.building import build_spec
from audit.search.pair_families import domain_pair_families
from estimators.validation import InputError
from mechanisms.base import MechanismError, check_batch_output, released_outputs
from mechanisms.inputs.missing_values import distinct_rows, rows_differ
from mechanisms.inputs.pair_files import pair_from_files
from mechanisms.inputs.priors import ProductBernoulli
from mechanisms.inputs.user_priors import UserPrior

MECHANISMS = '''import numpy as np


def rescaled_sum(dbs, rng):
    """The present records' sum rescaled by n / (present records), Laplace(1) noise: NaN when none is present."""
    n = dbs.shape[1]
    present = (~np.isnan(dbs[:, :, 0])).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.nansum(dbs[:, :, 0], axis=1) * n / present
    return (scaled + rng.laplace(0.0, 1.0, len(dbs)))[:, None]


def zero_filled_sum(dbs, rng):
    """The sum with a missing value read as 0, Laplace(1) noise: 1-DP for records in [0, 1] or missing."""
    return (np.nansum(dbs[:, :, 0], axis=1) + rng.laplace(0.0, 1.0, len(dbs)))[:, None]
'''


def _files(tmp_path, first, second):
    np.save(tmp_path / "a.npy", np.asarray(first, dtype=float))
    np.save(tmp_path / "b.npy", np.asarray(second, dtype=float))
    (tmp_path / "mechanisms.py").write_text(MECHANISMS)
    return str(tmp_path / "a.npy"), str(tmp_path / "b.npy")


def _config(tmp_path, name, first, second, allow_nan=None):
    a, b = _files(tmp_path, first, second)
    audit = {"samples": 1000, "seed": 2, "arithmetic": "ideal"}
    if allow_nan is not None:
        audit["allow_nan"] = allow_nan
    return {"mechanism": {"spec": f"{tmp_path / 'mechanisms.py'}:{name}"}, "claim": {"spec": "dp:1"},
            "pairs": [{"first": a, "second": b}], "audit": audit}


def _one_present(value):
    """Ten records, all missing but record 0 (at ``value``), against all ten missing."""
    first = np.full((10, 1), np.nan)
    first[0] = value
    return first, np.full((10, 1), np.nan)


def _build(config):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_spec(config)


def test_a_pair_file_with_nan_is_refused_without_the_flag_naming_it_and_the_file(tmp_path):
    with pytest.raises(InputError, match=r"--pair.*a\.npy.*contains NaN.*--allow-nan"):
        _build(_config(tmp_path, "rescaled_sum", *_one_present(1.0)))
    a, b = _files(tmp_path, *_one_present(1.0))
    with pytest.raises(InputError, match="--allow-nan"):
        pair_from_files(a, b, "--pair")


def test_with_the_flag_the_pair_is_kept_as_given_and_the_runner_keeps_nan(tmp_path):
    spec = _build(_config(tmp_path, "rescaled_sum", *_one_present(1.0), allow_nan=True))
    assert spec.allow_nan and spec.execution.allow_nan
    (prior,) = spec.priors
    first, second = _one_present(1.0)
    assert np.array_equal(prior.first, first, equal_nan=True) and np.array_equal(prior.second, second, equal_nan=True)
    assert spec.records == (0,)  # the record that differs: NaN in the same place elsewhere is no difference


def test_infinity_is_refused_even_with_the_flag(tmp_path):
    first, second = np.zeros((3, 1)), np.zeros((3, 1))
    second[0] = np.inf
    with pytest.raises(InputError, match=r"--pair.*inf"):
        _build(_config(tmp_path, "rescaled_sum", first, second, allow_nan=True))


def test_the_flag_reaches_the_audit_table():
    from audit.cli.audit_command import _flag_config
    from audit.cli.main import build_parser

    argv = ["audit", "--mechanism", "m.py:f", "--allow-nan"]
    parser, _ = build_parser(argv)
    assert _flag_config(parser.parse_args(argv))["audit"]["allow_nan"] is True


def test_an_audit_spec_refuses_a_nan_pair_without_allow_nan():
    from mechanisms.inputs.neighbouring_pair import NeighbouringPair

    first, second = _one_present(1.0)
    pair = NeighbouringPair(first, second)
    prior = ProductBernoulli(0.5, shape=(10, 1))
    with pytest.raises(InputError, match="'pairs' holds NaN.*allow_nan=True"):
        AuditSpec(lambda dbs, rng: dbs.sum(axis=(1, 2))[:, None], prior, notion="mi-dp", epsilon=1.0, pairs=(pair,))


def test_a_prior_drawing_nan_is_refused_without_the_flag_and_kept_with_it():
    def with_missing(m, rng):
        values = rng.uniform(0.0, 1.0, (m, 4, 1))
        values[:, 0] = np.nan
        return values

    with pytest.raises(MechanismError, match="returned NaN or inf.*--allow-nan"):
        UserPrior(with_missing, label="with_missing")
    prior = UserPrior(with_missing, label="with_missing", allow_nan=True)
    draws = prior(5, np.random.default_rng(0))
    assert np.isnan(draws[:, 0]).all() and np.isfinite(draws[:, 1:]).all()


def test_nan_outputs_become_values_and_missing_marks():
    out = np.array([[1.5, np.nan], [np.nan, np.nan], [0.0, 2.0]])
    encoded = check_batch_output(out, 3, "mechanism 'm'", allow_nan=True)
    # Written out by hand: each column with NaN read as 0, then one mark, 1 · [column 0 missing] + 2 · [column 1].
    assert np.array_equal(encoded, [[1.5, 0, 2], [0, 0, 3], [0, 2, 0]])
    # Without the flag the error says how to audit a released NaN (it named no flag); an inf gets no such hint.
    with pytest.raises(MechanismError, match="returned NaN or inf for database 0; a NaN output .*--allow-nan"):
        check_batch_output(out, 3, "mechanism 'm'")
    with pytest.raises(MechanismError, match="returned NaN or inf for database 1$"):
        check_batch_output(np.array([[1.0], [np.inf]]), 2, "mechanism 'm'")
    # Six columns: two marks, the second for columns 4 and 5 only (binary 10: column 5 missing).
    six = np.array([[np.nan, 1.0, np.nan, np.nan, 4.0, np.nan]])
    assert check_batch_output(six, 1, "mechanism 'm'", allow_nan=True).tolist() == [[0, 1, 0, 0, 4, 0, 13, 2]]
    with pytest.raises(MechanismError, match="returned NaN or inf for database 1"):
        check_batch_output(np.array([[1.0], [np.inf]]), 2, "mechanism 'm'", allow_nan=True)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5, 8, 9, 63, 257])
def test_missing_marks_are_read_back_as_the_output_released(d):
    # Against a loop over the columns, one bit at a time: mark g = Σ_i 2^i [column 4g + i missing].
    rng = np.random.default_rng(d)
    out = rng.standard_normal((50, d))
    out[rng.random((50, d)) < 0.3] = np.nan
    encoded = check_batch_output(out, 50, "mechanism 'm'", allow_nan=True)
    marks = (d + 3) // 4
    assert encoded.shape == (50, d + marks)
    for g in range(marks):
        expected = sum(2.0 ** i * np.isnan(out[:, 4 * g + i]) for i in range(4) if 4 * g + i < d)
        assert np.array_equal(encoded[:, d + g], expected)
    assert np.array_equal(encoded[:, :d], np.nan_to_num(out, nan=0.0))
    assert np.array_equal(released_outputs(encoded), out, equal_nan=True)


def test_a_width_no_output_gives_is_refused_naming_the_rows():
    # d + ceil(d/4) for d = 1, 2, ...: 2, 3, 4, 5, 7, 8, 9, 10, 12, ...; 6 and 11 are no such width.
    widths = {d + -(-d // 4) for d in range(1, 20)}
    assert 6 not in widths and 11 not in widths
    for width in (1, 6, 11):
        with pytest.raises(InputError, match="'rows' has"):
            released_outputs(np.zeros((2, width)))


def test_a_mark_takes_few_enough_values_to_be_one_hot_encoded():
    # The classifier statistics one-hot encode a column of at most MAX_ONE_HOT_VALUES values: a mark's 2^4 values.
    from audit.statistics.classifier import MAX_ONE_HOT_VALUES
    from mechanisms.base import MISSING_MARK_COLUMNS

    assert 2 ** MISSING_MARK_COLUMNS <= MAX_ONE_HOT_VALUES


def test_rows_compare_with_a_missing_value_equal_to_itself():
    first = np.array([[np.nan, 1.0], [2.0, np.nan], [3.0, 3.0]])
    second = np.array([[np.nan, 1.0], [2.0, 5.0], [3.0, 3.0]])
    assert rows_differ(first, second).tolist() == [False, True, False]
    rows = np.array([[np.nan], [1.0], [np.nan], [0.0], [1.0]])
    assert np.array_equal(distinct_rows(rows), [[0.0], [1.0], [np.nan]], equal_nan=True)


def test_the_missing_value_family_comes_with_allow_nan_only():
    name = "missing value next to present ones"
    assert name not in [f.name for f in domain_pair_families((0.0, 1.0), 3, 2)]
    family = next(f for f in domain_pair_families((0.0, 1.0), 3, 2, allow_nan=True) if f.name == name)
    # Enumerated: record 0 missing vs at each end (the others there), present at each end among missing ones,
    # and each of the k = 2 attributes of record 0 missing alone.
    expected = []
    for end in (0.0, 1.0):
        first = np.full((3, 2), end)
        second = first.copy()
        second[0] = np.nan
        expected.append((first, second))
    for end in (0.0, 1.0):
        first = np.full((3, 2), np.nan)
        second = first.copy()
        second[0] = end
        expected.append((first, second))
    for column in range(2):
        first = np.zeros((3, 2))
        second = first.copy()
        second[0, column] = np.nan
        expected.append((first, second))
    assert len(family.pairs) == len(expected)
    for pair, (first, second) in zip(family.pairs, expected):
        assert np.array_equal(pair.first, first, equal_nan=True) and np.array_equal(pair.second, second, equal_nan=True)
    # Under add/remove: the record present against absent, its missing value kept.
    removed = next(f for f in domain_pair_families((0.0, 1.0), 3, 1, "add-remove", allow_nan=True) if f.name == name)
    assert all(p.first.shape == (3, 2) for p in removed.pairs)
    assert any(np.isnan(p.first[0, 0]) and p.first[0, 1] != p.second[0, 1] for p in removed.pairs)


@pytest.mark.train
def test_a_mechanism_that_rescales_by_the_present_count_is_refuted(tmp_path):
    # One present record at 1 among missing ones releases 10 + noise; all missing releases NaN: ε = ∞.
    result = run_audit(_build(_config(tmp_path, "rescaled_sum", *_one_present(1.0), allow_nan=True)))
    assert result.refuted
    assert result.dp_epsilon_lower_bound_event > 1.0


@pytest.mark.train
def test_reading_a_missing_value_as_zero_is_not_refuted_on_zero_vs_missing(tmp_path):
    # Record 0 at 0 vs missing: the zero-filled sum is the same law on both (ε = 0).
    result = run_audit(_build(_config(tmp_path, "zero_filled_sum", *_one_present(0.0), allow_nan=True)))
    assert not result.refuted


def test_a_user_statistic_reads_the_output_as_released_nan_and_all():
    from audit.statistics.user_statistic import UserStatistic, user_statistic_kind

    def is_missing(output):
        return float(np.isnan(output[0]))

    kind = user_statistic_kind(UserStatistic(is_missing, "is_missing"), missing=True)
    # Released outputs NaN, 3.0, NaN, as check_batch_output encodes them: values (0 where missing), marks.
    encoded = check_batch_output(np.array([[np.nan], [3.0], [np.nan]]), 3, "mechanism 'm'", allow_nan=True)
    assert kind.features(encoded).ravel().tolist() == [1.0, 0.0, 1.0]


def _rescaled_sum(dbs, rng):
    """The present records' sum rescaled by n / (present records) with Laplace(1) noise (NaN when none is present)."""
    present = (~np.isnan(dbs[:, :, 0])).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scaled = np.nansum(dbs[:, :, 0], axis=1) * dbs.shape[1] / present
    return (scaled + rng.laplace(0.0, 1.0, len(dbs)))[:, None]


def test_assert_claim_takes_nan_pairs_with_allow_nan_only():
    from audit.gating.assertions import ClaimRefuted, assert_claim

    first, second = _one_present(1.0)
    with pytest.raises(InputError, match=r"pairs\[0\].*allow-nan|pairs\[0\].*allow_nan"):
        assert_claim(_rescaled_sum, "dp:1", pairs=[(first, second)], max_runs=2000)
    # With the flag: one present record at 1 releases 10 + noise, all missing releases NaN (ε = ∞): refuted.
    with pytest.raises(ClaimRefuted):
        assert_claim(_rescaled_sum, "dp:1", pairs=[(first, second)], max_runs=2000, allow_nan=True)
