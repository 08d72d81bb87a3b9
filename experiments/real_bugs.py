"""Study ``real-bugs``: privacy bugs in released libraries that miaudit finds, each with one command.

Each case audits a library mechanism at a pinned version with one ``miaudit audit`` command, run
in a fresh interpreter: a case whose library is installed here at that version (the test extra
holds OpenDP 0.16.0 and diffprivlib 0.6.6) runs with this interpreter; any other gets its own
virtual environment under the output folder (``venvs/NAME-VERSION``, created with
``--system-site-packages`` so miaudit's own dependencies come from here, then
``pip install NAME==VERSION``; a venv already there is reused). ``--quick`` runs only the cases
that need no install. The table gives, per case: library, version, bug, library issue, command,
mechanism runs, seconds, claim, certified bound and verdict; the run writes it as ``real_bugs.csv`` and
``real_bugs.json`` in the output folder, and its page itself (:attr:`experiments.framework.Experiment.writes_page`,
with the machine, date and the command that wrote it) at ``--page`` (``miaudit experiment real-bugs --seed 0 --page
docs/benchmarks/real-bugs.md``), else as ``real-bugs.md`` in the output folder.

The cases (Mironov 2012 for the floating-point ones; issue 29 of this project for the others):

- pure-ldp 1.1.2 unary encoding (OUE, SUE): the true bit is set to 1 with probability p *on top of*
  a 1 drawn with probability q, so P(1 | own index) = p + (1 − p)q, and the client is not
  ε-LDP at its ε (OUE at ε = 1: log(0.634·0.731/(0.269·0.366)) = 1.55); 1.2.0 draws it right;
- the textbook float Laplace ``x + rng.laplace(0, 1/ε)`` at ε = 0.1 (DP-Sniper's setting), audited
  with default flags under the README's prior (``--prior builtin:bernoulli``: the auditor chooses the
  pair): not ε-DP for any ε (Mironov 2012); the same noise rounded to 2⁻³² (snapping) is not refuted;
- diffprivlib 0.6.6 ``Laplace`` and ``Gaussian``: float noise added to the value, open to the same
  attack (diffprivlib issue #94); its ``Snapping`` mechanism is the correct configuration;
- OpenDP 0.16.0's Laplace on floats: its samplers are exact, not refuted.

- diffprivlib 0.6.6 ``LogisticRegression``: ``classes_ = np.unique(y)``, so adding a record with a new
  label changes the fitted model's shape (diffprivlib issue #106; ε = ∞), audited as a fitted model
  under add/remove (``--per-database --relation add-remove``) in a venv with scikit-learn < 1.6 (the
  class needs its ``multi_class``);
- diffprivlib 0.6.6 ``Bingham``: its rejection step divides by (uᵀΩu)^(d/2) where Kent, Ganeiber and Mardia
  (2018, §3) multiply, so its draws are not ε-DP from d = 3 on (docs/benchmarks/bingham-sampler.md); audited at ε = 2
  on C(0) = diag(20, 20, 0, 0) vs C(1) = diag(21, 19, 0, 0) (spectral norm 1 apart; its draws' loss 1.38 ε), the
  release u₁²/(u₁² + u₂²), at 5,000 samples: the smallest of 2,500, 4,000, 5,000, 10,000, 20,000 and 40,000 that
  refutes at seed 0 (4,000 certifies ε ≥ 1.76; at 5,000 seeds 1-6 refuted 5 of 6, seed 4 certifying 1.94). Its
  control is the library's ``randomise`` with that one ``/`` made ``*`` (not refuted). ``python dpl_bingham.py``
  shows it without miaudit (P(s < 0.1) = 0.204 from C(0) and 0.021 from C(1), 10,000 draws each: log-ratio 2.28 > 2;
  the control's 0.48), and ``miaudit scan diffprivlib`` finds it in its 4 × 4 ``Bingham(epsilon=1.0)`` case
  (:mod:`audit.scan.profiles.diffprivlib`). OpenDP 0.16's
  ``make_private_eigenvector`` has the same step but is not a case: it needs ``randomgen`` (not in the test extra),
  its calls are slower (6.6 ms a draw alone, diffprivlib's 0.6 ms) and it draws from a generator that takes no seed,
  so its verdict changes from run to run. The same audit of it (``unit_epsilon`` = 2: its map says 2 at d_in = 2,
  one row replaced; the same pair and release), one run each in a venv with ``randomgen``: 5,000 samples not refuted
  (certified ε ≥ 1.92, 67 s), 20,000 refuted (ε ≥ 2.06, 270 s, longer than the rest of the study);
- OpenDP 0.16.0 ``make_count_by >> then_laplace_threshold(scale=1, threshold=5)``: its map says
  (1, 0.00493) at d_in = 1, but a key held by one user is released with probability
  e⁻⁴/(1 + e⁻¹) = 0.0134 (OpenDP issue #2922), refuted by the certified δ at the claim's ε.

What ``miaudit scan`` found without being told (``found_by_scan``; the files and their exact justifications are
in :mod:`experiments._scan_bug_sources`, and ``python FILE`` shows each by direct simulation, without miaudit):

- pure-ldp 1.2.0 ``RAPPORClient``: the item's own bit is never reported as 0 (ε = ∞ against the library's
  ``convert_f_to_eps``); ``HadamardMechClient``: the report is a list or a zip as the true coefficient is kept
  or replaced (ε = ∞);
- multi-freq-ldpy 0.2.5 ``SS_Client``: the true value comes first in the reported subset (ε = ∞);
  ``RSpFD_GRR_Client``: GRR at the "amplified" ε' = ln(d(e^ε − 1) + 1), 1.49-LDP at ε = 1 on tuples that
  differ in every attribute;
- python-dp 1.1.5 ``GaussianMechanism.add_noise`` and PipelineDP 0.3.1 ``DPEngine.aggregate`` SUM with
  Gaussian noise: float noise added to the value (Mironov 2012), outputs seen under one input only;
- the known bugs above that live in a scanned library: diffprivlib #94 (Laplace, Gaussian), #106
  (LogisticRegression) and the Bingham sampler, found by ``miaudit scan diffprivlib`` (#94's Gaussian in
  ``GaussianAnalytic`` at ε = 1, which calls the same ``Gaussian.randomise``; at 6,000 runs the classic
  ``Gaussian``'s cases are controls in some seeds);
  OpenDP #2922, found by ``miaudit scan opendp``.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from . import _scan_bug_sources as scanned
from .framework import (Experiment, ExperimentOutput, Table, machine_description, new_figure, page_argument,
                        write_atomic)

#: The folder that holds the ``audit`` package: the subprocesses import miaudit from it.
REPO_ROOT = Path(__file__).resolve().parent.parent

#: ``--samples`` of a case under ``--quick`` (unless the case says otherwise: ``BugCase.quick_samples``).
QUICK_SAMPLES = 4000

#: Longest a case's audit may run (seconds) before it is reported as timed out.
CASE_TIMEOUT = 900

_PURE_LDP_UE = '''import random

import numpy as np
from pure_ldp.frequency_oracles.unary_encoding import UEClient

# A record is a value in {{0, 1, 2, 3}}; the client privatises it at epsilon = 1 (its claim: 1-LDP).
client = UEClient(epsilon=1.0, d=4, use_oue={oue}, index_mapper=lambda value: int(value))


def {name}(dbs, rng):
    """One privatised report per database of one record; pure-ldp draws from numpy's and random's global
    generators, seeded here from the audit's generator."""
    np.random.seed(int(rng.integers(2**32)))
    random.seed(int(rng.integers(2**63)))
    return np.array([client.privatise(int(db[0, 0])) for db in dbs], dtype=np.float64)
