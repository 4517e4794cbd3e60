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

import functools

import numpy as np

from ppl.families.base import diagonal_of
from ppl.infer.held_gaussian import HeldGaussian, shift_in_sds
from ppl.infer.rows import ROW_BLOCK, dot_rows, weighted_gram


class Diagonal:
    """The natural parameter (h, vec(−½ diag p)) of a Gaussian with a diagonal precision, kept as
    its two D-vectors: a constant prior N(m, diag(1/p)) (`eye(D)`, `diag(v)`) is D numbers, not D².
    `mean`: m when the caller has it (h = p m), so that a solve need not divide h by p for it."""

    __array_ufunc__ = None  # ndarray + Diagonal → Diagonal.__radd__

    def __init__(self, h: np.ndarray, p: np.ndarray, mean: np.ndarray | None = None):
        self.h, self.p, self.mean = h, p, mean

    def __mul__(self, factor: float) -> "Diagonal":
        return Diagonal(factor * self.h, factor * self.p, self.mean)

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
        self.prior = None  # the `DiagonalPrior` of `base`, once `solve` found one

    @property
    def dense_part(self):
        return self.base if self.scale == 1.0 else self.scale * self.base

    def __add__(self, other):
        if not isinstance(other, GaussianSum):
            return GaussianSum(_plus(self.dense_part, other), self.parts)
        parts = list(self.parts)
        for rows, h, tau in other.parts:  # parts on the same rows merge: a damped step keeps rank N
            same = next((i for i, p in enumerate(parts) if same_array(p[0], rows)), None) if parts else None
            if same is None:
                parts.append((rows, h, tau))
            else:
                parts[same] = (rows, parts[same][1] + h, parts[same][2] + tau)
        if self.base is other.base:  # (1 − β)·prior + β·prior: the same array, rescaled
            return GaussianSum(self.base, parts, self.scale + other.scale)
        if not self.parts and _zero(self.base):  # the empty sum a node starts from
            return GaussianSum(other.base, parts, other.scale)
        if self.scale == 1.0 and _zero(other.base):  # rows alone (a contraction's message): the same dense part
            return GaussianSum(self.base, parts)
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

    def solve(self, family, previous=None, start: bool = False):
        """q held in a structured form, or None (solve densely): a `KernelGaussian` in data space
        (`_kernel`), else a `CoordinateGaussian` when every row reads one coordinate (a GP's
        `f[n]`: ppl.infer.coordinate_gaussian) or, at the `start`, there are no rows yet.
        `previous`: the sum solved last time, whose prior is reused when its base is the same object."""
        kernel = self._kernel(family, previous)
        if kernel is not None:
            return kernel
        from ppl.infer.coordinate_gaussian import CoordinateGaussian
        return CoordinateGaussian.of(family, self, previous, start)

    def _kernel(self, family, previous=None):
        """q as a `KernelGaussian` when the parts have fewer rows than the dimension, every τ ≥ 0
        and the dense part is a diagonal precision (a `Diagonal`, or an array found to be one);
        None otherwise. The `DiagonalPrior` of `previous` (and with it R P₀⁻¹ Rᵀ) is reused when
        its base is the same object: a constant prior is checked, and its products with the data
        rows formed, once per run, not once per sweep."""
        if (sum(len(p[0]) for p in self.parts) if len(self.parts) != 1 else len(self.parts[0][0])) >= family.dim \
                or self.scale <= 0:
            return None
        if previous is not None and previous.base is self.base and isinstance(previous.prior, DiagonalPrior):
            self.prior = previous.prior
        elif isinstance(self.base, Diagonal) or getattr(self.base, "ndim", 0) == 2:
            self.prior = DiagonalPrior.of(family, self.base)
        if self.prior is None:
            return None
        if len(self.parts) == 1:  # one contraction's rows: no copy
            rows, h, tau = self.parts[0]
        else:
            rows, h, tau = ([np.concatenate([p[k] for p in self.parts]) for k in range(3)] if self.parts else
                            (np.zeros((0, family.dim)), np.zeros(0), np.zeros(0)))
        if (tau < 0).any():  # the method: np.any's wrapper cost 1.5 us a solve
            return None
        return KernelGaussian(family, self.prior, self.scale, rows, h, tau, self)


def _plus(a, b):
    """a + b, without copying a D + D² array to add a zero to it."""
    if _zero(a):
        return b
    if _zero(b):
        return a
    return a + b


def _zero(a) -> bool:
    """`a` is the scalar 0 an empty sum starts from (a plain type test: np.ndim costs three calls)."""
    return isinstance(a, (int, float)) and a == 0.0


