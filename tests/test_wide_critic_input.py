"""Wide MI critics (issue 43 §7): the cost said before running, and the other records read through their sums."""

import dataclasses

import numpy as np
import pytest

from audit.audit_plan import plan_audit
from audit.cli.audit_command import cost_warnings
from audit.critic_cost import WIDE_INPUT, critic_work, wide_input_forecast
from audit.engine import run_audit
from audit.frameworks import differential_privacy
from audit.spec import AuditSpec
from audit.statistics.secret_critics import secret_values
from estimators import device
from estimators.validation import InputError
from mechanisms.inputs.priors import ProductBernoulli
from mechanisms.inputs.user_priors import UserPrior


def _printed(seconds):
    """Seconds as the line prints them: whole from 10 s, else two significant figures (3.048 → "3")."""
    return f"{seconds:,.0f}" if seconds >= 9.95 else f"{seconds:.2g}"


def _sum(dbs, rng):
    return dbs.sum(axis=1)


def _spec(n, k=1, **options):
    options = {"notion": "mi-dp", "epsilon": 0.1, "samples": 400, "records": (0,), **options}
    return AuditSpec(mechanism=_sum, priors=(ProductBernoulli(0.5, shape=(n, k)),), quiet=True, **options)


# --- which audits get the line (no timing) --------------------------------------------------------------------

@pytest.mark.parametrize("n,k,options,wide", [
    (WIDE_INPUT - 1, 1, {}, True),          # the record, one output value, n − 1 others: n·k + 1 = WIDE_INPUT
    (WIDE_INPUT - 2, 1, {}, False),         # one number narrower
    (250, 4, {}, True),                     # 1,001 numbers: the attributes count
    (60000, 1, {"others": "sums"}, False),  # the others' sums: 2k + 1 numbers
    (5000, 1, {"notion": "smi-dp"}, False),  # slices only: three numbers a critic
])
def test_the_line_comes_exactly_when_a_full_neural_critic_reads_at_least_wide_input_numbers(n, k, options, wide):
    lines = cost_warnings(_spec(n, k, **options))
    assert len(lines) == int(wide)
    if wide:
        assert f"{n * k + 1:,} numbers wide" in lines[0] and "--others sums" in lines[0]


def _pair_spec(n, mechanism=_sum, quiet=False):
    """A DP claim audited under the two-point prior on a neighbouring pair of n one-number records that differ in
    record 0: its MI critics are classifiers."""
    from mechanisms.claims.parsing import parse_claim
    from mechanisms.inputs.neighbouring_pair import NeighbouringPair

    first = np.zeros((n, 1))
    second = first.copy()
    second[0, 0] = 1.0
    return AuditSpec(mechanism=mechanism, priors=(NeighbouringPair(first, second).prior(),), notion="mi-dp",
                     samples=400, records=(0,), quiet=quiet, claim=parse_claim("dp:1"))


class _Stopped(Exception):
    """Raised by a stand-in where the audit would go on (train critics or certify them)."""


def _stop(*args, **kwargs):
    raise _Stopped


def test_classifier_critics_get_no_line_before_running_and_dependent_rows_no_sums_advice():
    spec = _pair_spec(1500)
    plan = plan_audit(spec, [(p, None) for p in spec.priors])
    assert plan.mi_critic == "classifier"
    # No neural network is trained unless the outputs suit no classifier, which only the outputs show: nothing is
    # said before running (the audit says it where the fallback happens).
    assert cost_warnings(spec) == [] and wide_input_forecast(spec, plan) is None
    user = UserPrior(lambda m, rng: rng.normal(size=(m, 1500, 1)))  # rows not vouched independent
    line = cost_warnings(AuditSpec(mechanism=_sum, priors=(user,), notion="mi-dp", epsilon=0.1, samples=400,
                                   records=(0,), quiet=True))[0]
    assert "1,501 numbers wide" in line and "--others sums" not in line


def _repeated(width):
    def mechanism(dbs, rng):  # the records' sum, ``width`` times
        return np.repeat(dbs.sum(axis=1), width, axis=1)
    return mechanism


