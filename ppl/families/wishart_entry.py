"""Quantiles of an off-diagonal entry of a Wishart matrix, by quadrature instead of draws.

With X ~ W(ν, S), the 2 × 2 Bartlett factor of (i, j) gives X_ij = σ_i σ_j Y, σ_i² = S_ii and

    Y = ρ G + s √G Z,   G ~ χ²_ν,  Z ~ N(0, 1) independent,  ρ = S_ij / (σ_i σ_j),  s = √(1 − ρ²),

equivalently Y = c₊A − c₋B with A, B ~ χ²_ν independent and c± = (1 ± ρ)/2 (so
P(Y ≤ 0) = I_{c₋}(ν/2, ν/2), a regularised incomplete beta). Y's law (variance-gamma) has no
inverse CDF in scipy; its CDF is a one-dimensional integral, written two ways so that the
integrand is smooth and decays fast (the trapezoid rule then converges geometrically):

- |ρ| ≤ 0.7, over G: F(y) = E_G[Φ((y − ρG)/(s√G))], in ψ = log G;
- |ρ| > 0.7 (taking ρ > 0: Y → −Y flips its sign), over Z: given Z = z, Y ≤ y bounds √G by the
  roots of ρw² + szw − y, which the substitution z = z₀ sinh τ (y > 0) or z = −z₀ cosh τ (y < 0),
  z₀ = 2√(ρ|y|)/s, makes κe^{∓τ} with κ = √(|y|/ρ):
  F(y) = ∫ F_G(κ²e^{−2τ}) φ(z₀ sinh τ) z₀ cosh τ dτ, or for y < 0
  F(y) = ∫_0^∞ [F_G(κ²e^{2τ}) − F_G(κ²e^{−2τ})] φ(z₀ cosh τ) z₀ sinh τ dτ.

The density comes from the same nodes; quantiles are Newton steps from a Cornish–Fisher start,
kept inside a bracket. `tests/test_summaries.py` checks the CDF against the closed-form density
integrated by `scipy.integrate.quad` and the quantiles against Monte Carlo.
"""

from __future__ import annotations

import numpy as np
from scipy import special

SPLIT = 0.7  # |ρ| at which the integral over G gives way to the one over Z
Z_NODES = 64
MASS = 1e-15  # mass of G beyond the ends of the ψ grid (added at the end values)
STEP = 0.5  # ψ step, in widths of the narrower feature of the integrand
_LOG_ROOT_2PI = 0.5 * np.log(2.0 * np.pi)


def quantiles(q, rho, nu, tol: float = 1e-12, max_iter: int = 40) -> np.ndarray:
    """Quantiles at levels `q` (shape (len(q),)) of Y for arrays `rho`, `nu` of one shape:
    shape (len(q),) + that shape. Newton on the CDF from a Cornish–Fisher start, bisection when
    a step leaves the bracket; stops when every |F(y) − q| < `tol`."""
    rho, nu = np.broadcast_arrays(np.asarray(rho, float), np.asarray(nu, float))
    shape = rho.shape
    law = Law(rho.ravel(), nu.ravel())
    q = np.broadcast_to(np.asarray(q, float).reshape(-1, 1), (np.size(q), rho.size))
    entry = np.broadcast_to(np.arange(rho.size), q.shape)
    r, v = law.rho[entry], law.nu[entry]
    mean, sd = r * v, np.sqrt(v * (1.0 + r**2))
    lo, hi = mean - 40.0 * sd, mean + 40.0 * sd
    y = np.clip(_cornish_fisher(q, r, v, mean, sd), lo, hi)
    todo = np.flatnonzero(np.ones(q.shape, bool))  # flat positions still to solve
    y, lo, hi = y.reshape(-1), lo.reshape(-1), hi.reshape(-1)
    q, entry, sd = q.reshape(-1), entry.reshape(-1), sd.reshape(-1)
    for _ in range(max_iter):
        yt, lt, ht = y[todo], lo[todo], hi[todo]  # gathered once an iteration
        f, dens = law.cdf_pdf(yt, entry[todo])
        miss = f - q[todo]
        done = np.abs(miss) < tol
        lt, ht = np.where(miss < 0, yt, lt), np.where(miss > 0, yt, ht)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = yt - miss / dens
        inside = np.isfinite(step) & (step > lt) & (step < ht)
        new = np.where(done, yt, np.where(inside, step, 0.5 * (lt + ht)))
        y[todo], lo[todo], hi[todo] = new, lt, ht
        todo = todo[~done & (ht - lt > 1e-15 * (np.abs(new) + sd[todo]))]
        if not todo.size:
            break
    return y.reshape((-1,) + shape)


def cdf_pdf(y, rho, nu) -> tuple[np.ndarray, np.ndarray]:
    """(F(y), f(y)) of Y, elementwise over arrays of one shape."""
    y, rho, nu = (np.asarray(a, float) for a in np.broadcast_arrays(y, rho, nu))
    f, dens = Law(rho.ravel(), nu.ravel()).cdf_pdf(y.ravel(), np.arange(y.size))
    return f.reshape(y.shape), dens.reshape(y.shape)


