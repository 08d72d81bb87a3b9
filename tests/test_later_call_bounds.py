"""Without --timeout, a user prior's later draws and a secret function's later calls are bounded by a multiple of
their first call's measured time (mechanisms.calls.later_bound.later_call_bound, the mechanism's chunks' rule): a
sampler or a secret function that stops returning after its first calls is reported, never waited on for ever;
with --timeout nothing changes, and code that returns gives the same results bounded or not.

No test depends on a real-time margin: the bound's floor is monkeypatched to half a second, a call that outlives
the bound for any reason (the hang, or a loaded machine) ends the run with the same one-line error, and no test
asserts the bound's number (it grows with the first call's measured time)."""

import re
import sys
import weakref
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from audit import frameworks as frameworks_module
from audit.engine import run_audit
from audit.frameworks import PufferfishFramework, SecretFunction, SecretPair
from audit.spec import AuditSpec
from estimators.neural import CriticConfig
from mechanisms.calls import later_bound
from mechanisms.calls.later_bound import later_call_bound
from mechanisms.calls.user_call import TIMEOUT_HINT
from mechanisms.errors import MechanismError
from mechanisms.execution import runner as runner_module
from mechanisms.execution.runner import ExecutionSettings, MechanismRunner
from mechanisms.inputs import bounded_draws
from mechanisms.inputs.priors import Prior, ProductBernoulli
from mechanisms.inputs.relation import PresentRecords
from mechanisms.inputs.user_priors import Mixture, UserPrior

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(FIXTURES))
import execution_mechanisms as fx  # noqa: E402

SOURCE = str(FIXTURES / "execution_mechanisms.py")

#: The default bound's words (mechanisms.calls.later_bound.later_call_bound), as the mechanism's chunks' say them.
DEFAULT_WORDS = "(no --timeout was given, so miaudit bounds each {each} at 50 × its first calls' time"
SLOW_NOT_STUCK = "if it is slow rather than stuck, set --timeout"


# ---------------------------------------------------------------- the rule


def test_the_bound_is_the_slack_times_the_first_seconds_times_the_databases_at_least_the_floor_at_most_the_cap():
    # 50 × 0.01 s × 600 databases = 300 s; 50 × 0.001 s × 600 = 30 s, so the 60 s floor; 50 × 1,000 × 4,096 is cut
    # at the interval timer's 1e7 s.
    assert later_call_bound(None, 0.01, 600)[0] == pytest.approx(50 * 0.01 * 600)
    assert later_call_bound(None, 0.001, 600)[0] == 60.0
    assert later_call_bound(None, 1000.0, 4096)[0] == 1e7
    hint = later_call_bound(None, 0.01, 600, each="draw", per="database")[1]
    assert hint.startswith(DEFAULT_WORDS.format(each="draw")) and "0.01 s a database" in hint
    assert hint.endswith(SLOW_NOT_STUCK)


def test_a_timeout_or_untimed_code_keeps_its_bound_and_words():
    assert later_call_bound(5.0, 0.01, 600) == (5.0, TIMEOUT_HINT)
    assert later_call_bound(None, None, 600) == (None, TIMEOUT_HINT)


def test_a_user_prior_keeps_its_first_calls_seconds_and_the_priors_holding_it_pass_them_on():
    prior = UserPrior(fx.bits_prior, label="bits")
    assert prior.first_seconds is not None and prior.first_seconds >= 0
    assert ProductBernoulli(0.5, shape=(3, 1)).first_seconds is None  # miaudit's own draws: not timed
    assert PresentRecords(prior).first_seconds == prior.first_seconds
    assert Mixture((prior,), np.array([1.0])).first_seconds == prior.first_seconds
    # A component without first seconds may be the slower: the mixture's own first draw is timed instead.
    bernoulli = ProductBernoulli(0.5, shape=(3, 1))
    assert Mixture((prior, bernoulli), np.array([0.5, 0.5])).first_seconds is None


def test_first_seconds_of_a_secret_function_must_be_a_nonnegative_number():
    with pytest.raises(Exception, match="first_seconds"):
        SecretFunction("g", fx.secret_first_record, first_seconds=-1.0)


# ---------------------------------------------------------------- a prior that hangs after its first calls


@dataclass(frozen=True, eq=False)
class _CallablePrior(Prior):
    """A Prior of the user's own class: draws from ``sample``, never called when it is built."""

    sample: object
    shape: tuple = (3, 1)
    independent_rows = independent_columns = discrete = False

    def _sample(self, m, rng):
        return self.sample(m, rng)

    def describe(self):
        return "callable prior"


