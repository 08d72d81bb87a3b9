"""Slice → fit: the critic inputs of one or many MI quantities, trained as one batched ensemble.

One code path serves :func:`estimators.estimate.estimate_mi` (one quantity) and the audit engine
(one quantity per secret and prior): each :class:`MIProblem` asks for I(X; Y) or I(X; Y, Z),
optionally by the chain rule I(X; Y, Z) − I(X; Z) (Z and X dependent), and optionally sliced:
each variable projected onto its own random frames (Pufferfish paper, Eq. (7); Goldfeld and
Greenewald 2021), one critic per slice. All critics of all problems are padded to one input
width — a constant zero column carries no information — and trained together
(:func:`estimators.neural.fit_critics`); :class:`ProblemCritics` says where each problem's
critics sit. Certification is :mod:`estimators.certify` (per critic, or averaged over a
problem's slices by :func:`~estimators.certify.sliced_lower_bound`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import resident
from .critic_config import CriticConfig
from .device import blas_threads, known_free_threads, resolve_device, to_device, watch_cores
from .neural import fit_critics, step_threads
from .scaling import power_of_two_exponent
from .slicing import project, random_frames


@dataclass(frozen=True)
class MIProblem:
    """One quantity to estimate from paired samples.

    Attributes
    ----------
    x, y : ndarray (n, dx), (n, dy)
    z : ndarray (n, dz) or None
        A conditioning variable, appended to Y: the quantity is I(X; Y, Z).
    chain : bool
        Also train critics for I(X; Z), so that I(X; Y, Z) − I(X; Z) = I(X; Y | Z) (chain rule)
        can be estimated when X and Z are dependent.
    """

    x: np.ndarray
    y: np.ndarray
    z: np.ndarray | None = None
    chain: bool = False


@dataclass(frozen=True)
class Slicing:
    """The random frames of one problem's variables and the power of two each is scaled by first.

    Scaling a variable by a power of two is exact and leaves MI unchanged; it keeps the
    projections from overflowing (:func:`estimators.scaling.unit_power_of_two`).
    """

    frames: dict  # "x", "y", "z" -> (p, dim, k)
    exponents: dict  # "x", "y", "z" -> e: the variable is multiplied by 2^e before projection

    def project(self, name: str, values: np.ndarray, index=slice(None)) -> np.ndarray:
        """``values`` (n, dim) projected onto frame(s) ``index`` of variable ``name``: (p, n, k) or (n, k)."""
        frames = self.frames[name][index]
        scaled = np.ldexp(np.asarray(values, dtype=np.float64), self.exponents[name])
        return scaled @ frames if frames.ndim == 2 else project(scaled, frames)


def draw_slicing(problem: MIProblem, slices: int, slice_dim: int, rng: np.random.Generator) -> Slicing:
    """Independent random frames for X, Y and (if present) Z, drawn in that order."""
    names = ("x", "y") + (() if problem.z is None else ("z",))
    frames, exponents = {}, {}
    for name in names:
        values = getattr(problem, name)
        frames[name] = random_frames(slices, values.shape[1], slice_dim, rng)
        exponents[name] = power_of_two_exponent(values)
    return Slicing(frames, exponents)


@dataclass(frozen=True)
class ProblemCritics:
    """Where one problem's critics sit in a fit, and how to rebuild their inputs.

    Attributes
    ----------
    terms : slice
        Critics of I(X; Y[, Z]): one per slice (one unsliced).
    chain : slice or None
        Critics of I(X; Z) for the chain rule, in the same order as ``terms``.
    slicing : Slicing or None
        The frames of a sliced problem.
    name : str or None
        What the critics are when they are not neural (``"logistic critic"``: a classifier's
        Barber–Agakov critic, :mod:`audit.statistics.classifier_critic`).
    """

    terms: slice
    chain: slice | None
    slicing: Slicing | None
    name: str | None = None

    def values(self, per_critic: np.ndarray) -> np.ndarray:
        """Per-term values (estimates, say) of the quantity: the chain-rule difference when chained."""
        own = per_critic[self.terms]
        return own if self.chain is None else own - per_critic[self.chain]

    def features(self, x, y, z, index: int) -> tuple[np.ndarray, np.ndarray]:
        """The inputs (u, v) of critic ``index`` (one of ``terms``) on new samples, as at training."""
        u, blocks = self.feature_blocks(x, y, z, index)
        return u, (blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1))

    def feature_blocks(self, x, y, z, index: int) -> tuple[np.ndarray, tuple]:
        """:meth:`features` with v as its column blocks (v is them side by side): :meth:`block` of ``y`` and of
        ``z``. A caller that scores the same ``y`` (or ``z``) at several x builds its block once and passes that
        same array each time, so that a scorer copies it to its device once (:func:`estimators.resident.device_columns`;
        ``audit.search.event_candidates.critic_statistic``)."""
        return self.block("x", x, index), tuple(self.block(name, values, index)
                                                for name, values in (("y", y), ("z", z)) if values is not None)

    def block(self, name: str, values, index: int) -> np.ndarray:
        """Critic ``index``'s input block of the variable ``name`` (``"x"``, ``"y"`` or ``"z"``): ``values``
        themselves unsliced, their projection onto the slice's frame sliced (:meth:`Slicing.project`: n × k, an
        n × d by d × k product)."""
        return values if self.slicing is None else self.slicing.project(name, values, index - self.terms.start)


@dataclass(frozen=True)
class ProblemFit:
    """A trained ensemble and each problem's critics in it."""

    fit: object  # estimators.neural.CriticFit
    problems: tuple  # of ProblemCritics, in the order of the problems


