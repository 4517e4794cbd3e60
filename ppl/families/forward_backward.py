"""Forward–backward on discrete chains (forward filtering–backward sampling: `chain_sampling`).

A chain z_1..z_L with K states has the unnormalised law

    log q̃(z) = Σ_t u_t[z_t] + Σ_{t≥2} P_t[z_{t−1}, z_t],

unary log-potentials u_t (the local evidence, plus log π at t = 1) and pairwise ones P_t (in
VB: E[log A], the sub-normalised exp E[log A] of Beal 2003, ch. 3). Several chains of unequal
length are held one after another in rows, `nat` (T, K + K²) = (u_t, P_t flattened) as in
`CategoricalChain`; P_t is ignored at each chain's first row.

The messages come first from two banded triangular solves over all chains at once (`chain_band`:
one BLAS call each way, 2× to 3× faster than the passes below at 300 steps); where their
normalisers drift too far, from the scaled recursions. Those are Rabiner's (1989) in probability
space, over all chains at once:
the chains are laid out time-major, longest first (`Chains`), so step t is one matrix product on
the n_t chains still running, a contiguous block, and the only Python loop is over the steps of
the longest chain. The recursions keep their buffers and each step's views for the layout's next
call when they are small (`_Buffers`, `KEEP_BYTES`), since taking a step's views costs about as
much as its numpy calls. One chain alone of at least 32 steps and at most 12 states runs no loop
over its steps: its messages come from blocked prefix products (`chain_scan`, a few tens of numpy
calls where the recursions make three or four a step: 1.7× faster at 300 steps, 2.7× at 5000;
a shorter chain or more states take the recursions, `chain_scan.pays`). They
agree with the recursions to about 1e-15, and a result whose pairwise marginals do not sum to its
marginals (`_consistent`) is redone.
Each step multiplies exp(u_t − max u_t) and exp(P_t − max P_t), numbers ≤ 1 with one of them 1, and
divides by the step's normaliser c_t; the shifts and log c_t add up to log Z, so nothing grows
with the length. When P_t is the same at every step (an HMM's E[log A]),
exp is taken once and a step is an (n_t, K) × (K, K) product. Where the finite log-potentials of
a step span more than `SPREAD` nats (unary plus pairwise), a weight could round to 0 although the
path through it carries the mass; and a product of messages can still underflow (the marginals
then fail to sum to 1, `_normalised`, or to agree, `_consistent`). Either way the pass runs with
log-sum-exp at every step, slower, which cannot underflow.
"""

from __future__ import annotations

import contextlib
import functools
import math

import numpy as np

from . import chain_band, chain_scan
from .chain_layout import Chains, or_zero, potentials, row_order

BANDED = True  # the banded solves first (`chain_band`); the scaled recursions alone if False
SPREAD = 700.0  # the scaled pass runs when no evidence and transition weights differ by more (nats)
CHUNK = 4096  # steps whose views the recursions take at once
VIEW_BYTES = 1300  # the views of one step (7 to 9 of about 110 bytes, and their tuples), counted against KEEP_BYTES
KEEP_BYTES = 1 << 25  # a layout keeps its recursions' buffers and views for the next call up to this size
NORMALISED = 1e-9  # how far from 1 a row of scaled marginals may sum (rounding: about 1e-13 over 1e5 steps)
CONSISTENT = 1e-12  # how far a blocked pass's pairwise marginals may sum from its marginals (rounding: 1e-15)


def _finite_max(x: np.ndarray, axis):
    return or_zero(x.max(axis=axis))


def _peak(unary: np.ndarray) -> np.ndarray:
    """max_k u_t[k] per row (0 if all −∞), (T,): column by column (K − 1 maxima), as numpy's
    reduction over a short last axis costs about ten times more."""
    return or_zero(functools.reduce(np.maximum, unary.T))


def _weights(pair: np.ndarray, chains: Chains):
    """(exp(P − max P), max P, largest spread of the finite P_t): one (K, K) matrix and a number
    when P_t is the same at every row that continues a chain, else per row (T, K, K) and (T,)."""
    shared = pair[np.argmin(chains.starts)]  # at the first row that continues a chain, if any
    if (pair[chains.continuing] == shared).all():
        top, low = float(shared.max()), float(shared.min())
        if not (math.isfinite(top) and math.isfinite(low)):  # −∞ entries (or +∞, NaN): the finite ones'
            top = float(_finite_max(shared, axis=None))
            low = float(np.min(shared, where=np.isfinite(shared), initial=top))
        return np.exp(shared - top), top, top - low
    top = _finite_max(pair, axis=(1, 2))
    low = np.min(pair, axis=(1, 2), where=np.isfinite(pair), initial=np.inf)
    return np.exp(pair - top[:, None, None]), top, float(np.max(top - low))


