"""Forward–backward and forward filtering–backward sampling on discrete chains.

A chain z_1..z_L with K states has the unnormalised law

    log q̃(z) = Σ_t u_t[z_t] + Σ_{t≥2} P_t[z_{t−1}, z_t],

unary log-potentials u_t (the local evidence, plus log π at t = 1) and pairwise ones P_t (in
VB: E[log A], the sub-normalised exp E[log A] of Beal 2003, ch. 3). Several chains of unequal
length are held one after another in rows, `nat` (T, K + K²) = (u_t, P_t flattened) as in
`CategoricalChain`; P_t is ignored at each chain's first row.

The recursions are Rabiner's (1989) scaled ones in probability space, over all chains at once:
the chains are laid out time-major, longest first (`Chains`), so step t is one matrix product on
the n_t chains still running, a contiguous block, and the only Python loop is over the steps of
the longest chain. One chain alone has its own recursions (`_one_chain`), two numpy calls a
forward step and one a backward step, as there the calls' fixed cost is the whole time. Each
step multiplies exp(u_t − max u_t) and exp(P_t − max P_t), numbers ≤ 1 with one of them 1, and
divides by the step's normaliser c_t; the shifts and log c_t add up to log Z, so nothing grows
with the length. When P_t is the same at every step (an HMM's E[log A]),
exp is taken once and a step is an (n_t, K) × (K, K) product. Where the finite log-potentials of
a step span more than `SPREAD` nats (unary plus pairwise), a weight could round to 0 although the
path through it carries the mass; and a product of messages can still underflow (the marginals
then fail to sum to 1, `_normalised`). Either way the pass runs with log-sum-exp at every step,
slower, which cannot underflow.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

SPREAD = 700.0  # the scaled pass runs when no evidence and transition weights differ by more (nats)
CHUNK = 4096  # steps whose views one chain's recursions take at once (a view is about 100 bytes)
NORMALISED = 1e-9  # how far from 1 a row of scaled marginals may sum (rounding: about 1e-13 over 1e5 steps)


@dataclass(frozen=True)
class Chains:
    """Chains of `lengths` held in consecutive rows, laid out time-major for the recursions:
    `index` (L, S) the row of step t of the s-th longest chain (0 past its end), `active[t]` the
    number of chains longer than t (the first ones), `position` (T,) each row's flat place in
    (L, S), `starts` (T,) the first rows and `firsts` (S,) their indices."""

    index: np.ndarray
    active: tuple
    position: np.ndarray
    starts: np.ndarray
    firsts: np.ndarray

    @classmethod
    def of(cls, lengths) -> "Chains":
        """The layout of chains of `lengths` (at least one, each of at least one step)."""
        lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        if not len(lengths) or lengths.min() < 1:
            raise ValueError(f"a chain layout needs at least one chain and at least one step in each; got lengths "
                             f"{lengths.tolist()}")
        order = np.argsort(-lengths, kind="stable")
        firsts = np.cumsum(lengths) - lengths
        steps = np.arange(lengths.max())[:, None]
        running = steps < lengths[order]
        index = np.where(running, firsts[order] + steps, 0)
        position = np.empty(int(lengths.sum()), dtype=np.int64)
        position[index[running]] = np.flatnonzero(running)
        starts = np.zeros(len(position), dtype=bool)
        starts[firsts] = True
        for array in (index, position, starts, firsts):
            array.flags.writeable = False  # shared by every caller of the family
        return cls(index, tuple(running.sum(axis=1).tolist()), position, starts, firsts)


def _split(nat: np.ndarray, k: int):
    """Unary (T, K) and pairwise (T, K, K) log-potentials, views of `nat`."""
    return nat[:, :k], nat[:, k:].reshape(-1, k, k)


def _finite_max(x: np.ndarray, axis):
    return _or_zero(x.max(axis=axis))


def _or_zero(top: np.ndarray) -> np.ndarray:
    """A shift by a maximum, 0 where it is not finite (a row of −∞: nothing to shift)."""
    return np.where(np.isfinite(top), top, 0.0)


def _peak(unary: np.ndarray) -> tuple:
    """max_k u_t[k] per row (0 if all −∞), (T,), and the largest spread max − min over the finite
    u_t[k] of a row: column by column (K − 1 maxima), as numpy's reduction over a short last axis
    costs about ten times more."""
    top = functools.reduce(np.maximum, unary.T)
    low = functools.reduce(np.minimum, np.where(np.isfinite(unary), unary, np.inf).T)
    top = _or_zero(top)
    return top, float(np.max(top - low))


def _weights(pair: np.ndarray, chains: Chains):
    """(exp(P − max P), max P, largest spread of the finite P_t): one (K, K) matrix and a number
    when P_t is the same at every row that continues a chain, else per row (T, K, K) and (T,)."""
    shared = pair[np.argmin(chains.starts)]  # at the first row that continues a chain, if any
    same = pair == shared
    same[chains.firsts] = True
    if same.all():
        top = _finite_max(shared, axis=None)
        return np.exp(shared - top), top, float(top - np.min(shared, where=np.isfinite(shared), initial=top))
    top = _finite_max(pair, axis=(1, 2))
    low = np.min(pair, axis=(1, 2), where=np.isfinite(pair), initial=np.inf)
    return np.exp(pair - top[:, None, None]), top, float(np.max(top - low))


def _stepped(weights: np.ndarray, chains: Chains) -> np.ndarray:
    """The weights as the recursions read them: the shared (K, K), or per step (L, S, K, K)."""
    return weights if weights.ndim == 2 else weights[chains.index]


def _forward(local: np.ndarray, weights: np.ndarray, chains: Chains):
    """Scaled forward messages â (L, S, K), each summing to 1, and their normalisers c (L, S),
    1 past each chain's end (and â unset there). `local` (L, S, K), `weights` (K, K) or (L, S, K, K)."""
    steps, s, k = local.shape
    alpha, norm = np.empty((steps, s, k)), np.ones((steps, s))
    ones = np.ones(k)  # a row sum as a matrix–vector product: cheaper than a reduction over K
    norm[0] = local[0] @ ones
    np.divide(local[0], norm[0, :, None], out=alpha[0])
    shared, before = weights.ndim == 2, alpha[0]
    multiply, dot, divide = np.multiply, np.dot, np.divide
    for t, n in enumerate(chains.active[1:], 1):  # `out` by position: a keyword costs 0.1 µs a call
        f, c = alpha[t, :n], norm[t, :n]
        if shared:
            dot(before[:n], weights, f)
        else:
            np.matmul(before[:n, None, :], weights[t, :n], f[:, None, :])
        multiply(f, local[t, :n], f)
        dot(f, ones, c)
        divide(f, c[:, None], f)
        before = f
    return alpha, norm


