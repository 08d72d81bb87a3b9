"""A batched ensemble of small ReLU critics: M independent networks as one model.

Parameters are stacked along a leading critic axis (weights of shape ``(M, in, hidden)``)
and the forward pass is a batched matrix product on inputs of shape ``(M, batch, in)``, so
training thousands of critics costs one optimizer step over the stacked parameters and no
Python loop per critic. The same module runs on CPU or CUDA.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .critic_config import ARCHITECTURES
from .validation import InputError, check_choice, check_int, check_positive


def _uniform(generator: torch.Generator, shape, bound: float) -> torch.Tensor:
    return (torch.rand(shape, generator=generator, dtype=torch.float32) * 2.0 - 1.0) * bound


def project_l1_ball(w: torch.Tensor, radius) -> torch.Tensor:
    """Euclidean projection of each row of ``w`` (last axis) onto the ℓ₁ ball of ``radius``.

    Sort-based algorithm of Duchi, Shalev-Shwartz, Singer and Chandra (2008), "Efficient
    projections onto the ℓ1-ball for learning in high dimensions", Fig. 1, batched over all
    leading axes. Rows already inside the ball are returned unchanged.
    """
    abs_w = w.abs()
    inside = abs_w.sum(dim=-1, keepdim=True) <= radius
    sorted_abs, _ = torch.sort(abs_w, dim=-1, descending=True)
    cumulative = sorted_abs.cumsum(dim=-1) - radius
    ks = torch.arange(1, w.shape[-1] + 1, device=w.device, dtype=w.dtype)
    feasible = sorted_abs - cumulative / ks > 0
    rho = feasible.to(w.dtype).cumsum(dim=-1).argmax(dim=-1, keepdim=True)  # last feasible index
    threshold = cumulative.gather(-1, rho) / (rho + 1).to(w.dtype)
    projected = torch.sign(w) * torch.clamp(abs_w - threshold, min=0.0)
    return torch.where(inside, w, projected)


class ShallowCriticFunction(torch.autograd.Function):
    """The shallow class G_ℓ(a) on a batch, with a hand-written backward pass.

    For critic m and input z_n ∈ R^in (Pufferfish paper, Section VI-C, after Eq. (8)):
    h_n = ReLU(W_mᵀ z_n + b_m) ∈ R^ℓ and out_n = β_mᵀ h_n + w_{0,m}ᵀ z_n + b_{0,m}.

    Why not autograd: with a few inputs and tens of units, a step is bound by passes over the
    (M, batch, ℓ) activations, and autograd's graph makes ten of them with fresh allocations
    (the outer product g βᵀ, the ReLU mask, a batched matrix-vector product in a slow layout).
    With g = ∂L/∂out and D = 1[h > 0], the gradients are
    ∂L/∂β = hᵀg, ∂L/∂W = (z ∘ g)ᵀD ∘ βᵀ, ∂L/∂b = gᵀD ∘ βᵀ, ∂L/∂w₀ = zᵀg, ∂L/∂b₀ = Σ g,
    so the backward pass reads the activations twice and turns them into D in place: six passes
    in all, forward included. (W's and b's gradients come from one product with D because
    ∂L/∂pre_{nj} = g_n β_j D_{nj} factorizes.)

    Shapes: z (M, N, in), W (M, in, ℓ), b (M, 1, ℓ), β (M, ℓ, 1), b₀ (M, 1, 1), w₀ (M, in, 1);
    returns (M, N). ``activations`` is an (M, N, ℓ) tensor the forward pass writes h into: a
    buffer kept between steps, because a fresh one of that size costs a page fault per 4 KiB
    at its first write, which took longer than the arithmetic. The biases ride on a column of
    ones appended to z, so each layer is a single product. Backward may run once per
    forward, and not after the buffer was written again (autograd's version check says so).
    """

    @staticmethod
    def forward(ctx, z, w, b, beta, b0, w0, activations):
        # The input feature-major with a row of ones, z₁ᵀ = [z, 1]ᵀ of shape (M, in + 1, N): the
        # ones carry both biases through the products, and the backward pass's z₁ᵀ ∘ g runs
        # along the long sample axis.
        n_critics, n_samples, in_dim = z.shape
        z1t = torch.empty((n_critics, in_dim + 1, n_samples), dtype=z.dtype, device=z.device)
        z1t[:, :in_dim].copy_(z.transpose(1, 2))
        z1t[:, in_dim].fill_(1.0)
        weights = torch.cat((w, b), dim=1)
        out = torch.empty((n_critics, 1, n_samples), dtype=z.dtype, device=z.device)
        for block in _critic_blocks(activations):
            h = torch.bmm(_part(z1t, block).transpose(1, 2), _part(weights, block),
                          out=_part(activations, block)).relu_()
            # out as (M, 1, N) = βᵀhᵀ: a row vector times a matrix is much faster than h·β here.
            torch.bmm(_part(beta, block).transpose(1, 2), h.transpose(1, 2), out=_part(out, block))
        out.baddbmm_(torch.cat((w0, b0), dim=1).transpose(1, 2), z1t)
        ctx.save_for_backward(z1t, activations, w, beta, w0)
        return out.squeeze(1)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        z1t, h, w, beta, w0 = ctx.saved_tensors
        g_row = grad_out.unsqueeze(1)  # (M, 1, N)
        grad_skip = torch.bmm(z1t, grad_out.unsqueeze(2))  # (M, in + 1, 1): w₀ then b₀
        weighted = z1t * g_row
        grad_beta = torch.empty_like(beta.transpose(1, 2))  # (M, 1, ℓ)
        reduced = torch.empty((h.shape[0], z1t.shape[1], h.shape[2]), dtype=h.dtype, device=h.device)
        for block in _critic_blocks(h):
            part = _part(h, block)
            torch.bmm(_part(g_row, block), part, out=_part(grad_beta, block))
            active = part.sign_()  # h ≥ 0 after the ReLU: its sign is the 0/1 mask D (h is done with)
            torch.bmm(_part(weighted, block), active, out=_part(reduced, block))
        reduced *= beta.transpose(1, 2)  # (M, in + 1, ℓ): W's gradient, then b's
        grad_z = None
        if ctx.needs_input_grad[0]:
            grad_pre = h * grad_out.unsqueeze(2) * beta.transpose(1, 2)  # h holds D now
            grad_z = torch.bmm(grad_pre, w.transpose(1, 2)) + grad_out.unsqueeze(2) * w0.transpose(1, 2)
        return (grad_z, reduced[:, :-1].contiguous(), reduced[:, -1:].contiguous(),
                grad_beta.transpose(1, 2).contiguous(), grad_skip[:, -1:].contiguous(),
                grad_skip[:, :-1].contiguous(), None)


# On a CPU, ensembles whose activations exceed this many (critic, sample, unit) values (8 MiB in
# float32) are swept in blocks of critics, so each block's activations are still in cache for
# the next pass over them. Measured on the 2-core AMD EPYC VM of the README's table, 512 samples ×
# 32 units: M = 256 went from 6.1 to 5.3 ms a step, M = 2048 from 47 to 43 ms; blocks of 2^18 or
# 2^19 values were no faster.
CPU_BLOCK_ACTIVATIONS = 1 << 21


def _critic_blocks(activations: torch.Tensor) -> list:
    """Slices of the critic axis to process in turn: one on a GPU, cache-sized ones on a CPU; ``slice(None)``
    where one block holds every critic."""
    n_critics = activations.shape[0]
    if activations.device.type != "cpu":
        return [slice(None)]
    step = max(1, CPU_BLOCK_ACTIVATIONS // max(1, activations.shape[1] * activations.shape[2]))
    if step >= n_critics:
        return [slice(None)]
    return [slice(start, start + step) for start in range(0, n_critics, step)]


def _part(tensor: torch.Tensor, block: slice) -> torch.Tensor:
    """The critics ``block`` of ``tensor``: the tensor itself for ``slice(None)``, since indexing even with a
    full slice is one more torch operator call, each a kernel launch's host time on a GPU."""
    return tensor if block == slice(None) else tensor[block]


class CriticEnsemble(nn.Module):
    """M independent critics T_m : R^in → [lo, hi], evaluated in one batched forward.

    Architectures
    -------------
    ``"shallow"``
        The class G_ℓ(a) of the Pufferfish paper, Section VI-C (after Eq. (8)):
        g(z) = Σ_{i≤ℓ} β_i ReLU(⟨w_i, z⟩ + b_i) + ⟨w_0, z⟩ + b_0 — ℓ ReLU units plus a
        linear skip term. :meth:`project_` enforces the paper's norm constraints
        ‖w_i‖₁ ∨ |b_i| ≤ 1, |β_i| ≤ a/(2ℓ), |b_0|, ‖w_0‖₁ ≤ a.
    ``"mlp"``
        ``depth`` hidden ReLU layers of width ``hidden`` and a linear output.

    Output bound
    ------------
    When ``output_range=(lo, hi)`` is given, the raw output r is mapped to
    lo + (hi − lo)·sigmoid(4(r − c)/(hi − lo)) with c = (lo + hi)/2 (slope 1 at c), so every
    critic is bounded — what the certified lower bound needs (DESIGN.md, statistical core).
    """

    def __init__(self, n_critics: int, in_dim: int, *, architecture: str = "shallow", hidden: int = 64,
                 depth: int = 2, output_range: tuple[float, float] | None = None,
                 generator: torch.Generator | None = None):
        super().__init__()
        self.n_critics = check_int(n_critics, "n_critics", 1)
        self.in_dim = check_int(in_dim, "in_dim", 1)
        self.architecture = check_choice(architecture, "architecture", ARCHITECTURES)
        self.hidden = check_int(hidden, "hidden", 1)
        self.depth = check_int(depth, "depth", 1)
        if output_range is not None:
            lo, hi = float(output_range[0]), float(output_range[1])
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < 0.0 < hi):
                raise InputError(f"argument 'output_range' must satisfy lo < 0 < hi, got {output_range!r}")
            output_range = (lo, hi)
        self.output_range = output_range
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        M, h = self.n_critics, self.hidden
        widths = [self.in_dim] + [h] * (1 if architecture == "shallow" else self.depth)
        self.weights = nn.ParameterList()
        self.biases = nn.ParameterList()
        for fan_in, fan_out in zip(widths[:-1], widths[1:]):
            bound = 1.0 / math.sqrt(fan_in)
            self.weights.append(nn.Parameter(_uniform(gen, (M, fan_in, fan_out), bound)))
            self.biases.append(nn.Parameter(_uniform(gen, (M, 1, fan_out), bound)))
        self.out_weight = nn.Parameter(_uniform(gen, (M, widths[-1], 1), 1.0 / math.sqrt(widths[-1])))
        self.out_bias = nn.Parameter(torch.zeros(M, 1, 1))
        if architecture == "shallow":
            self.skip_weight = nn.Parameter(torch.zeros(M, self.in_dim, 1))
        else:
            self.register_parameter("skip_weight", None)
        self._activation_buffer = None
        self._activation_view = None  # (buffer, (critics, samples), the view), made again only when they change

    def raw(self, z: torch.Tensor, critics: slice = slice(None)) -> torch.Tensor:
        """Unbounded values of the ``critics`` (a slice of the ensemble) on ``z`` of shape
        (len(critics), batch, in); returns (len(critics), batch)."""
        def part(parameter):
            return parameter if critics == slice(None) else parameter[critics]

        if self.architecture == "shallow":
            return ShallowCriticFunction.apply(z, part(self.weights[0]), part(self.biases[0]),
                                               part(self.out_weight), part(self.out_bias), part(self.skip_weight),
                                               self._activations(z.shape[0], z.shape[1]))
        h = z
        for w, b in zip(self.weights, self.biases):
            h = torch.relu(torch.baddbmm(part(b), h, part(w)))
        return torch.baddbmm(part(self.out_bias), h, part(self.out_weight)).squeeze(-1)

    def _activations(self, critics: int, samples: int) -> torch.Tensor:
        """An (critics, samples, hidden) view of the activation buffer, grown when too small."""
        size = critics * samples * self.hidden
        weight = self.weights[0]
        buffer = self._activation_buffer
        if buffer is None or buffer.numel() < size or buffer.device != weight.device or buffer.dtype != weight.dtype:
            buffer = self._activation_buffer = torch.empty(size, device=weight.device, dtype=weight.dtype)
        kept = self._activation_view
        if kept is None or kept[0] is not buffer or kept[1] != (critics, samples):
            # The view is two torch calls (a slice and a view) a forward pass; every step asks for the same one.
            kept = (buffer, (critics, samples), buffer[:size].view(critics, samples, self.hidden))
            self._activation_view = kept
        return kept[2]

    def release_buffers(self) -> None:
        """Free the activation buffer (it is made again at the next forward pass)."""
        self._activation_buffer = self._activation_view = None

    def forward(self, z: torch.Tensor, critics: slice = slice(None)) -> torch.Tensor:
        """Critic values T_m(z) of shape (M, batch), within ``output_range`` when one is set."""
        return self.bound(self.raw(z, critics))

    def bound(self, raw: torch.Tensor) -> torch.Tensor:
        """Map raw outputs into ``output_range`` (identity without one)."""
        if self.output_range is None:
            return raw
        lo, hi = self.output_range
        width = hi - lo
        return lo + width * torch.sigmoid((raw - 0.5 * (lo + hi)) * (4.0 / width))

    @torch.no_grad()
    def project_(self, a: float) -> None:
        """Project the shallow critics onto the norm constraints of G_ℓ(a) (Section VI-C).

        ‖w_i‖₁ ∨ |b_i| ≤ 1 for each hidden unit i, |β_i| ≤ a/(2ℓ), |b_0| ≤ a, ‖w_0‖₁ ≤ a.
        """
        if self.architecture != "shallow":
            raise InputError("argument 'project' needs architecture='shallow' (the class G_ℓ(a))")
        a = check_positive(a, "a")
        w1, b1 = self.weights[0], self.biases[0]
        # Columns of w1 are the unit weight vectors w_i ∈ R^in.
        w1.copy_(project_l1_ball(w1.transpose(1, 2), 1.0).transpose(1, 2))
        b1.clamp_(-1.0, 1.0)
        self.out_weight.clamp_(-a / (2 * self.hidden), a / (2 * self.hidden))
        self.out_bias.clamp_(-a, a)
        self.skip_weight.copy_(project_l1_ball(self.skip_weight.transpose(1, 2), a).transpose(1, 2))

    @torch.no_grad()
    def snapshot(self) -> list[torch.Tensor]:
        """Copies of all stacked parameters (for keeping each critic's best state)."""
        return [p.detach().clone() for p in self.parameters()]

    @torch.no_grad()
    def restore_where(self, snapshot: list[torch.Tensor], mask: torch.Tensor) -> None:
        """Copy ``snapshot`` into the critics selected by the boolean ``mask`` of shape (M,)."""
        _copy_where(list(self.parameters()), snapshot, mask)

    @torch.no_grad()
    def store_where(self, snapshot: list[torch.Tensor], mask: torch.Tensor) -> None:
        """Overwrite ``snapshot`` with the current parameters of the critics selected by ``mask``."""
        _copy_where(snapshot, list(self.parameters()), mask)


def _copy_where(targets, sources, mask: torch.Tensor) -> None:
    for target, source in zip(targets, sources):
        selected = mask.view(-1, *([1] * (target.dim() - 1)))
        target.copy_(torch.where(selected, source, target))
