"""Nodes and weights of E[h(η)] under a Gaussian margin η ~ N(m, v): what the quadrature of a
scalar likelihood (ppl.infer.likelihoods) and the predictive (ppl.infer.predict) sum over.

Narrow margins (v ≤ `WIDE`) take Gauss–Hermite, with as few nodes as their width needs
(`BANDS`). A wide one sees the link turn on a unit scale
near η = 0, which Gauss–Hermite resolves slowly, so [m − 12√v, m + 12√v] is cut at −`TURN`, 0
and `TURN` and each piece takes 48-node Gauss–Legendre: the pieces near 0 keep their nodes on the
turn however wide the margin.
"""

from __future__ import annotations

import functools

import numpy as np

LEGENDRE_NODES, LEGENDRE_WEIGHTS = np.polynomial.legendre.leggauss(48)  # per piece of `split_legendre`
TURN = 40.0  # |η| beyond which the links are straight (log σ) or smooth: `split_legendre`'s cuts
WIDE = 2.0  # margins with a larger variance use the split Gauss–Legendre rule
# Gauss–Hermite nodes by the margin's variance: (nodes, the largest v they serve). The logistic
# links are analytic in the strip |Im η| < π (σ's poles at ±iπ), so the rule's error falls
# exponentially in √nodes / sd: these counts integrate log f, f' and f'' of the logistic, binomial,
# ordered-logistic and probit links to about 1e-14 (relative to max(1, |E|), m in [−6, 6]), as 48
# nodes do at v = 1.17 (tests/test_quadrature_bands.py); 48 serve up to `WIDE`.
BANDS = ((8, 0.04), (16, 0.23), (32, 0.68), (48, WIDE))


def hermite(m, v, nodes: int):
    """Nodes (k, nodes) and the shared weights (nodes,) of E[h(η)], η ~ N(m, v), by `nodes`-point
    Gauss–Hermite."""
    x, w = _gauss_hermite(nodes)
    return m[:, None] + np.sqrt(2.0 * v)[:, None] * x, w


def by_width(v: np.ndarray) -> tuple:
    """((rows, rule, nodes), ...): the margins of variances `v` (flat) grouped by the rule that
    integrates them, `rule(m, v)` giving (nodes, weights) of `nodes` per margin: Gauss–Hermite
    with the nodes of their band (`BANDS`), or `split_legendre` beyond `WIDE` (and for NaN). A
    margin's rule depends on its own variance only, so that its integral does not depend on the
    margins it is integrated with (a minibatch, the rows a repeated group stands for). rows is
    None when one rule takes every margin (sliced by the caller, not gathered), else the indices
    of its margins."""
    band = np.searchsorted(_LIMITS, v)
    counts = np.bincount(band, minlength=len(_RULES))
    if counts.max(initial=0) == v.size:
        return ((None, *_RULES[int(band[0]) if v.size else 0]),)
    return tuple(((band == k).nonzero()[0], *_RULES[k]) for k in counts.nonzero()[0])


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


@functools.lru_cache(maxsize=16)
def _gauss_hermite(nodes: int) -> tuple:
    """`nodes`-point Gauss–Hermite nodes and weights for a standard-normal expectation's sum over
    x√2, made once per count (an eigenproblem each time the predictive was asked)."""
    x, w = np.polynomial.hermite.hermgauss(nodes)
    return x, w / np.sqrt(np.pi)


_LIMITS = np.array([limit for _, limit in BANDS])
_RULES = tuple((functools.partial(hermite, nodes=nodes), nodes) for nodes, _ in BANDS) + \
    ((split_legendre, 4 * len(LEGENDRE_NODES)),)