def _backward(scaled: np.ndarray, weights: np.ndarray, chains: Chains) -> np.ndarray:
    """Scaled backward messages b̂ (L, S, K), 1 at each chain's last step: b̂_t = W_{t+1} (e_{t+1}
    b̂_{t+1}) with e_{t+1} = exp(u − max u) / c_{t+1} (`scaled`), so that â_t b̂_t = q(z_t)."""
    steps, s, k = scaled.shape
    beta = np.ones((steps, s, k))
    across = np.ascontiguousarray(weights.T) if weights.ndim == 2 else None
    multiply, after = np.multiply, beta[-1]
    for t in range(steps - 2, -1, -1):
        n = chains.active[t + 1]
        g = multiply(scaled[t + 1, :n], after[:n])
        after = beta[t]
        if across is not None:
            np.dot(g, across, after[:n])
        else:
            np.matmul(weights[t + 1, :n], g[:, :, None], after[:n, :, None])
    return beta


def _rows(x: np.ndarray, chains: Chains) -> np.ndarray:
    """A time-major (L, S, ...) array back in row order, (T, ...)."""
    return x.reshape((-1,) + x.shape[2:])[chains.position]


def forward_backward(nat: np.ndarray, k: int, chains: Chains):
    """(mean (T, K + K²), log Z (S,)): per row the marginals q(z_t) and the pairwise marginals
    ξ_t[i, j] = q(z_{t−1} = i, z_t = j) flattened, ξ = 0 at each chain's first row. `nat` is
    read as floats (integer potentials would wrap around or truncate in the recursions)."""
    nat = np.asarray(nat, dtype=float)
    unary, pair = _split(nat, k)
    weights, top, spread = _weights(pair, chains)
    peak, width = _peak(unary)
    if width + spread > SPREAD:  # exp(u − max u) exp(P − max P) could round to 0 where it matters
        return _log_forward_backward(nat, k, chains)
    local = np.exp(unary - peak[:, None])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # an underflow is caught below
        messages = _one_chain(local, weights) if len(chains.firsts) == 1 else _many_chains(local, weights, chains)
        if messages is not None:
            mean, log_z = _scaled_moments(*messages, local, weights, peak, top, chains)
            if _normalised(mean, chains):
                return mean, log_z
    return _log_forward_backward(nat, k, chains)