'''

_TEXTBOOK = '''import numpy as np


def textbook(dbs, rng):
    """The textbook Laplace mechanism in float64: the sum plus Laplace(1/epsilon) noise, epsilon = 0.1."""
    return dbs.sum(axis=1) + rng.laplace(0.0, 10.0, (dbs.shape[0], dbs.shape[2]))


def snapped(dbs, rng):
    """The same, rounded to a multiple of 2^-32 (Mironov 2012's snapping without its clamp)."""
    return np.ldexp(np.round(np.ldexp(textbook(dbs, rng), 32)), -32)
'''

_DIFFPRIVLIB = '''from diffprivlib.mechanisms import Gaussian, Laplace, Snapping

laplace = Laplace(epsilon=0.1, sensitivity=1.0)
gaussian = Gaussian(epsilon=0.5, delta=1e-5, sensitivity=1.0)
snapping = Snapping(epsilon=0.1, sensitivity=1.0, lower=-1000.0, upper=1000.0)
'''

_LOGISTIC = '''import warnings

import numpy as np
from diffprivlib.models import LogisticRegression


def fitted_model(db, rng):
    """diffprivlib's LogisticRegression at epsilon = 1 on columns 0-1 (features, norm at most 1) and column 2
    (label); the fitted model is the output (its classes_, coef_ and intercept_)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LogisticRegression(epsilon=1.0, data_norm=1.0, random_state=int(rng.integers(2**31)))
        return model.fit(db[:, :2], db[:, 2])
'''

_THRESHOLD = '''import opendp.prelude as dp

dp.enable_features("contrib")
# Count each user's key, release the counts above a threshold with Laplace noise (OpenDP issue #2922).
release = dp.t.make_count_by(dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance()) \\
    >> dp.m.then_laplace_threshold(scale=1.0, threshold=5)


def released_keys(db, rng):
    """The keys (one per user, column 0) whose noisy count clears the threshold, with their counts."""
    return release([f"key{int(v)}" for v in db[:, 0]])
'''

_OPENDP = '''import opendp.prelude as dp

dp.enable_features("contrib")
# One record in [0, 1], its sum plus OpenDP's Laplace of scale 10: 0.1-DP at d_in = 2 (replace one record).
space = dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0)), size=1), dp.symmetric_distance()
laplace = space >> dp.t.then_sum() >> dp.m.then_laplace(10.0)
'''


_BINGHAM = """import inspect

