"""The Gamma quantile's shape derivative and the trigamma function, vectorised and cheap: the
per-step cost of SSMF's reparameterised step (Hoffman 2014, eqs. 15, 35, 38) over K·V topic
entries.

For x ~ Ga(a, 1) at a fixed quantile level, the implicit function theorem on P(a, x) = u gives
dx/da = −∂_a P(a, x) / p(x; a) (eq. 15). Below `SERIES_LIMIT` the lower incomplete gamma
series P = x^a e^−x S / Γ(a + 1), S = Σ_n t_n, t_n = x^n / ((a + 1)···(a + n)), differentiates
term by term (∂_a t_n = −t_n Σ_{k≤n} 1/(a + k)), and the density cancels in closed form:

    d log x / da = −(S (log x − ψ(a + 1)) + ∂_a S) / a,

from log x alone, so a draw that underflows (a shape η = 0.01 gives log x ≈ −300) keeps its
derivative. The terms fall at least as x^n/n!: 30 reach 1e−16 at x = 4, and each entry stops
once its own terms do. Above the limit (a few entries of a large shape) ∂_a P is a five-point
difference of the smaller tail of scipy's incomplete gamma function.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammainc, gammaincc, gammaln

SERIES_LIMIT = 4.0  # x ≤ 4: the series' terms fall below 1e-16 of its sum within 30 terms
RELATIVE_STEP = 1e-3  # five-point difference in a: truncation ~1e-12, round-off ~1e-12 (relative)
LOG_NEGLIGIBLE = np.log(1e-17)  # x below this: S = 1 in double precision
COMPACT_EVERY = 4  # series terms between two compactions of the entries still summing


def log_shape_derivative(a, log_x) -> np.ndarray:
    """d log x / da at a fixed quantile level for x ~ Ga(a, 1), elementwise from log x."""
    a, log_x = np.broadcast_arrays(np.asarray(a, float), np.asarray(log_x, float))
    out = np.empty(a.shape)
    series = log_x <= np.log(SERIES_LIMIT)
    out[series] = _series(a[series], log_x[series])
    far = ~series
    if far.any():
        x = np.exp(log_x[far])
        out[far] = _difference(a[far], x) / x
    return out


def _series(a, log_x) -> np.ndarray:
    """d log x / da by the differentiated series, each entry summed until its terms vanish; below
    x = 1e−17 the sum is 1 to double precision (and its terms would underflow to slow denormals)."""
    total, slope = np.ones(a.size), np.zeros(a.size)  # S and ∂_a S
    live = np.flatnonzero(log_x > LOG_NEGLIGIBLE)
    aa, xx = a[live], np.exp(log_x[live])
    term, harmonic, sums, slopes = np.ones(live.size), np.zeros(live.size), np.ones(live.size), np.zeros(live.size)
    n = 0
    while live.size:
        n += 1
        shifted = aa + n
        term = term * xx / shifted
        harmonic = harmonic + 1.0 / shifted
        sums += term
        slopes -= term * harmonic
        if n % COMPACT_EVERY == 0:
            total[live], slope[live] = sums, slopes
            keep = term > 1e-17 * sums
            live, term, harmonic, aa, xx = live[keep], term[keep], harmonic[keep], aa[keep], xx[keep]
            sums, slopes = sums[keep], slopes[keep]
    return -(total * (log_x - digamma(a + 1.0)) + slope) / a


def _difference(a, x) -> np.ndarray:
    """dx/da with ∂_a P by a five-point difference of the smaller tail (P below the mode, −Q
    above), which keeps its relative accuracy far into either tail."""
    h = RELATIVE_STEP * np.minimum(a, np.sqrt(a))  # P moves on the scale min(a, √a) in a
    lower = x < a
    d_cdf = np.empty(a.shape)
    for part, tail, sign in ((lower, gammainc, 1.0), (~lower, gammaincc, -1.0)):
        aa, xx, hh = a[part], x[part], h[part]
        near, far = tail(aa + hh, xx) - tail(aa - hh, xx), tail(aa + 2 * hh, xx) - tail(aa - 2 * hh, xx)
        d_cdf[part] = sign * (8.0 * near - far) / (12.0 * hh)
    log_density = (a - 1.0) * np.log(x) - x - gammaln(a)
    return -d_cdf * np.exp(-log_density)


# ψ'(y) − 1/y − 1/(2y²) = Σ_k B_2k / y^(2k+1) for y ≥ 6: B_2 … B_12, truncation below 2e-11 relative
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730)
_SHIFT = 6


def trigamma(x) -> np.ndarray:
    """ψ'(x) for x > 0: the recurrence ψ'(x) = 1/x² + ψ'(x + 1) up to x + 6, then the asymptotic
    series; about 1e-11 relative, a third of scipy's polygamma(1, ·) (a Hurwitz zeta)."""
    y = np.array(x, dtype=float)
    head = np.zeros(y.shape)
    for _ in range(_SHIFT):
        head += 1.0 / (y * y)
        y += 1.0
    inverse = 1.0 / y
    square = inverse * inverse
    tail = _BERNOULLI[-1]
    for b in _BERNOULLI[-2::-1]:
        tail = tail * square + b
    return head + inverse * (1.0 + inverse * (0.5 + inverse * tail))
