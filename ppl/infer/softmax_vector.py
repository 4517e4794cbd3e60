"""Categorical(softmax(η)) with η a K-vector under a full-covariance Gaussian q per group (the
correlated topic model's document logits): Wang & Blei's Laplace and delta-method VI, batched
over groups as stacked (G, K, K) linear algebra.

Group g (a document) sees expected counts n (K,) — the sum of E[onehot z_t] over its tokens —
with N = Σ_k n_k, and a Gaussian prior N(η | m0, Λ0⁻¹): the messages of its other factors (for
`eta[d] ~ MvNormal(mu, Lambda)` that is m0 = E[mu], Λ0 = E[Lambda], the expected log prior up to
a constant). With π = softmax(η) and S(π) = diag π − ππᵀ (Wang & Blei, App. A):

    f(η)  = ηᵀn − N lse(η) − ½(η − m0)ᵀΛ0(η − m0)
    ∇f    = n − Nπ − Λ0(η − m0),        −∇²f = H(η) = N S(π) + Λ0
    T(η; Σ) = Tr{∇²f Σ} = −N Tr{S(π)Σ} − Tr{Λ0Σ}
    ∇_η T = Nπ ⊙ [−diag Σ + (πᵀdiag Σ) + 2Σπ − 2(πᵀΣπ)]      (Σ fixed)

The last line is the digest's corrected CTM trace derivative (§1.6) for a full Σ; with a diagonal
Σ it reduces to Nπ_j[(2π_j − 1)Σ_jj − Σ_i π_i(2π_i − 1)Σ_ii]. The paper's printed form drops N
and fails a finite-difference check (tests/test_softmax_vector.py).

- `laplace`: q(η) = N(η̂, H(η̂)⁻¹) at the mode η̂ of f (Newton with step halving; f is concave);
- `delta`: the stationary point of W&B's eq 15, f(μ) + ½T(μ; Σ) + ½log|Σ|. Σ = H(μ)⁻¹ maximises it
  for fixed μ; substituting it leaves F(μ) = f(μ) − ½log|H(μ)| + const, whose gradient is
  ∇f + ½∇_μT at Σ = H(μ)⁻¹ (the envelope theorem). μ ← μ + t·H⁻¹∇F with t halved until F rises
  is an ascent method, and its fixed point is W&B's: ∇f(μ) + ½∇T = 0 and Σ = −∇²f(μ)⁻¹.

Both give q(η) = N(μ, H(μ)⁻¹), which the factor sends as the Gaussian site (Hμ − Λ0m0, −½N S(π)):
added to the prior's message (Λ0m0, −½Λ0) it is exactly (Hμ, −½H), q's natural parameters.

The message to each outcome z_t, E_q[log softmax(η)_k], uses the same second-order expansion
for both rules (W&B eq 17, as they do): μ_k − lse(μ) − ½Tr{S(π(μ))Σ}.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp, softmax

TOLERANCE = 1e-11  # largest |step| of a converged inner solve
MAX_STEPS = 200
MAX_HALVINGS = 40


def curvature(pi: np.ndarray) -> np.ndarray:
    """S(π) = diag π − ππᵀ, the Hessian of lse: (G, K) → (G, K, K)."""
    return pi[..., :, None] * (np.eye(pi.shape[-1]) - pi[..., None, :])


def objective(eta, counts, mean0, prec0):
    """f(η) per group."""
    total = counts.sum(-1)
    diff = eta - mean0
    return (np.sum(eta * counts, -1) - total * logsumexp(eta, axis=-1)
            - 0.5 * np.einsum("gi,gij,gj->g", diff, prec0, diff))


def gradient(eta, counts, mean0, prec0):
    """∇f per group: (G, K)."""
    return counts - counts.sum(-1, keepdims=True) * softmax(eta, -1) - np.einsum("gij,gj->gi", prec0, eta - mean0)


def precision(eta, counts, prec0):
    """H(η) = −∇²f = N S(π) + Λ0: (G, K, K)."""
    return counts.sum(-1)[:, None, None] * curvature(softmax(eta, -1)) + prec0


def trace(eta, cov, counts, prec0):
    """T(η; Σ) = Tr{∇²f(η) Σ} per group."""
    return -np.einsum("gij,gji->g", precision(eta, counts, prec0), cov)


def trace_gradient(eta, cov, counts):
    """∇_η Tr{∇²f(η) Σ} with Σ fixed (the corrected derivative, full Σ): (G, K)."""
    pi = softmax(eta, -1)
    diag = np.diagonal(cov, axis1=-2, axis2=-1)
    s_pi = np.einsum("gij,gj->gi", cov, pi)
    inner = (-diag + np.sum(pi * diag, -1, keepdims=True) + 2 * s_pi
             - 2 * np.sum(pi * s_pi, -1, keepdims=True))
    return counts.sum(-1, keepdims=True) * pi * inner


def profile(eta, counts, mean0, prec0):
    """F(μ) = f(μ) − ½log|H(μ)|: eq 15 with Σ = H(μ)⁻¹ substituted, up to the constant −K/2."""
    return objective(eta, counts, mean0, prec0) - 0.5 * np.linalg.slogdet(precision(eta, counts, prec0))[1]


def laplace_mode(counts, mean0, prec0, start):
    """η̂ = argmax f per group by Newton, halving the step of a group until f does not fall."""
    def step(eta):
        return np.linalg.solve(precision(eta, counts, prec0), gradient(eta, counts, mean0, prec0)[..., None])[..., 0]
    return _ascend(start, step, lambda eta: objective(eta, counts, mean0, prec0))


def delta_point(counts, mean0, prec0, start):
    """The delta-method mean: a stationary point of F by steps H⁻¹∇F, halved until F does not fall."""
    def step(eta):
        cov = np.linalg.inv(precision(eta, counts, prec0))
        rise = gradient(eta, counts, mean0, prec0) + 0.5 * trace_gradient(eta, cov, counts)
        return np.einsum("gij,gj->gi", cov, rise)
    return _ascend(start, step, lambda eta: profile(eta, counts, mean0, prec0))


SOLVERS = {"laplace": laplace_mode, "delta": delta_point}


def _ascend(eta, step, value):
    """Iterate η ← η + t·step(η) per group, t halved (per group) while `value` falls. A group stops
    when its step is below TOLERANCE or when no halving gives a rise (round-off at the optimum)."""
    eta = np.array(eta, dtype=float)
    current = value(eta)
    active = np.ones(len(eta), dtype=bool)
    for _ in range(MAX_STEPS):
        direction = step(eta)
        active &= np.max(np.abs(direction), axis=-1, initial=0.0) >= TOLERANCE
        if not active.any():
            break
        t = np.where(active, 1.0, 0.0)
        for _ in range(MAX_HALVINGS):
            trial = eta + t[:, None] * direction
            new = value(trial)
            worse = ~(new >= current - 1e-12 * np.maximum(1.0, np.abs(current)))
            if not worse.any():
                break
            t = np.where(worse, t / 2, t)
        active &= ~worse
        eta = np.where(active[:, None], trial, eta)
        current = np.where(active, new, current)
    return eta


def site(eta, counts, mean0, prec0):
    """The Gaussian site (h, Λ_site) that makes prior + site = N(η, H(η)⁻¹): (Hη − Λ0m0, N S(π))."""
    h = precision(eta, counts, prec0)
    own = h - prec0
    return np.einsum("gij,gj->gi", h, eta) - np.einsum("gij,gj->gi", prec0, mean0), own


def expected_log_softmax(mean, cov):
    """E_q[log softmax(η)_k] ≈ μ_k − lse(μ) − ½Tr{S(π(μ))Σ} (W&B eq 17): (G, K)."""
    correction = 0.5 * np.einsum("gij,gji->g", curvature(softmax(mean, -1)), cov)
    return mean - (logsumexp(mean, axis=-1) + correction)[:, None]
