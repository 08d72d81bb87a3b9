"""Training an ensemble of neural MI critics as one batched model, with held-out evaluation.

The data are split once into train / validation / test (DESIGN.md: train, select, certify).
Critics are trained on the train split with early stopping on the validation split (each
critic keeps its own best state); estimates and the samples used for certification come
from the test split, which the critics never saw.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .critic_config import CriticConfig, checked_config, scoring_rows
from .critics import CriticEnsemble
from .memory import check_critic_memory
from . import device as device_settings, resident
from .device import all_finite, cpu_threads, free_threads, resolve_device, samples_of, to_device
from .device_inputs import float64_chunk, real_values
from .choices import NEURAL_ESTIMATORS
from .objectives import MineMovingAverage, delta_method_stderr, donsker_varadhan, nwj, objective_value
from .progress import progress_bar
from .standardization import critic_inputs, overflows, paired_inputs, robust_standardization
from .validation import InputError, as_generator, check_choice, counted


# Below this many hidden activations per step (critics × batch × width), a CPU step is
# dominated by per-op overhead and one intra-op thread is fastest. Measured on a quiet 2-core
# CPU with the hand-written shallow backward (batch 256, width 32): 8 critics (65k) 1 thread
# 1.12 ms vs 2 threads 1.17 ms; 16 critics (131k) 1.39 vs 1.27 ms; 128 critics 5.0 vs 3.5 ms.
SMALL_STEP_WORK = 1 << 17

# Scoring one trained critic on new rows (CriticScorer) is a handful of element-wise ops and one
# small matrix product per row block; below this many hidden activations (rows × width) it runs
# on one intra-op thread. Measured on the 2-core CPU shared with other jobs (load average 4.8):
# 23,333 rows 116 ms on 2 threads against 4.0 ms on 1; 200,000 rows 313–447 ms against 44–46 ms
# (the threads' synchronization, not the arithmetic, is what costs when the cores are busy).
SMALL_SCORE_WORK = 1 << 24


@dataclass(frozen=True)
class CriticFit:
    """What training an ensemble of M critics produced, all on held-out data.

    Attributes
    ----------
    estimates : ndarray (M,)
        Objective value (DV, or NWJ for ``nwj``) of each trained critic on the test split.
    stderr : ndarray (M,)
        Delta-method standard error of each estimate.
    validation : ndarray (M,)
        Best validation value of each critic (used to select candidates).
    test_joint : ndarray (M, n_test)
        Critic values on the test split's joint samples.
    test_product : ndarray (M, n_test // 2)
        Critic values on independent product samples: x of test sample i paired with y of
        test sample i + n_test // 2, each sample used once.
    validation_joint, validation_product : ndarray (M, n_val), (M, n_val // 2)
        The same on the validation split (for choosing how to certify without the test split).
    output_range : (lo, hi)
        The range every critic value lies in.
    split : (train, validation, test)
        The sample indices of the three splits (the same for every critic).
    history : dict
        ``steps`` and the mean validation objective at each evaluation.
    scorer : CriticScorer
        The trained critics (each restored to its best validation state) with their input
        standardization, to evaluate them on new data.
    """

    estimates: np.ndarray
    stderr: np.ndarray
    validation: np.ndarray
    test_joint: np.ndarray
    test_product: np.ndarray
    validation_joint: np.ndarray
    validation_product: np.ndarray
    output_range: tuple
    steps: int
    seconds: float
    split_sizes: tuple
    history: dict = field(default_factory=dict)
    scorer: "CriticScorer | None" = None
    split: tuple = ()


class CriticScorer:
    """Evaluates trained critics on new inputs, with the standardization fixed at training.

    The critics are fixed functions once trained, so their values on fresh data (new runs of a mechanism, say) can
    be used in further certified tests."""

    def __init__(self):
        self._chunks = []  # (start, stop, ensemble, u_stats, v_stats, wide), stats as (centre, scale)

    def add(self, start, ensemble, u_stats, v_stats) -> None:  # standardized's flags read once here, not per call
        wide = overflows(u_stats[1], v_stats[1])
        self._chunks.append((start, start + ensemble.n_critics, ensemble, u_stats, v_stats, wide))

    def input_widths(self, index: int) -> tuple[int, int]:
        """(du, dv) that critic ``index`` expects."""
        for start, stop, _, u_stats, v_stats, _ in self._chunks:
            if start <= index < stop:
                return u_stats[0].shape[-1], v_stats[0].shape[-1]
        raise InputError(f"argument 'index' must be a critic index below {self._chunks[-1][1]}, got {index}")

    @torch.no_grad()
    def __call__(self, index: int, u, v) -> np.ndarray:
        """Critic ``index`` on the pairs (u[i], v[i]); u (n, du), v (n, dv) or its column blocks, padded → (n,). On a
        GPU: inputs copied without waiting (v's blocks once while they live: :func:`.resident.device_columns`)."""
        for start, stop, ensemble, u_stats, v_stats, wide in self._chunks:
            if start <= index < stop:
                m, device = index - start, u_stats[0].device
                u = to_device(np.asarray(u, dtype=np.float64), device, pinned=True)
                v = resident.device_columns(v, device, v_stats[0].shape[-1], pinned=True)
                small = device.type == "cpu" and len(u) * ensemble.hidden < SMALL_SCORE_WORK
                with cpu_threads(1 if small else free_threads(torch.get_num_threads())):
                    z = torch.cat(paired_inputs(u, v, (u_stats[0][m], u_stats[1][m]), (v_stats[0][m], v_stats[1][m]),
                                                wide), dim=-1)[None]
                    return ensemble(z, slice(m, m + 1))[0].double().cpu().numpy()
        raise InputError(f"argument 'index' must be a critic index below {self._chunks[-1][1]}, got {index}")


MIN_SPLIT_SAMPLES = 4


def split_sizes(n: int, fractions) -> tuple[int, int, int]:
    """Sizes of the train / validation / test splits of n samples with the given fractions."""
    n_train = int(round(fractions[0] * n))
    n_val = int(round(fractions[1] * n))
    return n_train, n_val, n - n_train - n_val


def _splits_suffice(sizes, eval_shifts: int) -> bool:
    # The estimate's product samples roll the test split's y by eval_shifts distinct shifts in 1..n_test - 1
    # (a shift of n_test would pair each x with its own y).
    return min(sizes) >= MIN_SPLIT_SAMPLES and sizes[2] > eval_shifts


def minimum_split_samples(fractions, eval_shifts: int = 0) -> int:
    """The fewest samples for which every split has at least ``MIN_SPLIT_SAMPLES`` and the test split more
    than ``eval_shifts``."""
    n = 3 * MIN_SPLIT_SAMPLES
    while not _splits_suffice(split_sizes(n, fractions), eval_shifts):
        n += 1
    return n


def split_indices(n: int, fractions, rng: np.random.Generator, *, eval_shifts: int = 0,
                  what: str = "argument 'x'", shifts_name: str = "eval_shifts"):
    """Random disjoint train / validation / test index arrays with the given fractions, checked by
    :func:`check_split_sizes` first."""
    check_split_sizes(n, fractions, eval_shifts=eval_shifts, what=what, shifts_name=shifts_name)
    order = rng.permutation(n)
    n_train, n_val, _ = split_sizes(n, fractions)
    return order[:n_train], order[n_train:n_train + n_val], order[n_train + n_val:]


def check_split_sizes(n: int, fractions, *, eval_shifts: int = 0, what: str = "argument 'x'",
                      shifts_name: str = "eval_shifts") -> None:
    """Raise :class:`InputError` naming ``what`` (the samples) when a split of ``n`` would hold fewer than
    ``MIN_SPLIT_SAMPLES`` or the test split no more than ``eval_shifts`` (named ``shifts_name``: the argument
    or the configuration key that set it). Every caller that rolls the test split by ``eval_shifts``
    shifts (:func:`product_shifts`) passes it: with ``n_test <= eval_shifts`` a shift reaches ``n_test`` ≡ 0
    and pairs each x with its own y as a 'product' sample.
    """
    if not _splits_suffice(split_sizes(n, fractions), eval_shifts):
        shifts = (f" and a test split of more than {shifts_name} = {eval_shifts}" if eval_shifts >= MIN_SPLIT_SAMPLES
                  else "")
        raise InputError(f"{what} {'has' if what.startswith('argument ') else 'have'} {counted(n, 'sample')}, too few "
                         f"for the critics' train, validation and test splits of at least {MIN_SPLIT_SAMPLES} each"
                         f"{shifts}: it needs at least {minimum_split_samples(fractions, eval_shifts)}")


def product_shifts(n_test: int, eval_shifts: int) -> list[int]:
    """The ``eval_shifts`` distinct rolls of the test split's y that make the estimate's product samples:
    1, 1 + step, ... with step = max(1, (n_test - 1) // eval_shifts), all in 1..n_test - 1 when
    n_test > eval_shifts (:func:`split_indices` refuses fewer). Rolling a sample of the joint law by s ≢ 0
    pairs x_i with y_(i-s), an independent draw: samples of the product of the marginals, as Algorithm 1 of
    Belghazi et al. (2018, MINE) draws them by permuting y."""
    return [1 + k * max(1, (n_test - 1) // eval_shifts) for k in range(eval_shifts)]


@torch.no_grad()
def _scores(ensemble: CriticEnsemble, u: torch.Tensor, v: torch.Tensor, chunk: int) -> torch.Tensor:
    """Critic values on pairs (u[:, i], v[:, i]) for all i, in sample chunks to bound memory."""
    parts = [ensemble(critic_pairs(u[:, s:s + chunk], v[:, s:s + chunk])) for s in range(0, u.shape[1], chunk)]
    return torch.cat(parts, dim=1)


def step_threads(n_critics: int, batch_size: int, hidden: int, device: torch.device, free=free_threads) -> int:
    """Intra-op threads for training steps: one for small CPU steps (see ``SMALL_STEP_WORK``), else all
    the cores other processes leave free (``free``, given torch's setting: :func:`~estimators.device.free_threads`)."""
    small = device.type == "cpu" and n_critics * batch_size * hidden < SMALL_STEP_WORK
    if small or device.type != "cpu":
        return 1 if small else torch.get_num_threads()
    return free(torch.get_num_threads())


def sample_major(u: torch.Tensor) -> torch.Tensor:
    """One variable of every critic as an (N, M, d) tensor, sample-major.

    A mini-batch of sample indices then gathers contiguous rows of M·d values instead of
    M·b scattered ones, which matters once the activations have evicted the data from cache.
    """
    return u.transpose(0, 1).contiguous()


def critic_pairs(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """The critic inputs [u, v], (M, N, du + dv), for u (M, N, du) and v (M, N, dv), lying as (M, du + dv, N):
    the shallow critic's feature-major copy of them (:class:`~estimators.critics.ShallowCriticFunction`) reads
    whole rows, and ``torch.cat`` along the last axis would write them one value at a time."""
    n_critics, n_samples, du = u.shape
    storage = torch.empty((n_critics, du + v.shape[2], n_samples), dtype=u.dtype, device=u.device)
    storage[:, :du].copy_(u.transpose(1, 2))
    storage[:, du:].copy_(v.transpose(1, 2))
    return storage.transpose(1, 2)


def _gathered_feature_major(rows: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Samples ``index`` of :func:`sample_major` ``rows`` (N, M, d) as an (M, d, b) tensor: a gather of
    contiguous rows, then one 2-D transpose (which torch copies in cache blocks)."""
    n_critics, width = rows.shape[1], rows.shape[2]
    gathered = torch.index_select(rows, 0, index).view(index.shape[0], n_critics * width)
    return gathered.t().contiguous().view(n_critics, width, index.shape[0])


def joint_and_product_batch(u_rows: torch.Tensor, v_rows: torch.Tensor, index: torch.Tensor,
                            shift) -> torch.Tensor:
    """Critic inputs for one step, (M, 2b, du + dv): b joint pairs, then b product-of-marginals pairs.

    ``u_rows``, ``v_rows`` are :func:`sample_major` data and ``index`` the b sample indices.
    Product pair i joins u of joint pair i with v of pair i − ``shift`` (mod b): for
    0 < shift < b no pair is a joint one. ``shift`` is an int, or a 0-d integer tensor on the
    device (the CUDA-graph step reads it from a buffer): the same rows either way. With an int
    shift the values lie feature-major, as :func:`critic_pairs` lays them out.
    """
    if torch.is_tensor(shift):
        u_index = torch.cat((index, index))
        positions = torch.remainder(torch.arange(index.shape[0], device=index.device) - shift, index.shape[0])
        rolled = torch.index_select(index, 0, positions)  # torch.roll(index, shift), with shift on the device
        v_index = torch.cat((index, rolled))
        pairs = torch.cat((torch.index_select(u_rows, 0, u_index), torch.index_select(v_rows, 0, v_index)), dim=2)
        return pairs.transpose(0, 1)
    b, du = index.shape[0], u_rows.shape[2]
    u_part, v_part = _gathered_feature_major(u_rows, index), _gathered_feature_major(v_rows, index)
    pairs = torch.empty((u_part.shape[0], du + v_part.shape[1], 2 * b), dtype=u_part.dtype, device=u_part.device)
    pairs[:, :du].view(-1, du, 2, b).copy_(u_part.unsqueeze(2))  # both halves' u in one copy (one torch call)
    pairs[:, du:, :b] = v_part
    s = shift % b  # product v at position i is v_part[(i − s) mod b], torch.roll's convention
    pairs[:, du:, b + s:] = v_part[:, :, :b - s]
    pairs[:, du:, b:b + s] = v_part[:, :, b - s:]
    return pairs.transpose(1, 2)


def training_step(ensemble: CriticEnsemble, optimizer, u_rows: torch.Tensor, v_rows: torch.Tensor,
                  index: torch.Tensor, shift, objective: str = "dv", mine: MineMovingAverage | None = None,
                  project_a: float | None = None) -> torch.Tensor:
    """One optimizer step of every critic on one mini-batch; returns the per-critic objective (M,).

    One forward pass over the joint and product pairs together, the objective summed over
    critics (their parameters are disjoint, so each critic gets its own gradient), and one
    optimizer step over the stacked parameters. ``mine`` is required for ``objective="mine"``.
    """
    values = ensemble(joint_and_product_batch(u_rows, v_rows, index, shift))
    t_joint, t_product = values.split(index.shape[0], dim=1)  # one call, and one node backward
    if objective == "dv":
        gain = donsker_varadhan(t_joint, t_product)
    elif objective == "nwj":
        gain = nwj(t_joint, t_product)
    else:
        gain = mine.surrogate(t_joint, t_product)
    optimizer.zero_grad(set_to_none=True)
    # The loss is −Σ gain: its gradient −1 given to the sum, as negating it would (exactly), in one call fewer.
    gain.sum().backward(torch.full((), -1.0, dtype=gain.dtype, device=gain.device))
    optimizer.step()
    if project_a is not None:
        ensemble.project_(project_a)
    return gain.detach()


def adam(parameters, learning_rate: float, *, capturable: bool = False) -> torch.optim.Optimizer:
    """Adam over the stacked parameters, with the fused implementation where torch has one for
    the device (CPU since torch 2.4): one kernel per step instead of a dozen per parameter.
    ``capturable``: its step count on the device, as a CUDA graph's capture needs."""
    parameters = list(parameters)
    extra = {"capturable": True} if capturable else {}
    try:
        return torch.optim.Adam(parameters, lr=learning_rate, fused=True, **extra)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(parameters, lr=learning_rate, **extra)


#: Steps run eagerly (on a side stream, as capture requires) before the step is captured; they are real
#: training steps, so the trajectory is the eager one.
GRAPH_WARMUP_STEPS = 3


def use_cuda_graph(device: torch.device, objective: str, project_a, n_critics: int, batch: int,
                   hidden: int) -> bool:
    """Whether :func:`fit_critics` captures its training step as a CUDA graph: on CUDA, for the DV and NWJ
    objectives (MINE's moving average is host state), without projection, and where
    :func:`estimators.device.graph_fits` (graphs on, a step small enough)."""
    return (torch.device(device).type == "cuda" and objective in ("dv", "nwj") and project_a is None
            and device_settings.graph_fits(n_critics, batch, hidden))


def step_draws(generator: torch.Generator, shift_rng: np.random.Generator, n_train: int, batch: int,
               steps: int, *, with_shifts: bool = False):
    """The mini-batches of ``steps`` training steps as one (steps, batch + 1) int64 tensor: each row the b sample
    indices then the shift, the numbers that ``torch.randint(n_train, (batch,), generator=generator)`` and
    ``int(shift_rng.integers(1, batch))`` drawn once a step give; ``with_shifts``: (it, the shifts as ints)."""
    # One draw of steps × b indices: CPU torch draws them one by one, in the order b at a time does (fewer calls).
    shifts = [int(shift_rng.integers(1, batch)) for _ in range(steps)]
    rows = torch.cat((torch.randint(n_train, (steps, batch), generator=generator),
                      torch.tensor(shifts, dtype=torch.int64).view(steps, 1)), dim=1)
    return (rows, shifts) if with_shifts else rows


class GraphedTrainingStep:
    """:func:`training_step` captured as a CUDA graph, fed from a static (batch + 1,) buffer of indices and shift.

    Each call copies one row of :func:`step_draws` (already on the device) into the buffer and runs the step:
    the first :data:`GRAPH_WARMUP_STEPS` calls eagerly on a side stream (capture needs the optimizer's state and
    the libraries' handles made first), the next captures the step and replays it, and every later call is one
    replay. The optimizer must be capturable (:func:`adam` with ``capturable=True``). The activation buffer the
    graph writes into is held here, so a larger evaluation pass that replaces the ensemble's cannot free it.
    ``capture=False`` runs every step eagerly through the same buffer (the CPU checks of this path).
    """

    def __init__(self, ensemble: CriticEnsemble, optimizer, u_rows: torch.Tensor, v_rows: torch.Tensor,
                 batch: int, objective: str = "dv", *, capture: bool = True):
        self.ensemble, self.optimizer, self.u_rows, self.v_rows = ensemble, optimizer, u_rows, v_rows
        self.batch, self.objective = batch, objective
        self.capture = capture and u_rows.device.type == "cuda"
        self.buffer = torch.zeros(batch + 1, dtype=torch.int64, device=u_rows.device)
        self.graph = None
        self.calls = 0
        self._kept = None
        self.gain = None
        self.fallback = None  # why the capture was refused, where it was

    def _step(self) -> torch.Tensor:
        return training_step(self.ensemble, self.optimizer, self.u_rows, self.v_rows, self.buffer[:self.batch],
                             self.buffer[self.batch], self.objective)

    def __call__(self, row: torch.Tensor) -> None:
        self.buffer.copy_(row, non_blocking=True)
        self.calls += 1
        if self.graph is not None:
            self.graph.replay()
            return
        if not self.capture:
            self.gain = self._step()
            return
        device = self.buffer.device
        if self.calls <= GRAPH_WARMUP_STEPS:
            stream = torch.cuda.Stream(device)
            stream.wait_stream(torch.cuda.current_stream(device))
            with torch.cuda.stream(stream):
                self.gain = self._step()
            torch.cuda.current_stream(device).wait_stream(stream)
            return
        graph = torch.cuda.CUDAGraph()
        try:
            # thread_local: CUDA calls of other threads (a progress bar, a GPU sampler) cannot spoil the capture.
            with torch.cuda.graph(graph, capture_error_mode="thread_local"):
                self.gain = self._step()
        except RuntimeError as error:  # capture refused: this step and the rest run eagerly, as without graphs
            self.capture, self.fallback = False, f"{type(error).__name__}: {error}"
            torch.cuda.synchronize(device)
            self.gain = self._step()
            return
        self._kept = self.ensemble._activation_buffer
        self.graph = graph
        graph.replay()

    def close(self) -> None:
        """Drop the graph and what lives in its memory pool (the gradients, the last objective)."""
        self.graph = None
        self._kept = None
        self.gain = None
        self.optimizer.zero_grad(set_to_none=True)


def fit_critics(u, v, *, objective: str = "dv", config: CriticConfig | None = None, seed: int = 0,
                device="auto", quiet: bool = True, desc: str = "critics", check_memory: bool = True) -> CriticFit:
    """Train M critics T_m(u, v) at once and evaluate them on held-out data.

    Parameters
    ----------
    u, v : array-like (M, N, du) and (M, N, dv)
        Critic m sees the pairs (u[m, i], v[m, i]), i = 1..N, all drawn from one joint law.
        The N samples are split into train / validation / test identically for every critic. ``v`` may make
        its chunks on the device itself (:class:`estimators.critic_problems.CriticColumns`,
        :func:`estimators.device_inputs.float64_chunk`).
    objective : {"dv", "mine", "nwj"}
        Training objective: Donsker–Varadhan, MINE's bias-corrected DV gradient, or NWJ.
    config : CriticConfig, optional
        The defaults for None.
    seed : int or numpy.random.Generator
        Seeds the split, the initialization and the mini-batches.
    device : {"auto", "cpu", "cuda"} or torch.device
    check_memory : bool
        Refuse a training that cannot fit in the memory available before it starts
        (:func:`estimators.memory.check_critic_memory`, the inputs ``u`` and ``v`` counted as held already).
        False only where the caller has run that check already, counting the inputs it then built
        (:func:`estimators.estimate.estimate_mi`, the audit through :func:`estimators.critic_problems.fit_problems`).

    Returns
    -------
    CriticFit

    Raises
    ------
    InputError
        Naming the argument: for ``u`` or ``v`` of other shapes, without critics or columns, not real numbers or
        not finite, or too few samples for the splits; ``config``, ``objective`` or ``seed`` out of their
        choices; a training that cannot fit in the memory available (naming ``config`` where the models
        outweigh the features, else ``u`` and ``v``).
    """
    config = checked_config(config, "config")
    check_choice(objective, "objective", NEURAL_ESTIMATORS)
    dev = resolve_device(device)
    rng = as_generator(seed)
    # Kept in their own precision here; each chunk is standardized in float64 (critic_inputs).
    u, v = (real_values(values, name) for values, name in ((u, "u"), (v, "v")))
    if u.ndim != 3 or v.ndim != 3 or u.shape[:2] != v.shape[:2]:
        raise InputError(f"arguments 'u' and 'v' must have shapes (M, N, du) and (M, N, dv), got {tuple(u.shape)} and {tuple(v.shape)}")
    if min(u.shape[0], u.shape[2], v.shape[2]) == 0:
        raise InputError(f"arguments 'u' and 'v' need at least one critic (M) and one column each (du, dv), got shapes "
                         f"{tuple(u.shape)} and {tuple(v.shape)}")
    n_critics, n = u.shape[0], u.shape[1]
    train, val, test = split_indices(n, config.split, rng, eval_shifts=config.eval_shifts,
                                     what="arguments 'u' and 'v'")
    if check_memory:
        check_critic_memory(n_critics, n, u.shape[2] + v.shape[2], config, inputs_held=True, config_name="config",
                            samples_name=f"arguments 'u' and 'v' ({n_critics} critic(s))", device=dev)
    fits = []
    for start in range(0, n_critics, config.max_critics_per_chunk):
        stop = min(n_critics, start + config.max_critics_per_chunk)
        threads = step_threads(stop - start, config.batch_size, config.hidden, dev)
        with cpu_threads(threads):
            fits.append(_fit_chunk(float64_chunk(u, start, stop, "u", dev), float64_chunk(v, start, stop, "v", dev),
                                   train, val, test, objective, config,
                                   int(rng.integers(2**31)), dev, quiet, desc))
    if len(fits) == 1:
        return fits[0]
    scorer = CriticScorer()
    for chunk_start, f in zip(range(0, n_critics, config.max_critics_per_chunk), fits):
        for _, _, ensemble, u_stats, v_stats, _ in f.scorer._chunks:
            scorer.add(chunk_start, ensemble, u_stats, v_stats)
    return CriticFit(
        estimates=np.concatenate([f.estimates for f in fits]),
        stderr=np.concatenate([f.stderr for f in fits]),
        validation=np.concatenate([f.validation for f in fits]),
        test_joint=np.concatenate([f.test_joint for f in fits]),
        test_product=np.concatenate([f.test_product for f in fits]),
        validation_joint=np.concatenate([f.validation_joint for f in fits]),
        validation_product=np.concatenate([f.validation_product for f in fits]),
        output_range=fits[0].output_range,
        steps=max(f.steps for f in fits),
        seconds=sum(f.seconds for f in fits),
        split_sizes=fits[0].split_sizes,
        history={"chunks": [f.history for f in fits]},
        scorer=scorer,
        split=fits[0].split,
    )


def _fit_chunk(u, v, train_idx, val_idx, test_idx, objective, config, seed, device, quiet, desc) -> CriticFit:
    started = time.perf_counter()
    n_critics = u.shape[0]
    train = to_device(train_idx, device)
    u_stats, v_stats = robust_standardization(u, train), robust_standardization(v, train)
    u, v = critic_inputs(u, *u_stats), critic_inputs(v, *v_stats)
    u_rows, v_rows = sample_major(samples_of(u, train)), sample_major(samples_of(v, train))
    u_val, v_val = samples_of(u, val_idx), samples_of(v, val_idx)
    u_test, v_test = samples_of(u, test_idx), samples_of(v, test_idx)

    gen = torch.Generator().manual_seed(seed)
    shift_rng = np.random.default_rng(seed)
    ensemble = CriticEnsemble(n_critics, u.shape[2] + v.shape[2], architecture=config.architecture,
                              hidden=config.hidden, depth=config.depth, output_range=config.output_range,
                              generator=gen).to(device)
    if config.project_a is not None:
        ensemble.project_(config.project_a)
    n_train, n_val = u_rows.shape[0], u_val.shape[1]
    batch = min(config.batch_size, n_train)
    graphed = use_cuda_graph(device, objective, config.project_a, n_critics, batch, config.hidden)
    optimizer = adam(ensemble.parameters(), config.learning_rate, capturable=graphed)
    step_graph = GraphedTrainingStep(ensemble, optimizer, u_rows, v_rows, batch, objective) if graphed else None
    mine = MineMovingAverage(n_critics, config.mine_rate, device) if objective == "mine" else None
    chunk = scoring_rows(n_critics, config.hidden)

    def evaluate(u_part, v_part, shifts) -> torch.Tensor:
        t_joint = _scores(ensemble, u_part, v_part, chunk)
        t_prod = torch.cat([_scores(ensemble, u_part, torch.roll(v_part, s, dims=1), chunk) for s in shifts], dim=1)
        return objective_value(objective, t_joint, t_prod)

    best = torch.full((n_critics,), -float("inf"), device=device)
    best_mean, stale = -float("inf"), 0
    snapshot = ensemble.snapshot()
    history = {"steps": [], "validation_mean": []}
    bar = progress_bar(config.max_steps, desc, quiet=quiet)
    step = 0
    for step in range(1, config.max_steps + 1):
        k = (step - 1) % config.eval_every  # the step's row of its block's draws
        if k == 0:  # one copy to the device a block of steps: a copy from pageable memory makes a CUDA host wait
            block = min(config.eval_every, config.max_steps - step + 1)
            draws, shifts = step_draws(gen, shift_rng, n_train, batch, block, with_shifts=True)  # shifts on the host
            draws = to_device(draws, device, pinned=True)  # on a GPU without waiting; on the CPU for sync_count
        if step_graph is None:
            training_step(ensemble, optimizer, u_rows, v_rows, draws[k, :batch], shifts[k], objective, mine,
                          config.project_a)
        else:
            step_graph(draws[k])
        bar.update(1)
        if step % config.eval_every == 0 or step == config.max_steps:
            value = evaluate(u_val, v_val, [n_val // 2])
            improved = value > best
            best = torch.where(improved, value, best)
            ensemble.store_where(snapshot, improved)
            mean_value = float(value.mean())
            history["steps"].append(step)
            history["validation_mean"].append(mean_value)
            if mean_value > best_mean + config.min_delta:
                best_mean, stale = mean_value, 0
            else:
                stale += 1
                if stale >= config.patience:
                    break
    bar.close()
    if step_graph is not None:
        step_graph.close()
    ensemble.restore_where(snapshot, torch.ones(n_critics, dtype=torch.bool, device=device))

    n_test = u_test.shape[1]
    half = n_test // 2
    with torch.no_grad():
        t_joint = _scores(ensemble, u_test, v_test, chunk)
        t_prod_all = torch.cat([_scores(ensemble, u_test, torch.roll(v_test, s, dims=1), chunk)
                                for s in product_shifts(n_test, config.eval_shifts)], dim=1)
        estimates = objective_value(objective, t_joint, t_prod_all)
        t_cert = _scores(ensemble, u_test[:, :half], v_test[:, half:2 * half], chunk)
        half_val = n_val // 2
        val_joint = _scores(ensemble, u_val, v_val, chunk)
        val_prod = _scores(ensemble, u_val[:, :half_val], v_val[:, half_val:2 * half_val], chunk)
    ensemble.release_buffers()  # the scorer keeps the ensemble; its training-sized buffer is not needed
    if not all_finite(t_joint, t_prod_all, t_cert, val_joint, val_prod):
        # Bounded critics on finite standardized inputs cannot do this; refuse rather than certify NaN.
        raise InputError(f"{desc}: training diverged (critic values are not finite); try a smaller learning rate")
    tj = t_joint.double().cpu().numpy()
    scorer = CriticScorer()
    scorer.add(0, ensemble, u_stats, v_stats)
    return CriticFit(
        estimates=estimates.double().cpu().numpy(),
        stderr=delta_method_stderr(t_joint, t_prod_all, objective),
        validation=best.double().cpu().numpy(),
        test_joint=tj,
        test_product=t_cert.double().cpu().numpy(),
        validation_joint=val_joint.double().cpu().numpy(),
        validation_product=val_prod.double().cpu().numpy(),
        output_range=tuple(config.output_range),
        steps=step,
        seconds=time.perf_counter() - started,
        split_sizes=(len(train_idx), len(val_idx), len(test_idx)),
        history=history,
        scorer=scorer,
        split=(train_idx, val_idx, test_idx),
    )

