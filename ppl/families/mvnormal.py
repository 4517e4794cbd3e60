"""Multivariate normal in mean / precision-matrix form.

t(x) = (x, vec(x xᵀ)), λ = (Λm, vec(−½Λ)) with row-major vec, and
log h(x) = −(D/2) log 2π.  The matrix block of λ is read through its
symmetric part, Λ = −(Λ₂ + Λ₂ᵀ), so that A is defined for every flat vector
and ∂A/∂λ equals the flat E[t(x)] entry by entry (including off-diagonals):

    A(λ) = ½ λ₁ᵀ Λ⁻¹ λ₁ − ½ log|Λ|.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from .base import (
    ExponentialFamily,
    Marginal,
    cho_solve,
    chol_inverse,
    chol_logdet,
    cholesky,
    diagonal_of,
    inverse_of_factor,
    leading,
    positive_definite_factor,
    require_count,
    symmetrize,
)

_LOG_2PI = np.log(2.0 * np.pi)
_NOTHING = (lambda: None, None)
# (weak reference to the λ `valid` last factored, the Cholesky factors of its Λ): an update checks
# its new λ and the state's moments then factor the same Λ (λ arrays are replaced, never written)
_factored = _NOTHING


@dataclass(frozen=True)
class MvNormal(ExponentialFamily):
    """N(x | m, Λ⁻¹) in D dimensions; flat size D + D²."""

    dim: int

    name: ClassVar[str] = "MvNormal"
    support: ClassVar[str] = "real_vector"
    arg_constraints: ClassVar = MappingProxyType(
        {"mean": "real_vector", "precision": "positive_definite"}
    )

    def __post_init__(self):
        require_count("MvNormal", "dim", self.dim, 1)

    @property
    def event_shape(self) -> tuple:
        return (self.dim,)

    @property
    def size(self) -> int:
        return self.dim + self.dim**2

    # -- layout helpers -------------------------------------------------------
    def _split(self, flat):
        """(vector block, symmetrised precision Λ) from a flat natural vector."""
        flat = np.asarray(flat, float)
        d = self.dim
        lam2 = flat[..., d:].reshape(flat.shape[:-1] + (d, d))
        return flat[..., :d], -(lam2 + lam2.swapaxes(-1, -2))

    def _join(self, vec, mat):
        shape = vec.shape[:-1]
        if shape != mat.shape[:-2]:  # numpy's broadcast helpers cost a dozen Python calls each: only when needed
            shape = np.broadcast_shapes(shape, mat.shape[:-2])
            vec = np.broadcast_to(vec, shape + (self.dim,))
            mat = np.broadcast_to(mat, shape + (self.dim, self.dim))
        return np.concatenate([vec, mat.reshape(shape + (self.dim**2,))], axis=-1)

    # -- parameter maps -------------------------------------------------------
    def natural(self, *, mean, precision) -> np.ndarray:
        mean = np.asarray(mean, float)
        prec = symmetrize(np.asarray(precision, float))
        return self._join(np.einsum("...ij,...j->...i", prec, mean), -0.5 * prec)

    def params(self, nat) -> dict:
        h, prec = self._split(nat)
        chol = cholesky(prec)
        return {"mean": cho_solve(chol, h), "precision": prec}

    def mean_cov(self, nat):
        """(mean, covariance) with shapes plates + (D,) and plates + (D, D); a diagonal precision
        (a prior N(m, diag)) is inverted as such, O(D²) instead of O(D³)."""
        return self._mean_cov(*self._split(nat))[:2]

    def _mean_cov(self, h, prec, chol=None) -> tuple:
        """`mean_cov` of (Λm, Λ), with the Cholesky factor of Λ (None for a diagonal Λ); `chol`:
        that factor when the caller has it."""
        diagonal = diagonal_of(prec)
        if diagonal is not None and np.all(diagonal > 0):
            chol, cov = None, np.zeros_like(prec)
            np.einsum("...ii->...i", cov)[...] = 1.0 / diagonal
        else:
            chol = cholesky(prec) if chol is None else chol
            cov = inverse_of_factor(chol)
        return np.einsum("...ij,...j->...i", cov, h), cov, chol

    def log_partition(self, nat) -> np.ndarray:
        h, prec = self._split(nat)
        chol = cholesky(prec)
        w = np.linalg.solve(chol, h[..., None])[..., 0]
        return 0.5 * np.sum(w**2, axis=-1) - 0.5 * chol_logdet(chol)

    def to_mean(self, nat) -> np.ndarray:
        return self._second_moments(*self.mean_cov(nat))

    def _second_moments(self, m, cov) -> np.ndarray:
        return self._join(m, cov + m[..., :, None] * m[..., None, :])

    def moments_and_entropy(self, nat) -> tuple:
        """(`to_mean`, `entropy`) from one Cholesky factor of Λ, which a state needs both of each sweep;
        the entropy None for a diagonal Λ, whose moments factor nothing."""
        h, prec = self._split(nat)
        m, cov, chol = self._mean_cov(h, prec, _factor_of(nat))
        return self._second_moments(m, cov), None if chol is None else self._entropy_of_factor(chol)

    def to_natural(self, mean) -> np.ndarray:
        mean = np.asarray(mean, float)
        d = self.dim
        m = mean[..., :d]
        second = mean[..., d:].reshape(mean.shape[:-1] + (d, d))
        cov = symmetrize(second) - m[..., :, None] * m[..., None, :]
        return self.natural(mean=m, precision=chol_inverse(cov))

    # -- values ---------------------------------------------------------------
    def stats(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        return self._join(x, x[..., :, None] * x[..., None, :])

    def log_base(self, x) -> np.ndarray:
        return np.full(np.shape(x)[:-1], -0.5 * self.dim * _LOG_2PI)

    def expected_log_base(self, nat) -> np.ndarray:
        return np.full(np.shape(nat)[:-1], -0.5 * self.dim * _LOG_2PI)

    def entropy(self, nat) -> np.ndarray:
        """(D/2)(1 + log 2π) − ½ log|Λ|."""
        _, prec = self._split(nat)
        return self._entropy_of_factor(cholesky(prec))

    def _entropy_of_factor(self, chol) -> np.ndarray:
        return 0.5 * self.dim * (1.0 + _LOG_2PI) - 0.5 * chol_logdet(chol)

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        m, cov = self.mean_cov(nat)
        z = rng.standard_normal(leading(n) + m.shape)
        return m + np.einsum("...ij,...j->...i", cholesky(cov), z)

    def mean(self, nat) -> np.ndarray:
        """Λ⁻¹h by one Cholesky solve (no D × D inverse)."""
        return self.params(nat)["mean"]

    def sd(self, nat) -> np.ndarray:
        return np.sqrt(np.diagonal(self.mean_cov(nat)[1], axis1=-2, axis2=-1))

    def _marginal(self, nat):
        return Marginal("normal", self.mean(nat), self.sd(nat))

    def valid(self, nat) -> np.ndarray:
        """Finite and Λ positive definite; the Cholesky factors of a valid Λ are kept for
        `moments_and_entropy` of the same λ (`_factor_of`)."""
        global _factored
        nat = np.asarray(nat, float)
        _, prec = self._split(nat)
        positive, chol = positive_definite_factor(prec, symmetric=True)  # `_split` makes Λ symmetric to the bit
        if chol is not None:
            _factored = (weakref.ref(nat, _forget), chol)
        return np.isfinite(nat).all(axis=-1) & positive


def _factor_of(nat):
    """The Cholesky factors of Λ that `valid` found for this very λ (the same array), or None."""
    ref, chol = _factored
    return chol if ref() is nat else None


def _forget(ref) -> None:
    """Drop the kept factors once their λ is gone."""
    global _factored
    if _factored[0] is ref:
        _factored = _NOTHING