def test_the_audit_says_the_fallback_critics_cost_where_no_classifier_fits(monkeypatch, capsys):
    import audit.engine

    monkeypatch.setattr(audit.engine, "fit_classifier_critics", lambda *args, **kwargs: None)  # no classifier fits
    monkeypatch.setattr(audit.engine, "fit_secret_critics", _stop)  # where the neural critics would train
    with pytest.raises(_Stopped):
        run_audit(_pair_spec(1500, _repeated(600)))
    (line,) = [one for one in capsys.readouterr().err.splitlines() if "before training" in one]
    with pytest.raises(_Stopped):  # quiet (the Python API's default): the library prints nothing
        run_audit(_pair_spec(1500, _repeated(600), quiet=True))
    assert "before training" not in capsys.readouterr().err
    # The critic reads record 0 (1 number), the output (600) and the 1,499 other records.
    batch, width = 160, 1 + 600 + 1499  # 40% of 400 samples train
    cpu = [s * (device.CPU_STEP_S + batch * (device.CPU_PAIR_S + width * device.CPU_WIDTH_S)) for s in (350, 2000)]
    assert line.startswith("miaudit: before training: no classifier critic could be fitted (the outputs are too wide "
                           "for the logistic regression, with too many values for the empirical log-ratio, or the "
                           "training split holds draws of only one of the two databases), so the MI test's critics "
                           "are neural: they read each record with the output (600 numbers) and the other records, "
                           "2,100 numbers wide (1 critic on 400 samples): ")
    assert f"training is predicted to take {_printed(cpu[0])} to {_printed(cpu[1])} s on the CPU" in line
    assert "the width is the output's and the database's (--n × --k)" in line


@pytest.mark.parametrize("n,width,fits", [
    (1500, 1, True),   # the classifiers fit: no network, no line
    (10, 1, False),    # they do not, but the fallback critic reads 1 + 1 + 9 numbers: not wide, no line
])
def test_no_line_where_no_wide_neural_critic_trains(monkeypatch, capsys, n, width, fits):
    import audit.engine

    if not fits:
        monkeypatch.setattr(audit.engine, "fit_classifier_critics", lambda *args, **kwargs: None)
    monkeypatch.setattr(audit.engine, "fit_secret_critics", _stop)
    monkeypatch.setattr(audit.engine, "certify", _stop)  # where the classifier critics' bound would be certified
    with pytest.raises(_Stopped):
        run_audit(_pair_spec(n, _repeated(width)))
    assert "before training" not in capsys.readouterr().err


def test_the_fallback_forecast_counts_the_output_s_width():
    spec = _pair_spec(1500)
    neural = plan_audit(dataclasses.replace(spec, mi_critic="neural"), [(p, None) for p in spec.priors])
    narrow, wide = wide_input_forecast(spec, neural), wide_input_forecast(spec, neural, output_width=600)
    assert (narrow.width, wide.width) == (1501, 2100) and narrow.output_width == 1 and wide.output_width == 600
    # The MI sample's outputs: 400 draws of 599 more float64 numbers each, at least.
    assert wide.memory - narrow.memory >= 400 * 599 * 8
    assert critic_work(spec, neural, output_width=600)["width"] == 2100


def test_the_forecast_is_the_measured_cost_model_at_the_width_and_the_memory_check():
    spec = _spec(20000)
    forecast = wide_input_forecast(spec, plan_audit(spec, [(spec.priors[0], None)]))
    width, batch = 20001, 160  # n·k + 1; 40% of 400 samples train, below the batch size of 256
    steps = (50 * 7, 2000)  # early stopping: eval_every × (patience + 1); max_steps
    cpu = [s * (device.CPU_STEP_S + batch * (device.CPU_PAIR_S + width * device.CPU_WIDTH_S)) for s in steps]
    assert forecast.width == width and forecast.batch == batch and forecast.steps == steps
    assert forecast.cpu_seconds == pytest.approx(cpu)
    assert forecast.cpu_seconds[0] > 10 * forecast.gpu_seconds[0]
    # The databases (twice, drawn in chunks then joined) and the critic's float64 features at least.
    assert forecast.memory >= 2 * 400 * 20000 * 8 + 400 * width * 8
    sums = _spec(20000, others="sums")
    assert critic_work(sums, plan_audit(sums, [(sums.priors[0], None)]))["width"] == 3