def _many_chains(local, weights, chains):
    """(â, b̂, c) time-major on the blocks of running chains, None if a normaliser underflowed."""
    padded = local[chains.index]
    stepped = _stepped(weights, chains)
    alpha, norm = _forward(padded, stepped, chains)
    if not np.all(norm > 0):
        return None
    padded /= norm[..., None]
    return alpha, _backward(padded, stepped, chains), norm


def _one_chain(local, weights):
    """(â, b̂, c) of one chain as (T, 1, ·), None if a normaliser underflowed: one product per step.
    The step's matrix carries the evidence and the normaliser, M_t = [W_t ∘ e_tᵀ | W_t e_t]
    (K, K + 1), all t at once, so â_{t−1} M_t gives the unnormalised â_t and c_t together, and
    W_t ∘ (e_t / c_t)ᵀ is the backward step's. A step then costs two numpy calls forward and one
    backward, the views taken `CHUNK` steps at a time: on a long chain each call's fixed cost (0.2–0.4 µs)
    is the time."""
    steps, k = local.shape
    mat = np.empty((steps, k, k + 1))
    np.multiply(weights, local[:, None, :], out=mat[:, :, :k])
    np.einsum("...ij,...j->...i", weights, local, out=mat[:, :, k])
    f = np.empty((steps, k + 1))  # (unnormalised â_t, c_t); â_t in place once c_t is known
    f[0, :k] = local[0]
    f[0, k] = local[0].sum()
    alpha, norm = f[:, :k], f[:, k]
    divide, dot = np.divide, np.dot  # `out` passed by position: a keyword costs more than the step
    spans = [(t, min(t + CHUNK, steps)) for t in range(1, steps, CHUNK)]
    for lo, hi in spans:  # divisors: 0-d views, half the cost of dividing by a (1,) slice
        divisors = [row[k, ...] for row in f[lo - 1:hi - 1]]
        for before, c, step, out in zip(list(alpha[lo - 1:hi - 1]), divisors, list(mat[lo:hi]), list(f[lo:hi])):
            divide(before, c, before)
            dot(before, step, out)
    alpha[-1] /= norm[-1]
    if not np.all(norm > 0):
        return None
    back = mat[:, :, :k] / norm[:, None, None]
    beta = np.empty((steps, k))
    beta[-1] = 1.0
    for lo, hi in reversed(spans):
        rows = list(beta[lo - 1:hi])
        for step, after, out in zip(list(back[lo:hi])[::-1], rows[:0:-1], rows[-2::-1]):
            dot(step, after, out)
    return alpha[:, None], beta[:, None], norm[:, None]


def _normalised(mean: np.ndarray, chains: Chains) -> bool:
    """Whether each row's marginals sum to 1, and its pairwise marginals to 1 (0 at a chain's
    start), to `NORMALISED`. The scaled messages satisfy Σ_k â_t b̂_t = 1 at every step whatever the
    rounding, as long as no product underflowed: a state whose unnormalised forward weight fell
    below 1e-308 at one step, though later steps need it, or a b̂_t or e_t b̂_t past 1e308, breaks
    the identity (or leaves ∞ or NaN), and then the pass is redone in the log domain."""
    total = mean @ np.ones(mean.shape[1])
    return bool(np.all(np.abs(total - np.where(chains.starts, 1.0, 2.0)) <= NORMALISED))


def _scaled_moments(alpha, beta, norm, local, weights, peak, top, chains):
    """The moments and log Z from the scaled messages: q(z_t) = â_t b̂_t, ξ_t = â_{t−1} ⊗ W_t ⊗ e_t b̂_t."""
    k = local.shape[1]
    before, after, norm = _rows(alpha, chains), _rows(beta, chains), _rows(norm, chains)
    mean = np.empty((len(before), k + k * k))
    np.multiply(before, after, out=mean[:, :k])
    after *= local
    after /= norm[:, None]
    xi = mean[:, k:].reshape(-1, k, k)  # a view: written in place, no (T, K, K) temporary
    np.einsum("ti,tj->tij", before[:-1], after[1:], out=xi[1:])  # 3× faster than a broadcast product
    xi[1:] *= weights if weights.ndim == 2 else weights[1:]
    xi[chains.firsts] = 0.0
    log_c = np.log(norm) + peak + np.where(chains.starts, 0.0, top)
    return mean, np.add.reduceat(log_c, chains.firsts)


