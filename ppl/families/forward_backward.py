"""Forward–backward and forward filtering–backward sampling on discrete chains, in log space.

A chain z_1..z_L with K states has the unnormalised law

    log q̃(z) = Σ_t u_t[z_t] + Σ_{t≥2} P_t[z_{t−1}, z_t],

unary log-potentials u_t (the local evidence, plus log π at t = 1) and pairwise ones P_t (in
VB: E[log A], the sub-normalised exp E[log A] of Beal 2003, ch. 3). Several chains of unequal
length are held padded, (S, L_max, ...), and processed together: the only Python loop is over
the time steps of the longest chain, each step O(S K²). Per step the forward messages are
normalised (log c_t), so log Z = Σ_t log c_t and nothing grows with the length.

Each step multiplies exponentials of max-shifted log-potentials, exp(P_t − max P_t) and
exp(u_t − max u_t), all ≤ 1 with one of them 1, and keeps the shifts and the normalisers in logs
(the scaled recursions of Rabiner 1989, in the log domain for the scales). If a message still
underflows to 0 everywhere (evidence and transitions that disagree by more than e^700), the
sweep is redone with log-sum-exp at every step, which cannot.

These functions are stateless; `CategoricalChain` (categorical_chain.py) maps the engine's
flat (elements, K + K²) layout onto them.
"""

from __future__ import annotations

import numpy as np


def _shifted(pair: np.ndarray):
    """exp(P_t − M_t) and M_t = max P_t per step: the exponentials the recursions multiply by
    (all ≤ 1, one of them 1), so each step is a matrix product of numbers that cannot overflow,
    and a zero probability (P = −∞) is an exact 0."""
    top = pair.max(axis=(2, 3))
    top = np.where(np.isfinite(top), top, 0.0)
    return np.exp(pair - top[..., None, None]), top


def forward(unary: np.ndarray, pair: np.ndarray, lengths: np.ndarray, shifted=None):
    """Normalised log forward messages â_t = log q̃(z_t | u_{≤t}) and log c_t, (S, L, K) and (S, L).

    `pair[:, 0]` is ignored; steps past a chain's length are computed but never read."""
    weights, top = _shifted(pair) if shifted is None else shifted
    local, peak = _shifted_unary(unary)
    s, steps, k = unary.shape
    scaled = np.empty_like(unary)
    total = np.empty((s, steps))
    f = local[:, 0]
    with np.errstate(invalid="ignore", divide="ignore"):  # an underflow is caught below
        for t in range(steps):
            if t > 0:
                f = np.matmul(scaled[:, t - 1, None, :], weights[:, t])[:, 0] * local[:, t]
            total[:, t] = f.sum(axis=1)
            scaled[:, t] = f / total[:, t, None]
    with np.errstate(divide="ignore"):
        if np.all(total > 0):
            log_c = np.log(total) + peak + np.where(np.arange(steps) > 0, top, 0.0)
            alpha = np.log(scaled)
        else:
            alpha, log_c = _forward_logsumexp(unary, pair)
    return alpha, np.where(np.arange(steps) < lengths[:, None], log_c, 0.0)


def _shifted_unary(unary):
    peak = unary.max(axis=2)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    return np.exp(unary - peak[..., None]), peak


def _lse(x: np.ndarray, axis: int) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return np.log(np.exp(x - m).sum(axis=axis)) + np.squeeze(m, axis)


def _forward_logsumexp(unary, pair):
    """The forward recursion with log-sum-exp at every step (slower; never underflows)."""
    s, steps, k = unary.shape
    alpha, log_c = np.empty_like(unary), np.empty((s, steps))
    a = unary[:, 0]
    with np.errstate(invalid="ignore"):
        for t in range(steps):
            if t > 0:
                a = _lse(alpha[:, t - 1, :, None] + pair[:, t], axis=1) + unary[:, t]
            log_c[:, t] = _lse(a, axis=1)
            alpha[:, t] = a - log_c[:, t, None]
    return alpha, log_c