class DiagonalPrior:
    """The diagonal part (h₀, P₀) of a sum solved in data space, with what every solve on it
    needs and that depends on nothing else: the mean m₀ = h₀/P₀, log|P₀|, and for the rows R of
    the last solve G₀ = R P₀⁻¹ Rᵀ and R m₀ (O(N²D) and O(ND), formed once per rows array), and
    R ∘ R when the stopping rule asks for it."""

    def __init__(self, h: np.ndarray, p: np.ndarray, mean: np.ndarray | None = None):
        self.h, self.p = h, p
        self.mean = h / p if mean is None else mean
        self.logdet = float(np.sum(np.log(p)))
        self.rows = self.gram = self.rows_mean = self.rows_squared = None

    @classmethod
    def of(cls, family, base) -> "DiagonalPrior | None":
        """The prior of a `Diagonal` with positive precisions or of a (1, D + D²) array whose
        precision is diagonal and positive; None otherwise."""
        if isinstance(base, Diagonal):
            return cls(base.h, base.p, base.mean) if (base.p > 0).all() else None
        d = family.dim
        diagonal = diagonal_of(base[0, d:].reshape(d, d))
        if diagonal is None or np.any(diagonal >= 0):
            return None
        return cls(base[0, :d], -2.0 * diagonal)

    def on(self, rows: np.ndarray) -> tuple:
        """(G₀, R m₀) of `rows`, reused while the rows are the same array."""
        if self.rows is None or not same_array(self.rows, rows):
            self.rows, self.gram, self.rows_mean = rows, _gram(rows, self.p), rows @ self.mean
            self.rows_squared = None
        return self.gram, self.rows_mean

    @functools.cached_property
    def sd(self) -> np.ndarray:
        """P₀^-½, the prior's sds: the bound on q's that the stopping rule reads each sweep."""
        return np.sqrt(1.0 / self.p)

    def squares(self, rows: np.ndarray) -> np.ndarray:
        """R ∘ R of the rows of the last solve (`on`), formed once per rows array."""
        self.on(rows)
        if self.rows_squared is None:
            self.rows_squared = rows * rows
        return self.rows_squared


