"""Forward–backward and forward filtering–backward sampling on discrete chains, in log space.

A chain z_1..z_L with K states has the unnormalised law

    log q̃(z) = Σ_t u_t[z_t] + Σ_{t≥2} P_t[z_{t−1}, z_t],

unary log-potentials u_t (the local evidence, plus log π at t = 1) and pairwise ones P_t (in
VB: E[log A], the sub-normalised exp E[log A] of Beal 2003, ch. 3). Several chains of unequal
length are held padded, (S, L_max, ...), and processed together: the only Python loop is over
the time steps of the longest chain, each step O(S K²). Per step the forward messages are
normalised (log c_t), so log Z = Σ_t log c_t and nothing grows with the length.

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


def forward(unary: np.ndarray, pair: np.ndarray, lengths: np.ndarray):
    """Normalised log forward messages â_t = log q̃(z_t | u_{≤t}) and log c_t, (S, L, K) and (S, L).

    â_t = log(exp(â_{t−1}) exp(P_t − M_t)) + M_t + u_t, then log c_t = logsumexp(â_t) is taken
    out. `pair[:, 0]` is ignored; steps past a chain's length are computed but never read."""
    s, steps, k = unary.shape
    weights, top = _shifted(pair)
    shift = unary + top[..., None]
    alpha = np.empty_like(unary)
    log_c = np.empty((s, steps))
    a = unary[:, 0]
    with np.errstate(divide="ignore"):
        for t in range(steps):
            if t > 0:
                a = np.log(np.matmul(np.exp(alpha[:, t - 1, None, :]), weights[:, t])[:, 0]) + shift[:, t]
            m = a.max(axis=1)
            c = np.log(np.exp(a - m[:, None]).sum(axis=1)) + m
            log_c[:, t] = c
            alpha[:, t] = a - c[:, None]
    return alpha, np.where(np.arange(steps) < lengths[:, None], log_c, 0.0)


def backward(unary: np.ndarray, pair: np.ndarray, lengths: np.ndarray, log_c: np.ndarray) -> np.ndarray:
    """Scaled log backward messages b̂_t = log β_t − Σ_{u>t} log c_u, (S, L, K) (0 past the end)."""
    s, steps, k = unary.shape
    weights, top = _shifted(pair)
    beta = np.zeros_like(unary)
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(steps - 2, -1, -1):
            v = unary[:, t + 1] + beta[:, t + 1]
            m = v.max(axis=1)
            m = np.where(np.isfinite(m), m, 0.0)
            b = np.log(np.matmul(weights[:, t + 1], np.exp(v - m[:, None])[:, :, None])[..., 0])
            b += (m + top[:, t + 1] - log_c[:, t + 1])[:, None]
            beta[:, t] = np.where((t + 1 < lengths)[:, None], b, 0.0)
    return beta


def forward_backward(unary: np.ndarray, pair: np.ndarray, lengths: np.ndarray):
    """(marginals (S, L, K), pairwise marginals (S, L, K, K), log Z (S,)).

    pairwise[:, t, i, j] = q(z_{t−1} = i, z_t = j); it is 0 at t = 0 and past each chain's end,
    as are the marginals past the end."""
    lengths = np.asarray(lengths)
    alpha, log_c = forward(unary, pair, lengths)
    beta = backward(unary, pair, lengths, log_c)
    inside = np.arange(unary.shape[1]) < lengths[:, None]
    marginals = np.where(inside[..., None], np.exp(alpha + beta), 0.0)
    with np.errstate(invalid="ignore"):  # −∞ + −∞ is −∞; only −∞ − −∞ would be NaN, and none occurs
        joint = (alpha[:, :-1, :, None] + pair[:, 1:] + (unary[:, 1:] + beta[:, 1:])[:, :, None, :]
                 - log_c[:, 1:, None, None])
    pairwise = np.zeros(pair.shape)
    pairwise[:, 1:] = np.where(inside[:, 1:, None, None], np.exp(joint), 0.0)
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