class Law:
    """The laws of Y for flat arrays `rho`, `nu` (one per entry), with the ψ grids of the entries
    integrated over G built once: a Newton iteration only evaluates Φ at new points."""

    def __init__(self, rho, nu):
        self.rho, self.nu = rho, nu
        self.over_g = np.abs(rho) <= SPLIT
        self.row = np.cumsum(self.over_g) - 1  # an entry's row in the grids
        self.g, self.root, self.weight = _psi_grid(np.abs(rho[self.over_g]), nu[self.over_g])

    def cdf_pdf(self, y, entry):
        """(F, f) at points `y` of the entries `entry` (flat arrays of one length)."""
        rho, nu = self.rho[entry], self.nu[entry]
        flip = rho < 0  # Y(−ρ) = −Y(ρ)
        y, r = np.where(flip, -y, y), np.abs(rho)
        f, dens = np.empty_like(y), np.empty_like(y)
        over_g = self.over_g[entry]
        zero = ~over_g & (y == 0)
        over_z = ~over_g & ~zero
        if over_g.any():
            row = self.row[entry[over_g]]
            f[over_g], dens[over_g] = _over_g(y[over_g], r[over_g], self.g[row], self.root[row],
                                              self.weight[row])
        if over_z.any():
            f[over_z], dens[over_z] = _over_z(y[over_z], r[over_z], nu[over_z])
        if zero.any():  # the Z substitution degenerates at y = 0, where F is a beta CDF
            m = 0.5 * nu[zero]
            f[zero] = special.betainc(m, m, 0.5 * (1.0 - r[zero]))
            dens[zero] = np.nan  # Newton bisects instead
        return np.where(flip, 1.0 - f, f), dens


def _psi_grid(rho, nu):
    """Nodes G = e^ψ (and √G) and trapezoid weights of G's density in ψ, per entry, from the MASS
    to the 1 − MASS quantile of G, the step `STEP` times the narrower of G's log-density and the
    Φ step (s/(√2 ρ) of it); one node count for all."""
    m = 0.5 * nu
    lo = np.log(2.0 * special.gammaincinv(m, MASS))
    hi = np.log(2.0 * special.gammainccinv(m, MASS))
    s = np.sqrt(1.0 - rho**2)
    width = np.minimum(0.4, np.sqrt(2.0 / nu)) * np.minimum(1.0, s / np.maximum(np.sqrt(2.0) * rho, 1e-300))
    n = max(33, int(min(2048, np.ceil(np.max((hi - lo) / (STEP * width), initial=0.0)))) + 1)
    h = (hi - lo) / (n - 1)
    psi = lo[:, None] + h[:, None] * np.arange(n)
    g = np.exp(psi)
    weight = np.exp(m[:, None] * (psi - np.log(2.0)) - 0.5 * g - special.gammaln(m)[:, None]) * h[:, None]
    weight[:, [0, -1]] *= 0.5
    weight[:, [0, -1]] += MASS  # the tails beyond the grid, at the end values
    return g, np.sqrt(g), weight


def _over_g(y, rho, g, root, weight):
    """F and f as trapezoid sums over ψ = log G (`_psi_grid`)."""
    s = np.sqrt(1.0 - rho**2)[:, None]
    v = (y[:, None] - rho[:, None] * g) / (s * root)
    f = np.sum(weight * special.ndtr(v), axis=1)
    dens = np.sum(weight * np.exp(-0.5 * v * v - _LOG_ROOT_2PI) / (s * root), axis=1)
    return f, dens


def _over_z(y, rho, nu):
    """F and f as trapezoid sums over τ (see the module docstring), ρ > 0, y ≠ 0; the density
    differentiates the roots: d(w²)/dy = e^{−τ}/(ρ cosh τ) (y > 0), ±e^{±τ}/(ρ sinh τ) (y < 0)."""
    m = (0.5 * nu)[:, None]
    s = np.sqrt(1.0 - rho**2)
    above = y > 0
    kappa2 = (np.abs(y) / rho)[:, None]
    z0 = 2.0 * np.sqrt(rho * np.abs(y)) / s
    top = np.arcsinh(9.0 / z0)  # |z| ≤ 9 covers Z's mass but 1e-19
    start = np.where(above, -top, 0.0)
    h = (top - start) / (Z_NODES - 1)
    tau = start[:, None] + h[:, None] * np.arange(Z_NODES)
    trap = np.full(Z_NODES, 1.0)
    trap[[0, -1]] = 0.5
    zc, ex = z0[:, None], np.exp(-2.0 * tau)
    cdf_g = lambda x: special.gammainc(m, 0.5 * x)  # noqa: E731
    pdf_g = lambda x: np.exp((m - 1.0) * np.log(0.5 * x) - 0.5 * x - special.gammaln(m)) * 0.5  # noqa: E731
    with np.errstate(over="ignore", under="ignore"):
        lower, upper = kappa2 * ex, kappa2 / ex
        normal = np.exp(-0.5 * (zc * np.where(above[:, None], np.sinh(tau), np.cosh(tau))) ** 2 - _LOG_ROOT_2PI)
        f = np.where(above[:, None], cdf_g(lower) * np.cosh(tau), (cdf_g(upper) - cdf_g(lower)) * np.sinh(tau))
        e = np.sqrt(ex)
        dens = np.where(above[:, None], pdf_g(lower) * e, pdf_g(upper) / e + pdf_g(lower) * e)
    f = np.sum(trap * f * normal * zc, axis=1) * h + np.where(above, special.ndtr(-9.0), 0.0)
    dens = np.sum(trap * np.nan_to_num(dens) * normal * zc / rho[:, None], axis=1) * h
    return f, dens


def _cornish_fisher(q, rho, nu, mean, sd):
    """Start of the Newton iteration: the Cornish–Fisher expansion with the cumulants of
    c₊A − c₋B, κ_r = 2^{r−1}(r − 1)! ν (c₊^r + (−1)^r c₋^r)."""
    cp, cm = 0.5 * (1.0 + rho), 0.5 * (1.0 - rho)
    skew = 8.0 * nu * (cp**3 - cm**3) / sd**3
    kurt = 48.0 * nu * (cp**4 + cm**4) / sd**4
    z = special.ndtri(q)
    w = z + (z * z - 1) * skew / 6 + (z**3 - 3 * z) * kurt / 24 - (2 * z**3 - 5 * z) * skew**2 / 36
    return mean + sd * w