def _one_line_error(excinfo, who, each):
    text = str(excinfo.value)
    assert "\n" not in text
    # The bound is at least the 0.5 s floor, more where the first call was slow (a loaded machine): any number.
    assert re.match(re.escape(who) + r" did not return within [0-9.e+-]+ s", text), text
    assert DEFAULT_WORDS.format(each=each) in text and text.endswith(SLOW_NOT_STUCK)


@pytest.mark.integration
@pytest.mark.parametrize("workers", [1, 2])
def test_a_user_prior_hanging_from_its_third_call_is_stopped(monkeypatch, workers):
    # Its first call when it is built, its second the first chunk of 2, its third the next chunk: it hangs there.
    # The draws run in the audit's process whatever the workers (MechanismRunner.draw).
    monkeypatch.setattr(fx.prior_hangs_from_third_call, "calls", 0)
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 0.5)
    prior = UserPrior(fx.prior_hangs_from_third_call, label="hangs")
    settings = ExecutionSettings(chunk_size=2, workers=workers)
    with MechanismRunner(fx.summing, "summing", settings, source=f"{SOURCE}:summing") as runner:
        with pytest.raises(MechanismError) as excinfo:
            runner.draw(prior, 8, np.random.default_rng(0))
    _one_line_error(excinfo, "prior 'hangs'", "draw")


@pytest.mark.integration
def test_a_user_prior_hanging_inside_a_mixture_is_stopped_and_named(monkeypatch):
    monkeypatch.setattr(fx.prior_hangs_from_third_call, "calls", 0)
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 0.5)
    mixture = Mixture((UserPrior(fx.prior_hangs_from_third_call, label="hangs"),), np.array([1.0]))
    with pytest.raises(MechanismError) as excinfo:
        for _ in range(2):  # its second call returns, its third hangs
            bounded_draws.draw_bounded(mixture, 4, np.random.default_rng(0), timeout=None, where="")
    _one_line_error(excinfo, f"prior '{mixture.describe()}'", "draw")


@pytest.mark.integration
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_prior_without_a_first_call_has_its_first_draw_timed_and_the_next_bounded(monkeypatch, wrapped):
    # A plain sampling function (or a Prior of the user's own class) answers no call when it is loaded: its first
    # draw, the first chunk of 2, is timed; its second hangs. Wrapped (add/remove's PresentRecords), the wrapper is.
    monkeypatch.setattr(fx.sampler_hangs_from_second_call, "calls", 0)
    monkeypatch.setattr(bounded_draws, "_FIRST_DRAWS", weakref.WeakKeyDictionary())
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 0.5)
    prior = fx.sampler_hangs_from_second_call
    if wrapped:
        prior = PresentRecords(_CallablePrior(prior))
    with MechanismRunner(fx.summing, "summing", ExecutionSettings(chunk_size=2)) as runner:
        with pytest.raises(MechanismError) as excinfo:
            runner.draw(prior, 8, np.random.default_rng(0))
    _one_line_error(excinfo, bounded_draws.prior_who(prior), "draw")


@pytest.mark.integration
def test_an_explicit_timeout_bounds_a_priors_draws_with_its_own_words(monkeypatch):
    monkeypatch.setattr(fx.prior_hangs_from_third_call, "calls", 0)
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 1e6)  # would never fire: --timeout bounds the draws
    prior = UserPrior(fx.prior_hangs_from_third_call, label="hangs")
    with MechanismRunner(fx.summing, "summing", ExecutionSettings(chunk_size=2, timeout=0.5)) as runner:
        with pytest.raises(MechanismError, match=r"prior 'hangs' did not return within 0\.5 s drawing databases "
                                                 r"2-3 \(--timeout\)") as excinfo:
            runner.draw(prior, 8, np.random.default_rng(0))
    assert "no --timeout was given" not in str(excinfo.value)


@pytest.mark.integration
def test_a_user_prior_hanging_in_the_prior_search_is_stopped(monkeypatch):
    from audit.search.prior_search import candidate_pairs

    monkeypatch.setattr(fx.prior_hangs_from_third_call, "calls", 0)
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 0.5)
    prior = UserPrior(fx.prior_hangs_from_third_call, label="hangs", discrete=True)
    with pytest.raises(MechanismError) as excinfo:
        candidate_pairs(prior, 20, np.random.default_rng(0))
    _one_line_error(excinfo, "prior 'hangs'", "draw")


# ---------------------------------------------------------------- a secret function that hangs after its probe


