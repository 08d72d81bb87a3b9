"""Study ``estimator-accuracy``: every MI estimator, plain and sliced, against closed-form ground truth.

Tasks (information in nats; each has MI in closed form):

- ``gaussian``: X ~ N(0, I_d), Y = ρX + √(1 − ρ²) Z with Z ~ N(0, I_d) independent, so the d
  coordinate pairs are independent with correlation ρ and I(X; Y) = −(d/2) log(1 − ρ²)
  (Cover and Thomas, *Elements of Information Theory*, 2nd ed., Example 8.5.1, summed over
  independent pairs).
- ``heavy-tailed``: a 1-D Gaussian pair pushed through the Cauchy quantile of its CDF,
  u ↦ F_Cauchy⁻¹(Φ(u)), on each variable. The map is strictly increasing, and MI is invariant
  under invertible maps of each variable (Kraskov, Stögbauer and Grassberger 2004, Section II;
  Cover and Thomas Eq. (8.71) for differentiable bijections), so the truth stays −½ log(1 − ρ²)
  while both marginals are standard Cauchy.
- ``transformed``: the same 1-D Gaussian pair with X ↦ e^X and Y ↦ Y³ + Y (both invertible).
- ``uniform``: X ~ U(0, 1), Y = X + aV with V ~ U(0, 1), a ≤ 1. h(Y | X) = log a and Y has the
  trapezoidal density with entropy a/2, so I(X; Y) = a/2 − log a (computed in the docstring of
  :func:`uniform_task`).
- ``discrete``: X uniform on {0, …, K − 1}, Y = X + V, V ~ U(0, 1): X = ⌊Y⌋, so I = H(X) = log K.

Sliced versions (Pufferfish paper, Eq. (5); Monte Carlo estimator Eq. (7)) run on the Gaussian
tasks with d ≥ 2. For jointly Gaussian X, Y, the slice pair (θ, φ) gives a Gaussian pair with
correlation ρ(θ, φ) = θᵀΣ_XY φ / √(θᵀΣ_X θ · φᵀΣ_Y φ), whose MI is −½ log(1 − ρ(θ, φ)²); the
sliced MI is its mean over independent uniform θ, φ on the spheres, computed here by Monte
Carlo over many slices (:func:`sliced_gaussian_truth`). The certificate of a sliced estimate
bounds the average over the *drawn* slices (``estimators.certify.averaged_dv_lower_bound``),
so its slack is measured against the exact average over those slices.

Measured: absolute error |estimate − truth| and, for the neural estimators, the certified
lower bound's slack truth − L (negative slack = the bound failed, which happens with
probability at most α = 0.05 per estimate).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.special import ndtr
from scipy.stats import cauchy

from estimators.choices import NEURAL_ESTIMATORS
from estimators.estimate import estimate_mi
from estimators.neural import CriticConfig

from .framework import Experiment, ExperimentOutput, Table, new_figure

# The neural estimators and two classical ones (the plug-in estimator is for discrete data; these tasks are continuous).
ESTIMATORS = NEURAL_ESTIMATORS + ("ksg", "gaussian")
ALPHA = 0.05
# Monte Carlo slices for the population sliced-MI truth: its standard error is below 1e-3 nats
# on every task here (the per-slice MI is at most −½ log(1 − ρ²) ≤ 0.83 nats).
TRUTH_SLICES = 200_000


@dataclass(frozen=True)
class Task:
    """A joint law with closed-form MI.

    Attributes
    ----------
    family : str
        ``gaussian``, ``heavy-tailed``, ``transformed``, ``uniform`` or ``discrete``.
    dim : int
        Dimension of X and of Y.
    parameter : float
        ρ (Gaussian families), a (uniform) or K (discrete).
    truth : float
        I(X; Y) in nats.
    sample : callable
        ``sample(n, rng) -> (x (n, dim), y (n, dim))``.
    """

    family: str
    dim: int
    parameter: float
    truth: float
    sample: Callable

    @property
    def name(self) -> str:
        symbol = {"uniform": "a", "discrete": "K"}.get(self.family, "rho")
        return f"{self.family}(d={self.dim}, {symbol}={self.parameter:g})"

    @property
    def sliceable(self) -> bool:
        """Whether the sliced MI has a computable truth here (jointly Gaussian, d ≥ 2)."""
        return self.family == "gaussian" and self.dim >= 2


def correlated_gaussians(n: int, dim: int, rho: float, rng: np.random.Generator):
    """n draws of X ~ N(0, I_d) and Y = ρX + √(1 − ρ²) Z, each (n, d)."""
    x = rng.standard_normal((n, dim))
    return x, rho * x + math.sqrt(1.0 - rho * rho) * rng.standard_normal((n, dim))


def gaussian_mi_nats(rho: float, dim: int = 1) -> float:
    """−(d/2) log(1 − ρ²): MI of d independent Gaussian pairs of correlation ρ (Cover–Thomas Ex. 8.5.1)."""
    return -0.5 * dim * math.log1p(-rho * rho)


def rho_for_mi(mi: float) -> float:
    """The correlation ρ of a 1-D Gaussian pair with MI ``mi`` nats: ρ = √(1 − e^{−2 I})."""
    return math.sqrt(-math.expm1(-2.0 * mi))


def gaussian_task(dim: int, rho: float) -> Task:
    return Task("gaussian", dim, rho, gaussian_mi_nats(rho, dim),
                lambda n, rng: correlated_gaussians(n, dim, rho, rng))


def _cauchy_of_gaussian(u: np.ndarray) -> np.ndarray:
    # F_Cauchy⁻¹(Φ(u)), written through the upper tail so that it stays finite and accurate
    # for |u| up to ~37 (Φ(u) rounds to 1 already at u ≈ 8.3).
    return np.sign(u) * cauchy.isf(ndtr(-np.abs(u)))


def heavy_tailed_task(rho: float) -> Task:
    def sample(n, rng):
        x, y = correlated_gaussians(n, 1, rho, rng)
        return _cauchy_of_gaussian(x), _cauchy_of_gaussian(y)

    return Task("heavy-tailed", 1, rho, gaussian_mi_nats(rho), sample)


def transformed_task(rho: float) -> Task:
    def sample(n, rng):
        x, y = correlated_gaussians(n, 1, rho, rng)
        return np.exp(x), y**3 + y

    return Task("transformed", 1, rho, gaussian_mi_nats(rho), sample)


def uniform_task(a: float) -> Task:
    """X ~ U(0, 1), Y = X + aV, V ~ U(0, 1), 0 < a ≤ 1: I(X; Y) = a/2 − log a nats.

    h(Y | X) = h(aV) = log a. The density of Y rises linearly from 0 to 1 on [0, a], is 1 on
    [a, 1] and falls on [1, 1 + a]; each ramp contributes −∫₀^a (t/a) log(t/a) dt = a/4 to h(Y),
    the flat part 0, so h(Y) = a/2 and I = h(Y) − h(Y | X) = a/2 − log a.
    """
    if not 0.0 < a <= 1.0:
        raise ValueError(f"a must lie in (0, 1], got {a}")

    def sample(n, rng):
        x = rng.uniform(0.0, 1.0, (n, 1))
        return x, x + a * rng.uniform(0.0, 1.0, (n, 1))

    return Task("uniform", 1, a, a / 2.0 - math.log(a), sample)


def discrete_task(k: int) -> Task:
    """X uniform on {0, …, K − 1}, Y = X + V, V ~ U(0, 1): X = ⌊Y⌋, so I(X; Y) = H(X) = log K."""

    def sample(n, rng):
        x = rng.integers(0, k, (n, 1)).astype(np.float64)
        return x, x + rng.uniform(0.0, 1.0, (n, 1))

    return Task("discrete", 1, k, math.log(k), sample)


def slice_correlations(theta: np.ndarray, phi: np.ndarray, rho: float) -> np.ndarray:
    """ρ(θ, φ) = ρ θᵀφ for the ``gaussian`` task (Σ_X = Σ_Y = I, Σ_XY = ρI) and unit slices (p, d)."""
    return rho * np.einsum("pd,pd->p", theta, phi)


def sliced_gaussian_mi(theta: np.ndarray, phi: np.ndarray, rho: float) -> np.ndarray:
    """Per-slice MI −½ log(1 − ρ(θ, φ)²) of the ``gaussian`` task's slices (p, d), in nats."""
    return -0.5 * np.log1p(-slice_correlations(theta, phi, rho) ** 2)


