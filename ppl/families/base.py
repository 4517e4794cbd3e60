"""Shared machinery for the stateless exponential-family classes.

Every family writes its density as

    log p(x | λ) = t(x) · λ − A(λ) + log h(x)

with ``λ`` (natural parameters) and ``E[t(x)]`` (mean parameters) stored as
one flat array of shape ``plates + (size,)`` each, laid out so that
``∇A(λ) = E[t(x)]`` entry by entry.  Leading axes are plates and broadcast
freely; the last axis is the flat parameter vector.

The base class carries the formulas that are identical for every family
(``log_density``, ``kl``, ``entropy``, ``quantiles``) plus small batched
linear-algebra helpers.  Concrete families supply ``log_partition``,
``to_mean``, ``to_natural``, ``stats``, ``log_base`` and the sampling and
summary methods.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, Mapping

import numpy as np

__all__ = [
    "ExponentialFamily",
    "dot_last",
    "require_count",
    "Marginal",
    "scipy_stats",
    "symmetrize",
    "cholesky",
    "chol_logdet",
    "chol_inverse",
    "cho_solve",
    "is_positive_definite",
    "positive_definite_factor",
    "as_trials",
    "leading",
    "qs_column",
]


# ---------------------------------------------------------------- helpers ---


def scipy_stats():
    """scipy.stats, imported on first use: importing it costs ~0.5 s of start-up, and only
    summaries (quantiles) need it."""
    import scipy.stats
    return scipy.stats


class Marginal:
    """Elementwise quantiles of a known 1-D distribution through scipy.special's inverse CDFs
    (`ndtri`, `gammaincinv`, `betaincinv`), so that summaries need no scipy.stats import
    (~0.7 s of `ppl infer`'s start-up). `mean()` gives the shape quantiles are broadcast to."""

    def __init__(self, kind: str, *params):
        self.kind = kind
        self.params = [np.asarray(p, dtype=float) for p in params]

    def mean(self) -> np.ndarray:
        shape = np.broadcast_shapes(*(p.shape for p in self.params))
        return np.zeros(shape)

    def ppf(self, q) -> np.ndarray:
        from scipy import special
        if self.kind == "normal":
            loc, scale = self.params
            return loc + scale * special.ndtri(q)
        if self.kind == "gamma":
            shape, rate = self.params
            return special.gammaincinv(shape, q) / rate
        if self.kind == "beta":
            a, b = self.params
            return special.betaincinv(a, b, q)
        raise ValueError(self.kind)

    def cdf(self, x) -> np.ndarray:
        """P(X ≤ x), elementwise (a grid's mixture finds its quantiles by bisection on it)."""
        from scipy import special
        if self.kind == "normal":
            loc, scale = self.params
            return special.ndtr((x - loc) / scale)
        if self.kind == "gamma":
            shape, rate = self.params
            return special.gammainc(shape, np.maximum(x, 0.0) * rate)
        if self.kind == "beta":
            a, b = self.params
            return special.betainc(a, b, np.clip(x, 0.0, 1.0))
        raise ValueError(self.kind)


def require_count(owner: str, field: str, value, minimum: int) -> None:
    """Structural sizes (k categories, dim dimensions) are integers of at least `minimum`."""
    if int(value) != value or value < minimum:
        raise ValueError(f"{owner}: {field} must be an integer >= {minimum}, got {value!r}")


def dot_last(t: np.ndarray, nat: np.ndarray) -> np.ndarray:
    """Σ_i t_i λ_i over the last axis, with 0 · (±∞) taken as 0.

    Zero-probability categories carry λ = −∞; a statistic that is exactly
    zero must not turn that into NaN.
    """
    with np.errstate(invalid="ignore"):
        prod = t * nat
    return np.where(t == 0, 0.0, prod).sum(axis=-1)


def stack_last(*parts) -> np.ndarray:
    """np.stack(np.broadcast_arrays(*parts), axis=-1), each part written into its slot of one new
    array: the (…, 2) parameters, moments and messages of scalar families are made every sweep, and
    np.stack and np.broadcast_arrays cost a dozen Python calls each."""
    out = np.empty(np.broadcast(*parts).shape + (len(parts),), dtype=np.result_type(*parts))
    for k, part in enumerate(parts):
        out[..., k] = part
    return out


def symmetrize(m: np.ndarray) -> np.ndarray:
    """(M + Mᵀ)/2 over the last two axes."""
    return 0.5 * (m + m.swapaxes(-1, -2))


def diagonal_of(m: np.ndarray) -> np.ndarray | None:
    """The diagonals (batch + (D,), a new array) of square matrices whose off-diagonal entries are
    all zero, else None: such a matrix is inverted, solved and its log-determinant taken in O(D)."""
    diagonal = m.diagonal(axis1=-2, axis2=-1)
    return diagonal.copy() if np.count_nonzero(m) == np.count_nonzero(diagonal) else None


def cholesky(m: np.ndarray) -> np.ndarray:
    """Batched lower Cholesky factor (raises LinAlgError if not PD)."""
    return np.linalg.cholesky(m)


def chol_logdet(chol: np.ndarray) -> np.ndarray:
    """log|M| from the Cholesky factor of M."""
    return 2.0 * np.log(chol.diagonal(axis1=-2, axis2=-1)).sum(axis=-1)


def chol_inverse(m: np.ndarray) -> np.ndarray:
    """Inverse of a batch of SPD matrices through their Cholesky factors.

    M = L Lᵀ gives M⁻¹ = L⁻ᵀ L⁻¹; the result is symmetrised to remove round-off asymmetry.
    The solves go through numpy's batched LAPACK gufuncs: scipy's `solve_triangular` loops
    over a batch in Python, which cost ~10 ms per call on stacks of small matrices.
    """
    return inverse_of_factor(np.linalg.cholesky(m))


def inverse_of_factor(chol: np.ndarray) -> np.ndarray:
    """`chol_inverse` from the lower Cholesky factors L of the matrices, when they are at hand.
    One matrix above `TRIANGLE_LEAF` is inverted by halves (`triangle_inverse`). Numpy alone:
    scipy's LAPACK dpotri is 2.5× faster at D = 40 on one thread, but it brings scipy's own
    OpenBLAS thread pool into every sweep, and under the default threads its workers spun beside
    numpy's: a gp_classification fit took twice the CPU."""
    d = chol.shape[-1]
    if chol.size == d * d:  # numpy hands Lᵀ-times-L of one matrix to BLAS's syrk: symmetric to the bit
        linv = triangle_inverse(chol.reshape(d, d))
        return (linv.T @ linv).reshape(chol.shape)
    linv = np.linalg.inv(chol)  # LAPACK's gesv on the identity, as a solve against it: the same numbers, fewer calls
    return symmetrize(linv.swapaxes(-1, -2) @ linv)


TRIANGLE_LEAF = 64  # an order up to which numpy's general inverse of L is as fast as the halves


def triangle_inverse(chol: np.ndarray) -> np.ndarray:
    """L⁻¹ of a lower triangular L: numpy's general inverse up to `TRIANGLE_LEAF`, above it by
    halves, [[A, 0], [B, C]]⁻¹ = [[A⁻¹, 0], [−C⁻¹BA⁻¹, C⁻¹]]: n³/3 multiply-adds in matrix
    products, where a general solve against the identity takes ~2n³ (one thread: 4.2 → 1.3 ms at
    n = 300, 86 → 32 ms at n = 1,000, a GP's covariance)."""
    n = len(chol)
    if n <= TRIANGLE_LEAF:
        return np.linalg.inv(chol)
    inverse = np.zeros_like(chol)
    _halves(chol, inverse)
    return inverse


def _halves(chol: np.ndarray, out: np.ndarray) -> None:
    """`triangle_inverse` into `out` (zero above the diagonal), each half into its own block."""
    n = len(chol)
    if n <= TRIANGLE_LEAF:
        out[...] = np.linalg.inv(chol)
        return
    k = n // 2
    _halves(chol[:k, :k], out[:k, :k])
    _halves(chol[k:, k:], out[k:, k:])
    out[k:, :k] = -(out[k:, k:] @ (chol[k:, :k] @ out[:k, :k]))


def cho_solve(chol: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Solve (L Lᵀ) x = b for batches of lower factors L and vectors b."""
    y = np.linalg.solve(chol, b[..., None])
    return np.linalg.solve(chol.swapaxes(-1, -2), y)[..., 0]


def is_positive_definite(m: np.ndarray) -> np.ndarray:
    """Boolean array (batch shape) telling which matrices are finite and PD.

    One Cholesky over the whole stack is tried first; if any matrix fails,
    the eigenvalues of the symmetric part decide per matrix: the smallest must be positive
    relative to the largest (a condition number past 1e13 defeats the Cholesky factor that
    every use of the matrix needs, so it is not PD in floating point).
    """
    return positive_definite_factor(m)[0]


def positive_definite_factor(m: np.ndarray, symmetric: bool = False) -> tuple:
    """(`is_positive_definite`, the Cholesky factors of the symmetric part when every matrix is
    finite and PD, else None): a caller that goes on to factor the same matrices keeps them.
    `symmetric`: the caller's matrices are their own symmetric part (no pass to form it)."""
    m = np.asarray(m, dtype=float)
    finite = np.isfinite(m).all(axis=(-2, -1))
    safe = m if symmetric else symmetrize(m)
    if not finite.all():  # the identity in place of a matrix that is not finite
        safe = np.where(finite[..., None, None], safe, np.eye(m.shape[-1]))
    try:
        chol = np.linalg.cholesky(safe)
        return finite, (chol if finite.all() else None)
    except np.linalg.LinAlgError:
        eigenvalues = np.linalg.eigvalsh(safe)
        return finite & (eigenvalues[..., 0] > 1e-13 * np.abs(eigenvalues[..., -1])), None


def as_trials(trials, owner: str) -> np.ndarray:
    """Validated read-only int64 array of non-negative trial counts."""
    arr = np.asarray(trials)
    if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr)):
        raise ValueError(f"{owner}: trials must be finite numbers, got {trials!r}")
    if np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise ValueError(f"{owner}: trials must be non-negative integers, got {trials!r}")
    arr = arr.astype(np.int64)
    arr.setflags(write=False)
    return arr


