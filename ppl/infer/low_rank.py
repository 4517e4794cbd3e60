"""Messages to a Gaussian vector kept in data space, so that its update can use Woodbury.

A contraction `X @ w` over N rows sends w the message Σ_n (h_n x_n, vec(−½ τ_n x_n x_nᵀ)): a
precision of rank N. Summed densely it costs a D × D inverse per update, O(D³); kept as its
rows (X, h, τ) next to the node's other, dense messages it can be solved in the N-dimensional
data space instead, O(N²D) — the Bayesian linear regression of CVI's site form done the cheap
way round when D > N (Khan & Lin App. E.1). The solved q stays in that form (`KernelGaussian`):
means, variances, margins of data rows and the entropy come from N × D and N × N matrices, and
the D × D natural parameters and moments are formed only when something asks for them.
"""

from __future__ import annotations

import numpy as np

from ppl.families.base import chol_logdet, cholesky, diagonal_of
from ppl.infer.rows import ROW_BLOCK, weighted_gram

_LOG_2PI = np.log(2.0 * np.pi)


class Diagonal:
    """The natural parameter (h, vec(−½ diag p)) of a Gaussian with a diagonal precision, kept as
    its two D-vectors: a constant prior N(m, diag(1/p)) (`eye(D)`, `diag(v)`) is D numbers, not D²."""

    __array_ufunc__ = None  # ndarray + Diagonal → Diagonal.__radd__

    def __init__(self, h: np.ndarray, p: np.ndarray):
        self.h, self.p = h, p

    def __mul__(self, factor: float) -> "Diagonal":
        return Diagonal(factor * self.h, factor * self.p)

    __rmul__ = __mul__

    def __add__(self, other):
        if isinstance(other, Diagonal):
            return Diagonal(self.h + other.h, self.p + other.p)
        return self.dense() + other

    __radd__ = __add__

    def dense(self) -> np.ndarray:
        """(1, D + D²) in the MvNormal layout, for a caller that needs the full natural parameter."""
        d = len(self.h)
        matrix = np.zeros((d, d))
        matrix[np.diag_indices(d)] = -0.5 * self.p
        return np.concatenate([self.h, matrix.reshape(-1)])[None, :]


class GaussianSum:
    """A natural parameter kept as `scale` × `base` (a dense (1, D + D²) array or a `Diagonal`; a
    damped step rescales the constant prior instead of copying it), plus low-rank parts (rows
    R (N, D), h (N,), τ (N,)), each meaning (Rᵀh, vec(−½ Rᵀ diag(τ) R)). Adds like an array;
    `dense` makes it one."""

    __array_ufunc__ = None  # ndarray + GaussianSum → GaussianSum.__radd__

    def __init__(self, dense=0.0, parts=(), scale=1.0):
        self.base, self.scale, self.parts = dense, scale, tuple(parts)
        self.diagonal = None  # (h, diagonal of Λ) of `base`, once `solve` found it
        self.gram = None  # (R, P, R P⁻¹ Rᵀ) of the last `solve`, reused by the next one on the same R and P

    @property
    def dense_part(self):
        return self.base if self.scale == 1.0 else self.scale * self.base

    def __add__(self, other):
        if not isinstance(other, GaussianSum):
            return GaussianSum(_plus(self.dense_part, other), self.parts)
        parts = list(self.parts)
        for rows, h, tau in other.parts:  # parts on the same rows merge: a damped step keeps rank N
            same = next((i for i, p in enumerate(parts) if _same_array(p[0], rows)), None)
            if same is None:
                parts.append((rows, h, tau))
            else:
                parts[same] = (rows, parts[same][1] + h, parts[same][2] + tau)
        if self.base is other.base:  # (1 − β)·prior + β·prior: the same array, rescaled
            return GaussianSum(self.base, parts, self.scale + other.scale)
        return GaussianSum(_plus(self.dense_part, other.dense_part), parts)

    __radd__ = __add__

    def scaled(self, factor: float) -> "GaussianSum":
        """factor × the sum, still factored: the damped update (1 − β)λ + β·Σ messages."""
        return GaussianSum(self.base, [(rows, factor * h, factor * tau) for rows, h, tau in self.parts],
                           self.scale * factor)

    def dense(self) -> np.ndarray:
        total = self.dense_part
        if isinstance(total, Diagonal):
            total = total.dense()
        for rows, h, tau in self.parts:
            total = total + np.concatenate([rows.T @ h, (-0.5 * weighted_gram(rows, tau)).reshape(-1)])[None, :]
        return total

    def solve(self, family, previous=None):
        """q as a `KernelGaussian` when the parts have fewer rows than the dimension, every τ ≥ 0
        and the dense part is a diagonal precision (a `Diagonal`, or an array found to be one);
        None otherwise (solve densely). `previous`: the sum solved last time, whose diagonal is
        reused when its base is the same array (a constant prior: no D × D scan per sweep)."""
        if sum(len(p[0]) for p in self.parts) >= family.dim:
            return None
        if isinstance(self.base, Diagonal):
            self.diagonal = (self.base.h, self.base.p) if np.all(self.base.p > 0) else None
        elif np.ndim(self.base) != 2:
            return None
        elif previous is not None and previous.base is self.base:
            self.diagonal = previous.diagonal
        else:
            self.diagonal = diagonal_prior(family, self.base)
        if self.diagonal is None or self.scale <= 0:
            return None
        d = family.dim
        rows, h, tau = (self.parts[0] if len(self.parts) == 1 else  # one contraction's rows: no copy
                        [np.concatenate([p[k] for p in self.parts]) if self.parts else np.zeros((0, d) if k == 0 else 0)
                         for k in range(3)])
        if np.any(tau < 0):
            return None
        h0, p = self.diagonal
        self.gram = previous.gram if previous is not None and previous.gram is not None \
            and previous.gram[1] is p and _same_array(previous.gram[0], rows) else (rows, p, rows @ (rows / p).T)
        return KernelGaussian(family, self.scale * p, self.scale * h0 + rows.T @ h, rows, tau, self,
                              self.gram[2] / self.scale, (p, self.scale))