import numpy as np
import diffprivlib.mechanisms.bingham as bingham_module
from diffprivlib.mechanisms import Bingham

# C(x) = diag(20 + x, 20 - x, 0, 0), x the record (0 or 1): the ends differ by spectral norm 1, the mechanism's
# sensitivity (one row e2 of a covariance of unit rows replaced by e1); epsilon = 2
# (docs/benchmarks/bingham-sampler.md).
D, M, EPSILON = 4, 20.0, 2.0

# The control: randomise with the acceptance step of Kent, Ganeiber and Mardia (2018, section 3), which multiplies by
# (u'Omega u)^(d/2) where 0.6.6's bingham.py line 149 divides; the library's source with that one change.
_SOURCE = inspect.getsource(Bingham.randomise).replace(
    "/ ((unit_vec.dot(omega).dot(unit_vec)) ** (dims / 2))", "* ((unit_vec.dot(omega).dot(unit_vec)) ** (dims / 2))")
assert "* ((unit_vec" in _SOURCE
_namespace = dict(vars(bingham_module))
exec(compile("\\n".join(line[4:] for line in _SOURCE.splitlines()), "fixed_randomise", "exec"), _namespace)


class FixedBingham(Bingham):
    randomise = _namespace["randomise"]


def _plane(mechanism, dbs, rng):
    \"\"\"The in-plane share of the first axis, u1^2 / (u1^2 + u2^2), of the unit vector drawn for C(x) (a
    post-processing of the release: it cannot add privacy loss).\"\"\"
    out = np.empty((dbs.shape[0], 1))
    for i, db in enumerate(dbs):
        x = float(db[0, 0])
        u = mechanism(epsilon=EPSILON, random_state=int(rng.integers(2**31))).randomise(
            np.diag(np.r_[M + x, M - x, np.zeros(D - 2)]))
        out[i, 0] = u[0] ** 2 / (u[0] ** 2 + u[1] ** 2)
    return out


def bingham(dbs, rng):
    \"\"\"diffprivlib 0.6.6's Bingham at epsilon = 2.\"\"\"
    return _plane(Bingham, dbs, rng)


def fixed(dbs, rng):
    \"\"\"The same with the paper's acceptance step.\"\"\"
    return _plane(FixedBingham, dbs, rng)


if __name__ == "__main__":
    # Without miaudit: the event s < 0.1 (u near the axis whose eigenvalue fell) from C(0) and C(1). By quadrature
    # (docs/benchmarks/bingham-sampler.md) 0.2048 and 0.0208 for the library's draws, a log-ratio of 2.29 > epsilon = 2;
    # 0.2048 and 0.1282 for the fixed sampler's, the stated Bingham density (0.47).
    rng = np.random.default_rng(0)
    n = 10000
    for name, mechanism in (("library", bingham), ("fixed", fixed)):
        first = np.mean(mechanism(np.zeros((n, 1, 1)), rng)[:, 0] < 0.1)
        second = np.mean(mechanism(np.ones((n, 1, 1)), rng)[:, 0] < 0.1)
        print(f"{name}: P(s < 0.1) = {first:.4f} from C(0), {second:.4f} from C(1), log-ratio "
              f"{np.log(first / second):.2f} (epsilon = {EPSILON:g}; {n} draws each)")