def _stepped(weights: np.ndarray, chains: Chains) -> np.ndarray:
    """The weights as the recursions read them: the shared (K, K), or per step (L, S, K, K)."""
    return weights if weights.ndim == 2 else weights[chains.index]


def forward_backward(nat: np.ndarray, k: int, chains: Chains):
    """(mean (T, K + K²), log Z (S,)): per row the marginals q(z_t) and the pairwise marginals
    ξ_t[i, j] = q(z_{t−1} = i, z_t = j) flattened, ξ = 0 at each chain's first row. `nat` is
    read as floats (integer potentials would wrap around or truncate in the recursions)."""
    nat = np.asarray(nat, dtype=float)
    unary, pair = potentials(nat, k)
    weights, top, spread = _weights(pair, chains)
    peak = _peak(unary)
    # an underflow is caught by `_normalised`
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"), _lent(chains, k) as buffers:
        local = np.subtract(unary, peak[:, None], out=buffers.shifted)
        width = _width(local)
        if width + spread <= SPREAD:  # else exp(u − max u) exp(P − max P) could round to 0 where it matters
            np.exp(local, out=local)
            for solve in (_banded, _scaled) if BANDED else (_scaled,):
                messages = solve(local, weights, chains, buffers, width + spread)
                if messages is not None:
                    mean, log_z = _scaled_moments(*messages, local, weights, peak, top, chains)
                    if _normalised(mean, chains) and (solve is _banded or not buffers.blocked
                                                      or _consistent(mean, k)):
                        return mean, log_z
    return _log_forward_backward(nat, k, chains)


def _width(local: np.ndarray) -> float:
    """The largest spread of a row's finite u_t (`local` = u − max u, ≤ 0 where finite): one
    minimum when every entry is finite, the finite ones' otherwise."""
    low = float(local.min())
    if math.isfinite(low):
        return -min(low, 0.0)
    return -float(np.min(local, where=local > -np.inf, initial=0.0))


def _many_chains(local, weights, chains, buffers):
    """(â, b̂, c) in row order, (T, K), (T, K) and (T,) copies (in `buffers.rows`), None if a
    normaliser underflowed. Found time-major on the blocks of running chains: â (L, S, K) each
    summing to 1, c (L, S) 1 past each chain's end (â unset there), b̂ 1 at each chain's last step,
    b̂_t = W_{t+1} (e_{t+1} b̂_{t+1}) with e_{t+1} = exp(u − max u) / c_{t+1}, so that
    â_t b̂_t = q(z_t). A step on the n_t running chains: (n_t, K) × (K, K), the evidence, the
    normaliser (a row sum as a product with ones, cheaper than a reduction over K) in place."""
    buffers.recursions()
    padded, alpha, norm, beta = buffers.local, buffers.alpha, buffers.norm, buffers.beta
    np.take(local, chains.index, axis=0, out=padded)
    stepped = _stepped(weights, chains)
    shared, ones = stepped.ndim == 2, np.ones(local.shape[1])
    multiply, dot, divide = np.multiply, np.dot, np.divide  # `out` by position: a keyword costs 0.1 µs a call
    np.matmul(padded[0], ones, out=norm[0])
    divide(padded[0], norm[0, :, None], alpha[0])
    for lo, hi in _spans(len(padded)):
        for t, (before, f, e, c, column) in enumerate(buffers.views("forward", lo, hi), lo):
            if shared:
                dot(before, stepped, f)
            else:
                np.matmul(before[:, None, :], stepped[t, :len(f)], f[:, None, :])
            multiply(f, e, f)
            dot(f, ones, c)
            divide(f, column, f)
    if not np.all(norm > 0):
        return None
    padded /= norm[..., None]
    across = np.ascontiguousarray(stepped.T) if shared else None
    for lo, hi in reversed(_spans(len(padded))):
        for t, (e, after, step, out) in zip(range(hi - 1, lo - 1, -1), buffers.views("backward", lo, hi)):
            multiply(e, after, step)
            if shared:
                dot(step, across, out)
            else:
                np.matmul(stepped[t, :len(step)], step[:, :, None], out[:, :, None])
    return tuple(row_order(x, chains, out) for x, out in zip((alpha, beta, norm), buffers.rows))


def _banded(local, weights, chains, buffers, span):
    """(â, b̂, c) as `_many_chains` gives them, by `chain_band`; None if they drifted too far."""
    return chain_band.messages(local, weights, buffers.band)


