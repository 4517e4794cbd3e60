"""Joint draws of discrete chains from q: forward filtering in the log domain, then backward
sampling, every chain and draw at once (the recursions and layout of
`ppl.families.forward_backward`)."""

from __future__ import annotations

import numpy as np

from ppl.families.chain_layout import Chains, potentials, row_order
from ppl.families.forward_backward import _log_forward


def log_filter(nat, k, chains) -> np.ndarray:
    """log q(z_t | u_{≤t}) per row, (T, K), by log-sum-exp: a scaled forward pass alone cannot
    tell whether a state it rounded to 0 was needed later."""
    unary, pair = potentials(nat, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return row_order(_log_forward(unary[chains.index], pair[chains.index], chains)[0], chains)


def sample(nat: np.ndarray, k: int, chains: Chains, rng: np.random.Generator, n: int) -> np.ndarray:
    """n joint draws of every chain from q (forward filtering, backward sampling): (n, T) integer
    states. z_L ~ â_L, then z_t | z_{t+1} ∝ â_t[z_t] · exp P_{t+1}[z_t, z_{t+1}], all chains and
    draws at once (Gumbel-max), one step of the longest chain at a time."""
    nat = np.asarray(nat, dtype=float)
    alpha = log_filter(nat, k, chains)
    _, pair = potentials(nat, k)
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
