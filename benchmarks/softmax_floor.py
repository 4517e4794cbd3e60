"""The floor of the softmax benchmark: NC-VMP for multinomial logistic regression written in numpy
without ppl, as a numerical-computing expert would, and the exact ELBO that scores every method.

y[n] ~ Categorical(softmax(η_n)), η_nk = w_k·x_n, w_k ~ N(0, I), q(w) = Π_k N(μ_k, Σ_k). Per sweep:
the margins m_nk = x_n·μ_k, v_nk = x_nᵀΣ_k x_n (by blocks of rows); the averages E[lse(η)], E[p],
E[p(1 − p)] by ppl's rule (the same nodes, so the traces agree to rounding); the sites
τ̃ = E[p(1 − p)] (floored at 1e-10, capped at 1e4/v), ỹ = m + (y − E[p])/τ̃; each class's natural
parameters Λ_k = I + Xᵀ diag(τ̃_k) X, h_k = Xᵀ τ̃_k ỹ_k, taken with the step ρ:
λ ← (1 − ρ)λ + ρ·λ_new, ρ halved (down to 1/64) after a sweep that lowers the ELBO (ppl's damping
of NC-VMP); then one Cholesky factor per class for μ_k, Σ_k and log|Σ_k|; then ppl's shift step
(docs/rules/softmax.md#the-shift-step), which for the N(0, I) prior of every class is μ_k ← μ_k − μ̄
(μ̄ the mean over classes), h_k ← h_k − Λ_k μ̄.

The averages, over the K − 1 differences d_j = η_j − η_r (r: the row's class of largest mean):
- K = 3, the product Gauss–Hermite rule (41 nodes an axis) turned by the Cholesky factor L of the
  differences' covariance. With d = μ + Lε, e^{d_1} = t_a and e^{d_2} = u_a s_b on the grid (a, b)
  (t, u, s: vectors of 41 exponentials), so a node costs the total 1 + t_a + u_a s_b, one log, one
  reciprocal and one square; every average is then two matrix-vector products per row of
  1/total and 1/total² with the weights (w_b and w_b s_b) and a weighted sum over a.
- K ≥ 5, 2048 scrambled Sobol points (scipy.stats.qmc, ppl's seed) through the normal quantile:
  e^{η_k − m_r} at each point (no maximum per point: the largest exponent is bounded instead), one
  log and one reciprocal per point, p by a product.
Temporaries are blocks of about `CELLS` floats made once per problem, never the size of the data.
"""

from __future__ import annotations

import numpy as np
from scipy import special

NODES = 41  # Gauss–Hermite nodes per axis for K = 3 (⌊1728^(1/2)⌋)
POINTS, SEED = 2048, 20240611  # the quasi-random points for K ≥ 5
CELLS = 131_072  # floats per block temporary
ROWS = 4096  # rows per block of a data product
WIDE = 600.0  # largest exponent allowed (e^709 overflows)
MIN_PRECISION, TRUST, SMALLEST_STEP = 1e-10, 1e4, 1 / 64