# --- the other records through their sums -----------------------------------------------------------------------

def test_sums_are_the_column_sums_of_the_other_records():
    dbs = np.random.default_rng(0).normal(size=(5, 4, 3))
    pair = differential_privacy(4, 3).secret_pairs[2]
    g, w = secret_values(pair, 2, dbs, "sums")
    expected = np.stack([sum(db[j] for j in range(4) if j != 2) for db in dbs])
    np.testing.assert_array_equal(g, dbs[:, 2, :])
    np.testing.assert_allclose(w, expected)
    g_all, w_all = secret_values(pair, 2, dbs)
    np.testing.assert_array_equal(g_all, g) and np.testing.assert_array_equal(w_all, np.delete(dbs, 2, axis=1).reshape(5, -1))


def test_sums_are_refused_where_rows_may_depend_or_the_notion_has_no_records():
    user = UserPrior(lambda m, rng: rng.normal(size=(m, 3, 1)))
    with pytest.raises(InputError, match=r"argument 'others' \(--others\) is 'sums'.*independent rows"):
        AuditSpec(mechanism=_sum, priors=(user,), notion="mi-dp", epsilon=0.1, others="sums")
    with pytest.raises(InputError, match="argument 'others'"):
        _spec(3, others="totals")


def _laplace_sum(dbs, rng):
    return dbs.sum(axis=1) + rng.laplace(0.0, 0.5, size=(dbs.shape[0], dbs.shape[2]))


def _xor(dbs, rng):
    return (dbs[:, 0, :] != dbs[:, 1, :]).astype(float)


def _bernoulli_through_laplace_mi(scale):
    """I(B; B + L), B ~ Bernoulli(1/2), L ~ Laplace(scale): h(B + L) − h(L) with h(L) = 1 + ln(2·scale)
    (Cover and Thomas 2006, Table 17.1), h(B + L) by the trapezoid rule on its mixture density."""
    y = np.linspace(-40 * scale, 1 + 40 * scale, 400001)
    laplace = lambda t: np.exp(-np.abs(t) / scale) / (2 * scale)  # noqa: E731
    density = 0.5 * (laplace(y) + laplace(y - 1))
    return -np.trapezoid(density * np.log(density), y) - (1 + np.log(2 * scale))


def _audit(mechanism, others):
    spec = AuditSpec(mechanism=mechanism, priors=(ProductBernoulli(0.5, shape=(3, 1)),), notion="mi-dp", epsilon=5.0,
                     samples=4000, records=(0,), others=others, quiet=True, seed=1)
    return run_audit(spec)


@pytest.mark.train
def test_a_mechanism_that_reads_the_others_through_their_sum_has_the_same_mi_either_way():
    # M = Σ X_j + L: given X_−i, M − Σ_{j≠i} X_j = X_i + L, so I(X_i; M | X_−i) = I(X_i; M | Σ_{j≠i} X_j) = I(B; B + L).
    exact = _bernoulli_through_laplace_mi(0.5)
    assert 0.2 < exact < 0.3
    records, sums = _audit(_laplace_sum, "records"), _audit(_laplace_sum, "sums")
    assert records.estimate == pytest.approx(exact, abs=0.05) and sums.estimate == pytest.approx(exact, abs=0.05)
    assert any("others = sums" in note for note in sums.notes)