def leading(n: int | None) -> tuple:
    """Leading sample shape: () when ``n`` is None, else (n,)."""
    return () if n is None else (int(n),)


def qs_column(qs, ndim: int) -> np.ndarray:
    """Quantile levels as shape (len(qs),) + (1,)*ndim for broadcasting."""
    q = np.asarray(qs, dtype=float).reshape(-1)
    return q.reshape((-1,) + (1,) * ndim)


# ------------------------------------------------------------- base class ---


@dataclass(frozen=True)
class ExponentialFamily(abc.ABC):
    """Base of all families: generic formulas shared by every member.

    Class attributes (numpyro-style declarations, read by checkers/reports):

    ``name``            family name used in messages.
    ``support``         name of the support of x.
    ``arg_constraints`` standard parameter name → constraint name.
    ``rowwise``         the rows of a λ array are independent q's (False for a chain, whose
                        pairwise terms couple them), so λ may be read a block of rows at a time.
    """

    name: ClassVar[str] = "ExponentialFamily"
    support: ClassVar[str] = ""
    arg_constraints: ClassVar[Mapping[str, str]] = MappingProxyType({})
    rowwise: ClassVar[bool] = True

    # -- structure (overridden where the shape depends on attributes) ------
    @property
    def event_shape(self) -> tuple:
        return ()

    @property
    @abc.abstractmethod
    def size(self) -> int:
        """Length of the flat natural / mean vector."""

    def plates(self, nat: np.ndarray) -> tuple:
        """Plate shape of a natural (or mean) parameter array."""
        return np.shape(nat)[:-1]

    # -- generic formulas ---------------------------------------------------
    def log_density(self, x, nat) -> np.ndarray:
        """log p(x | λ) = t(x)·λ − A(λ) + log h(x), shape = plates."""
        nat = np.asarray(nat, dtype=float)
        return dot_last(self.stats(x), nat) - self.log_partition(nat) + self.log_base(x)

    def kl(self, nat_q, nat_p) -> np.ndarray:
        """KL(q ‖ p) = A(λp) − A(λq) − (λp − λq)·μq, shape = plates."""
        nat_q = np.asarray(nat_q, dtype=float)
        nat_p = np.asarray(nat_p, dtype=float)
        diff = dot_last(self.to_mean(nat_q), nat_p - nat_q)
        return self.log_partition(nat_p) - self.log_partition(nat_q) - diff

    def entropy(self, nat) -> np.ndarray:
        """H[q] = A(λ) − λ·μ − E[log h(x)], shape = plates."""
        nat = np.asarray(nat, dtype=float)
        return self.entropy_with_mean(nat, self.to_mean(nat))

    def entropy_with_mean(self, nat, mean) -> np.ndarray:
        """`entropy` with μ = to_mean(λ) given: a state's cached moments (a Dirichlet's digammas)."""
        return self.log_partition(nat) - dot_last(mean, nat) - self.expected_log_base(nat)

    @property
    def entropy_reads_mean(self) -> bool:
        """Whether `entropy` is the generic formula, so that `entropy_with_mean` gives its values."""
        return type(self).entropy is ExponentialFamily.entropy

    def expected_log_base(self, nat) -> np.ndarray:
        """E[log h(x)]; families without a closed form refuse."""
        raise NotImplementedError(
            f"{self.name}: E[log h(x)] has no closed form, so entropy is not provided"
        )

    def quantiles(self, nat, qs) -> np.ndarray:
        """Marginal quantiles, shape (len(qs),) + shape of ``mean(nat)``."""
        dist = self._marginal(np.asarray(nat, dtype=float))
        return dist.ppf(qs_column(qs, np.ndim(dist.mean())))

    def _marginal(self, nat):
        """Frozen scipy.stats distribution of the elementwise marginals."""
        raise NotImplementedError(f"{self.name}: quantiles are not available")

    def check_valid(self, nat) -> None:
        """Raise ValueError naming the family and the first bad plate index."""
        ok = np.asarray(self.valid(nat))
        if not np.all(ok):
            bad = tuple(int(i) for i in np.argwhere(~ok)[0]) if ok.ndim else ()
            raise ValueError(
                f"{self.name}: natural parameters out of the parameter space at "
                f"plate index {bad} (constraints: {dict(self.arg_constraints)})"
            )

    # -- required of every family -------------------------------------------
    @abc.abstractmethod
    def natural(self, **params) -> np.ndarray:
        """Flat natural parameters from standard parameters (broadcast over plates)."""

    @abc.abstractmethod
    def params(self, nat) -> dict:
        """Standard parameters (dict) from flat natural parameters; inverse of ``natural``."""

    @abc.abstractmethod
    def log_partition(self, nat) -> np.ndarray:
        """A(λ), shape = plates."""

    @abc.abstractmethod
    def to_mean(self, nat) -> np.ndarray:
        """E[t(x)] = ∇A(λ) in the flat layout."""

    @abc.abstractmethod
    def to_natural(self, mean) -> np.ndarray:
        """Inverse of ``to_mean``."""

    @abc.abstractmethod
    def stats(self, x) -> np.ndarray:
        """t(x) for values of shape plates + event_shape → plates + (size,)."""

    @abc.abstractmethod
    def log_base(self, x) -> np.ndarray:
        """log h(x), shape = plates of x."""

    @abc.abstractmethod
    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        """Draws with shape leading(n) + plates + event_shape."""

    @abc.abstractmethod
    def mean(self, nat) -> np.ndarray:
        """E[x], shape plates + event_shape."""

    @abc.abstractmethod
    def sd(self, nat) -> np.ndarray:
        """Elementwise marginal standard deviation, shape of ``mean``."""

    @abc.abstractmethod
    def valid(self, nat) -> np.ndarray:
        """Boolean array (plates) telling which λ lie in the parameter space."""
