"""E[lse(η)], E[p(η)] and E[p(1 − p)] for η a K-vector of independent Gaussian margins N(m_k, v_k),
p = softmax(η): what every deterministic softmax rule (`ppl.infer.softmax`) integrates.

lse is shift-invariant: lse(η) = η_r + log(1 + Σ_{j≠r} e^{d_j}) with d_j = η_j − η_r. So the
K-dimensional expectation is a (K − 1)-dimensional one over the differences d, which are jointly
Gaussian: mean m_j − m_r, covariance diag(v_j) + v_r 11ᵀ, factor L (Cholesky). With d = μ + Lε
on a product Gauss–Hermite grid in ε, each e^{d_j} = e^{μ_j} Π_{l≤j} e^{L_jl ε_l} is a product of
one factor per grid axis: the grid's K − 1 exponentials are broadcast products of K − 1 vectors of
n exponentials each, and a node costs one logarithm (E[lse]) and a few products (E[p], E[p(1 − p)]),
not K exponentials. The reference class r is each row's largest mean, so μ ≤ 0 and 1 + Σ e^{d_j}
lies in [1, K e^{max L ε}]: no overflow while the largest exponent stays below `WIDE` (the
differences' sd below 28 for K = 2, about 50 for K = 3), and rows with wider margins go to the
log-domain average over the fixed points below.

With n nodes per axis (`nodes_per_axis`: 128 for K = 2, 41 for K = 3, 12 for K = 4) the largest
error of the three averages against a far finer grid, margins N(m, v) with m ~ N(0, 4) and v
uniform up to 1 (3, 10), is 2e-15 (2e-12, 5e-7) for K = 2, 3e-11 (3e-7, 2e-4) for K = 3 and
4e-6 (9e-4, 6e-3) for K = 4: the softmax turns on a unit scale, which wide margins resolve
less well. For K ≥ 5 the grid would be too coarse, and the average is over 2048 fixed points of
a scrambled Sobol sequence mapped to standard normals, shared by every call (quasi-Monte Carlo: a
smooth, deterministic function of (m, v), about 2e-4 from the integral for K = 5 to 8 where 4096
pseudo-random draws erred by 5e-3).
"""

from __future__ import annotations

import numpy as np
from scipy import special

NODE_BUDGET = 1728  # nodes of the product rule over the K − 1 differences (12³)
MAX_NODES, MIN_NODES = 128, 10  # per axis; fewer than MIN_NODES switches to the fixed points
POINTS, SEED = 2048, 20240611  # the scrambled Sobol points (a power of 2 keeps their balance)
BLOCK = 262_144  # floats per block of rows × nodes (× K for the draws): 2 MB temporaries, not a fresh
# array of the whole problem per call (a first touch of fresh memory costs a page fault per 4 KB)
WIDE = 600.0  # largest exponent Σ_l |L_jl| max|ε| of the separable products (e^709 overflows)


def nodes_per_axis(k: int) -> int:
    """Gauss–Hermite nodes per axis of the product rule for K classes (K − 1 axes)."""
    return min(MAX_NODES, int(np.floor(NODE_BUDGET ** (1.0 / max(k - 1, 1)) + 1e-9)))


def averages(m, v, derivatives: bool = True, cov=None):
    """(E[lse(η)], E[p(η)], E[p(1 − p)]) for margins m, v of shape lead + (K,); E[lse] alone
    (the others None) when not `derivatives`. `cov` (lead + (K, K)): margins correlated across
    the classes (a Gaussian block's), whose diagonal is then v."""
    k, lead = m.shape[-1], m.shape[:-1]
    flat_m, flat_v = m.reshape(-1, k), v.reshape(-1, k)
    flat_c = None if cov is None else cov.reshape(-1, k, k)
    lse = np.empty(len(flat_m))
    p1, p2 = (np.empty((len(flat_m), k)), np.empty((len(flat_m), k))) if derivatives else (None, None)
    if k == 1:  # one class: lse(η) = η, p = 1
        lse[:] = flat_m[:, 0]
        if derivatives:
            p1.fill(1.0)
            p2.fill(0.0)
    else:
        n = nodes_per_axis(k)
        wide = np.ones(len(flat_m), bool)
        if n >= MIN_NODES:
            x, w = _axis(n)
            parts = _differences(flat_m, flat_v, flat_c)
            wide = np.abs(parts[2]).sum(-1).max(-1) * np.abs(x).max() > WIDE
            narrow = np.flatnonzero(~wide)
            _product(*(part[narrow] for part in parts), x, w, narrow, lse, p1, p2)
        if wide.any():
            at = np.flatnonzero(wide)
            scale = np.sqrt(flat_v[at]) if flat_c is None else semidefinite_cholesky(flat_c[at])
            fixed_point_averages(flat_m[at], scale, at, lse, p1, p2)
    if not derivatives:
        return lse.reshape(lead), None, None
    return lse.reshape(lead), p1.reshape(m.shape), p2.reshape(m.shape)


