"""A Gaussian Markov chain x[1..T]: one Gaussian with a tridiagonal precision Λ.

Per element t the statistics are t(x)_t = (x_t, x_t², x_t x_{t−1}) (the last is 0 at t = 1),
and the natural parameters λ_t = (h_t, J_t, K_t) give

    log q(x) = Σ_t h_t x_t + J_t x_t² + K_t x_t x_{t−1} − A(λ),    Λ_tt = −2 J_t,  Λ_{t,t−1} = −K_t.

The arrays have shape (T, 3): the chain is one q, so `log_partition` and `entropy` return
per-element pieces whose sum is the chain's value. Everything is O(T) through LAPACK's banded
Cholesky (`scipy.linalg.cholesky_banded`): with f_t and g_t the squared diagonals of the
Cholesky factors of Λ and of Λ reversed (the forward and backward Schur complements — the
information filter run both ways), the smoothed marginals are

    Var(x_t) = 1 / (f_t + g_t − Λ_tt),
    Cov(x_t, x_{t−1}) = −Λ_{t,t−1} / (f_{t−1} g_t − Λ_{t,t−1}²),

the inverse of the 2 × 2 precision of (x_{t−1}, x_t) once the rest of the chain is absorbed
into each side. log|Λ| = 2 Σ log √f_t gives the entropy.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from .base import ExponentialFamily, Marginal, leading

_LOG_2PI = np.log(2.0 * np.pi)


def _linalg():
    """scipy.linalg, imported on first use: a model without a chain never pays its 40 ms."""
    from scipy import linalg
    return linalg


@dataclass(frozen=True)
class NormalChain(ExponentialFamily):
    """q(x[1..T]) Gaussian with tridiagonal precision; natural layout (h, J, K) per element."""

    name: ClassVar[str] = "NormalChain"
    rowwise: ClassVar[bool] = False
    support: ClassVar[str] = "real_vector"
    arg_constraints: ClassVar = MappingProxyType(
        {"mean": "real_vector", "diagonal": "positive", "offdiagonal": "real"})

    @property
    def size(self) -> int:
        return 3

    # -- the banded precision ---------------------------------------------------
    @staticmethod
    def _band(nat):
        """(h, diagonal Λ_tt, sub-diagonal Λ_{t,t−1} for t = 2..T) of a (T, 3) natural array."""
        nat = np.asarray(nat, float)
        return nat[:, 0], -2.0 * nat[:, 1], -nat[1:, 2]

    @staticmethod
    def _factor(diagonal, sub):
        """The lower banded Cholesky factor of Λ (row 0: diagonal, row 1: sub-diagonal)."""
        band = np.zeros((2, diagonal.size))
        band[0], band[1, :-1] = diagonal, sub
        return _linalg().cholesky_banded(band, lower=True)

    def _solve(self, nat):
        """(mean, variance, lag-one covariance Cov(x_t, x_{t−1}) for t = 2..T, Cholesky factor)."""
        h, diagonal, sub = self._band(nat)
        chol = self._factor(diagonal, sub)
        mean = _linalg().cho_solve_banded((chol, True), h)
        f = chol[0] ** 2
        g = self._factor(diagonal[::-1], sub[::-1])[0, ::-1] ** 2
        variance = 1.0 / (f + g - diagonal)
        lag = -sub / (f[:-1] * g[1:] - sub ** 2)
        return mean, variance, lag, chol

    # -- parameter maps -------------------------------------------------------------
    def natural(self, *, mean, diagonal, offdiagonal) -> np.ndarray:
        """λ from the mean and the band of Λ (`offdiagonal[t−2]` = Λ_{t,t−1}, length T − 1)."""
        mean, diagonal = np.broadcast_arrays(np.asarray(mean, float), np.asarray(diagonal, float))
        sub = np.broadcast_to(np.asarray(offdiagonal, float), (mean.size - 1,))
        h = diagonal * mean
        h[1:] += sub * mean[:-1]
        h[:-1] += sub * mean[1:]
        return np.stack([h, -0.5 * diagonal, np.concatenate([[0.0], -sub])], axis=-1)

    def params(self, nat) -> dict:
        mean, _, _, _ = self._solve(nat)
        _, diagonal, sub = self._band(nat)
        return {"mean": mean, "diagonal": diagonal, "offdiagonal": sub}

    def moments(self, nat) -> dict:
        """Smoothed marginals: mean, variance and lag-one covariance (length T − 1)."""
        mean, variance, lag, _ = self._solve(nat)
        return {"mean": mean, "variance": variance, "lag": lag}

    def log_partition(self, nat) -> np.ndarray:
        """Pieces ½ h_t E[x_t] − log L_tt per element; their sum is A(λ) = ½hᵀΛ⁻¹h − ½log|Λ|."""
        mean, _, _, chol = self._solve(nat)
        return 0.5 * np.asarray(nat, float)[:, 0] * mean - np.log(chol[0])

    def to_mean(self, nat) -> np.ndarray:
        mean, variance, lag, _ = self._solve(nat)
        cross = np.concatenate([[0.0], lag + mean[1:] * mean[:-1]])
        return np.stack([mean, variance + mean ** 2, cross], axis=-1)

    def to_natural(self, mean) -> np.ndarray:
        """The tridiagonal Λ whose inverse has the given band: Λ = Σ_pairs (2 × 2 block)⁻¹ −
        Σ_interior 1/Var(x_t) (the junction-tree formula of a chain)."""
        mean = np.asarray(mean, float)
        m = mean[:, 0]
        v = mean[:, 1] - m ** 2
        c = mean[1:, 2] - m[1:] * m[:-1]
        det = v[:-1] * v[1:] - c ** 2
        diagonal = np.zeros_like(v)
        diagonal[:-1] += v[1:] / det
        diagonal[1:] += v[:-1] / det
        diagonal[1:-1] -= 1.0 / v[1:-1]
        if v.size == 1:
            diagonal = 1.0 / v
        return self.natural(mean=m, diagonal=diagonal, offdiagonal=-c / det)

    # -- values -------------------------------------------------------------------
    def stats(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        lag = np.zeros_like(x)
        lag[..., 1:] = x[..., 1:] * x[..., :-1]
        return np.stack([x, x ** 2, lag], axis=-1)

    def log_base(self, x) -> np.ndarray:
        return np.full(np.shape(x), -0.5 * _LOG_2PI)

    def expected_log_base(self, nat) -> np.ndarray:
        return np.full(np.shape(nat)[:-1], -0.5 * _LOG_2PI)

    def entropy(self, nat) -> np.ndarray:
        """Pieces ½(1 + log 2π) − log L_tt; their sum is (T/2)(1 + log 2π) − ½ log|Λ|."""
        _, diagonal, sub = self._band(nat)
        return 0.5 * (1.0 + _LOG_2PI) - np.log(self._factor(diagonal, sub)[0])

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        """Joint draws: x = E[x] + L⁻ᵀz, one banded triangular solve for all draws."""
        mean, _, _, chol = self._solve(nat)
        z = rng.standard_normal((mean.size,) + leading(n))
        upper = np.zeros_like(chol)
        upper[0, 1:], upper[1] = chol[1, :-1], chol[0]
        draws = _linalg().solve_banded((0, 1), upper, z)
        return mean + (draws.T if n is not None else draws)

    def mean(self, nat) -> np.ndarray:
        return self._solve(nat)[0]

    def sd(self, nat) -> np.ndarray:
        return np.sqrt(self._solve(nat)[1])

    def _marginal(self, nat):
        mean, variance, _, _ = self._solve(nat)
        return Marginal("normal", mean, np.sqrt(variance))

    def valid(self, nat) -> np.ndarray:
        """Finite, and Λ positive definite (the chain is valid or not as a whole)."""
        nat = np.asarray(nat, float)
        ok = np.isfinite(nat).all(axis=-1) & (nat[:, 1] < 0)
        if ok.all():
            try:
                self._factor(*self._band(nat)[1:])
            except np.linalg.LinAlgError:
                ok = np.zeros(ok.shape, dtype=bool)
        return ok
