"""Categorical(softmax(η)) with η a K-vector of independent Gaussian margins η_k ~ N(m_k, v_k).

log f(y | η) = η_y − lse(η), so E[log f] = m_y − E[lse(η)]. Under a q that factorises across
the classes (q(w) = Π_k q(w_k), η_k = w_k·x), the natural-gradient message to each w_k needs
only g1_k = ∂E[log f]/∂m_k and g2_k = 2 ∂E[log f]/∂v_k: one scalar Gaussian site per (n, k),
τ̃ = −g2, ỹ = m + g1/τ̃. Every rule here is a function (y, m, v) → (term, g1, g2) with y the
0-based class (shape lead), m and v of shape lead + (K,), the term of shape lead:

- `expected`: E[lse] by a product Gauss–Hermite rule over the K − 1 differences η_j − η_r
  (`ppl.infer.softmax_moments`: deterministic to about 5e-12 for K ≤ 3 and 5e-6 for K = 4
  while every v_k ≤ 1; fixed quasi-random points for K ≥ 5); g1 = y − E[p(η)],
  g2 = −E[p(1 − p)] (Bonnet's and Price's theorems) by the same nodes;
- `monte_carlo`: (g1, g2) from `samples` fresh reparameterised draws η = m + √v ε (CVI);
- `laplace`: the same term, derivatives of log f at m (Newton steps; the fixed point is the MAP);
- `delta`: E[lse] ≈ lse(m) + ½ Σ_k p_k(1 − p_k) v_k with p = softmax(m) (the first-order delta
  method of Braun & McAuliffe with a diagonal covariance), and its exact derivatives; not a bound;
- `bohning`: the multinomial Böhning bound lse(η) ≤ lse(ψ) + softmax(ψ)ᵀ(η − ψ) + ½(η − ψ)ᵀA(η − ψ)
  with A = ½[I − 11ᵀ/K] over all K classes, at its optimal ψ = m. This is the thesis's reference-
  category bound (A_ref = ½[I − 11ᵀ/K] over the K − 1 logits η_j − η_K, positive definite) in K
  coordinates: Pᵀ A_ref P = A for P η = (η_j − η_K)_j, so the two bound lse equally for any q: term = m_y − lse(m) − ½ Σ_k A_kk v_k, g1 = onehot(y) −
  softmax(m), g2 = −A_kk = −(K − 1)/(2K). A strict lower bound on E[log f];
- `predictive`, `stick_predictive`: the probabilities of the classes averaged over q (the
  imputation of a missing outcome);
- `stick`: not the softmax but the stick-breaking likelihood on the first K − 1 predictors
  (thesis §5.6, with its digest's errata): log p(k) = η_k − Σ_{j≤k} llp(η_j) for k < K and
  log p(K) = −Σ_{j<K} llp(η_j). Stick j is a Bernoulli-logistic factor on η_j with outcome
  [y = j] and trials [j ≤ y], bounded by the shipped piecewise bound: a strict lower bound.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logsumexp, softmax

from ppl.infer import likelihoods
from ppl.infer.links import LIKELIHOODS
from ppl.infer.margin_nodes import margin_nodes
from ppl.infer.softmax_moments import averages


def onehot(y, k: int) -> np.ndarray:
    return (np.asarray(y)[..., None] == np.arange(k)).astype(float)


def _pick(m, y):
    return np.take_along_axis(m, np.asarray(y, dtype=np.int64)[..., None], -1)[..., 0]


def expected(y, m, v):
    """(E[log f], g1, g2), deterministic: product Gauss–Hermite, or fixed quasi-random points."""
    m, v = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(v, dtype=float))
    lse, p1, p2 = averages(m, v)
    return _pick(m, y) - lse, onehot(y, m.shape[-1]) - p1, -p2


def expected_term(y, m, v):
    """`expected`'s E[log f] alone (CVI's ELBO term, whose gradients come from fresh draws)."""
    m, v = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(v, dtype=float))
    return _pick(m, y) - averages(m, v, derivatives=False)[0], None, None


def monte_carlo(y, m, v, rng: np.random.Generator, samples: int):
    """(g1, g2) from `samples` fresh reparameterised draws per element (CVI's estimates), in
    antithetic pairs ε and −ε over all classes at once (an odd count adds one lone draw), as the
    GLM's (`ppl.infer.likelihoods.monte_carlo`): the odd part of softmax(m + √v ε) cancels within
    a pair, so on margins of variance v the error is O(v), not O(√v)."""
    pairs = samples // 2
    eps = rng.standard_normal(m.shape[:-1] + (samples - pairs, m.shape[-1]))
    eps = np.concatenate([eps, -eps[..., :pairs, :]], axis=-2)
    eta = m[..., None, :] + np.sqrt(v)[..., None, :] * eps
    p = softmax(eta, axis=-1)
    return onehot(y, m.shape[-1]) - p.mean(-2), -(p * (1 - p)).mean(-2)


def delta(y, m, v):
    """E[log f] ≈ m_y − lse(m) − ½ Σ_k p_k(1 − p_k) v_k, p = softmax(m), and its exact derivatives:
    ∂/∂m_j of ½ Σ_k v_k p_k(1 − p_k) is ½ [v_j (1 − 2p_j) p_j − p_j Σ_k v_k (1 − 2p_k) p_k]."""
    p = softmax(m, axis=-1)
    curv = p * (1 - p)
    third = v * (1 - 2 * p) * p
    g1 = onehot(y, m.shape[-1]) - p - 0.5 * (third - p * third.sum(-1, keepdims=True))
    term = _pick(m, y) - logsumexp(m, axis=-1) - 0.5 * np.sum(curv * v, -1)
    return term, g1, -curv


def laplace(y, m, v):
    """`delta`'s term with the derivatives of log f at the point η = m (each update a Newton step
    per class; the fixed point's mean is the MAP): g1 = onehot(y) − p, g2 = −p(1 − p)."""
    term, _, g2 = delta(y, m, v)
    return term, onehot(y, m.shape[-1]) - softmax(m, axis=-1), g2


def bohning_curvature(k: int) -> float:
    """A_kk of Böhning's A = ½[I − 11ᵀ/K]."""
    return 0.5 * (1.0 - 1.0 / k)


def bohning(y, m, v, curvature=None):
    """The multinomial Böhning bound at ψ = m: (m_y − lse(m) − ½ Σ_k A_kk v_k, y − softmax(m), −A_kk).

    With `curvature` c, the bound with the diagonal c·I ⪰ A in place of A (c = ½ is the smallest
    such multiple of I): a bound for margins correlated across classes, whose E[(η − m)ᵀA(η − m)]
    has cross-class covariances that the diagonal of A does not see."""
    k = m.shape[-1]
    a = bohning_curvature(k) if curvature is None else curvature
    term = _pick(m, y) - logsumexp(m, axis=-1) - 0.5 * a * np.sum(v, -1)
    return term, onehot(y, k) - softmax(m, axis=-1), np.full(np.shape(m), -a)


def stick_data(y, sticks: int):
    """(outcome, trials) of each stick j = 0..K−2 for 0-based classes y: ([y = j], [j ≤ y])."""
    y = np.asarray(y)[..., None]
    return (y == np.arange(sticks)).astype(float), (np.arange(sticks) <= y).astype(float)


def stick(tab):
    """The stick-breaking likelihood under the piecewise bound `tab`, as a rule on the margins of
    the first K − 1 predictors (m, v: lead + (K − 1,)): every stick is the binary piecewise rule
    with its outcome and trials; the sticks past y (no trial) give 0."""
    binary = likelihoods.piecewise(tab)
    logistic = LIKELIHOODS[("Bernoulli", "logistic")]

    def rule(y, m, v):
        outcome, trials = stick_data(y, m.shape[-1])
        term, g1, g2 = binary(logistic, outcome, trials, m, v)
        return term.sum(-1), g1, g2
    return rule


def predictive(m, v, cov=None):
    """E[softmax(η)] under independent margins N(m_k, v_k), by `expected`'s nodes, or under margins
    of covariance `cov` (lead + (K, K), a Gaussian block's): lead + (K,)."""
    m, v = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(v, dtype=float))
    return averages(m, v, cov=cov)[1]


def stick_predictive(m, v):
    """The stick-breaking probabilities of the K classes, averaged over independent margins of
    the K − 1 sticks (m, v: lead + (K − 1,)): P(k) = E[σ(η_k)] Π_{j<k} (1 − E[σ(η_j)])."""
    eta, w = margin_nodes(m, v, 48)
    p = np.sum(expit(eta) * w, -1)
    left = np.cumprod(np.concatenate([np.ones(p.shape[:-1] + (1,)), 1.0 - p], -1), -1)
    return np.concatenate([p, np.ones(p.shape[:-1] + (1,))], -1) * left


RULES = {"ncvmp": expected, "cvi": expected, "delta": delta, "laplace": laplace, "bound:bohning": bohning}