class Product3:
    """E[lse], E[p], E[p(1 − p)] for K = 3 by the product rule, into buffers kept across calls."""

    def __init__(self, rows: int):
        x, w = np.polynomial.hermite.hermgauss(NODES)
        self.x, self.w = x * np.sqrt(2.0), w / np.sqrt(np.pi)
        self.block = max(1, CELLS // NODES ** 2)
        self.grid, self.logs = np.empty((2, self.block, NODES, NODES))
        self.right = np.empty((self.block, NODES, 2))  # w_b and w_b s_b: the two vectors of the products
        self.sums = np.empty((self.block, NODES, 2))
        self.lse, self.p1, self.p2 = np.empty(rows), np.empty((rows, 3)), np.empty((rows, 3))

    def __call__(self, m, v):
        n = len(m)
        rows = np.arange(n)
        ref = m.argmax(1)
        first, second = np.where(ref == 0, 1, 0), np.where(ref == 2, 1, 2)
        m_ref, v_ref = m[rows, ref], v[rows, ref]
        l11 = np.sqrt(v[rows, first] + v_ref)
        l21 = np.divide(v_ref, l11, out=np.zeros(n), where=l11 > 0)
        l22 = np.sqrt(np.maximum(v[rows, second] + v_ref - l21 * l21, 0.0))
        if (np.maximum(l11, np.abs(l21) + l22) * np.abs(self.x).max() > WIDE).any():
            raise ValueError("margins too wide for the product rule's separable exponentials")
        t = np.exp((m[rows, first] - m_ref)[:, None] + l11[:, None] * self.x)
        u = np.exp((m[rows, second] - m_ref)[:, None] + l21[:, None] * self.x)
        s = np.exp(l22[:, None] * self.x)
        w = self.w
        for lo in range(0, n, self.block):
            hi = min(n, lo + self.block)
            r = hi - lo
            tb, ub, sb = t[lo:hi], u[lo:hi], s[lo:hi]
            total, logs, right, sums = self.grid[:r], self.logs[:r], self.right[:r], self.sums[:r]
            np.multiply(ub[:, :, None], sb[:, None, :], out=total)
            total += (1.0 + tb)[:, :, None]
            np.log(total, out=logs)
            self.lse[lo:hi] = m_ref[lo:hi] + (logs @ w) @ w
            np.reciprocal(total, out=total)
            right[:, :, 0] = w
            np.multiply(sb, w, out=right[:, :, 1])
            np.matmul(total, right, out=sums)  # Σ_b w_b/total, Σ_b w_b s_b/total
            a0, a1 = sums[:, :, 0], sums[:, :, 1]
            wt, wu = w * tb, w * ub
            p_ref, p_first, p_second = a0 @ w, np.einsum("ra,ra->r", wt, a0), np.einsum("ra,ra->r", wu, a1)
            np.multiply(total, total, out=total)
            np.matmul(total, right, out=sums)  # the same with 1/total²
            c0, c1 = sums[:, :, 0], sums[:, :, 1]
            q_ref = np.einsum("ra,ra->r", wt, c0) + np.einsum("ra,ra->r", wu, c1)
            q_first = np.einsum("ra,ra->r", wt, c0 + ub * c1)
            q_second = np.einsum("ra,ra->r", wu * (1.0 + tb), c1)
            at = rows[lo:hi]
            for cls, p, q in ((ref, p_ref, q_ref), (first, p_first, q_first), (second, p_second, q_second)):
                self.p1[at, cls[lo:hi]] = p
                self.p2[at, cls[lo:hi]] = q
        return self.lse[:n], self.p1[:n], self.p2[:n]


class Points:
    """The same three averages for K ≥ 5 over the scrambled Sobol points, in blocks of rows."""

    def __init__(self, k: int, rows: int):
        from scipy.stats import qmc
        uniform = qmc.Sobol(k, scramble=True, seed=SEED).random(POINTS)
        self.eps = np.ascontiguousarray(special.ndtri(np.clip(uniform, 2.0 ** -53, 1 - 2.0 ** -53)).T)  # (K, S)
        self.weights = np.full(POINTS, 1.0 / POINTS)
        self.block = max(1, CELLS // (k * POINTS))
        self.e, self.q = np.empty((2, self.block, k, POINTS))
        self.z = np.empty((self.block, POINTS))
        self.lse, self.p1, self.p2 = np.empty(rows), np.empty((rows, k)), np.empty((rows, k))

    def __call__(self, m, v):
        n = len(m)
        sd = np.sqrt(v)
        m_ref = m.max(1)
        if sd.max() * np.abs(self.eps).max() > WIDE:
            raise ValueError("margins too wide for the points without a maximum per point")
        shift = m - m_ref[:, None]
        for lo in range(0, n, self.block):
            hi = min(n, lo + self.block)
            r = hi - lo
            e, q, z = self.e[:r], self.q[:r], self.z[:r]
            np.multiply(sd[lo:hi, :, None], self.eps, out=e)
            e += shift[lo:hi, :, None]
            np.exp(e, out=e)
            np.sum(e, axis=1, out=z)
            np.reciprocal(z, out=q[:, 0])  # 1/z, parked in q's first class
            e *= q[:, :1]  # p at every point
            self.p1[lo:hi] = e @ self.weights
            np.subtract(1.0, e, out=q)
            q *= e
            self.p2[lo:hi] = q @ self.weights
            np.log(z, out=z)
            self.lse[lo:hi] = m_ref[lo:hi] + z @ self.weights
        return self.lse[:n], self.p1[:n], self.p2[:n]


def averages(k: int, rows: int):
    """The rule for K classes, with buffers for `rows` rows."""
    if k == 3:
        return Product3(rows)
    if k >= 5:
        return Points(k, rows)
    raise ValueError(f"the floor covers K = 3 and K >= 5, not K = {k}")


class Classes:
    """q(w) = Π_k N(μ_k, Σ_k), kept as natural parameters (Λ_k, h_k) and as μ_k, Σ_k, log|Σ_k|."""

    def __init__(self, x, k: int):
        self.x = x
        d = x.shape[1]
        self.precision, self.h = np.tile(np.eye(d), (k, 1, 1)), np.zeros((k, d))
        self.mean, self.cov, self.logdet = np.zeros((k, d)), np.tile(np.eye(d), (k, 1, 1)), np.zeros(k)
        self.m, self.v = np.empty((len(x), k)), np.empty((len(x), k))
        self.spread = np.empty((min(ROWS, len(x)), k, d))

    def margins(self):
        np.matmul(self.x, self.mean.T, out=self.m)
        k, d = self.mean.shape
        stacked = self.cov.transpose(1, 0, 2).reshape(d, k * d)  # [Σ_1 … Σ_K]
        for lo in range(0, len(self.x), ROWS):
            block = self.x[lo:lo + ROWS]
            spread = self.spread[:len(block)]
            np.matmul(block, stacked, out=spread.reshape(len(block), k * d))
            spread *= block[:, None, :]
            np.sum(spread, axis=2, out=self.v[lo:lo + ROWS])
        return self.m, self.v

    def update(self, tau, pull, m, step: float):
        """Λ_k ← (1 − ρ)Λ_k + ρ(I + Xᵀ diag(τ_k) X), h_k likewise with Xᵀ(τ_k m_k + pull_k)."""
        x, (k, d) = self.x, self.mean.shape
        h = (x.T @ (tau * m + pull)).T
        for c in range(k):
            precision = (x * tau[:, c, None]).T @ x
            precision[np.diag_indices(d)] += 1.0
            self.precision[c] += step * (precision - self.precision[c])
        self.h += step * (h - self.h)
        chol = np.linalg.cholesky(self.precision)
        inverse = np.linalg.solve(chol, np.broadcast_to(np.eye(d), chol.shape))  # L⁻¹
        self.cov = inverse.transpose(0, 2, 1) @ inverse
        self.mean = np.einsum("kij,kj->ki", self.cov, self.h)
        self.logdet = -2.0 * np.log(np.diagonal(chol, axis1=1, axis2=2)).sum(1)

    def shift(self):
        """Every class mean moved by −μ̄, the best point along the shift the likelihood cannot see."""
        c = self.mean.mean(0)
        self.mean -= c
        self.h -= self.precision @ c

    def kl(self) -> float:
        d = self.mean.shape[1]
        return 0.5 * float(np.trace(self.cov, axis1=1, axis2=2).sum() + np.sum(self.mean ** 2)
                           - len(self.mean) * d - self.logdet.sum())


def sites(y, m, v, p1, p2):
    """(τ̃, τ̃(ỹ − m)) per row and class, as ppl makes them (trust region τ̃ ≤ 1e4/v)."""
    newton = np.maximum(p2, MIN_PRECISION)
    tau = np.minimum(newton, TRUST / np.maximum(v, 1e-300))
    g1 = -p1
    g1[np.arange(len(y)), y] += 1.0
    return tau, g1 * (tau / newton)


def run(x, y, k: int, tol: float, max_sweeps: int = 1000):
    """NC-VMP from q = prior until a sweep moves the ELBO by at most `tol` nats (y: 0-based classes);
    (ELBO trace, q)."""
    q, rule = Classes(x, k), averages(k, len(x))
    picked = np.arange(len(y)), y
    m, v = q.margins()
    lse, p1, p2 = rule(m, v)
    elbo, step, trace = float(np.sum(m[picked] - lse)) - q.kl(), 1.0, []
    for _ in range(max_sweeps):
        tau, pull = sites(y, m, v, p1, p2)
        q.update(tau, pull, m, step)
        q.shift()
        m, v = q.margins()
        lse, p1, p2 = rule(m, v)
        new = float(np.sum(m[picked] - lse)) - q.kl()
        if new < elbo - 1e-9 * max(1.0, abs(elbo)) and step > SMALLEST_STEP:
            step /= 2
        trace.append(new)
        if abs(new - elbo) <= tol:
            break
        elbo = new
    return trace, q


def score(x, y, mean, cov):
    """(ELBO, mean log predictive) of class-factorised q = Π_k N(mean_k, cov_k) on (x, y), by the rule."""
    k = len(mean)
    m = x @ mean.T
    v = np.maximum(np.einsum("nd,kde,ne->nk", x, cov, x), 0.0)
    lse, p1, _ = averages(k, len(x))(m, v)
    logdet = np.array([np.linalg.slogdet(c)[1] if np.any(c) else 0.0 for c in cov])
    kl = 0.5 * (np.trace(cov, axis1=1, axis2=2).sum() + np.sum(mean ** 2) - mean.size - logdet.sum())
    rows = np.arange(len(y))
    return float(np.sum(m[rows, y] - lse) - kl), float(np.mean(np.log(p1[rows, y])))