def _lse(x: np.ndarray, axis: int) -> np.ndarray:
    m = _or_zero(x.max(axis=axis, keepdims=True))
    return np.log(np.exp(x - m).sum(axis=axis)) + np.squeeze(m, axis)


def _log_forward(unary: np.ndarray, pair: np.ndarray, chains: Chains):
    """Normalised log forward messages (L, S, K) and log c (L, S, 0 past the ends) by log-sum-exp
    at every step: slower than `_forward`, never underflows. `unary`, `pair` time-major."""
    steps, s, k = unary.shape
    alpha, log_c = np.empty((steps, s, k)), np.zeros((steps, s))
    log_c[0] = _lse(unary[0], axis=1)
    alpha[0] = unary[0] - log_c[0, :, None]
    for t in range(1, steps):
        n = chains.active[t]
        a = _lse(alpha[t - 1, :n, :, None] + pair[t, :n], axis=1) + unary[t, :n]
        log_c[t, :n] = _lse(a, axis=1)
        alpha[t, :n] = a - log_c[t, :n, None]
    return alpha, log_c


def _log_forward_backward(nat, k, chains):
    """`forward_backward` in the log domain throughout (the fallback)."""
    unary, pair = _split(nat, k)
    u, p = unary[chains.index], pair[chains.index]
    # −∞ + −∞ is −∞ (no −∞ − −∞ occurs); ξ's exp may overflow only at chain starts, set to 0 below
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        alpha, log_c = _log_forward(u, p, chains)
        beta = np.zeros_like(u)
        for t in range(u.shape[0] - 2, -1, -1):
            n = chains.active[t + 1]
            beta[t, :n] = _lse(p[t + 1, :n] + (u[t + 1, :n] + beta[t + 1, :n] - log_c[t + 1, :n, None])[:, None, :],
                               axis=2)
        before, after, log_c = _rows(alpha, chains), _rows(beta, chains), _rows(log_c, chains)
        mean = np.empty((len(before), k + k * k))
        mean[:, :k] = np.exp(before + after)
        xi = mean[:, k:].reshape(-1, k, k)
        xi[1:] = np.exp(before[:-1, :, None] + pair[1:] + (unary[1:] + after[1:] - log_c[1:, None])[:, None, :])
    xi[chains.firsts] = 0.0
    return mean, np.add.reduceat(log_c, chains.firsts)


def _log_filter(nat, k, chains) -> np.ndarray:
    """log q(z_t | u_{≤t}) per row, (T, K), by log-sum-exp: a scaled forward pass alone cannot
    tell whether a state it rounded to 0 was needed later."""
    unary, pair = _split(nat, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _rows(_log_forward(unary[chains.index], pair[chains.index], chains)[0], chains)


def sample(nat: np.ndarray, k: int, chains: Chains, rng: np.random.Generator, n: int) -> np.ndarray:
    """n joint draws of every chain from q (forward filtering, backward sampling): (n, T) integer
    states. z_L ~ â_L, then z_t | z_{t+1} ∝ â_t[z_t] · exp P_{t+1}[z_t, z_{t+1}], all chains and
    draws at once (Gumbel-max), one step of the longest chain at a time."""
    nat = np.asarray(nat, dtype=float)
    alpha = _log_filter(nat, k, chains)
    _, pair = _split(nat, k)
    lengths = np.diff(np.r_[chains.firsts, len(alpha)])
    last = len(alpha) - 1
    draws = np.empty((n, len(alpha)), dtype=np.int64)
    after = np.zeros((n, len(lengths)), dtype=np.int64)
    for t in range(len(chains.active) - 1, -1, -1):
        here = t < lengths
        rows = np.minimum(chains.firsts + t, last)  # past a chain's end: any row, its draw is dropped
        logits = np.broadcast_to(alpha[rows], (n, len(lengths), k)).copy()
        if t + 1 < len(chains.active):
            # P_{t+1}[·, z_{t+1}] for every draw: (S, K, K) gathered to (n, S, K)
            link = pair[np.minimum(rows + 1, last)[None, :], :, after]
            logits += np.where((t + 1 < lengths)[None, :, None], link, 0.0)
        z = np.argmax(logits + rng.gumbel(size=logits.shape), axis=-1)
        draws[:, rows[here]] = z[:, here]
        after = np.where(here[None, :], z, 0)
    return draws