def backward(unary: np.ndarray, pair: np.ndarray, lengths: np.ndarray, log_c: np.ndarray, shifted=None) -> np.ndarray:
    """Scaled log backward messages b̂_t = log β_t − Σ_{u>t} log c_u, (S, L, K) (0 past the end)."""
    weights, top = _shifted(pair) if shifted is None else shifted
    local, peak = _shifted_unary(unary)
    s, steps, k = unary.shape
    # one step's factor exp(u + M − log c), kept apart: b̂_t = W_{t+1}(e_{t+1} b̂_{t+1}) exp(peak + M − log c)
    with np.errstate(over="ignore"):
        gain = np.exp(peak + top - log_c)
    scaled = np.ones_like(unary)
    inside = (np.arange(steps)[None, :] + 1 < lengths[:, None])[..., None]
    with np.errstate(invalid="ignore", over="ignore"):  # an overflow is caught below
        for t in range(steps - 2, -1, -1):
            b = np.matmul(weights[:, t + 1], (local[:, t + 1] * scaled[:, t + 1])[:, :, None])[..., 0]
            scaled[:, t] = np.where(inside[:, t], b * gain[:, t + 1, None], 1.0)
    with np.errstate(divide="ignore"):
        if np.all(np.isfinite(scaled)) and np.all(scaled.max(axis=2) > 0):
            return np.log(scaled)
    return _backward_logsumexp(unary, pair, lengths, log_c)


def _backward_logsumexp(unary, pair, lengths, log_c):
    s, steps, k = unary.shape
    beta = np.zeros_like(unary)
    with np.errstate(invalid="ignore"):
        for t in range(steps - 2, -1, -1):
            b = _lse(pair[:, t + 1] + (unary[:, t + 1] + beta[:, t + 1])[:, None, :], axis=2) - log_c[:, t + 1, None]
            beta[:, t] = np.where((t + 1 < lengths)[:, None], b, 0.0)
    return beta


def forward_backward(unary: np.ndarray, pair: np.ndarray, lengths: np.ndarray):
    """(marginals (S, L, K), pairwise marginals (S, L, K, K), log Z (S,)).

    pairwise[:, t, i, j] = q(z_{t−1} = i, z_t = j); it is 0 at t = 0 and past each chain's end,
    as are the marginals past the end."""
    lengths = np.asarray(lengths)
    shifted = _shifted(pair)
    alpha, log_c = forward(unary, pair, lengths, shifted)
    beta = backward(unary, pair, lengths, log_c, shifted)
    inside = np.arange(unary.shape[1]) < lengths[:, None]
    marginals = np.exp(alpha + beta) * inside[..., None]
    after = (unary[:, 1:] + beta[:, 1:] - log_c[:, 1:, None])[:, :, None, :]
    with np.errstate(invalid="ignore"):  # −∞ + −∞ is −∞; only −∞ − −∞ would be NaN, and none occurs
        joint = np.exp(alpha[:, :-1, :, None] + after + pair[:, 1:])
    pairwise = np.zeros(pair.shape)
    pairwise[:, 1:] = joint * inside[:, 1:, None, None]
    return marginals, pairwise, log_c.sum(axis=1)


def sample(unary: np.ndarray, pair: np.ndarray, lengths: np.ndarray, rng: np.random.Generator,
           n: int) -> np.ndarray:
    """n joint draws of every chain from q (forward filtering, backward sampling): (n, S, L)
    integer states, −1 past each chain's end. z_L ~ â_L, then z_t | z_{t+1} ∝ â_t[z_t] ·
    exp P_{t+1}[z_t, z_{t+1}], all chains and draws at once (Gumbel-max)."""
    lengths = np.asarray(lengths)
    alpha, _ = forward(unary, pair, lengths)
    s, steps, k = unary.shape
    draws = np.full((n, s, steps), -1, dtype=np.int64)
    after = np.zeros((n, s), dtype=np.int64)
    rows = np.arange(s)
    for t in range(steps - 1, -1, -1):
        logits = np.broadcast_to(alpha[:, t], (n, s, k)).copy()
        if t + 1 < steps:
            # P_{t+1}[·, z_{t+1}] for every draw: (S, K, K) gathered to (n, S, K)
            link = pair[rows[None, :], t + 1, :, after].reshape(n, s, k)
            logits += np.where((t + 1 < lengths)[None, :, None], link, 0.0)
        z = np.argmax(logits + rng.gumbel(size=logits.shape), axis=-1)
        z = np.where((t < lengths)[None, :], z, -1)
        draws[:, :, t] = z
        after = np.maximum(z, 0)
    return draws
