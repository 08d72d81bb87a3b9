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

from .validation import InputError, check_choice, check_int, check_positive

ARCHITECTURES = ("shallow", "mlp")


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

    def raw(self, z: torch.Tensor, critics: slice = slice(None)) -> torch.Tensor:
        """Unbounded values of the ``critics`` (a slice of the ensemble) on ``z`` of shape
        (len(critics), batch, in); returns (len(critics), batch)."""
        h = z
        for w, b in zip(self.weights, self.biases):
            h = torch.relu(torch.baddbmm(b[critics], h, w[critics]))
        out = torch.baddbmm(self.out_bias[critics], h, self.out_weight[critics])
        if self.skip_weight is not None:
            out = out + torch.bmm(z, self.skip_weight[critics])
        return out.squeeze(-1)

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
