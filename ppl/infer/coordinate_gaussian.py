"""A Gaussian vector whose likelihoods read it coordinate by coordinate, held in precision space.

A Gaussian process `f ~ MvNormal(0, cov=K)` read as `f[n]` by each likelihood gets a dense prior
message (h₀, −½P₀) and, from the coordinate reads (one-hot rows: ppl.infer.rows.one_hot), sites
on the diagonal, so that

    Λ = c P₀ + diag(t),   h = c h₀ + s,   t_d = Σ_{n: k_n = d} τ_n,   s_d = Σ_{n: k_n = d} a_n.

Everything a sweep asks of q then comes from one Cholesky factor L of Λ and its inverse:
μ = L⁻ᵀ(L⁻¹h), Var(f_d) = Σ_i (L⁻¹)²_id (Σ = L⁻ᵀL⁻¹), log|Λ| from L's diagonal, and the prior's
expected error through tr(P₀Σ) = (D − Σ_d t_d Var(f_d)) / c (P₀Σ = (Λ − diag t)Σ / c). The D × D
covariance, the product L⁻ᵀL⁻¹ that is half of a dense update's work, is formed only when
something asks for the family's moments (E[f], E[f fᵀ]). A q whose Λ has no Cholesky factor is
not held (None): the dense update and its step-halving guard take it.
"""

from __future__ import annotations

import numpy as np

from ppl.families.base import triangle_inverse
from ppl.infer.held_gaussian import HeldGaussian, shift_in_sds
from ppl.infer.rows import dot_rows, one_hot


class DensePrior:
    """The dense part (h₀, P₀) of a sum solved by its coordinate sites, read once from the
    (1, D + D²) natural parameter `base` (a constant prior's array, the same object every sweep)."""

    def __init__(self, base: np.ndarray, d: int):
        half = base[0, d:].reshape(d, d)
        self.base, self.h, self.p = base, base[0, :d], -(half + half.T)  # as MvNormal._split reads Λ


class CoordinateGaussian(HeldGaussian):
    """q(f) = N(μ, Σ) with Λ = c P₀ + diag(t) and h = c h₀ + s (module docstring), held as the
    Cholesky factor of Λ and its inverse; immutable once solved."""

    def __init__(self, family, prior: DensePrior, scale: float, sites: tuple, factored, chol: np.ndarray):
        self.family, self.prior, self.scale, self.factored = family, prior, scale, factored
        self.diagonal, shift = sites  # t and s of the module docstring, (D,) each
        self.chol, self.inverse = chol, triangle_inverse(chol)
        self.var = np.einsum("ij,ij->j", self.inverse, self.inverse)
        h = shift + (prior.h if scale == 1.0 else scale * prior.h)
        self.mean = self.inverse.T @ (self.inverse @ h)
        self.logdet = float(2.0 * np.log(chol.diagonal()).sum())
        rows, _, self.tau = factored.parts[0] if len(factored.parts) == 1 else (None, None, None)
        self.rows = rows  # the one part's rows and τ: what SQUAREM steps on (ppl.infer.accelerate)

    @classmethod
    def of(cls, family, total, previous=None, start: bool = False) -> "CoordinateGaussian | None":
        """q of the `GaussianSum` `total` when its dense part is a (1, D + D²) array, it has rows
        and each row reads one coordinate, and Λ has a Cholesky factor; None otherwise. At the
        `start` (q the prior, `ppl.infer.initialise`) no rows are needed: the first margins read
        its diagonal only, where the dense moments cost a D × D product and two D × D copies
        (75 of a 1,000-point GP's 100 ms start). The prior of `previous` (the sum solved last
        time) is reused when its base is the same array."""
        base, d = total.base, family.dim
        if not ((total.parts or start) and isinstance(base, np.ndarray) and base.shape == (1, d + d * d)
                and total.scale > 0):
            return None
        units = [one_hot(rows) for rows, _, _ in total.parts]
        if any(unit is None for unit in units):
            return None
        diagonal, shift = np.zeros(d), np.zeros(d)
        for (column, value), (_, a, tau) in zip(units, total.parts):
            diagonal += np.bincount(column, value * value * tau, minlength=d)
            shift += np.bincount(column, value * a, minlength=d)
        if not (np.isfinite(diagonal).all() and np.isfinite(shift).all()):
            return None
        kept = getattr(previous, "prior", None)
        prior = kept if isinstance(kept, DensePrior) and kept.base is base else DensePrior(base, d)
        precision = prior.p * total.scale
        precision.flat[::d + 1] += diagonal
        try:
            chol = np.linalg.cholesky(precision)
        except np.linalg.LinAlgError:
            return None
        if not np.isfinite(chol.diagonal()).all():
            return None
        total.prior = prior
        return cls(family, prior, total.scale, (diagonal, shift), total, chol)

    def linear(self, c: np.ndarray, flat: np.ndarray | None = None) -> np.ndarray:
        """cᵀμ for rows c (any leading axes + (D,)): μ[k] for coordinate rows."""
        return dot_rows(c, self.mean.reshape((1,) * (c.ndim - 1) + (-1,)))

    def quadratic(self, c: np.ndarray, flat: np.ndarray | None = None) -> np.ndarray:
        """cᵀΣc for rows c: c_k² Var(f_k) for coordinate rows, else |L⁻¹c|² (O(D²) a row)."""
        unit = one_hot(c)
        if unit is not None:
            return (unit[1] ** 2 * self.var[unit[0]]).reshape(c.shape[:-1])
        flat = c.reshape(-1, c.shape[-1]) if flat is None else flat
        spread = flat @ self.inverse.T
        return np.einsum("ij,ij->i", spread, spread).reshape(c.shape[:-1])

    def prior_error(self, mean: np.ndarray) -> float:
        """E[(f − m)ᵀ P₀ (f − m)] = tr(P₀Σ) + (μ − m)ᵀ P₀ (μ − m) under the prior's own precision P₀
        and a mean m: O(D²), no Σ."""
        error = (self.mean - mean).reshape(-1)
        return float((self.family.dim - self.diagonal @ self.var) / self.scale + error @ self.prior.p @ error)

    def largest_shift(self, before: np.ndarray, floor: float = 1e-6) -> float:
        """max_d |μ_d − before_d| / sd_d, every sd at hand (the stopping rule's test)."""
        return shift_in_sds(self.mean, before, self.sd, floor)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n draws (n, D): μ + L⁻ᵀz, z ~ N(0, I)."""
        return self.mean + rng.standard_normal((n, self.family.dim)) @ self.inverse

    def _covariance(self) -> np.ndarray:
        """Σ = L⁻ᵀL⁻¹ (numpy hands the product of a matrix with its own transpose to syrk)."""
        return self.inverse.T @ self.inverse