def _secret_spec(g, w=None, prior=None, **execution):
    secret = SecretFunction(f"g = {g}", getattr(fx, g))
    if w is None:
        framework = PufferfishFramework("secret", (secret,))
    else:
        public = SecretFunction(f"w = {w}", getattr(fx, w))
        framework = PufferfishFramework("secret", (secret,), (public,), (SecretPair(secret, public),))
    return AuditSpec(mechanism=fx.summing, mechanism_source=f"{SOURCE}:summing",
                     priors=[prior or ProductBernoulli(0.5, shape=(3, 1))], notion="mi-pp", epsilon=0.1,
                     framework=framework, samples=600, slices=0, event_runs=0, critic=CriticConfig(max_steps=20),
                     execution=ExecutionSettings(**execution))


@pytest.mark.integration
@pytest.mark.parametrize("workers", [1, 2])
def test_a_secret_function_that_hangs_on_the_audits_sample_is_stopped_without_a_timeout(monkeypatch, workers):
    # g answers the spec's probe on 2 databases (its first call, timed), then hangs on the audit's 600. The
    # mechanism's chunks keep no default bound here, so that only g's can end the run.
    monkeypatch.setattr(later_bound, "LATER_CALL_FLOOR", 0.5)
    monkeypatch.setattr(runner_module, "bounded_by_first_calls", lambda task, first_seconds: task)
    spec = _secret_spec("secret_hangs_on_large_batches", workers=workers)
    assert spec.framework.private[0].first_seconds is not None and spec.framework.private[0].timeout is None
    with pytest.raises(MechanismError) as excinfo:
        run_audit(spec)
    _one_line_error(excinfo, "secret function 'g = secret_hangs_on_large_batches'", "call")
    assert "on a batch of 600 databases" in str(excinfo.value)


# ---------------------------------------------------------------- the same results, bounded or not


def _recording(bounds):
    def recorded(timeout, first_seconds, databases, **words):
        bound = later_call_bound(timeout, first_seconds, databases, **words)
        bounds.append(bound[0])
        return bound
    return recorded


@pytest.mark.parametrize("timed_when_built", [True, False])
def test_a_prior_that_returns_gives_the_same_draws_bounded_or_not(monkeypatch, timed_when_built):
    # A UserPrior's first call is timed when it is built; a plain function's first draw here is (its first chunk:
    # no bound but --timeout's, None).
    monkeypatch.setattr(bounded_draws, "_FIRST_DRAWS", weakref.WeakKeyDictionary())
    prior = UserPrior(fx.bits_prior, label="bits") if timed_when_built else fx.bits_prior

    def draw():
        with MechanismRunner(fx.summing, "summing", ExecutionSettings(chunk_size=8)) as runner:
            return runner.draw(prior, 40, np.random.default_rng(11))

    bounds = []
    monkeypatch.setattr(bounded_draws, "later_call_bound", _recording(bounds))
    bounded = draw()
    later = bounds if timed_when_built else bounds[1:]
    assert len(bounds) == 5 and all(bound >= 60.0 for bound in later)  # every chunk but an untimed first had its bound
    assert timed_when_built or bounds[0] is None
    monkeypatch.setattr(bounded_draws, "later_call_bound", lambda timeout, *_, **__: (timeout, TIMEOUT_HINT))
    assert np.array_equal(bounded, draw())


@pytest.mark.train
def test_an_audit_whose_prior_and_secret_functions_return_is_the_same_bounded_or_not(monkeypatch):
    # A user prior, and g ~ w with w discrete and dependent on g's records (stratified: the certificate draws fresh
    # databases from the prior, secret_bounds), without --timeout.
    def audit():
        prior = UserPrior(fx.bits_prior, label="bits", discrete=True)
        result = run_audit(_secret_spec("secret_first_record", "secret_second_record", prior=prior))
        return result.verdict, result.lower_bound, result.estimate

    bounds = []
    monkeypatch.setattr(bounded_draws, "later_call_bound", _recording(bounds))
    monkeypatch.setattr(frameworks_module, "later_call_bound", _recording(bounds))
    bounded = audit()
    assert bounds and all(bound is not None and bound >= 60.0 for bound in bounds)
    unbounded = lambda timeout, *_, **__: (timeout, TIMEOUT_HINT)  # noqa: E731 - as before the default bounds
    monkeypatch.setattr(bounded_draws, "later_call_bound", unbounded)
    monkeypatch.setattr(frameworks_module, "later_call_bound", unbounded)
    assert audit() == bounded