def pad_columns(arr: np.ndarray, width: int) -> np.ndarray:
    """Zero columns up to ``width``: a constant input carries no information and lets critics of
    different input widths share one batched model. ``arr`` itself where it has ``width`` columns."""
    if arr.shape[-1] == width:
        return arr
    return np.concatenate((arr, np.zeros(arr.shape[:-1] + (width - arr.shape[-1],))), axis=-1)


def stacked_inputs(arrays: list, width: int) -> np.ndarray:
    """The problems' critic inputs ``arrays`` ((p, n, ·) each) padded to ``width`` and stacked along the critics:
    one problem's own array where it needs no padding (no copy of a wide release's n × d values; the critics
    read it and never write it: :func:`estimators.neural.fit_critics`)."""
    padded = [pad_columns(a, width) for a in arrays]
    return padded[0] if len(padded) == 1 else np.concatenate(padded)


class ProblemColumns(NamedTuple):
    """One problem's critic input v as its column blocks: ``y``'s, then ``z``'s (None without Z), side by side.

    Unsliced, ``y`` is the outputs (n, dy) and ``z`` the public part w (n, dz), read by the problem's one critic;
    sliced, their projections (p, n, k), one per critic. ``chain``: the I(X; Z) critics, whose Y columns are zeros."""

    y: np.ndarray
    z: np.ndarray | None
    chain: bool = False

    def joined(self) -> np.ndarray:
        """The blocks side by side on the host, (p, n, dy + dz)."""
        vy = self.y if self.y.ndim == 3 else self.y[None]
        first = np.zeros_like(vy) if self.chain else vy  # the chain's Y columns carry no information
        if self.z is None:
            return first
        return np.concatenate((first, self.z if self.z.ndim == 3 else self.z[None]), axis=2)

    @property
    def critics(self) -> int:
        return 1 if self.y.ndim == 2 else len(self.y)

    @property
    def width(self) -> int:
        return self.y.shape[-1] + (0 if self.z is None else self.z.shape[-1])


class CriticColumns:
    """The critics' input v (M, N, ``width``) of several problems, stacked along the critics, each problem's
    :class:`ProblemColumns` zero-padded to ``width`` (:func:`stacked_inputs` of their :meth:`ProblemColumns.joined`),
    made on the training device a chunk of critics at a time (:meth:`on_device`) instead of built on the host and
    copied whole (issue 42).

    An unsliced problem's outputs y are read from the audit's store of device copies
    (:func:`estimators.resident.device_input`: copied once while the outputs live, as the event test's scorer reads
    them) and its other records w cross as their distinct rows (:func:`estimators.resident.distinct_input`: DP's other
    records are the same in every draw of a two-point prior, one row), gathered and placed beside y on the device; a
    sliced problem's projections (k columns each) are joined on the host and copied. Only values are copied, so every
    chunk is, bit for bit, the chunk of :meth:`joined` copied there (``tests/test_critic_columns.py``).
    """

    ndim = 3

    def __init__(self, problems, width: int | None = None):
        self.problems = tuple(problems)
        self.width = max(p.width for p in self.problems) if width is None else width
        first = self.problems[0].y
        self.shape = (sum(p.critics for p in self.problems), first.shape[-2], self.width)

    def joined(self) -> np.ndarray:
        """v on the host: :func:`stacked_inputs` of the problems' blocks side by side."""
        return stacked_inputs([p.joined() for p in self.problems], self.width)

    def on_device(self, start: int, stop: int, device):
        """Critics ``start``..``stop`` of v as a float64 tensor on the torch ``device`` (class docstring)."""
        import torch

        parts, offset = [], 0
        for problem in self.problems:
            low, high = max(start, offset), min(stop, offset + problem.critics)
            if low < high:
                parts.append(self._problem_on_device(problem, low - offset, high - offset, device))
            offset += problem.critics
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)

    def _problem_on_device(self, problem: ProblemColumns, low: int, high: int, device):
        import torch

        if problem.y.ndim == 3:  # a sliced problem's projections: k columns a critic, this chunk's joined and copied
            z = problem.z if problem.z is None or problem.z.ndim == 2 else problem.z[low:high]
            chunk = ProblemColumns(problem.y[low:high], z, problem.chain).joined()
            return to_device(np.asarray(pad_columns(chunk, self.width), dtype=np.float64), device)
        n, dy = problem.y.shape
        blocks = [torch.zeros((n, dy), dtype=torch.float64, device=device) if problem.chain
                  else resident.device_input(np.asarray(problem.y, dtype=np.float64), device, pinned=True)]
        if problem.z is not None:
            blocks.append(resident.distinct_input(np.asarray(problem.z, dtype=np.float64), device))
        missing = self.width - problem.width
        if missing > 0:  # zeros, as pad_columns'
            blocks.append(torch.zeros((n, missing), dtype=torch.float64, device=blocks[0].device))
        return torch.cat(blocks, dim=1)[None]