@pytest.mark.train
def test_a_mechanism_that_reads_one_other_record_loses_half_its_mi_through_the_sum_and_the_bound_stays_below():
    # M = X_0 ⊕ X_1 on three fair bits: given X_−0, M reveals X_0 (ln 2); given only T = X_1 + X_2, it does when
    # T ∈ {0, 2} (probability 1/2) and not when T = 1, so I(X_0; M | T) = ln 2 / 2.
    records, sums = _audit(_xor, "records"), _audit(_xor, "sums")
    assert records.estimate == pytest.approx(np.log(2), abs=0.05)
    assert sums.estimate == pytest.approx(np.log(2) / 2, abs=0.05)
    assert sums.lower_bound <= np.log(2) / 2 < records.lower_bound


def test_auto_weighs_the_width_when_it_chooses_the_device():
    # One critic, 350 steps of 160 rows: narrow, the GPU's start (1 s) outweighs the CPU's 0.46 s; at 20,001
    # inputs the CPU's 350 · 160 · 20,001 · 2.2e-8 s ≈ 25 s outweighs it.
    size = dict(critics=1, steps=350, batch_size=160, cuda_available=True)
    assert device.choose_device("auto", **size)[0].type == "cpu"
    assert device.choose_device("auto", width=20001, **size)[0].type == "cuda"


def test_the_cli_says_the_cost_before_any_run(tmp_path, monkeypatch, capsys):
    import audit.engine
    from audit.cli.main import main

    (tmp_path / "m.py").write_text("def total(dbs, rng):\n    return dbs.sum(axis=1)\n")

    def no_run(spec):
        raise InputError("stopped before running")

    monkeypatch.setattr(audit.engine, "run_audit", no_run)
    flags = ["audit", "--mechanism", f"{tmp_path / 'm.py'}:total", "--prior", "builtin:bernoulli", "--n", "3000",
             "--records", "0", "--samples", "400", "--notion", "mi-dp", "--epsilon", "0.1", "--quiet"]
    assert main(flags) == 2
    err = capsys.readouterr().err
    assert err.index("miaudit audit: before running: the MI critics read") < err.index("stopped before running")
    assert "3,001 numbers wide" in err
    assert main(flags + ["--others", "sums"]) == 2
    assert "miaudit audit: before running" not in capsys.readouterr().err


def test_a_sequential_audits_line_gives_the_training_of_every_planned_look(tmp_path, monkeypatch, capsys):
    # Each look trains its own critics on its samples: the CPU seconds are the sum over the looks of steps ×
    # (step cost + batch × (pair cost + width × width cost)), batch = min(256, 40% of the look's samples).
    import audit.gating.sequential
    from audit.cli.main import main
    from audit.gating.sequential import look_schedule

    spec = _spec(3000)
    looks = look_schedule(spec, 20000, float_runs=False)
    assert len(looks) > 1
    width = 3001
    expected = [0.0, 0.0]
    for look in looks:
        batch = min(256, int(look.samples * 0.4))
        for end, steps in enumerate((50 * 7, 2000)):
            expected[end] += steps * (device.CPU_STEP_S + batch * (device.CPU_PAIR_S + width * device.CPU_WIDTH_S))
    (line,) = cost_warnings(spec, looks)
    assert f"{_printed(expected[0])} to {_printed(expected[1])} s on the CPU" in line
    assert f"{350 * len(looks):,} to {2000 * len(looks):,} steps" in line
    assert f"on {looks[-1].samples:,} samples at the last of {len(looks)} looks" in line
    assert cost_warnings(spec)[0] != line  # one audit of --samples: its own training only

    def no_run(*args, **kwargs):
        raise InputError("stopped before running")

    monkeypatch.setattr(audit.gating.sequential, "run_sequential_audit", no_run)
    (tmp_path / "m.py").write_text("def total(dbs, rng):\n    return dbs.sum(axis=1)\n")
    flags = ["audit", "--mechanism", f"{tmp_path / 'm.py'}:total", "--prior", "builtin:bernoulli", "--n", "3000",
             "--records", "0", "--samples", "400", "--notion", "mi-dp", "--epsilon", "0.1", "--quiet",
             "--max-runs", "20000"]
    assert main(flags) == 2
    err = capsys.readouterr().err
    assert f"at the last of {len(looks)} looks" in err and f"{expected[0]:,.0f} to {expected[1]:,.0f} s" in err