def _plus(a, b):
    """a + b, without copying a D + D² array to add a zero to it."""
    if np.ndim(a) == 0 and a == 0.0:
        return b
    if np.ndim(b) == 0 and b == 0.0:
        return a
    return a + b


def diagonal_prior(family, natural):
    """(h, diagonal of Λ) of a Gaussian natural parameter (1, D + D²) whose precision is diagonal
    and positive; None otherwise."""
    d = family.dim
    diagonal = diagonal_of(natural[0, d:].reshape(d, d))
    if diagonal is None or np.any(diagonal >= 0):
        return None
    return natural[0, :d], -2.0 * diagonal


class KernelGaussian:
    """q(w) = N(μ, Σ) with Λ = P + Rᵀ diag(τ) R, P diagonal, R (N, D) with N < D, held through

        G = R P⁻¹ Rᵀ,  B = I + S G S = L Lᵀ (S = diag √τ),  U = L⁻¹ S R P⁻¹ (N, D),  Σ = P⁻¹ − UᵀU

    (Woodbury) and log|Λ| = log|P| + log|B| (the matrix determinant lemma). A sweep costs O(N³)
    and two products with R, O(ND): the mean, the entropy, the margins of R's own rows
    (diag G − colsum((L⁻¹ S G)²)) and the prior's tr(P Σ) come from N × N matrices; G is given
    by the caller when the rows and P are last sweep's. U, the variances and the margins of other
    rows, O(N²D), and `natural` and `moments`, the D × D arrays of the family's layout, are formed
    on first use only. Immutable once solved."""

    def __init__(self, family, p, h, rows, tau, factored, gram, prior):
        self.family, self.p, self.h, self.rows, self.tau = family, p, h, rows, tau
        self.factored = factored  # the GaussianSum solved: its dense() is λ
        self.prior = prior  # (P₀, c) with P = c P₀, P₀ the prior's own diagonal (`weighted_variance`)
        n = len(tau)
        root = np.sqrt(tau)
        self.gram = gram  # R P⁻¹ Rᵀ
        b = root[:, None] * self.gram * root[None, :]
        b[np.diag_indices(n)] += 1.0
        self.chol, self.root = (cholesky(b) if n else b), root
        self.inverse = np.linalg.solve(self.chol, np.eye(n)) if n else b  # L⁻¹: B ⪰ I, so ‖L⁻¹‖ ≤ 1
        ph = h / p  # μ = P⁻¹h − P⁻¹ Rᵀ S B⁻¹ S R P⁻¹ h
        self.mean = ph - (rows.T @ (root * self._solve(root * (rows @ ph)))) / p
        self.logdet = float(np.sum(np.log(p)) + (chol_logdet(self.chol) if n else 0.0))  # log|Λ|
        self.entropy = 0.5 * family.dim * (1.0 + _LOG_2PI) - 0.5 * self.logdet
        self._u = self._var = self._own = self._natural = self._moments = None

    def _solve(self, x: np.ndarray) -> np.ndarray:
        """B⁻¹ x = L⁻ᵀ L⁻¹ x for vectors x (N,) or N × k blocks."""
        return self.inverse.T @ (self.inverse @ x)

    @property
    def u(self) -> np.ndarray:
        """U = L⁻¹ S R P⁻¹ (N, D): one N × N by N × D product, on first use."""
        if self._u is None:
            self._u = ((self.inverse * self.root) @ self.rows) / self.p
        return self._u

    @property
    def var(self) -> np.ndarray:
        if self._var is None:
            self._var = 1.0 / self.p - np.einsum("nd,nd->d", self.u, self.u)
        return self._var

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.maximum(self.var, 0.0))

    def quadratic(self, c: np.ndarray) -> np.ndarray:
        """cᵀΣc for rows c (any leading axes + (D,)): for R's own rows diag G − colsum((L⁻¹ S G)²),
        O(N³); for others Σ_d c_d²/p_d − |U c|². No D × D matrix either way."""
        flat = c.reshape(-1, c.shape[-1])
        if len(self.tau) and _same_array(flat, self.rows):
            if self._own is None:
                w = self.inverse @ (self.root[:, None] * self.gram)
                self._own = np.diagonal(self.gram) - np.einsum("ij,ij->j", w, w)
            return self._own.reshape(c.shape[:-1])
        out = np.empty(len(flat))
        for start in range(0, len(flat), ROW_BLOCK):  # blocks that stay in cache: no N × D temporaries
            block = flat[start:start + ROW_BLOCK]
            spread = block @ self.u.T
            out[start:start + ROW_BLOCK] = np.einsum("ij,ij->i", block, block / self.p)
            out[start:start + ROW_BLOCK] -= np.einsum("ij,ij->i", spread, spread)
        return out.reshape(c.shape[:-1])

    def weighted_variance(self, w: np.ndarray) -> float:
        """Σ_d w_d Var(w_d). For the prior's own diagonal (w = P₀, P = c P₀) it is tr(P₀ Σ) =
        Σ P₀/P − (N − tr B⁻¹)/c, since tr(P U ᵀU) = tr(L⁻¹ (B − I) L⁻ᵀ): O(N³), no U."""
        if self.prior is not None and w is self.prior[0] and len(self.tau):
            return float(np.sum(w / self.p) - (len(self.tau) - np.sum(self.inverse ** 2)) / self.prior[1])
        return float(np.sum(w * self.var))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n draws (n, D) in O(N D) each (Bhattacharya, Chakraborty & Mallick 2016): u ~ N(0, P⁻¹),
        δ ~ N(0, I_N), then μ + u − P⁻¹ Rᵀ S B⁻¹ (S R u + δ) ~ N(μ, Σ); no D × D factor."""
        u = rng.standard_normal((n, self.family.dim)) / np.sqrt(self.p)
        v = (u @ self.rows.T) * self.root + rng.standard_normal((n, len(self.tau)))
        w = np.linalg.solve(self.chol.T, np.linalg.solve(self.chol, v.T)).T if len(self.tau) else v
        return self.mean + u - ((w * self.root) @ self.rows) / self.p

    def copy(self) -> "KernelGaussian":
        return self  # immutable

    def natural(self) -> np.ndarray:
        """(1, D + D²): λ in the family's layout, formed once on demand."""
        if self._natural is None:
            self._natural = self.factored.dense()
        return self._natural

    def moments(self) -> np.ndarray:
        """(1, D + D²): (E[w], E[w wᵀ]) = (μ, P⁻¹ − UᵀU + μμᵀ), formed once on demand."""
        if self._moments is None:
            second = self.u.T @ self.u
            second *= -1.0
            second[np.diag_indices(self.family.dim)] += 1.0 / self.p
            second += np.outer(self.mean, self.mean)
            self._moments = np.concatenate([self.mean, second.reshape(-1)])[None, :]
        return self._moments


def _same_array(a, b) -> bool:
    """The same rows in memory (the data of one contraction, met again in a later sweep)."""
    return a.shape == b.shape and a.strides == b.strides and \
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