def _scaled(local, weights, chains, buffers, span):
    """(â, b̂, c) from the scaled recursions: blocked products on one chain where they pay
    (`_blocked`), step by step otherwise (`_many_chains`)."""
    return _blocked(local, weights, buffers, span) if buffers.blocked else _many_chains(local, weights, chains, buffers)


def _blocked(local, weights, buffers, span):
    """(â, b̂, c) of one chain as `_many_chains` gives them, by `chain_scan.scan` (the scan's own
    buffers, in row order already: no copies); every entry of W_t ∘ e_tᵀ is at least e^−span
    unless some are 0."""
    buffers.recursions()
    positive = local.min() > 0 and weights.min() > 0
    return chain_scan.scan(local, weights, buffers.scan, span if positive else np.inf)


def _spans(steps: int) -> list:
    """The steps 1..L − 1 of the recursions in runs of `CHUNK`, (lo, hi) each."""
    return [(t, min(t + CHUNK, steps)) for t in range(1, steps, CHUNK)]


class _Buffers:
    """The arrays of one layout's scaled recursions with K states and each step's views of them:
    a view costs about 0.1 µs, a numpy call of a step 0.2–0.4 µs, so a layout (`Chains.spare`)
    keeps both for its next call when they are small (`KEEP_BYTES`), as the floor of
    benchmarks/hmm_floor.py keeps them for all its sweeps. The entries no call writes hold the
    ones the recursions need: c = 1 past each chain's end, b̂ = 1 at its last step. The banded
    solves' band (`chain_band.Band`) is made with them, the recursions' arrays when first used."""

    def __init__(self, chains: Chains, k: int):
        steps, s = chains.index.shape
        self.k, self.active, self.shape = k, chains.active, (steps, s, len(chains.position))
        self.blocked = s == 1 and chain_scan.pays(steps, k)
        self.band = chain_band.Band(chains.starts, chains.firsts, k)
        self.shifted = np.empty((len(chains.position), k))  # u − max u, then e
        self.kept = self.band.nbytes + self.shifted.nbytes <= KEEP_BYTES
        self.scan, self._views = None, None

    def recursions(self) -> None:
        """The scaled recursions' arrays, made at the first call that falls back on them."""
        if self._views is not None:
            return
        (steps, s, rows), k = self.shape, self.k
        self.rows, self._views = (), {}
        if self.blocked:
            self.scan = chain_scan.Scan(steps, k)
        else:  # e_t time-major (then e_t / c_t), â_t, e_t b̂_t / c_t, c_t, b̂_t; â, b̂, c in row order
            self.local, self.alpha, self.g = (np.empty((steps, s, k)) for _ in range(3))
            self.norm, self.beta = np.ones((steps, s)), np.ones((steps, s, k))
            self.rows = (np.empty((rows, k)), np.empty((rows, k)), np.empty(rows))
        arrays = [a for a in vars(self).values() if isinstance(a, np.ndarray)] + list(self.rows)
        views = VIEW_BYTES * steps if self.scan is None else self.scan.nbytes
        self.kept = self.band.nbytes + sum(a.nbytes for a in arrays) + views <= KEEP_BYTES

    def views(self, kind: str, lo: int, hi: int) -> list:
        """The views of steps lo..hi − 1 (`forward`) or hi − 1..lo (`backward`: the views of the
        step after each), in the order the recursion takes them; kept if the buffers are."""
        views = self._views.get((kind, lo, hi))
        if views is None:
            views = self._many(kind, lo, hi)
            if self.kept:
                self._views[(kind, lo, hi)] = views
        return views

    def _many(self, kind, lo, hi):
        if kind == "forward":  # step t on its n_t chains: â_{t−1}, â_t, e_t, c_t, c_t as a column
            return [(self.alpha[t - 1, :n], self.alpha[t, :n], self.local[t, :n], self.norm[t, :n],
                     self.norm[t, :n, None]) for t, n in ((t, self.active[t]) for t in range(lo, hi))]
        # the step after, t, on its n_t chains: e_t / c_t, b̂_t, e_t b̂_t / c_t, and b̂_{t−1}
        return [(self.local[t, :n], self.beta[t, :n], self.g[t, :n], self.beta[t - 1, :n])
                for t, n in ((t, self.active[t]) for t in range(hi - 1, lo - 1, -1))]


@contextlib.contextmanager
def _lent(chains: Chains, k: int):
    """The layout's spare buffers for K states, or new ones; kept again after the call if small.
    Taken out of `Chains.spare` while in use, so two threads never share them."""
    buffers = chains.spare.pop(k, None) or _Buffers(chains, k)
    yield buffers
    if buffers.kept:
        chains.spare[k] = buffers


