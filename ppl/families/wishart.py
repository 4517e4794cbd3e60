"""Wishart distribution over D×D SPD matrices with dof ν and scale S.

E[X] = νS.  t(X) = (vec X, log|X|), λ = (vec(−½S⁻¹), (ν − D − 1)/2),
h(X) = 1 and

    A(λ) = (νD/2) log 2 + (ν/2) log|S| + log Γ_D(ν/2).

The matrix block is read through its symmetric part, S⁻¹ = −(Λ₁ + Λ₁ᵀ), so
∂A/∂λ equals the flat E[t] entry by entry.  ``to_natural`` solves a scalar
equation for ν (``solve_wishart_dof``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy import special
from scipy.special import gammaln, polygamma

from .base import (
    ExponentialFamily,
    chol_inverse,
    chol_logdet,
    cholesky,
    is_positive_definite,
    leading,
    qs_column,
    require_count,
    symmetrize,
)
from .wishart_entry import quantiles as entry_quantiles

_LOG2 = np.log(2.0)
_MAX_ITER = 100


def _sum_digamma(nu, d: int, order: int = 0):
    """Σ_{j=1..D} ψ⁽ᵒʳᵈᵉʳ⁾((ν + 1 − j)/2)."""
    return sum(polygamma(order, 0.5 * (nu + 1.0 - j)) for j in range(1, d + 1))


def _log_multigamma(a, d: int):
    """log Γ_D(a) = D(D−1)/4 log π + Σ_j log Γ(a + (1 − j)/2).

    Written out (rather than scipy's multigammaln, which raises for the whole
    batch if one a ≤ (D − 1)/2) so that every element is evaluated; whether
    an element is meaningful is what ``Wishart.valid`` reports.
    """
    return 0.25 * d * (d - 1) * np.log(np.pi) + sum(
        gammaln(a + 0.5 * (1 - j)) for j in range(1, d + 1)
    )


def solve_wishart_dof(c, d: int) -> np.ndarray:
    """Solve φ(ν) = Σ_j ψ((ν + 1 − j)/2) − D log(ν/2) = c (c < 0) for ν > D − 1.

    φ rises from −∞ (ν → D − 1) to 0 (ν → ∞) roughly like −1/y in
    y = ν − D + 1, so Newton's method is run on the nearly linear
    F(y) = −1/φ(y + D − 1) = −1/c; a step that would leave y > 0 is halved
    instead.  Iterates stop when the relative step is at round-off level.
    For D = 1 this is the Gamma-shape equation with a = ν/2.
    """
    c = np.asarray(c, dtype=float)
    target = -1.0 / c
    y = np.maximum(target * d * (d + 1) / 2.0 - (d - 1), 2.0 * target)
    for _ in range(_MAX_ITER):
        nu = y + d - 1.0
        phi = _sum_digamma(nu, d) - d * np.log(0.5 * nu)
        dphi = 0.5 * _sum_digamma(nu, d, order=1) - d / nu
        step = (-1.0 / phi - target) / (dphi / phi**2)
        new = np.where(y - step > 0, y - step, 0.5 * y)
        done = np.all(np.abs(new - y) <= 4e-16 * (new + d - 1.0))
        y = new
        if done:
            break
    return y + d - 1.0


@dataclass(frozen=True)
class Wishart(ExponentialFamily):
    """W(X | ν, S) in D dimensions; flat size D² + 1."""

    dim: int

    name: ClassVar[str] = "Wishart"
    support: ClassVar[str] = "positive_definite"
    arg_constraints: ClassVar = MappingProxyType(
        {"dof": "greater_than(dim - 1)", "scale": "positive_definite"}
    )

    def __post_init__(self):
        require_count("Wishart", "dim", self.dim, 1)

    @property
    def event_shape(self) -> tuple:
        return (self.dim, self.dim)

    @property
    def size(self) -> int:
        return self.dim**2 + 1

    # -- layout helpers -------------------------------------------------------
    def _split(self, flat):
        """(symmetrised matrix block, scalar block) of a flat vector."""
        flat = np.asarray(flat, float)
        d = self.dim
        return symmetrize(flat[..., :-1].reshape(flat.shape[:-1] + (d, d))), flat[..., -1]

    def _join(self, mat, scalar):
        shape = np.broadcast_shapes(mat.shape[:-2], np.shape(scalar))
        mat = np.broadcast_to(mat, shape + (self.dim, self.dim)).reshape(shape + (-1,))
        return np.concatenate([mat, np.broadcast_to(scalar, shape)[..., None]], axis=-1)

    def _inv_scale_dof(self, nat):
        """(S⁻¹, ν) from natural parameters."""
        l1, l2 = self._split(nat)
        return -2.0 * l1, 2.0 * l2 + self.dim + 1.0

    # -- parameter maps -------------------------------------------------------
    def natural(self, *, dof, scale) -> np.ndarray:
        inv_scale = chol_inverse(symmetrize(np.asarray(scale, float)))
        return self._join(-0.5 * inv_scale, 0.5 * (np.asarray(dof, float) - self.dim - 1.0))

    def params(self, nat) -> dict:
        inv_scale, nu = self._inv_scale_dof(nat)
        return {"dof": nu, "scale": chol_inverse(inv_scale)}

    def log_partition(self, nat) -> np.ndarray:
        inv_scale, nu = self._inv_scale_dof(nat)
        d = self.dim
        return (
            0.5 * nu * d * _LOG2
            - 0.5 * nu * chol_logdet(cholesky(inv_scale))
            + _log_multigamma(0.5 * nu, d)
        )

    def expected(self, nat) -> np.ndarray:
        """E[X] = νS, shape plates + (D, D)."""
        p = self.params(nat)
        return p["dof"][..., None, None] * p["scale"]

    def expected_logdet(self, nat) -> np.ndarray:
        """E[log|X|] = Σ_j ψ((ν + 1 − j)/2) + D log 2 + log|S|."""
        inv_scale, nu = self._inv_scale_dof(nat)
        d = self.dim
        return _sum_digamma(nu, d) + d * _LOG2 - chol_logdet(cholesky(inv_scale))

    def to_mean(self, nat) -> np.ndarray:
        return self._join(self.expected(nat), self.expected_logdet(nat))

    def to_natural(self, mean) -> np.ndarray:
        """Newton solve for ν (``solve_wishart_dof``), then S = E[X]/ν."""
        ex, elogdet = self._split(mean)
        nu = solve_wishart_dof(elogdet - chol_logdet(cholesky(ex)), self.dim)
        inv_scale = nu[..., None, None] * chol_inverse(ex)
        return self._join(-0.5 * inv_scale, 0.5 * (nu - self.dim - 1.0))

    # -- values ---------------------------------------------------------------
    def stats(self, x) -> np.ndarray:
        x = symmetrize(np.asarray(x, float))
        return self._join(x, chol_logdet(cholesky(x)))

    def log_base(self, x) -> np.ndarray:
        return np.zeros(np.shape(x)[:-2])

    def expected_log_base(self, nat) -> np.ndarray:
        return np.zeros(np.shape(nat)[:-1])

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        """Bartlett decomposition: X = (L A)(L A)ᵀ, S = L Lᵀ, A lower triangular."""
        p = self.params(nat)
        d = self.dim
        chol = cholesky(p["scale"])
        shape = leading(n) + chol.shape[:-2]
        dfs = p["dof"][..., None] - np.arange(d)
        diag = np.sqrt(rng.chisquare(np.broadcast_to(dfs, shape + (d,))))
        a = np.tril(rng.standard_normal(shape + (d, d)), k=-1)
        a = a + diag[..., :, None] * np.eye(d)
        la = chol @ a
        return la @ np.swapaxes(la, -1, -2)

    def mean(self, nat) -> np.ndarray:
        return self.expected(nat)

    def sd(self, nat) -> np.ndarray:
        """√var(X_ij) with var(X_ij) = ν(S_ij² + S_ii S_jj)."""
        p = self.params(nat)
        s = p["scale"]
        dg = np.diagonal(s, axis1=-2, axis2=-1)
        var = p["dof"][..., None, None] * (s**2 + dg[..., :, None] * dg[..., None, :])
        return np.sqrt(var)

    def quantiles(self, nat, qs) -> np.ndarray:
        """Marginal quantiles of every entry, shape (len(qs),) + plates + (D, D), without drawing
        matrices. With G ~ χ²_ν, a diagonal entry is S_ii G: exact, through the inverse
        regularised gamma function. An off-diagonal entry is √(S_ii S_jj) times the law of
        `ppl.families.wishart_entry` (variance-gamma, ρ = S_ij/√(S_ii S_jj)): quantiles by
        quadrature and Newton steps, |F(q̂) − q| < 1e-12 in probability, the quadrature within
        1e-9 of the closed-form density's integral in our checks.
        """
        p = self.params(nat)
        s, nu = p["scale"], p["dof"][..., None, None]
        q = qs_column(qs, s.ndim)
        out = 2.0 * s * special.gammaincinv(0.5 * nu, q)  # S_ii χ²_ν on the diagonal
        i, j = np.triu_indices(self.dim, 1)
        if len(i):  # each pair once, then mirrored
            diag = np.diagonal(s, axis1=-2, axis2=-1)
            scale = np.sqrt(diag[..., i] * diag[..., j])
            rho = np.clip(s[..., i, j] / scale, -1.0 + 1e-15, 1.0 - 1e-15)  # PD: |ρ| < 1
            upper = scale * entry_quantiles(np.ravel(qs), rho, np.broadcast_to(p["dof"][..., None], rho.shape))
            out = np.broadcast_to(out, np.broadcast_shapes(out.shape, q.shape)).copy()
            out[..., i, j] = out[..., j, i] = upper
        return out

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        inv_scale, nu = self._inv_scale_dof(nat)
        finite = np.isfinite(nat).all(axis=-1)
        return finite & (nu > self.dim - 1) & is_positive_definite(inv_scale)