class KernelGaussian(HeldGaussian):
    """q(w) = N(μ, Σ) with Λ = P + Rᵀ diag(τ) R and h = c h₀ + Rᵀa, P = c P₀ diagonal (the
    prior's, `DiagonalPrior`), R (N, D) with N < D, held through

        G = R P⁻¹ Rᵀ,  B = I + S G S = L Lᵀ (S = diag √τ),  b = a − S B⁻¹ S (R m₀ + G a),

    so that μ = m₀ + P⁻¹ Rᵀ b, R μ = R m₀ + G b, Σ = P⁻¹ − UᵀU with U = L⁻¹ S R P⁻¹ (Woodbury),
    and log|Λ| = log|P| + log|B| (the matrix determinant lemma). A sweep costs O(N³) and no
    product with R: the margins of R's own rows (mean R m₀ + G b, variance diag G −
    colsum((L⁻¹ S G)²)), the entropy, and the prior's Σ_d P₀_d E[(w_d − m₀_d)²] come from N × N
    matrices and N-vectors, G₀ and R m₀ from the prior's cache. μ (O(ND)), U, the variances and
    the margins of other rows (O(N²D)), and `natural` and `moments`, the D × D arrays of the
    family's layout, are formed on first use only. Immutable once solved."""

    def __init__(self, family, prior: DiagonalPrior, scale: float, rows, a, tau, factored):
        self.family, self.prior, self.scale, self.rows, self.tau = family, prior, scale, rows, tau
        self.factored = factored  # the GaussianSum solved: its dense() is λ
        n = len(tau)
        gram, rows_mean = prior.on(rows) if n else (np.zeros((0, 0)), np.zeros(0))
        self.gram = gram if scale == 1.0 else gram / scale  # R P⁻¹ Rᵀ
        self.root = root = np.sqrt(tau)
        b = root[:, None] * self.gram * root[None, :]
        b.flat[::n + 1] += 1.0
        self.chol, self.inverse, logdet_b = _factor(b)  # L and L⁻¹: B ⪰ I, so ‖L⁻¹‖ ≤ 1
        self.b = a - root * self._solve(root * (rows_mean + self.gram @ a))
        self.own_mean = rows_mean + self.gram @ self.b  # R μ
        self.logdet = prior.logdet + (family.dim * np.log(scale) if scale != 1.0 else 0.0) + logdet_b  # log|Λ|
        self._mean = self._u = self._var = self._own = None

    def _solve(self, x: np.ndarray) -> np.ndarray:
        """B⁻¹ x = L⁻ᵀ L⁻¹ x for vectors x (N,) or N × k blocks."""
        return self.inverse.T @ (self.inverse @ x)

    @property
    def p(self) -> np.ndarray:
        """The diagonal P = c P₀ of the precision's dense part."""
        return self.prior.p if self.scale == 1.0 else self.scale * self.prior.p

    @property
    def mean(self) -> np.ndarray:
        """μ = m₀ + P⁻¹ Rᵀ b (D,): one product with R, on first use."""
        if self._mean is None:
            self._mean = self.prior.mean + (self.rows.T @ self.b) / self.p
        return self._mean

    @property
    def u(self) -> np.ndarray:
        """U = L⁻¹ S R P⁻¹ (N, D): one N × N by N × D product, on first use."""
        if self._u is None:
            self._u = ((self.inverse * self.root) @ self.rows) / self.p
        return self._u

    @property
    def var(self) -> np.ndarray:
        if self._var is None:
            self._var = self.var_at(slice(None))
        return self._var

    def var_at(self, columns) -> np.ndarray:
        """Var(w_d) = 1/p_d − |U e_d|² for the elements `columns` only: O(N² k) for k of them, the
        whole of U (O(N²D)) when all or many are asked for (and then kept for later products). With
        no rows (q the prior) it is 1/p_d, the general path's numbers (1/p − 0) without its einsum
        over no rows (17 us: the first ELBO of every data-space fit)."""
        if not len(self.tau):
            return 1.0 / self.p[columns]
        if self._u is not None or isinstance(columns, slice) or 4 * len(columns) > self.family.dim:
            u = self.u[:, columns]
        else:
            u = ((self.inverse * self.root) @ self.rows[:, columns]) / self.p[columns]
        return 1.0 / self.p[columns] - np.einsum("nd,nd->d", u, u)

    def largest_shift(self, before: np.ndarray, floor: float = 1e-6) -> float:
        """max_d |μ_d − before_d| / sd_d (sd floored at `floor` (1 + |μ_d|)), exactly, without
        every sd: 1/Λ_dd ≤ Var(w_d) ≤ 1/P_d (Λ_dd = P_d + Σ_n τ_n R_nd², O(ND)) bound each ratio,
        and only the elements whose upper bound reaches the largest lower bound need their exact
        variance (the stopping rule's mean-change test, once per sweep near convergence)."""
        mean = self.mean
        shift = np.abs(mean - before)
        floor_sd = floor * (1.0 + np.abs(mean))
        diagonal = self.p + self.tau @ self.prior.squares(self.rows) if len(self.tau) else self.p
        high = shift / np.maximum(np.sqrt(1.0 / diagonal), floor_sd)
        low = shift / np.maximum(self.prior.sd if self.scale == 1.0 else np.sqrt(1.0 / self.p), floor_sd)
        with np.errstate(invalid="ignore"):  # np.fmax.reduce: np.nanmax's maximum without its wrapper
            columns = (high >= np.fmax.reduce(low, initial=0.0)).nonzero()[0]  # np.flatnonzero without its ravel
        sd = np.sqrt(np.maximum(self.var_at(columns), 0.0))
        return shift_in_sds(mean[columns], before[columns], sd, floor)

    def linear(self, c: np.ndarray, flat: np.ndarray | None = None) -> np.ndarray:
        """cᵀμ for rows c (any leading axes + (D,)): R μ = R m₀ + G b for R's own rows, no product with R.
        `flat`: c as (rows, D) when the caller keeps that view (`Term.rows`), to be known at once."""
        flat = _flat(c) if flat is None else flat
        if len(self.tau) and same_array(flat, self.rows):
            return self.own_mean.reshape(c.shape[:-1])
        if self._prior_only(flat):
            return self.prior.on(flat)[1].reshape(c.shape[:-1])
        return dot_rows(c, self.mean.reshape((1,) * (c.ndim - 1) + (-1,)))

    def quadratic(self, c: np.ndarray, flat: np.ndarray | None = None) -> np.ndarray:
        """cᵀΣc for rows c (any leading axes + (D,)): for R's own rows diag G − colsum((L⁻¹ S G)²),
        O(N³); for others Σ_d c_d²/p_d − |U c|². No D × D matrix either way. `flat` as in `linear`."""
        flat = _flat(c) if flat is None else flat
        if len(self.tau) and same_array(flat, self.rows):
            if self._own is None:
                w = self.inverse @ (self.root[:, None] * self.gram)
                self._own = self.gram.diagonal() - np.einsum("ij,ij->j", w, w)
            return self._own.reshape(c.shape[:-1])
        if self._prior_only(flat):
            return (np.diagonal(self.prior.on(flat)[0]) / self.scale).reshape(c.shape[:-1])
        out = np.empty(len(flat))
        for start in range(0, len(flat), ROW_BLOCK):  # blocks that stay in cache: no N × D temporaries
            block = flat[start:start + ROW_BLOCK]
            spread = block @ self.u.T
            out[start:start + ROW_BLOCK] = np.einsum("ij,ij->i", block, block / self.p)
            out[start:start + ROW_BLOCK] -= np.einsum("ij,ij->i", spread, spread)
        return out.reshape(c.shape[:-1])

    def _prior_only(self, flat: np.ndarray) -> bool:
        """q is the prior (no rows yet) and `flat` has fewer rows than the dimension: its margins
        come from G₀ = R P₀⁻¹ Rᵀ and R m₀, which the first solve on these rows reuses."""
        return not len(self.tau) and len(flat) < self.family.dim

    def weighted_variance(self, w: np.ndarray) -> float:
        """Σ_d w_d Var(w_d). For the prior's own diagonal (w = P₀, P = c P₀) it is tr(P₀ Σ) =
        Σ P₀/P − (N − tr B⁻¹)/c, since tr(P U ᵀU) = tr(L⁻¹ (B − I) L⁻ᵀ): O(N³), no U."""
        if w is self.prior.p and len(self.tau):
            return float(self.family.dim / self.scale - (len(self.tau) - (self.inverse ** 2).sum()) / self.scale)
        return float(np.sum(w * self.var))

    def prior_error(self) -> float:
        """Σ_d P₀_d E[(w_d − m₀_d)²] = tr(P₀ Σ) + bᵀ G b / c, the expected squared error under the
        prior's own precision and mean (μ − m₀ = P⁻¹ Rᵀ b): O(N²), no product with R."""
        if not len(self.tau):
            return self.weighted_variance(self.prior.p)
        return self.weighted_variance(self.prior.p) + float(self.b @ self.gram @ self.b) / self.scale

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n draws (n, D) in O(N D) each (Bhattacharya, Chakraborty & Mallick 2016): u ~ N(0, P⁻¹),
        δ ~ N(0, I_N), then μ + u − P⁻¹ Rᵀ S B⁻¹ (S R u + δ) ~ N(μ, Σ); no D × D factor."""
        u = rng.standard_normal((n, self.family.dim)) / np.sqrt(self.p)
        v = (u @ self.rows.T) * self.root + rng.standard_normal((n, len(self.tau)))
        w = np.linalg.solve(self.chol.T, np.linalg.solve(self.chol, v.T)).T if len(self.tau) else v
        return self.mean + u - ((w * self.root) @ self.rows) / self.p

    def _covariance(self) -> np.ndarray:
        """Σ = P⁻¹ − UᵀU."""
        second = self.u.T @ self.u
        second *= -1.0
        second[np.diag_indices(self.family.dim)] += 1.0 / self.p
        return second


def _gram(rows: np.ndarray, p: np.ndarray) -> np.ndarray:
    """R P⁻¹ Rᵀ as a product of one matrix with its own transpose, which numpy hands to BLAS's
    symmetric rank-k update (syrk: half a general product's work, 84 against 141 µs at N = 31,
    D = 2000): R Rᵀ / p for a prior of one precision p (`eye(D)`), else S Sᵀ with S = R P^-½."""
    if p[0] == p[-1] and np.all(p == p[0]):
        gram = rows @ rows.T
        return gram if p[0] == 1.0 else gram / p[0]
    scaled = rows / np.sqrt(p)
    return scaled @ scaled.T


def _factor(b: np.ndarray) -> tuple:
    """(L, L⁻¹, log|B|) of a symmetric positive definite B = L Lᵀ by LAPACK's potrf and trtri
    directly: numpy's cholesky and a general solve for L⁻¹ cost 5–8× more on the N × N matrices
    of a data-space solve (N ≈ 30), where the call, not the arithmetic, is the time."""
    if not len(b):
        return b, b, 0.0
    potrf, trtri = _lapack()
    chol, info = potrf(b, lower=1, clean=1)
    if info != 0:
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    inverse, info = trtri(chol, lower=1)
    return chol, inverse, float(2.0 * np.log(chol.diagonal()).sum())


@functools.cache
def _lapack() -> tuple:
    """LAPACK's dpotrf and dtrtri, from scipy.linalg on first use (not on the CLI's import path)."""
    from scipy.linalg import lapack
    return lapack.dpotrf, lapack.dtrtri


def _flat(c: np.ndarray) -> np.ndarray:
    """Rows c (any leading axes + (D,)) as (rows, D)."""
    return c.reshape(-1, c.shape[-1])


def same_array(a, b) -> bool:
    """The same rows in memory (the data of one contraction, met again in a later sweep): at once
    for the same array object (`Term.rows`), else by shape, strides and address."""
    return a is b or a.shape == b.shape and a.strides == b.strides and \
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
