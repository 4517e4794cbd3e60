"""Nodes and weights of E[h(η)] under a Gaussian margin η ~ N(m, v): what the quadrature of a
scalar likelihood (ppl.infer.likelihoods) and the predictive (ppl.infer.predict) sum over.

Narrow margins (v ≤ `WIDE`) take Gauss–Hermite. A wide one sees the link turn on a unit scale
near η = 0, which Gauss–Hermite resolves slowly, so [m − 12√v, m + 12√v] is cut at −`TURN`, 0
and `TURN` and each piece takes 48-node Gauss–Legendre: the pieces near 0 keep their nodes on the
turn however wide the margin.
"""

from __future__ import annotations

import functools

import numpy as np

NODES, WEIGHTS = np.polynomial.hermite.hermgauss(48)
HERMITE_WEIGHTS = WEIGHTS / np.sqrt(np.pi)
LEGENDRE_NODES, LEGENDRE_WEIGHTS = np.polynomial.legendre.leggauss(48)  # per piece of `split_legendre`
TURN = 40.0  # |η| beyond which the links are straight (log σ) or smooth: `split_legendre`'s cuts
WIDE = 2.0  # margins with a larger variance use the split Gauss–Legendre rule


def hermite(m, v):
    """Nodes (k, nodes) and the shared weights (nodes,) of E[h(η)], η ~ N(m, v), by Gauss–Hermite."""
    return m[:, None] + np.sqrt(2.0 * v)[:, None] * NODES, HERMITE_WEIGHTS


def split_legendre(m, v):
    """Nodes and weights of E[h(η)] over [m − 12√v, m + 12√v], cut at −40, 0 and 40: Gauss–Legendre
    on each piece. The link turns within |η| ≲ 40 (σ(η)σ(−η) < 5e-18 beyond), and the pieces
    there have their own nodes however wide the margin: at sd 1e4 a rule over the whole range
    spaced its nodes ~2,500 apart, missed the spike of f'' = −σ(η)σ(−η) (E[f''] came out −3e-11
    against −4e-5: NC-VMP's site precision) and put f' = y − σ(η) off by 1e-6.
    The four pieces are one (margins, 4, nodes) array, each entry the same arithmetic as a piece on
    its own (a call per piece cost 60 us on 12 margins, where the link itself costs 15)."""
    sd = np.sqrt(v)
    lo, hi = m - 12 * sd, m + 12 * sd
    edges = np.stack([lo, np.minimum(np.maximum(-TURN, lo), hi), np.minimum(np.maximum(0.0, lo), hi),
                      np.minimum(np.maximum(TURN, lo), hi), hi], axis=-1)  # np.clip's values, without its wrapper
    a, b = edges[:, :-1], edges[:, 1:]
    half = ((b - a) / 2)[..., None]
    eta = ((a + b) / 2)[..., None] + half * LEGENDRE_NODES
    scale = sd[:, None, None]
    density = np.exp(-0.5 * ((eta - m[:, None, None]) / scale) ** 2) / (scale * np.sqrt(2 * np.pi))
    shape = (len(m), 4 * len(LEGENDRE_NODES))
    return eta.reshape(shape), (LEGENDRE_WEIGHTS * half * density).reshape(shape)


def margin_nodes(m, v, nodes: int = 96):
    """Nodes and weights (both margins + (J,)) of E[h(η)], η ~ N(m, v) per margin: `nodes`-point
    Gauss–Hermite where v ≤ WIDE and `split_legendre` where wider, the narrow margins padded with
    nodes of weight 0 when both occur. A mixture over the nodes (the predictive) then sees the
    link's turn at any width: 96 Gauss–Hermite nodes spaced ~0.3 sd apart put E[σ(η)] off by
    about a node's weight (~0.1) at sd 1e3."""
    m, v = (np.asarray(a, dtype=float) for a in np.broadcast_arrays(m, v))
    x, w = _gauss_hermite(nodes)
    eta = m[..., None] + np.sqrt(2.0 * v)[..., None] * x
    weights = np.broadcast_to(w, eta.shape)
    wide = v > WIDE
    if not wide.any():
        return eta, weights
    split_eta, split_w = split_legendre(m[wide], v[wide])
    pad = split_eta.shape[-1] - nodes
    eta = np.concatenate([eta, np.broadcast_to(m[..., None], m.shape + (pad,))], axis=-1)
    weights = np.concatenate([weights, np.zeros(m.shape + (pad,))], axis=-1)
    eta[wide], weights[wide] = split_eta, split_w
    return eta, weights


@functools.lru_cache(maxsize=4)
def _gauss_hermite(nodes: int) -> tuple:
    """`nodes`-point Gauss–Hermite nodes and weights for a standard-normal expectation's sum over
    x√2, made once per count (an eigenproblem each time the predictive was asked)."""
    x, w = np.polynomial.hermite.hermgauss(nodes)
    return x, w / np.sqrt(np.pi)
