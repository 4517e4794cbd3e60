"""The expectations of scalar likelihoods f(y | link(η)) (ppl.infer.links) under a Gaussian margin
η ~ N(m, v).

Every non-conjugate rule is a function (likelihood, y, n, m, v) → (value, g1, g2): the factor's
term of the objective and the first and second derivatives that make its Gaussian site
(τ̃ = −g2, ỹ = m + g1/τ̃). The rules differ only in what they integrate:

- `quadrature`: exact to about 1e-9 (NC-VMP, Knowles & Minka; also the exact ELBO term,
  since every margin is one-dimensional). Narrow margins (v ≤ 2) use Gauss–Hermite with 8 to 48
  nodes by their width (error below 1e-14 up to v = 1.17, 2e-11 at v = 2).
  A wide margin sees the link change on a unit scale near η = 0, which Gauss–Hermite resolves
  slowly (48 nodes err by 7e-4 at v = 50), so wide margins are integrated piece by piece,
  [m − 12√v, m + 12√v] cut at −40, 0 and 40, by 48-node Gauss–Legendre on each
  (ppl.infer.margin_nodes);
- `monte_carlo`: the same derivatives averaged at η = m + √v ε, ε ~ N(0, 1) — the
  reparameterisation estimates of CVI (Khan & Lin, eqs. 29–31 with Bonnet's and Price's
  theorems);
- Poisson with the log link has them in closed form: E[e^η] = exp(m + v/2);
- `jaakkola`, `bohning`, `piecewise`: upper bounds on log(1 + e^η) (quadratic, or R pieces),
  so the value is a strict lower bound on E[log f] and g1, g2 are its exact derivatives;
- `laplace`, `delta` (Wang & Blei 2013): log f expanded to second order at η = m. Laplace
  takes the derivatives at the point (each update is a Newton step, the fixed point is the
  mode); the delta method differentiates the expansion's expectation, which brings in the
  third derivative. Their value is an approximation of E[log f], not a bound.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ppl.infer.links import Likelihood
from ppl.infer.margin_nodes import by_width


def quadrature(lik: Likelihood, y, n, m, v):
    """(E[log f], g1, g2) under N(m, v) by Gauss–Hermite (closed form where there is one).

    Each margin takes as few nodes as its width needs (ppl.infer.margin_nodes.by_width: 8 at
    v ≤ 0.04, 48 near v = 2). The margins go through in blocks of `BLOCK` // nodes, so that the
    (margins × nodes) arrays of the link stay in cache, and each block evaluates the link once for
    all three integrands."""
    if lik.closed_form is not None:
        return lik.closed_form(y, n, m, v)
    shape, y, n, m, v = _flat_inputs(y, n, m, v)
    one = type(n) is float
    out = np.empty((3, m.size))
    for rows, rule, nodes in by_width(v):  # one rule for all (the usual case): consecutive margins, sliced
        step = max(BLOCK // nodes, 1)
        for start in range(0, m.size if rows is None else len(rows), step):
            block = slice(start, start + step) if rows is None else rows[start:start + step]
            eta, w = rule(m[block], v[block])
            for k, h in enumerate(lik.values(y[block, None], n if one else n[block, None], eta)):
                out[k, block] = h @ w if w.ndim == 1 else np.einsum("ij,ij->i", h, w)
    return tuple(out.reshape((3,) + shape))


def _flat_inputs(y, n, m, v) -> tuple:
    """(shape, y, n, m, v): the inputs broadcast together, flattened; trials given as one number
    (1.0: Bernoulli) stay a number, not an array of copies."""
    shape = np.broadcast(y, n, m, v).shape  # one C call (np.broadcast_shapes is a dozen in Python)
    y, m, v = (_flat(a, shape) for a in (y, m, v))
    return shape, y, (n if type(n) is float else _flat(n, shape)), m, v


def _flat(a, shape: tuple) -> np.ndarray:
    """`a` as floats broadcast to `shape`, flattened (no copy when it has that shape already; a
    float array of that shape is only reshaped, without asarray's call)."""
    if type(a) is np.ndarray and a.dtype == float and a.shape == shape:
        return a.reshape(-1)
    a = np.asarray(a, dtype=float)
    return (a if a.shape == shape else np.broadcast_to(a, shape)).reshape(-1)


BLOCK = 16384  # margins × nodes per pass of the quadrature: 128 KB arrays, which stay in a core's L2 cache
STEIN = 1e3  # margins wider than this take E[f''] by Stein's identity in `monte_carlo`


def jaakkola_lambda(xi):
    """λ(ξ) = tanh(ξ/2) / (4ξ), with its limit 1/8 at ξ = 0 (series below 1e-4)."""
    xi = np.abs(np.asarray(xi, dtype=float))
    small = xi < 1e-4
    safe = np.where(small, 1.0, xi)
    return np.where(small, 0.125 - xi * xi / 192.0, np.tanh(safe / 2) / (4 * safe))


def jaakkola(lik: Likelihood, y, n, m, v):
    """The Jaakkola–Jordan bound for Bernoulli/Binomial–logistic at its optimal ξ² = m² + v.

    log(1 + e^η) ≤ λ(ξ)(η² − ξ²) + (η − ξ)/2 + log(1 + e^ξ) makes log f a quadratic in η:
    a Gaussian site with precision τ̃ = 2nλ(ξ) and τ̃ỹ = y − n/2."""
    xi = np.sqrt(m * m + v)
    tau = 2 * n * jaakkola_lambda(xi)
    bound = (y - n / 2) * m + n * (xi / 2 - np.logaddexp(0.0, xi)) + lik.constant(y, n)
    return bound, y - n / 2 - tau * m, -tau + 0 * m


def bohning(lik: Likelihood, y, n, m, v):
    """Böhning's bound for Bernoulli/Binomial–logistic at its optimal expansion point ψ = m.

    log(1 + e^η) ≤ llp(ψ) + σ(ψ)(η − ψ) + (η − ψ)²/8 (the curvature σ(1 − σ) never exceeds ¼):
    a Gaussian site of fixed precision n/4 (thesis eqs 4.20–4.27, 4.41)."""
    bound = y * m - n * (np.logaddexp(0.0, m) + v / 8) + lik.constant(y, n)
    return bound, y - n * expit(m), -n / 4 + 0 * m


def piecewise(tab):
    """The piecewise bound `tab` (ppl.infer.piecewise) on log(1 + e^x) as a rule: each llp term of
    the likelihood's `llp_form` replaced by the bound, whose expectation under the term's margin
    N(σ m + δ, v) comes from truncated-Gaussian moments, exact, with its derivatives (Marlin et
    al. 2011). One term for Bernoulli/Binomial, two for an interior ordinal category."""
    from ppl.infer.piecewise import expected_llp

    def rule(lik: Likelihood, y, n, m, v):
        slope, constant, terms = lik.llp_form(y, n)
        value, g1, g2 = slope * m + constant, slope + 0 * m, 0 * m
        for weight, sign, shift in terms:
            e, d_m, d_v = expected_llp(tab, sign * m + shift, v)
            value, g1, g2 = value - weight * e, g1 - weight * sign * d_m, g2 - 2 * weight * d_v
        return value, g1, g2
    return rule


def laplace(lik: Likelihood, y, n, m, v):
    """log f to second order at η = m, derivatives at the point: each update is a Newton step."""
    return _taylor_value(lik, y, n, m, v), lik.d1(y, n, m), lik.d2(y, n, m)


def delta(lik: Likelihood, y, n, m, v):
    """E[log f] ≈ log f(m) + ½ log f''(m) v and its exact derivatives in (m, v)."""
    return _taylor_value(lik, y, n, m, v), lik.d1(y, n, m) + 0.5 * lik.d3(y, n, m) * v, lik.d2(y, n, m)


def _taylor_value(lik, y, n, m, v):
    return lik.log_f(y, n, m) + 0.5 * lik.d2(y, n, m) * v


def monte_carlo(lik: Likelihood, y, n, m, v, rng: np.random.Generator, samples: int):
    """(E[log f], g1, g2, variance of the E[log f] estimate) from `samples` reparameterised draws
    η = m + √v ε per element (CVI's gradients, Khan & Lin eqs. 29–31 with Bonnet's and Price's
    theorems). The draws come in antithetic pairs, ε and −ε (an odd count adds one lone draw):
    the odd part of each integrand cancels within a pair, so on a margin of variance v the
    error of g1 and g2 is O(v) where independent draws leave O(√v), at half the normals.
    E[log f] is estimated from the same draws with the second-order Taylor expansion at m as a
    control variate, f'(m)(η − m) + ½ f''(m)((η − m)² − v), whose mean is zero: what remains is
    the O(v²) even part of log f, so a narrow margin's estimate is nearly exact. Its variance
    comes from the spread of the pairs' means (the lone draw counted as half a pair; NaN with
    fewer than two pairs). The draws go through in blocks of rows, like the quadrature's, so the
    link's arrays stay in cache. The Gaussian likelihood needs no draws: its closed form is
    exact, with variance 0 (and its precision is held per plate element, which blocks of
    flattened rows cannot slice)."""
    if lik.name == "Normal":
        value, g1, g2 = np.broadcast_arrays(*lik.closed_form(y, n, m, v))
        return value, g1, g2, np.zeros(value.shape)
    shape, y, n, m, v = _flat_inputs(y, n, m, v)
    one = type(n) is float
    out = np.empty((4, m.size))
    _, slope, curvature = lik.values(y, n, m)
    rows, pairs = max(1, BLOCK // samples), samples // 2
    drawn = samples - pairs  # the draws of ε: one per pair, and the lone draw of an odd count
    average = np.full(samples, 1.0 / samples)  # means as BLAS products; `total`: over the +ε draws only
    total = average[:drawn]
    for start in range(0, m.size, rows):
        block = slice(start, start + rows)
        eps = rng.standard_normal((min(rows, m.size - start), drawn))  # in row order: one stream however blocked
        step = np.empty(eps.shape[::-1])  # η − m of the +ε draws, a draw per row: long contiguous passes
        np.multiply(eps.T, np.sqrt(v[block]), out=step)
        eta = np.empty((samples, len(eps)))  # [m + step; m − step of the pairs]
        np.add(m[block], step, out=eta[:drawn])
        np.subtract(m[block], step[:pairs], out=eta[drawn:])
        value, d1, d2 = lik.values(y[block], n if one else n[block], eta)
        out[1, block], out[2, block] = average @ d1, average @ d2
        # each pair's sum of log f less twice the Taylor control's even part, f''(m)(s² − v) (the odd
        # part f'(m) s cancels within the pair); the lone draw less the whole control
        control = step * step
        control -= v[block]
        control *= curvature[block]
        sums = value[:drawn] - control
        sums[:pairs] += value[drawn:]
        if drawn > pairs:
            sums[pairs] += 0.5 * control[pairs] - slope[block] * step[pairs]
        out[0, block] = total @ sums
        wide = v[block] > STEIN
        if wide.any():  # E[f''] = E[(η − m) f'] / v (Stein): f'' is a spike the draws of a wide margin miss
            stein = total @ (d1[:drawn] * step) - total[:pairs] @ (d1[drawn:] * step[:pairs])
            out[2, block] = np.where(wide, stein / v[block], out[2, block])
        if pairs > 1:  # var = Σ (pair sum − 2 mean)² / (2 (P − 1) S): the spread of the pairs' means
            deviation = sums[:pairs] - 2 * out[0, block]
            out[3, block] = np.einsum("ij,ij->j", deviation, deviation) / (2 * (pairs - 1) * samples)
        else:
            out[3, block] = np.nan
    return tuple(out.reshape((4,) + shape))