"""


@dataclass(frozen=True)
class BugCase:
    """One audited library configuration and what is known about it."""

    name: str
    library: str
    package: str  # the PyPI distribution ("" for numpy's own sampler: no install)
    version: str
    bug: str
    issue: str
    source: str  # the mechanism file's text
    file: str
    mechanism: str
    arguments: tuple
    expected: str  # "refuted" or "not-refuted"
    extra_requirements: tuple = field(default_factory=tuple)
    isolated: bool = False  # always in its own venv (its extra requirements conflict with the test extra's)
    databases: tuple = ()  # (file name, rows) written beside the mechanism file; default zero.npy and one.npy
    # --samples under --quick: the threshold case runs 40,000, twice its full run's. OpenDP's noise takes no seed,
    # and its certified δ must clear the map's 0.00493 on every run: at 20,000 samples 12 audits certified
    # 0.0081-0.0116; a seeded copy of the release (python -m experiments.threshold_events) was not refuted in 2 of
    # 40 audits at 10,000 and refuted in 40 of 40 at 20,000.
    quick_samples: int = QUICK_SAMPLES
    found_by_scan: str = ""  # the ``miaudit scan`` target (experiments/scans.py) that finds it without naming it

    @property
    def command(self) -> str:
        return "miaudit audit " + " ".join([f"--mechanism {self.file}:{self.mechanism}", *self.arguments])


_PAIR = ("--pair", "zero.npy,one.npy")
#: The README's prior with default flags: 10 records in {0, 1}; the pairs are the auditor's (audit.engine).
_DEFAULT_PRIOR = ("--prior", "builtin:bernoulli")
#: pure-ldp imports statsmodels without declaring it.
_PURE_LDP_EXTRAS = ("statsmodels",)

CASES = (
    BugCase("pure-ldp OUE", "pure-ldp", "pure-ldp", "1.1.2",
            "unary encoding sets the true bit on top of a random one: OUE at ε = 1 is 1.55-LDP",
            "fixed in 1.2.0", _PURE_LDP_UE.format(oue=True, name="oue"), "pure_ldp_oue.py", "oue",
            _PAIR + ("--claim", "dp:1"), "refuted", _PURE_LDP_EXTRAS),
    BugCase("pure-ldp SUE", "pure-ldp", "pure-ldp", "1.1.2",
            "the same for SUE: 1.68-LDP at ε = 1", "fixed in 1.2.0", _PURE_LDP_UE.format(oue=False, name="sue"),
            "pure_ldp_sue.py", "sue", _PAIR + ("--claim", "dp:1"), "refuted", _PURE_LDP_EXTRAS),
    BugCase("pure-ldp OUE fixed", "pure-ldp", "pure-ldp", "1.2.0", "none (correct configuration)", "",
            _PURE_LDP_UE.format(oue=True, name="oue"), "pure_ldp_oue.py", "oue", _PAIR + ("--claim", "dp:1"),
            "not-refuted", _PURE_LDP_EXTRAS),
    BugCase("textbook float Laplace", "numpy", "", np.__version__,
            "x + Laplace(1/ε) in float64 is not ε-DP for any ε (claimed ε = 0.1)", "Mironov 2012",
            _TEXTBOOK, "textbook_laplace.py", "textbook", _DEFAULT_PRIOR + ("--claim", "dp:0.1"), "refuted"),
    BugCase("float Laplace snapped", "numpy", "", np.__version__, "none (rounded to 2^-32)", "",
            _TEXTBOOK, "textbook_laplace.py", "snapped", _DEFAULT_PRIOR + ("--claim", "dp:0.1"), "not-refuted"),
    BugCase("diffprivlib Laplace", "diffprivlib", "diffprivlib", "0.6.6",
            "float Laplace noise added to the value (ε = 0.1)", "diffprivlib #94", _DIFFPRIVLIB, "dpl_mechanisms.py",
            "laplace", _PAIR, "refuted", ("scikit-learn<1.9",), found_by_scan="diffprivlib"),
    BugCase("diffprivlib Gaussian", "diffprivlib", "diffprivlib", "0.6.6",
            "float Gaussian noise added to the value (ε = 0.5, δ = 1e-5)", "diffprivlib #94", _DIFFPRIVLIB,
            "dpl_mechanisms.py", "gaussian", _PAIR, "refuted", ("scikit-learn<1.9",), found_by_scan="diffprivlib"),
    BugCase("diffprivlib Snapping", "diffprivlib", "diffprivlib", "0.6.6", "none (correct configuration)", "",
            _DIFFPRIVLIB, "dpl_mechanisms.py", "snapping", _PAIR, "not-refuted", ("scikit-learn<1.9",)),
    BugCase("diffprivlib LogisticRegression", "diffprivlib", "diffprivlib", "0.6.6",
            "classes_ = np.unique(y): adding a record with a new label changes the model's shape (ε = ∞)",
            "diffprivlib #106", _LOGISTIC, "dpl_logistic.py", "fitted_model",
            ("--per-database", "--pair", "train.npy,train_minus.npy", "--claim", "dp:1", "--relation", "add-remove",
             "--samples", "2000"), "refuted", ("scikit-learn<1.6",), isolated=True, found_by_scan="diffprivlib",
            databases=(("train.npy", [[0.1, 0.2, 0.0], [0.3, 0.1, 1.0], [0.5, 0.5, 0.0], [0.7, 0.4, 1.0],
                                      [0.2, 0.6, 2.0]]),
                       ("train_minus.npy", [[0.1, 0.2, 0.0], [0.3, 0.1, 1.0], [0.5, 0.5, 0.0], [0.7, 0.4, 1.0]]))),
    BugCase("diffprivlib Bingham", "diffprivlib", "diffprivlib", "0.6.6",
            "Bingham's rejection step divides by (uᵀΩu)^(d/2) where Kent, Ganeiber and Mardia (2018) multiply: on "
            "diag(20, 20, 0, 0) vs diag(21, 19, 0, 0) (spectral norm 1 apart) its draws' loss is 1.38 ε (ε = 2)",
            "none filed", _BINGHAM, "dpl_bingham.py", "bingham", _PAIR + ("--claim", "dp:2", "--samples", "5000"),
            "refuted", ("scikit-learn<1.9",), quick_samples=5000, found_by_scan="diffprivlib"),
    BugCase("diffprivlib Bingham fixed", "diffprivlib", "diffprivlib", "0.6.6",
            "none (the same with Kent et al.'s step: `/` made `*` on bingham.py line 149)", "", _BINGHAM,
            "dpl_bingham.py", "fixed", _PAIR + ("--claim", "dp:2", "--samples", "5000"), "not-refuted",
            ("scikit-learn<1.9",), quick_samples=5000),
    BugCase("OpenDP Laplace threshold", "OpenDP", "opendp", "0.16.0",
            "a key held by one user is released with probability 0.0134 > the map's δ = 0.00493 at d_in = 1",
            "OpenDP #2922", _THRESHOLD, "threshold.py", "released_keys",
            ("--per-database", "--pair", "with.npy,without.npy", "--claim", "dp:1:0.004925833956035741",
             "--relation", "add-remove", "--samples", "20000"), "refuted",
            databases=(("with.npy", [[0.0]] * 20 + [[1.0]]), ("without.npy", [[0.0]] * 20)), quick_samples=40000,
            found_by_scan="opendp"),
    BugCase("OpenDP Laplace", "OpenDP", "opendp", "0.16.0", "none (correct configuration: exact samplers)", "",
            _OPENDP, "opendp_laplace.py", "laplace", _PAIR + ("--samples", "10000"), "not-refuted"),
    # What ``miaudit scan`` found (experiments/scans.py); each file's docstring in experiments/_scan_bug_sources.py
    # gives the event's exact probabilities or the floating-point argument, and ``python FILE`` shows it directly.
    BugCase("pure-ldp RAPPOR", "pure-ldp", "pure-ldp", "1.2.0",
            "RAPPORClient never turns a 1 back into 0: the item's own bit is always reported (ε = ∞; "
            "f = 0.76, the library's convert_f_to_eps(0.76, 1) = 0.979)", "none filed",
            scanned.PURE_LDP_RAPPOR, "pure_ldp_rappor.py", "rappor", _PAIR + ("--claim", "dp:0.9790964506374115"),
            "refuted", _PURE_LDP_EXTRAS, found_by_scan="pure-ldp"),
    BugCase("pure-ldp Hadamard", "pure-ldp", "pure-ldp", "1.2.0",
            "HadamardMechClient returns a list when it keeps the true coefficient and a zip when it replaces it: "
            "the report's type shows the input (ε = ∞; ε = 1, d = 4, t = 1)", "none filed",
            scanned.PURE_LDP_HADAMARD, "pure_ldp_hadamard.py", "hadamard", _PAIR + ("--claim", "dp:1"), "refuted",
            _PURE_LDP_EXTRAS, found_by_scan="pure-ldp"),
    BugCase("multi-freq-ldpy SS", "multi-freq-ldpy", "multi-freq-ldpy", "0.2.5",
            "SS_Client writes the true value first in the reported subset: at ε = 0.1, k = 4 the report (0, 1) has "
            "probability 0.175 from 0 and 0 from 1 (ε = ∞)", "none filed", scanned.MULTI_FREQ_SS,
            "multi_freq_ss.py", "subset", _PAIR + ("--claim", "dp:0.1"), "refuted", found_by_scan="multi-freq-ldpy"),
    BugCase("multi-freq-ldpy RS+FD", "multi-freq-ldpy", "multi-freq-ldpy", "0.2.5",
            "RSpFD_GRR_Client reports GRR at the amplified ε' = ln(d(e^ε − 1) + 1): for tuples that differ in every "
            "attribute the report (0, 0) has probability 0.149 from (0, 0) and 0.0336 from (3, 3) (1.49-LDP at "
            "ε = 1, d = 2, k = 4)", "none filed", scanned.MULTI_FREQ_RSPFD, "multi_freq_rspfd.py", "report",
            ("--pair", "zero.npy,three.npy", "--claim", "dp:1"), "refuted",
            databases=(("zero.npy", [[0.0, 0.0]]), ("three.npy", [[3.0, 3.0]])), found_by_scan="multi-freq-ldpy"),
    BugCase("python-dp Gaussian", "python-dp", "python-dp", "1.1.5",
            "GaussianMechanism.add_noise adds binomial noise on a 2⁻⁵⁴ grid to the value, a grid finer than the "
            "doubles from ½ up: about 15% of the outputs on input 0 are never seen on input 1 (ε = 1, δ = 1e-5)", "none filed", scanned.PYDP_GAUSSIAN,
            "pydp_gaussian.py", "add_noise", _PAIR + ("--claim", "dp:1:1e-05"), "refuted", found_by_scan="python-dp"),
    BugCase("PipelineDP Gaussian SUM", "PipelineDP", "pipeline-dp", "0.3.1",
            "DPEngine.aggregate SUM adds float Gaussian noise to the sum: about 12% of the outputs without a unit of "
            "value 10 are never seen with it (ε = 1, δ = 1e-6)", "none filed",
            scanned.PIPELINE_DP_SUM, "pipeline_dp_sum.py", "total",
            ("--per-database", "--pair", "without.npy,with.npy", "--claim", "dp:1:1e-06", "--relation",
             "add-remove"), "refuted", databases=(("without.npy", [[0.0]]), ("with.npy", [[0.0], [10.0]])),
            found_by_scan="pipeline-dp"),
)

def _installed(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _interpreter(case: BugCase, venvs: Path) -> tuple[str | None, str]:
    """(the Python that runs the case, how its library got there); None with the reason where it cannot run."""
    if not case.isolated and (not case.package or _installed(case.package) == case.version):
        return sys.executable, "this interpreter"
    suffix = "".join("-" + "".join(c for c in r if c.isalnum() or c in ".") for r in case.extra_requirements) \
        if case.isolated else ""
    folder = venvs / f"{case.package}-{case.version}{suffix}"
    python = folder / "bin" / "python"
    extras = [requirement.split("<")[0].split("=")[0] for requirement in case.extra_requirements]
    check = [str(python), "-c", f"import importlib.metadata as m; assert m.version({case.package!r}) == {case.version!r}; "
             f"[m.version(name) for name in {extras!r}]"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return str(python), f"cached venv {folder.name}"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(folder)], check=True,
                   capture_output=True)
    install = [str(python), "-m", "pip", "install", "--quiet", f"{case.package}=={case.version}",
               *case.extra_requirements]
    done = subprocess.run(install, capture_output=True, text=True)
    if done.returncode != 0:
        return None, f"pip install {case.package}=={case.version} failed: {done.stderr.strip().splitlines()[-1:]}"
    return str(python), f"new venv {folder.name}"


def run_case(case: BugCase, folder: Path, python: str, seed: int, quick: bool = False) -> dict:
    """Run the case's command (as ``python -m audit.cli.main``, miaudit imported from this checkout) in
    ``folder``; the row of the table. ``quick``: with ``--samples`` ``case.quick_samples`` (:data:`QUICK_SAMPLES`
    unless the case says otherwise; the row's command says so)."""
    if quick:
        case = replace(case, arguments=tuple(a for i, a in enumerate(case.arguments) if "--samples" not in
                                             case.arguments[max(0, i - 1):i + 1])
                       + ("--samples", str(case.quick_samples)))
    (folder / case.file).write_text(case.source)
    for name, rows in case.databases or (("zero.npy", [[0.0]]), ("one.npy", [[1.0]])):
        np.save(folder / name, np.array(rows, dtype=np.float64))
    arguments = shlex.split(case.command)[2:] + ["--seed", str(seed), "--json", "--quiet"]
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    started = time.perf_counter()
    try:
        done = subprocess.run([python, "-m", "audit.cli.main", "audit", *arguments], cwd=folder, capture_output=True,
                              text=True, env=environment, timeout=CASE_TIMEOUT)
    except subprocess.TimeoutExpired:
        return _row(case, time.perf_counter() - started, error=f"timed out after {CASE_TIMEOUT} s")
    seconds = time.perf_counter() - started
    try:
        result = json.loads(done.stdout)
    except json.JSONDecodeError:
        return _row(case, seconds, error=(done.stderr.strip().splitlines() or ["no output"])[-1])
    return _row(case, seconds, result=result)


def _row(case: BugCase, seconds: float, result: dict | None = None, error: str = "") -> dict:
    result_tests = {"event": (result or {}).get("event_test"), "float": (result or {}).get("float_event_test")}
    # The event test that refuted the claim (the float-bit one reads the output's bits), else the event test.
    refuting = [r.get("test") for r in (result or {}).get("refuted_by") or [] if result_tests.get(r.get("test"))]
    event = result_tests[refuting[0]] if refuting else (result_tests["event"] or {})
    claim = (result or {}).get("claim") or {}
    bound = event.get("epsilon_lower_bound")
    return {"case": case.name, "library": case.library, "version": case.version, "bug": case.bug,
            "library_issue": _issue_text(case), "command": case.command,
            "runs": int(result["samples"]) if result else 0, "seconds": round(seconds, 1),
            "claim": claim.get("label") or _claim_text(claim), "certified_epsilon": bound,
            "certified_delta": event.get("delta_lower_bound"), "delta_at_epsilon": event.get("delta_epsilon"),
            "verdict": result.get("claim_verdict") if result else f"error: {error}",
            "expected": case.expected, "event": event.get("description", "")}


def _issue_text(case: BugCase) -> str:
    """The library-issue column: the issue, and the scan that finds the bug without being told of it."""
    if not case.found_by_scan:
        return case.issue
    return f"{case.issue}; found by `miaudit scan {case.found_by_scan}`" if case.issue else \
        f"found by `miaudit scan {case.found_by_scan}`"


#: The page's table head: the commands are listed below the table, by row number.
TABLE_HEAD = ("| # | library | version | bug | library issue | runs | seconds | claim | certified bound | verdict |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def _claim_text(claim: dict) -> str:
    parameters = claim.get("parameters") or {}
    if "epsilon" in parameters:
        return f"({parameters['epsilon']:g}, {parameters['delta']:g})-DP" if parameters.get("delta") else \
            f"{parameters['epsilon']:g}-DP"
    return str(claim.get("notion", ""))


def _markdown(rows: list, skipped: list, machine: str, command: str) -> str:
    """The page: one table row per case, numbered, and each case's command below the table under its number
    (a command is too long for a column: the results would be off-screen); ``command`` is the run's, which
    wrote it."""
    lines = ["# Bugs found in real libraries", "",
             f"Written by `{command}` on "
             f"{datetime.date.today().isoformat()}, {machine}, load average {os.getloadavg()[0]:.1f} at the end. "
             "Each command runs in a folder holding its mechanism file and the databases it names (`zero.npy`, "
             "`one.npy`: one record, 0 vs 1); seconds are the command's wall time (a fresh interpreter).", "",
             *TABLE_HEAD]
    for number, row in enumerate(rows, 1):
        bound = "" if row["certified_epsilon"] is None else f"ε ≥ {row['certified_epsilon']:.3g}"
        if row.get("certified_delta") is not None:
            bound += f"; δ ≥ {row['certified_delta']:.3g} at ε = {row['delta_at_epsilon']:g}"
        verdict = row["verdict"] if row["verdict"] == row["expected"] else f"{row['verdict']} (expected {row['expected']})"
        lines.append(f"| {number} | {row['library']} | {row['version']} | {row['bug']} | {row['library_issue']} | "
                     f"{row['runs']} | {row['seconds']} | {row['claim']} | {bound} | {verdict} |")
    lines += ["", "The command of each row:", ""]
    lines += [f"{number}. `{row['command']}`" for number, row in enumerate(rows, 1)]
    if skipped:
        lines += ["", "Not in the table:", ""] + [f"- {what}: {why}." for what, why in skipped]
    return "\n".join(lines) + "\n"


def run(context) -> ExperimentOutput:
    out = Path(context.out_dir) if getattr(context, "out_dir", None) else REPO_ROOT / "experiments-out" / "real-bugs"
    out = out.resolve()  # absolute: each case runs in its own folder, with its venv's python named by path
    cases_folder, venvs = out / "cases", out / "venvs"
    cases_folder.mkdir(parents=True, exist_ok=True)
    rows, skipped = [], []
    for case in CASES:
        if context.quick and case.package and (case.isolated or _installed(case.package) != case.version):
            skipped.append((f"{case.library} {case.version} ({case.name})", "--quick installs nothing and this "
                            "version is not installed here"))
            continue
        python, how = _interpreter(case, venvs)
        if python is None:
            skipped.append((f"{case.library} {case.version} ({case.name})", how))
            continue
        folder = cases_folder / case.name.replace(" ", "-")
        folder.mkdir(exist_ok=True)
        rows.append(run_case(case, folder, python, context.seed, context.quick))
    machine = machine_description(None)
    given = getattr(context, "page", None)  # --page: this experiment writes its page itself (Experiment.writes_page)
    page = Path(given) if given else out / "real-bugs.md"
    command = (f"miaudit experiment real-bugs{' --quick' if context.quick else ''} --seed {context.seed}"
               + (f" --page {page_argument(page)}" if given else ""))
    text = _markdown(rows, skipped, machine, command)
    write_atomic(page, lambda handle: handle.write(text.encode("utf-8")))
    payload = json.dumps({"machine": machine, "date": datetime.date.today().isoformat(), "quick": context.quick,
                          "seed": context.seed, "cases": rows, "not_run": [list(s) for s in skipped]}, indent=2)
    write_atomic(out / "real_bugs.json", lambda handle: handle.write(payload.encode("utf-8")))
    columns = ("case", "library", "version", "bug", "library_issue", "command", "runs", "seconds", "claim",
               "certified_epsilon", "certified_delta", "delta_at_epsilon", "verdict", "expected")
    table = Table("real_bugs", {key: [("" if row[key] is None else row[key]) for row in rows] for key in columns})
    figure, axes = new_figure(width=7.0, height=0.5 + 0.4 * max(1, len(rows)))
    axis = axes[0, 0]
    bounds = [row["certified_epsilon"] or 0.0 for row in rows]
    axis.barh([row["case"] for row in rows], bounds,
              color=["tab:red" if row["verdict"] == "refuted" else "tab:green" for row in rows])
    axis.set_xlabel("certified ε lower bound (red: refuted)")
    axis.invert_yaxis()
    findings = [f"{row['case']} ({row['library']} {row['version']}): {row['verdict']} with certified ε ≥ "
                f"{(row['certified_epsilon'] or 0.0):.3g} against {row['claim']}, {row['runs']} runs, "
                f"{row['seconds']} s (expected {row['expected']})" for row in rows]
    findings.append(f"page {page_argument(page)}")
    settings = {"quick": context.quick, "cases": len(rows), "not run": len(skipped)}
    return ExperimentOutput([table], figure, settings, findings)


EXPERIMENTS = [Experiment(
    name="real-bugs",
    description="privacy bugs in released libraries (pure-ldp, multi-freq-ldpy, diffprivlib, OpenDP, python-dp, "
                "PipelineDP, numpy's float Laplace) audited by one command each, against correct configurations",
    source="study (issue 29; Mironov 2012)",
    run=run,
    writes_page=True,
    full_runtime="231 s on a 2-core x86_64 CPU (load average 2.2-2.6, other audits beside it), creating and "
                 "installing its venvs (pure-ldp 1.1.2, 1.2.0; multi-freq-ldpy 0.2.5; python-dp 1.1.5; pipeline-dp "
                 "0.3.1; diffprivlib 0.6.6 with scikit-learn 1.5.2) included; 39 s of it diffprivlib's "
                 "LogisticRegression, 32 s the two Bingham cases; 160 s so with its venvs already there",
)]
