"""The floors of the logistic-regression benchmarks: hand-written numpy loops of the algorithms ppl
runs, as a numerical-computing expert would write them, and the exact ELBO that scores every method.

- `ncvmp`: NC-VMP with a full-covariance Gaussian q(w) under w ~ N(0, I). When N ≥ D, per sweep:
  the margins m = Xμ and v = rowsum((X Σ) ∘ X) (one GEMM into a buffer kept across sweeps), the
  expectations g1, g2 and E[log f] by quadrature in cache-sized blocks from one exponential per node
  (log(1 + e^η) = max(η, 0) − log r, σ(η)σ(−η) = e r², e = exp(−|η|), r = 1/(1 + e)), then
  Λ = I + AᵀA with A = diag(√τ̃) X (a symmetric rank-k update, A in the same buffer) and one
  Cholesky factor for μ, Σ, log|Σ|. When D > N nothing of size D × D is formed: with G = XXᵀ
  (once), B = I + S G S (S = diag √τ̃) and its Cholesky factor L, Σ = I − Xᵀ S B⁻¹ S X, so that
  v = diag G − colsum((L⁻¹ S G)²), μ = Xᵀ b, |μ|² = bᵀ G b, tr Σ = D − ‖L⁻¹ S X‖²_F and
  log|Σ| = −log|B|: O(N²D) once, then O(N³) per sweep.
- `jaakkola`: the Jaakkola–Jordan bound at its optimal ξ_n = √(m_n² + v_n): Λ = I + 2 Xᵀ diag(λ(ξ)) X,
  h = Xᵀ(y − ½), the same margins and algebra.

The quadrature is ppl's algorithm (so the traces agree to rounding where margins are narrow):
Gauss–Hermite with 8 to 48 nodes by the margin's variance for v ≤ 2 (ppl.infer.margin_nodes.BANDS),
in blocks of 16,384 nodes; 96-node Gauss–Legendre on each side of η = 0 over m ± 12√v for wider margins; sites
τ̃ = max(−g2, 1e-10) capped at 1e4/v, ỹ = m + g1/max(−g2, 1e-10).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.margin_nodes import BANDS

# Gauss–Hermite nodes by the margin's variance (nodes, largest v, x, w): ppl's bands, 1e-14 at most
HERMITE = tuple((n, v, x, w / np.sqrt(np.pi)) for n, v in BANDS for x, w in [np.polynomial.hermite.hermgauss(n)])
LEGENDRE_NODES, LEGENDRE_WEIGHTS = np.polynomial.legendre.leggauss(96)
BLOCK = 16384  # margins × nodes per block of the quadrature (128 KB arrays: in cache)
ROWS = 8192  # rows per block of a data product


def link(y, eta):
    """(Σ-ready) log f, d1, d2 of a Bernoulli–logistic likelihood at the nodes η, one exp per node."""
    e = np.exp(-np.abs(eta))
    r = 1.0 / (1.0 + e)
    curvature = e * r * r
    llp = np.maximum(eta, 0.0) - np.log(r)
    s = 0.5 * (1.0 + np.tanh(0.5 * eta))
    return y * eta - llp, y - s, -curvature


def expectations(y, m, v):
    """(Σ_n E[log f_n], g1, g2) under η_n ~ N(m_n, v_n), by blocks of BLOCK // nodes margins."""
    g1, g2 = np.empty_like(m), np.empty_like(m)
    total = 0.0
    for rows, band in _bands(v):
        nodes = HERMITE[band][0] if band < len(HERMITE) else 2 * len(LEGENDRE_NODES)
        for start in range(0, len(rows), BLOCK // nodes):
            block = rows[start:start + BLOCK // nodes]
            eta, w = _hermite(m[block], v[block], band) if band < len(HERMITE) else _legendre(m[block], v[block])
            value, d1, d2 = link(y[block, None], eta)
            if w.ndim == 1:
                total += float(np.sum(value @ w))
                g1[block], g2[block] = d1 @ w, d2 @ w
            else:
                total += float(np.einsum("ij,ij->", value, w))
                g1[block], g2[block] = np.einsum("ij,ij->i", d1, w), np.einsum("ij,ij->i", d2, w)
    return total, g1, g2


def _bands(v):
    """[(rows, band)]: the margins by the Gauss–Hermite rule their variance needs (len(HERMITE):
    Gauss–Legendre, v > 2)."""
    band = np.searchsorted([h[1] for h in HERMITE], v)
    return [(np.flatnonzero(band == k), k) for k in np.unique(band)]


def _hermite(m, v, band):
    _, _, x, w = HERMITE[band]
    return m[:, None] + np.sqrt(2.0 * v)[:, None] * x, w


def _legendre(m, v):
    sd = np.sqrt(v)
    etas, weights = [], []
    for lo, hi in ((m - 12 * sd, np.minimum(0.0, m + 12 * sd)), (np.maximum(0.0, m - 12 * sd), m + 12 * sd)):
        half = np.maximum(hi - lo, 0.0)[:, None] / 2
        eta = (lo + hi)[:, None] / 2 + half * LEGENDRE_NODES
        density = np.exp(-0.5 * ((eta - m[:, None]) / sd[:, None]) ** 2) / (sd[:, None] * np.sqrt(2 * np.pi))
        etas.append(eta)
        weights.append(LEGENDRE_WEIGHTS * half * density)
    return np.concatenate(etas, 1), np.concatenate(weights, 1)


def ncvmp_sites(g1, g2, v):
    """(τ̃, τ̃ỹ) of NC-VMP's Gaussian sites, as ppl makes them (trust region τ̃ ≤ 1e4/v)."""
    newton = np.maximum(-g2, 1e-10)
    tau = np.minimum(newton, 1e4 / np.maximum(v, 1e-300))
    return tau, g1 * (tau / newton)  # τ̃(ỹ − m): the part of τ̃ỹ that is not τ̃m


def jaakkola_lambda(xi):
    """λ(ξ) = tanh(ξ/2)/(4ξ), 1/8 at 0."""
    small = xi < 1e-4
    safe = np.where(small, 1.0, xi)
    return np.where(small, 0.125 - xi * xi / 192.0, np.tanh(safe / 2) / (4 * safe))


class Dense:
    """q(w) = N(μ, Σ) kept as μ, Σ and log|Σ| (N ≥ D). The data products go by blocks of ROWS rows,
    which stay in cache (no N × D temporary: measured faster than one product into a reused buffer)."""

    def __init__(self, x):
        self.x = x
        d = x.shape[1]
        self.mean, self.cov, self.logdet = np.zeros(d), np.eye(d), 0.0

    def margins(self):
        v = np.empty(len(self.x))
        for start in range(0, len(self.x), ROWS):
            block = self.x[start:start + ROWS]
            v[start:start + ROWS] = np.einsum("ij,ij->i", block @ self.cov, block)
        return self.x @ self.mean, v

    def update(self, tau, pull, m):
        """Λ = I + Xᵀ diag(τ) X (AᵀA by blocks, A = diag(√τ) X: symmetric rank-k), h = Xᵀ(τ m + pull)."""
        root, precision = np.sqrt(tau), np.eye(self.x.shape[1])
        for start in range(0, len(self.x), ROWS):
            a = self.x[start:start + ROWS] * root[start:start + ROWS, None]
            precision += a.T @ a
        chol = np.linalg.cholesky(precision)
        self.before = self.mean
        inverse = np.linalg.solve(chol, np.eye(len(chol)))  # L⁻¹ (triangular, small: D × D)
        self.cov = inverse.T @ inverse
        self.mean = self.cov @ (self.x.T @ (tau * m + pull))
        self.logdet = -2.0 * np.sum(np.log(np.diagonal(chol)))

    def kl(self):
        return 0.5 * (np.trace(self.cov) + self.mean @ self.mean - len(self.mean) - self.logdet)

    def largest_shift(self):
        """max_d |μ_d − μ'_d| / sd_d, μ' the mean before the last update (ppl's mean test; sd floored
        as ppl floors it)."""
        sd = np.sqrt(np.maximum(np.diagonal(self.cov), 0.0))
        return float(np.max(np.abs(self.mean - self.before) / np.maximum(sd, 1e-6 * (1 + np.abs(self.mean)))))

    def posterior(self):
        return self.mean, self.cov


class Kernel:
    """q(w) through the N × N matrices only (D > N): Σ = I − Xᵀ S B⁻¹ S X, μ = Xᵀ b."""

    def __init__(self, x):
        self.x, self.gram = x, x @ x.T
        n = len(x)
        self.b, self.sqrt_tau, self.chol = np.zeros(n), np.zeros(n), np.eye(n)
        self.trace, self.logdet, self.m, self.v = float(x.shape[1]), 0.0, np.zeros(n), np.diagonal(self.gram).copy()
        self.squares = self.means = None  # X ∘ X and the last (b, μ), when the mean test asks

    def margins(self):
        return self.m, self.v

    def update(self, tau, pull, m):
        s, g, n = np.sqrt(tau), self.gram, len(tau)
        b_matrix = s[:, None] * g * s[None, :]
        b_matrix[np.diag_indices(n)] += 1.0
        chol = np.linalg.cholesky(b_matrix)
        a = tau * m + pull  # h = Xᵀa
        b = a - s * _cho_solve(chol, s * (g @ a))
        w = np.linalg.solve(chol, s[:, None] * g)  # L⁻¹ S G
        inverse = np.linalg.solve(chol, np.eye(n))
        self.before, self.b, self.sqrt_tau, self.chol, self.inverse = self.b, b, s, chol, inverse
        self.m, self.v = g @ b, np.diagonal(g) - np.einsum("ij,ij->j", w, w)
        self.trace = self.x.shape[1] - (n - np.sum(inverse * inverse))  # D − tr(B⁻¹(B − I))
        self.logdet = -2.0 * np.sum(np.log(np.diagonal(chol)))

    def kl(self):
        return 0.5 * (self.trace + self.b @ self.gram @ self.b - self.x.shape[1] - self.logdet)

    def largest_shift(self):
        """max_d |μ_d − μ'_d| / sd_d, μ' the mean before the last update (ppl's mean test, sd floored as
        ppl floors it; μ = Xᵀb, μ' kept from the last call) without every sd:
        1/Λ_dd ≤ Var(w_d) ≤ 1 bound each ratio (Λ_dd = 1 + Σ_n τ_n X_nd², X ∘ X formed once), and only
        the elements whose upper bound reaches the largest lower bound take their exact variance
        1 − |U e_d|², U = L⁻¹ S X (as ppl's `KernelGaussian.largest_shift`)."""
        if self.squares is None:
            self.squares = self.x * self.x
        mean = self.x.T @ self.b
        before = self.means[1] if self.means is not None and self.means[0] is self.before else self.x.T @ self.before
        self.means = (self.b, mean)
        shift, floor_sd = np.abs(mean - before), 1e-6 * (1.0 + np.abs(mean))
        high = shift / np.maximum(np.sqrt(1.0 / (1.0 + (self.sqrt_tau ** 2) @ self.squares)), floor_sd)
        columns = np.flatnonzero(high >= np.max(shift / np.maximum(1.0, floor_sd)))
        u = self.inverse @ (self.sqrt_tau[:, None] * self.x[:, columns])
        sd = np.sqrt(np.maximum(1.0 - np.einsum("ij,ij->j", u, u), 0.0))
        return float(np.max(shift[columns] / np.maximum(sd, floor_sd[columns])))

    def posterior(self):
        """(μ, Σ), Σ formed here (D × D), outside the timed loop."""
        u = np.linalg.solve(self.chol, self.sqrt_tau[:, None] * self.x)
        return self.x.T @ self.b, np.eye(self.x.shape[1]) - u.T @ u


class Woodbury(Kernel):
    """As `Kernel`, but keeping Σ = I − UᵀU as a D × D matrix (U = L⁻¹ S X) and the margins as
    rowsum((X Σ) ∘ X): the floor of an engine that stores a full covariance (as ppl's state does)."""

    def update(self, tau, pull, m):
        super().update(tau, pull, m)
        u = np.linalg.solve(self.chol, self.sqrt_tau[:, None] * self.x)
        self.cov = np.eye(self.x.shape[1]) - u.T @ u
        self.mean = self.x.T @ self.b
        self.m, self.v = self.x @ self.mean, np.einsum("ij,ij->i", self.x @ self.cov, self.x)

    def kl(self):
        return 0.5 * (np.trace(self.cov) + self.mean @ self.mean - len(self.mean) - self.logdet)


def _cho_solve(chol, rhs):
    return np.linalg.solve(chol.T, np.linalg.solve(chol, rhs))


def run(x, y, rule: str, tol: float, max_sweeps: int = 1000, form=None, mean_tol: float | None = None):
    """`rule` ("ncvmp" or "jaakkola") from q = prior until the ELBO changes by at most `tol` nats
    in a sweep; (ELBO trace, q). `form`: the q class (default Kernel when D > N, else Dense).
    `mean_tol`: stop by ppl's rule instead (`ppl_stop`)."""
    q = (form or (Kernel if x.shape[1] > x.shape[0] else Dense))(x)
    m, v = q.margins()
    trace = []
    fit, g1, g2 = expectations(y, m, v) if rule == "ncvmp" else (None, None, None)
    for _ in range(max_sweeps):
        if rule == "ncvmp":
            tau, pull = ncvmp_sites(g1, g2, v)
        else:
            tau = 2 * jaakkola_lambda(np.sqrt(m * m + v))
            pull = y - 0.5 - tau * m  # h = Xᵀ(τm + pull) = Xᵀ(y − ½)
        q.update(tau, pull, m)
        m, v = q.margins()
        if rule == "ncvmp":
            fit, g1, g2 = expectations(y, m, v)
        else:
            xi = np.sqrt(m * m + v)
            fit = float(np.sum((y - 0.5) * m + xi / 2 - np.logaddexp(0.0, xi)))
        trace.append(fit - q.kl())
        if mean_tol is not None:
            if ppl_stop(trace, q, tol, mean_tol):
                break
        elif len(trace) > 1 and abs(trace[-1] - trace[-2]) <= tol:
            break
    return trace, q


def ppl_stop(trace, q, tol: float, mean_tol: float) -> bool:
    """ppl's stopping rule for deterministic rules (ppl.infer.convergence, without SQUAREM): the ELBO
    within `tol` nats of its fixed point, |d|/(1 − ρ) ≤ tol with d the last increment and ρ the
    largest of the last three ratios of positive increments (capped at 0.999; the cap
    itself after the second sweep), and then no mean moved by more than `mean_tol` posterior sds
    in the last sweep (measured only when the ELBO test passes, as ppl does). A last increment
    below ρ times the one before counts as that, the rate's prediction (a sweep that dips does not
    stop a crawl, as in ppl)."""
    if len(trace) < 2:
        return False
    tail = trace[-5:]
    increments = [b - a for a, b in zip(tail[:-1], tail[1:])]
    ratios = [b / a for a, b in zip(increments[:-1], increments[1:]) if a > 0 and b >= 0]
    rho = min(max(ratios, default=0.0), 0.999) if len(increments) > 1 else 0.999
    d = increments[-1]
    if len(increments) > 1 and abs(d) < rho * abs(increments[-2]):
        d = rho * increments[-2]
    return abs(d) / (1 - rho) <= tol and q.largest_shift() <= mean_tol