def problem_projections(problem: MIProblem, slices: int, slice_dim: int, rng: np.random.Generator):
    """The per-critic inputs u (p, n, du), v_y (p, n, dy'), v_z (p, n, dz') or None, and the slicing.

    Unsliced (``slices`` 0), p = 1 and the samples pass unchanged (slicing ``None``); sliced, each
    variable is scaled by a power of two and projected onto its own random frames
    (:func:`draw_slicing`, frames drawn from ``rng`` in the order X, Y, Z).
    """
    if not slices:
        return problem.x[None], problem.y[None], None if problem.z is None else problem.z[None], None
    slicing = draw_slicing(problem, slices, slice_dim, rng)
    vz = None if problem.z is None else slicing.project("z", problem.z)
    return slicing.project("x", problem.x), slicing.project("y", problem.y), vz, slicing


def projection_threads(problems, slices: int, config, device) -> int:
    """BLAS threads for the slices' projections: those the fit's first chunk of critics will train with
    (:func:`estimators.neural.step_threads`) where they are known before the fit watches the cores: one for a small
    step, torch's setting on a GPU, else the cores :func:`~estimators.device.free_cores` found free in the last
    :data:`~estimators.device.IDLE_REUSE` seconds. Where that is not known (the window these projections fill
    decides it), one: the projections are products of a few columns, bound by memory, and two threads took
    32 ms against 15–19 ms on one for 256 slices of 20,000 samples of three and two dimensions (median of 9,
    torch's threads having run, load average 7.7 on the shared 2-core CPU); the values are the same.
    """
    config = (config or CriticConfig()).validated()
    critics = sum((slices or 1) * (2 if problem.chain else 1) for problem in problems)
    return step_threads(min(critics, config.max_critics_per_chunk), config.batch_size, config.hidden,
                        resolve_device(device), free=lambda current: known_free_threads(current) or 1)


def fit_problems(problems, *, slices: int = 0, slice_dim: int = 1, rng: np.random.Generator, objective: str,
                 config, device, quiet: bool = True, desc: str = "critics") -> ProblemFit:
    """Build every problem's critic inputs (frames drawn from ``rng`` problem by problem), train them
    as one batched ensemble seeded from ``rng``, and say where each problem's critics are.

    Parameters
    ----------
    problems : sequence of MIProblem
        All with the same number of samples.
    slices : int
        Random slices per problem (0: one unsliced critic per problem).
    slice_dim : int
        Dimension of each slice.
    rng : numpy.random.Generator
    objective, config, device, quiet, desc
        As for :func:`estimators.neural.fit_critics`.

    Its callers check the training's memory before it builds the inputs (:func:`estimators.estimate.estimate_mi`
    by :func:`estimators.memory.check_critic_memory`, the audit by
    :func:`mechanisms.execution.memory.check_audit_memory`), so ``fit_critics`` does not check it again.
    """
    watch_cores()  # the projections below fill the window in which the training's thread count is chosen
    us, vs, placed = [], [], []
    count = 0
    with blas_threads(projection_threads(problems, slices, config, device)):
        for problem in problems:
            u, vy, vz, slicing = problem_projections(problem, slices, slice_dim, rng)
            terms = slice(count, count + len(u))
            us.append(u)
            # v's blocks: unsliced, the outputs and w themselves (CriticColumns reads them as they are on a device)
            columns = ProblemColumns(vy, vz) if slicing is not None else ProblemColumns(problem.y, problem.z)
            vs.append(columns)
            count += len(u)
            chain_slice = None
            if problem.chain:
                # I(X; Z) by critics of the same shape: the Y columns zeroed carry no information.
                chain_slice = slice(count, count + len(u))
                us.append(u)
                vs.append(columns._replace(chain=True))
                count += len(u)
            placed.append(ProblemCritics(terms, chain_slice, slicing))
    du = max(u.shape[2] for u in us)
    columns = CriticColumns(vs)
    # Off the CPU v is made on the device, a chunk of critics at a time (the outputs from the audit's store);
    # on it, on the host as the critics' tensor shares its memory.
    u, v = stacked_inputs(us, du), columns if resident.on_device(resolve_device(device)) else columns.joined()
    fit = fit_critics(u, v, objective=objective, config=config, seed=int(rng.integers(2**31)), device=device,
                      quiet=quiet, desc=desc, check_memory=False)
    return ProblemFit(fit, tuple(placed))