def _normalised(mean: np.ndarray, chains: Chains) -> bool:
    """Whether each row's marginals sum to 1, and its pairwise marginals to 1 (0 at a chain's
    start), to `NORMALISED`. The scaled messages satisfy Σ_k â_t b̂_t = 1 at every step whatever the
    rounding, as long as no product underflowed: a state whose unnormalised forward weight fell
    below 1e-308 at one step, though later steps need it, or a b̂_t or e_t b̂_t past 1e308, breaks
    the identity (or leaves ∞ or NaN), and then the pass is redone in the log domain."""
    total = mean @ np.ones(mean.shape[1])
    return bool((np.abs(total - chains.totals) <= NORMALISED).all())


def _consistent(mean: np.ndarray, k: int) -> bool:
    """Whether the pairwise marginals of one chain sum to its marginals on either side,
    Σ_i ξ_t[i, ·] = q(z_t) and Σ_j ξ_t[·, j] = q(z_{t−1}), to `CONSISTENT`: the first holds iff â_t
    is the one-step recursion's from â_{t−1}, the second iff b̂_{t−1} is from b̂_t, so a blocked
    pass (`chain_scan`) whose products lost a path that mattered is caught here. The row sums
    less q(z_{t−1}) and the column sums less q(z_t) come from one product of a row of moments with a
    0/±1 matrix, (T, K + K²) × (K + K², 2K), then q(z_{t−1}) off the first half."""
    sums = mean[1:] @ _margins(k)
    sums[:, :k] -= mean[:-1, :k]
    return bool(np.abs(sums, out=sums).max() <= CONSISTENT)  # NaN: not consistent


@functools.cache
def _margins(k: int) -> np.ndarray:
    """(K + K², 2K): a row of moments (γ_t, flat ξ_t) times it gives ξ_t's row sums, then its column
    sums less γ_t."""
    flat = np.arange(k * k)
    margins = np.zeros((k + k * k, 2 * k))
    margins[k + flat, flat // k] = margins[k + flat, k + flat % k] = 1.0
    margins[np.arange(k), k + np.arange(k)] = -1.0
    margins.flags.writeable = False
    return margins


def _scaled_moments(before, after, norm, local, weights, peak, top, chains):
    """The moments and log Z from the scaled messages in row order: q(z_t) = â_t b̂_t,
    ξ_t = â_{t−1} ⊗ W_t ⊗ e_t b̂_t; b̂ (`after`, a buffer of the pass) is overwritten."""
    k = local.shape[1]
    mean = np.empty((len(before), k + k * k))
    np.multiply(before, after, out=mean[:, :k])
    after *= local
    after /= norm[:, None]
    xi = mean[:, k:].reshape(-1, k, k)  # a view: written in place, no (T, K, K) temporary
    np.einsum("ti,tj->tij", before[:-1], after[1:], out=xi[1:])  # 3× faster than a broadcast product
    xi[1:] *= weights if weights.ndim == 2 else weights[1:]
    xi[chains.firsts] = 0.0
    log_c = np.log(norm) + peak
    if weights.ndim == 2:  # one shift of P: added where a chain continues (+ 0 elsewhere changes nothing)
        log_c[chains.continuing] += top
    else:
        log_c += np.where(chains.starts, 0.0, top)
    return mean, np.add.reduceat(log_c, chains.firsts)


def _lse(x: np.ndarray, axis: int) -> np.ndarray:
    m = or_zero(x.max(axis=axis, keepdims=True))
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
    unary, pair = potentials(nat, k)
    u, p = unary[chains.index], pair[chains.index]
    # −∞ + −∞ is −∞ (no −∞ − −∞ occurs); ξ's exp may overflow only at chain starts, set to 0 below
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        alpha, log_c = _log_forward(u, p, chains)
        beta = np.zeros_like(u)
        for t in range(u.shape[0] - 2, -1, -1):
            n = chains.active[t + 1]
            beta[t, :n] = _lse(p[t + 1, :n] + (u[t + 1, :n] + beta[t + 1, :n] - log_c[t + 1, :n, None])[:, None, :],
                               axis=2)
        before, after, log_c = row_order(alpha, chains), row_order(beta, chains), row_order(log_c, chains)
        mean = np.empty((len(before), k + k * k))
        mean[:, :k] = np.exp(before + after)
        xi = mean[:, k:].reshape(-1, k, k)
        xi[1:] = np.exp(before[:-1, :, None] + pair[1:] + (unary[1:] + after[1:] - log_c[1:, None])[:, None, :])
    xi[chains.firsts] = 0.0
    return mean, np.add.reduceat(log_c, chains.firsts)