def uniform_slices(count: int, dim: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` independent uniform unit vectors in R^dim (normalized standard Gaussians)."""
    g = rng.standard_normal((count, dim))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def sliced_gaussian_truth(dim: int, rho: float, rng: np.random.Generator, count: int = TRUTH_SLICES) -> float:
    """Sliced MI SI(X; Y) of the ``gaussian`` task by Monte Carlo over ``count`` uniform slice pairs."""
    return float(sliced_gaussian_mi(uniform_slices(count, dim, rng), uniform_slices(count, dim, rng), rho).mean())


@dataclass(frozen=True)
class Grid:
    """The settings of one run of the study."""

    tasks: tuple
    sizes: tuple
    sliced_sizes: tuple
    seeds: int
    slices: int
    critic: CriticConfig

    def to_dict(self) -> dict:
        return {"tasks": [t.name for t in self.tasks], "n": list(self.sizes), "sliced n": list(self.sliced_sizes),
                "seeds": self.seeds, "slices": self.slices,
                "critic": f"{self.critic.architecture}, hidden {self.critic.hidden}, "
                          f"max_steps {self.critic.max_steps}, batch {self.critic.batch_size}"}


def quick_grid() -> Grid:
    tasks = (gaussian_task(1, 0.8), gaussian_task(3, 0.8), heavy_tailed_task(0.8), transformed_task(0.8),
             uniform_task(0.5), discrete_task(4))
    return Grid(tasks, (300, 2000), (2000,), 1, 8,
                CriticConfig(hidden=16, max_steps=100, eval_every=20, patience=3))


def full_grid() -> Grid:
    tasks = (gaussian_task(1, 0.5), gaussian_task(1, 0.9), gaussian_task(4, 0.5), gaussian_task(4, 0.9),
             gaussian_task(10, 0.5), heavy_tailed_task(0.9), transformed_task(0.9), uniform_task(0.1),
             uniform_task(0.5), uniform_task(1.0), discrete_task(2), discrete_task(8))
    return Grid(tasks, (100, 1_000, 10_000, 100_000), (1_000, 10_000), 2, 64, CriticConfig())


COLUMNS = ("task", "family", "dim", "parameter", "estimator", "sliced", "slices", "n", "seed", "truth",
           "truth_drawn_slices", "estimate", "abs_error", "lower_bound", "slack", "seconds")


def evaluate(task: Task, estimator: str, sliced: bool, n: int, seed: int, grid: Grid, device,
             truth: float) -> dict:
    """One row of the study: estimate on fresh samples of ``task`` and compare with the truth."""
    rng = np.random.default_rng([seed, n, task.dim, int(1000 * task.parameter)])
    x, y = task.sample(n, rng)
    started = time.perf_counter()
    # The slices and the critics' settings only where the estimate uses them (estimate_mi refuses them elsewhere).
    settings = ({"slices": grid.slices} if sliced else {}) | (
        {"alpha": ALPHA, "device": device, "critic": grid.critic} if estimator in NEURAL_ESTIMATORS else {})
    result = estimate_mi(x, y, estimator=estimator, sliced=sliced, seed=int(rng.integers(2**31)), **settings)
    seconds = time.perf_counter() - started
    drawn = truth
    if sliced:
        frames = result.details["frames"]
        drawn = float(sliced_gaussian_mi(frames["x"][:, :, 0], frames["y"][:, :, 0], task.parameter).mean())
    lower = math.nan if result.lower_bound is None else result.lower_bound
    return {"task": task.name, "family": task.family, "dim": task.dim, "parameter": float(task.parameter),
            "estimator": estimator, "sliced": sliced, "slices": grid.slices if sliced else 0, "n": n,
            "seed": seed, "truth": truth, "truth_drawn_slices": drawn, "estimate": result.value,
            "abs_error": abs(result.value - truth), "lower_bound": lower, "slack": drawn - lower,
            "seconds": seconds}


def run_grid(grid: Grid, device, seed: int) -> dict:
    """All rows of the study as columns (see :data:`COLUMNS`)."""
    columns = {key: [] for key in COLUMNS}
    truth_rng = np.random.default_rng([seed, 7])
    for task in grid.tasks:
        cases = [(False, task.truth, grid.sizes)]
        if task.sliceable:
            cases.append((True, sliced_gaussian_truth(task.dim, task.parameter, truth_rng), grid.sliced_sizes))
        for sliced, truth, sizes in cases:
            for n in sizes:
                for replicate in range(grid.seeds):
                    for estimator in ESTIMATORS:
                        row = evaluate(task, estimator, sliced, n, seed + replicate, grid, device, truth)
                        for key in COLUMNS:
                            columns[key].append(row[key])
    return columns


def _label(estimator: str, sliced: bool) -> str:
    return f"sliced {estimator}" if sliced else estimator


def _findings(columns: dict, grid: Grid) -> list:
    est = np.asarray(columns["estimator"])
    sliced = np.asarray(columns["sliced"])
    n = np.asarray(columns["n"])
    err = np.asarray(columns["abs_error"])
    slack = np.asarray(columns["slack"])
    family = np.asarray(columns["family"])
    findings = []
    n_max = max(grid.sizes)
    parts = []
    for name in ESTIMATORS:
        rows = (est == name) & ~sliced & (n == n_max)
        parts.append(f"{name} {np.median(err[rows]):.3f}")
    findings.append(f"Median absolute error over all tasks at n = {n_max:,} (nats): " + ", ".join(parts) + ".")
    for fam in ("heavy-tailed", "discrete"):
        rows = (family == fam) & (n == n_max) & ~sliced
        if rows.any():
            worst = max(ESTIMATORS, key=lambda name: err[rows & (est == name)].max())
            findings.append(f"{fam} tasks at n = {n_max:,}: largest error {err[rows & (est == worst)].max():.3f} "
                            f"nats ({worst}); smallest median error "
                            f"{min(np.median(err[rows & (est == e)]) for e in ESTIMATORS):.3f} nats.")
    certified = np.isfinite(slack)
    if certified.any():
        findings.append(
            f"Certified lower bounds (α = {ALPHA}): held in {np.mean(slack[certified] >= 0):.1%} of "
            f"{int(certified.sum())} neural estimates; median slack truth − L = {np.median(slack[certified]):.3f} "
            f"nats (at n = {n_max:,}: {np.median(slack[certified & (n == n_max)]):.3f}).")
    if sliced.any():
        parts = [f"{name} {np.median(err[sliced & (est == name)]):.3f}" for name in ESTIMATORS]
        findings.append(f"Sliced MI ({grid.slices} slices), median absolute error against the Monte Carlo "
                        "population truth: " + ", ".join(parts) + " nats.")
    return findings


def _figure(columns: dict, grid: Grid):
    families = list(dict.fromkeys(columns["family"]))
    figure, axes = new_figure(1, len(families), width=4.2, height=3.6)
    est = np.asarray(columns["estimator"])
    sliced = np.asarray(columns["sliced"])
    fam = np.asarray(columns["family"])
    n = np.asarray(columns["n"])
    err = np.asarray(columns["abs_error"])
    for ax, family in zip(axes[0], families):
        for index, name in enumerate(ESTIMATORS):
            for is_sliced, style in ((False, "o-"), (True, "s--")):
                rows = (fam == family) & (est == name) & (sliced == is_sliced)
                if not rows.any():
                    continue
                sizes = sorted(set(n[rows].tolist()))
                medians = [np.median(err[rows & (n == s)]) for s in sizes]
                ax.loglog(sizes, np.maximum(medians, 1e-4), style, color=f"C{index}", ms=3,
                          label=_label(name, is_sliced))
        ax.set_title(family)
        ax.set_xlabel("n")
    axes[0, 0].set_ylabel("median |estimate − truth| (nats)")
    axes[0, 0].legend(fontsize=6)
    return figure


def run(context) -> ExperimentOutput:
    grid = quick_grid() if context.quick else full_grid()
    columns = run_grid(grid, context.device, context.seed)
    table = Table("estimator_accuracy", columns)
    settings = {**grid.to_dict(), "alpha": ALPHA, "truth slices (Monte Carlo)": TRUTH_SLICES,
                "unit": "nats"}
    return ExperimentOutput([table], _figure(columns, grid), settings, _findings(columns, grid))


EXPERIMENTS = [Experiment(
    name="estimator-accuracy",
    description="DV, MINE, NWJ, KSG, Gaussian (plain and sliced) vs closed-form MI: error and certified-bound slack vs n",
    source="study (issue 6); truths: Gaussian closed form, invariance under invertible maps, a/2 - log a, log K",
    run=run,
    trains=True,
    full_runtime=("863 s on a quiet 2-core x86_64 CPU, device cpu (12 tasks, n up to 100,000, 2 seeds; KSG at "
                  "n = 100,000 takes 490 s of it, 424 s on the d = 10 Gaussian alone)"),
)]