def _axis(n: int):
    """Standard-normal Gauss–Hermite nodes and weights, n of each."""
    cache = _AXES.get(n)
    if cache is None:
        x, w = np.polynomial.hermite.hermgauss(n)
        cache = _AXES[n] = (x * np.sqrt(2.0), w / np.sqrt(np.pi))
    return cache


_AXES: dict = {}


def _differences(m, v, c=None):
    """(ref, others, L, μ, m_ref): each row's reference class r (its largest mean), the other
    classes in order (rows, K − 1), the Cholesky factor L and mean μ ≤ 0 of the differences
    d_j = η_j − η_r, and m_r. Their covariance is diag(v_j) + v_r 11ᵀ for independent margins,
    C_jl − C_jr − C_rl + C_rr for margins of covariance C (`c`, rows × K × K)."""
    rows, k = np.arange(len(m)), m.shape[-1]
    ref = m.argmax(-1)
    axis = np.arange(k - 1)
    others = axis + (axis >= ref[:, None])
    m_ref, v_ref = m[rows, ref], v[rows, ref]
    mu = m[rows[:, None], others] - m_ref[:, None]
    if c is None:
        cov = v[rows[:, None], others][:, :, None] * np.eye(k - 1) + v_ref[:, None, None]
    else:
        r, o = rows[:, None], others
        to_ref = c[r, o, ref[:, None]]  # C_jr
        cov = c[r[:, :, None], o[:, :, None], o[:, None, :]] - to_ref[:, :, None] - to_ref[:, None, :] \
            + c[rows, ref, ref][:, None, None]
    return ref, others, semidefinite_cholesky(cov), mu, m_ref


def semidefinite_cholesky(cov):
    """Lower factors of a stack of small positive semi-definite matrices: a zero pivot (every
    margin of a row exact, v = 0, as on a row whose covariates are all zero) gives a zero column,
    where LAPACK's factorisation would refuse the matrix."""
    chol = np.zeros_like(cov)
    for j in range(cov.shape[-1]):
        pivot = np.sqrt(np.maximum(cov[:, j, j] - np.sum(chol[:, j, :j] ** 2, -1), 0.0))
        chol[:, j, j] = pivot
        below = cov[:, j + 1:, j] - np.einsum("ril,rl->ri", chol[:, j + 1:, :j], chol[:, j, :j])
        chol[:, j + 1:, j] = np.divide(below, pivot[:, None], out=np.zeros_like(below), where=pivot[:, None] > 0)
    return chol


