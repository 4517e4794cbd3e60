"""Normal–Wishart: a joint q(μ, Λ) = N(μ | m, (βΛ)⁻¹) · W(Λ | W, ν), for structured mean field.

Sufficient statistics t = (Λμ, μᵀΛμ, vec Λ, log|Λ|), flat (D + 1 + D² + 1); natural parameters

    λ = (β m,  −β/2,  vec(−½(W⁻¹ + β m mᵀ)),  (ν − D)/2),

log h = −(D/2) log 2π, and A(λ) = −(D/2) log β + (ν/2) log|W| + (νD/2) log 2 + log Γ_D(ν/2).
With D = 1 it is the Normal–Gamma: Gamma(a, b) is the one-dimensional Wishart(2a, 1/(2b)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import digamma, gammaln

from ppl.families.base import chol_inverse, chol_logdet, symmetrize

LOG_2PI = np.log(2 * np.pi)


@dataclass(frozen=True)
class NormalWishart:
    dim: int
    name: ClassVar[str] = "NormalWishart"

    @property
    def size(self) -> int:
        return self.dim + 1 + self.dim * self.dim + 1

    @property
    def event_shape(self) -> tuple:
        return (self.dim,)

    def _split(self, flat):
        d = self.dim
        flat = np.asarray(flat, dtype=float)
        return (flat[..., :d], flat[..., d], flat[..., d + 1: d + 1 + d * d].reshape(flat.shape[:-1] + (d, d)),
                flat[..., -1])

    def natural(self, *, mean, beta, dof, scale) -> np.ndarray:
        d = self.dim
        mean = np.asarray(mean, float) * np.ones(d)
        beta, dof = np.asarray(beta, float), np.asarray(dof, float)
        scale = np.asarray(scale, float) * (np.ones((d, d)) if np.ndim(scale) < 2 else 1.0)
        inv = chol_inverse(symmetrize(scale)) if d > 1 or np.ndim(scale) >= 2 else 1.0 / scale
        outer = mean[..., :, None] * mean[..., None, :]
        c = -0.5 * (inv + beta[..., None, None] * outer)
        shape = np.broadcast_shapes(mean.shape[:-1], beta.shape, dof.shape, c.shape[:-2])
        parts = [np.broadcast_to(beta[..., None] * mean, shape + (d,)), np.broadcast_to(-0.5 * beta, shape)[..., None],
                 np.broadcast_to(c, shape + (d, d)).reshape(shape + (d * d,)),
                 np.broadcast_to(0.5 * (dof - d), shape)[..., None]]
        return np.concatenate(parts, axis=-1)

    def params(self, nat) -> dict:
        a, b, c, half = self._split(nat)
        beta = -2.0 * b
        mean = a / beta[..., None]
        inv_scale = symmetrize(-2.0 * c) - beta[..., None, None] * (mean[..., :, None] * mean[..., None, :])
        return {"mean": mean, "beta": beta, "dof": 2.0 * half + self.dim, "scale": _inverse(inv_scale)}

    def log_partition(self, nat) -> np.ndarray:
        return self._log_partition(self.params(nat))

    def _log_partition(self, p, logdet=None) -> np.ndarray:
        """A(λ) from `params`; `logdet`: log|W|, when already taken."""
        d, nu = self.dim, p["dof"]
        logdet = chol_logdet(_factor(p["scale"])) if logdet is None else logdet
        return (-0.5 * d * np.log(p["beta"]) + 0.5 * nu * logdet + 0.5 * nu * d * np.log(2.0)
                + _multigammaln(0.5 * nu, d))

    def to_mean(self, nat) -> np.ndarray:
        return self._to_mean(self.params(nat))

    def _to_mean(self, p, logdet=None) -> np.ndarray:
        """E[t] from `params`; `logdet`: log|W|, when already taken."""
        d, nu, w, m = self.dim, p["dof"], p["scale"], p["mean"]
        wm = np.einsum("...ij,...j->...i", w, m)
        e_lambda = nu[..., None, None] * w
        quad = d / p["beta"] + nu * np.einsum("...i,...i->...", m, wm)
        logdet = (digamma(0.5 * (nu[..., None] - np.arange(d))).sum(axis=-1) + d * np.log(2.0)
                  + (chol_logdet(_factor(w)) if logdet is None else logdet))
        return np.concatenate([nu[..., None] * wm, quad[..., None], e_lambda.reshape(nu.shape + (d * d,)),
                               logdet[..., None]], axis=-1)

    def expected_log_base(self, nat) -> np.ndarray:
        return np.full(np.shape(nat)[:-1], -0.5 * self.dim * LOG_2PI)

    def entropy(self, nat) -> np.ndarray:
        return self.moments_and_entropy(nat)[1]

    def moments_and_entropy(self, nat) -> tuple:
        """(`to_mean`, `entropy`) from one `params` (a batched matrix inverse) and one log|W| (a
        Cholesky factor), which a state needs both of each sweep."""
        nat = np.asarray(nat, float)
        if self.dim == 1:
            return _normal_gamma_moments_and_entropy(nat)
        p = self.params(nat)
        logdet = chol_logdet(_factor(p["scale"]))
        mean = self._to_mean(p, logdet)
        return mean, self._log_partition(p, logdet) - (nat * mean).sum(-1) - self.expected_log_base(nat)

    def valid(self, nat) -> np.ndarray:
        try:
            p = self.params(nat)
            _factor(p["scale"])
        except np.linalg.LinAlgError:
            return np.zeros(np.shape(nat)[:-1], dtype=bool)
        return (p["beta"] > 0) & (p["dof"] > self.dim - 1)

    def marginal_mean(self, nat):
        """(mean, covariance) of μ: a Student-t with ν − D + 1 degrees of freedom."""
        p = self.params(nat)
        cov = chol_inverse(p["scale"]) / (p["beta"] * (p["dof"] - self.dim - 1))[..., None, None]
        return p["mean"], cov

    def precision_natural(self, nat):
        """Natural parameters of the Wishart marginal of Λ (the `Wishart` family's layout)."""
        p = self.params(nat)
        inv = chol_inverse(p["scale"])
        d = self.dim
        return np.concatenate([(-0.5 * inv).reshape(inv.shape[:-2] + (d * d,)),
                               0.5 * (p["dof"] - d - 1)[..., None]], axis=-1)


def _factor(m: np.ndarray) -> np.ndarray:
    """np.linalg.cholesky(m), for 1 × 1 matrices (a Normal–Gamma's) √m, what LAPACK computes
    there, and its LinAlgError where an m ≤ 0 (not for NaN): a tenth of the cost, the same numbers."""
    if m.shape[-1] > 1:
        return np.linalg.cholesky(m)
    if (m <= 0).any():
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    return np.sqrt(m)


def _inverse(m: np.ndarray) -> np.ndarray:
    """chol_inverse(m), for 1 × 1 matrices (1/√m)(1/√m): the operations it makes there (Cholesky,
    a solve against 1, LᵀL, a symmetrisation that changes nothing), so the same numbers."""
    if m.shape[-1] > 1:
        return chol_inverse(m)
    inverse = 1.0 / _factor(m)
    return inverse * inverse


def _multigammaln(a, d: int) -> np.ndarray:
    """Vectorised log Γ_D(a)."""
    j = np.arange(d)
    return 0.25 * d * (d - 1) * np.log(np.pi) + gammaln(np.asarray(a)[..., None] - 0.5 * j).sum(axis=-1)


def _normal_gamma_moments_and_entropy(nat: np.ndarray) -> tuple:
    """`NormalWishart(1).moments_and_entropy`: the operations the general path makes on 1 × 1
    matrices (`params`, `_to_mean`, `_log_partition`; a sum or product of one term is that term),
    on the columns of λ = (a, b, c, h), so the same numbers with a third of the numpy calls (the
    Normal–Gamma of an HMM's states is solved twice a sweep)."""
    a, b, c, half = nat[..., 0], nat[..., 1], nat[..., 2], nat[..., 3]
    beta = -2.0 * b
    mean = a / beta
    x = -2.0 * c
    inv_scale = 0.5 * (x + x) - beta * (mean * mean)  # symmetrize(−2c) − β m mᵀ
    if (inv_scale <= 0).any():
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    root = 1.0 / np.sqrt(inv_scale)
    w = root * root  # _inverse: W
    if (w <= 0).any():  # an infinite 1/W: its factor is refused as `_factor` refuses it
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    nu = 2.0 * half + 1
    logdet = 2.0 * np.log(np.sqrt(w))  # chol_logdet(_factor(W))
    wm = w * mean
    out = np.empty(nat.shape)
    np.multiply(nu, wm, out=out[..., 0])
    out[..., 1] = 1 / beta + nu * (mean * wm)
    np.multiply(nu, w, out=out[..., 2])
    out[..., 3] = digamma(0.5 * nu) + np.log(2.0) + logdet
    log_partition = -0.5 * np.log(beta) + 0.5 * nu * logdet + 0.5 * nu * np.log(2.0) + gammaln(0.5 * nu)
    return out, log_partition - (nat * out).sum(-1) + 0.5 * LOG_2PI