def _product(ref, others, chol, mu, m_ref, x, w, at, lse, p1, p2):
    """Fill rows `at` of lse (and p1, p2) by the separable product rule over the differences, a
    block of `BLOCK` floats at a time in buffers made once per call."""
    dims, n = chol.shape[-1], len(x)
    size = n ** dims
    rows = max(1, BLOCK // size)
    weight = w
    for _ in range(dims - 1):
        weight = np.multiply.outer(weight, w)
    weight = weight.reshape(-1)
    buffers = np.empty((4 if p1 is None else 6 if dims == 2 else 7, min(rows, len(at)) * size))
    for lo in range(0, len(at), rows):
        block = slice(lo, lo + rows)
        _block(ref[block], others[block], chol[block], mu[block], m_ref[block], x, w, weight, at[block],
               lse, p1, p2, buffers)


def _block(ref, others, chol, mu, m_ref, x, w, weight, at, lse, p1, p2, buffers):
    """Rows `at` of the product rule: x, w the nodes and weights of one axis, `weight` the grid's."""
    r, dims, n = len(at), chol.shape[-1], len(x)
    grid = (r,) + (n,) * dims
    full = [b[:r * n ** dims].reshape(grid) for b in buffers]
    scales = np.exp(mu)  # e^{μ_j} ≤ 1, and the factors e^{L_jl ε_l} of each axis: (rows, n) each
    factors = [[np.exp(chol[:, j, axis, None] * x) for axis in range(j + 1)] for j in range(dims)]
    terms = []  # e^{d_j} at every node, broadcast over the axes l ≤ j (the last one in full[0])
    for j in range(dims):
        term = scales[:, j].reshape((r,) + (1,) * dims)
        for axis, factor in enumerate(factors[j]):
            shape = [r] + [1] * dims
            shape[1 + axis] = n
            factor = factor.reshape(shape)
            term = np.multiply(term, factor, out=full[0]) if j == axis == dims - 1 else term * factor
        terms.append(term)
    rest, total, scratch = full[1], full[2], full[3]
    if dims == 2:  # the total in two passes (K = 3 needs no `rest`): t + u s + 1, the same sums
        np.add(terms[1], terms[0], out=total)
        total += 1.0
    else:
        _sum_into(rest, 0.0, terms)  # Σ_j e^{d_j}: the total less 1
        np.add(rest, 1.0, out=total)
    lse[at] = m_ref + np.log(total, out=scratch).reshape(r, -1) @ weight
    if p1 is None:
        return
    if dims == 2:
        return _three_classes(ref, others, scales, factors, w, at, p1, p2, total, full[4], full[5])
    ref_p, own, share = full[4], full[5], full[6]  # every factor a probability: no product overflows
    np.divide(1.0, total, out=ref_p)  # the reference's p at every node
    p1[at, ref] = ref_p.reshape(r, -1) @ weight
    np.multiply(rest, ref_p, out=scratch)  # its 1 − p, summed from the other classes: no cancelling
    p2[at, ref] = np.multiply(scratch, ref_p, out=scratch).reshape(r, -1) @ weight
    for j, term in enumerate(terms):
        np.multiply(term, ref_p, out=own)  # p_j
        p1[at, others[:, j]] = own.reshape(r, -1) @ weight
        _sum_into(share, 1.0, terms[:j] + terms[j + 1:])
        np.multiply(share, ref_p, out=share)  # 1 − p_j, from the other classes
        p2[at, others[:, j]] = np.multiply(own, share, out=own).reshape(r, -1) @ weight


def _three_classes(ref, others, scales, factors, w, at, p1, p2, total, inv, inv2):
    """E[p] and E[p(1 − p)] of K = 3 from four matrix–vector products per row. With the total
    1 + a_i + b_i c_j at node (i, j) (a_i = e^{d_1}, b_i c_j = e^{d_2}) and w_i w_j its weight,
    every average is Σ_i w_i (a row factor) Σ_j (w_j or w_j c_j) / total (or / total²):
    E[p_r] = Σ w A, E[p_1] = Σ w a A, E[p_2] = Σ w b B with A = (1/total) w, B = (1/total)(w c), and
    with A2, B2 the same of 1/total², E[p_r(1 − p_r)] = Σ w (a A2 + b B2), E[p_1(1 − p_1)] =
    Σ w a (A2 + b B2), E[p_2(1 − p_2)] = Σ w (b B2)(1 + a): sums of positive terms (no 1 − p), each
    product ordered so that no factor past e^600 meets another."""
    a = scales[:, :1] * factors[0][0]  # the row factors of the grid `_block` built
    b = scales[:, 1:] * factors[1][0]
    c = factors[1][1]
    np.divide(1.0, total, out=inv)
    np.multiply(inv, inv, out=inv2)
    wc = (w * c)[:, :, None]
    big_a, big_b = inv @ w, (inv @ wc)[..., 0]
    a2, b2 = inv2 @ w, (inv2 @ wc)[..., 0]
    bb2 = b * b2
    p1[at, ref] = big_a @ w
    p1[at, others[:, 0]] = (a * big_a) @ w
    p1[at, others[:, 1]] = (b * big_b) @ w
    p2[at, ref] = (a * a2 + bb2) @ w
    p2[at, others[:, 0]] = (a * (a2 + bb2)) @ w
    p2[at, others[:, 1]] = (bb2 * (1.0 + a)) @ w


def _sum_into(out, start: float, terms):
    """out ← start + Σ terms (broadcast), in place."""
    out.fill(start)
    for term in terms:
        out += term


def fixed_points(k: int):
    """The fixed standard-normal points (K, S) and their weights 1/S: a scrambled Sobol sequence
    through the normal quantile function."""
    cache = _DRAWS.get(k)
    if cache is None:
        from scipy.stats import qmc  # half a second to import: only runs with five classes or more need it
        uniform = qmc.Sobol(k, scramble=True, seed=SEED).random(POINTS)
        points = special.ndtri(np.clip(uniform, 2.0 ** -53, 1 - 2.0 ** -53))
        cache = _DRAWS[k] = (np.ascontiguousarray(points.T), np.full(POINTS, 1.0 / POINTS))
    return cache


_DRAWS: dict = {}


def fixed_point_averages(m, scale, at, lse, p1, p2, pairs=None):
    """Fill rows `at` by the log-domain average over the fixed points η = m + √v ε (`scale` √v,
    rows × K) or η = m + Lε (`scale` a factor L of the margins' covariance, rows × K × K), a
    block of rows at a time in buffers made once per call; `pairs` (rows × K × K), when given,
    with E[p pᵀ] (a Gaussian block's joint site: ppl.infer.softmax_joint)."""
    along, weights = fixed_points(m.shape[-1])
    rows = max(1, BLOCK // along.size)
    eta, scratch = np.empty((2, min(rows, len(m))) + along.shape)
    top, total = np.empty((2, min(rows, len(m)), along.shape[1]))
    for lo in range(0, len(m), rows):
        sl, where = slice(lo, lo + rows), at[lo:lo + rows]
        r = len(where)
        e, t, z = eta[:r], top[:r], total[:r]
        if scale.ndim == 2:
            np.multiply(scale[sl, :, None], along, out=e)
        else:
            np.matmul(scale[sl], along, out=e)
        e += m[sl, :, None]
        np.max(e, axis=1, out=t)
        e -= t[:, None, :]
        np.exp(e, out=e)
        np.sum(e, axis=1, out=z)
        if p1 is not None:
            e /= z[:, None, :]  # p at every draw
            p1[where] = e @ weights
            if pairs is not None:
                pairs[where] = np.einsum("rks,rls,s->rkl", e, e, weights)
            q = np.subtract(1.0, e, out=scratch[:r])
            q *= e
            p2[where] = q @ weights
        np.log(z, out=z)
        z += t
        lse[where] = z @ weights
