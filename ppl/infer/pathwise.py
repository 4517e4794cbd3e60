"""Pathwise Monte Carlo gradients for Gamma and Dirichlet q, and the mean-parameter solves of CVI.

A draw of a Gamma or Dirichlet q is a differentiable function of its parameters at a fixed
quantile level (implicit reparameterisation: Hoffman's SSMF eq. 15, Figurnov et al. 2018):
for x ~ Ga(α, 1) with CDF P(α, x) and density p,

    dx/dα = −∂_α P(α, x) / p(x; α),

with ∂_α P from the incomplete gamma series differentiated term by term, or a central difference
of its smaller tail for large draws (`ppl.infer.gamma_shape`). A Gamma
Ga(α, β) draw is x/β; a Dirichlet draw is a vector of Ga(α_k, 1) draws normalised (eqs. 33–35).

CVI needs ∇_μ E_q[f] = C_λ⁻¹ ∇_λ E_q[f] (Khan & Lin, eq. 15, App. F). `same_draws_solve` takes
both C_λ = ∂E[t]/∂λ and ∇_λ E[f] as pathwise averages over the same draws and solves Ĉᵀ m = ĝ:
when f is linear in t(z) the result is exact for every draw, and the noise is not multiplied by
the near-singular exact C_λ of a concentrated q (t = (log z, z) is then nearly collinear); its
price is a bias of order 1/S. `dirichlet_fisher_solve` is the exact Dirichlet Fisher solve for
the parts of a gradient known in closed form.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaincinv

from ppl.infer.gamma_shape import log_shape_derivative, trigamma

TINY = np.finfo(float).tiny


def gamma_shape_derivative(alpha, x) -> np.ndarray:
    """dx/dα at a fixed quantile level for x ~ Ga(α, 1), elementwise (broadcasting)."""
    x = np.maximum(np.asarray(x, float), TINY)
    return x * log_shape_derivative(alpha, np.log(x))


def gamma_draws(shape, rate, rng: np.random.Generator, samples: int):
    """S draws of z ~ Ga(α, β) per element, (..., S), and ∂z/∂λ, (..., S, 2), for the natural
    parameters λ = (α − 1, −β): (dx/dα / β, z/β) with z = x/β."""
    shape, rate = np.asarray(shape, float)[..., None], np.asarray(rate, float)[..., None]
    x = np.maximum(rng.gamma(shape, size=shape.shape[:-1] + (samples,)), TINY)
    z = x / rate
    return z, np.stack([gamma_shape_derivative(shape, x) / rate, z / rate], axis=-1)


def gamma_quantiles(shape, rate, levels) -> np.ndarray:
    """Ga(α, β) draws by inversion at fixed uniform `levels` (..., S): common random numbers."""
    shape, rate = np.asarray(shape, float)[..., None], np.asarray(rate, float)[..., None]
    return np.maximum(gammaincinv(shape, levels), TINY) / rate


def dirichlet_draws(alpha, rng: np.random.Generator, samples: int):
    """S draws of π ~ Dir(α) per row, (..., S, K), and d (..., S, K) with
    ∂π_i/∂α_j = (δ_ij − π_i) d_j, d_j = (dg_j/dα_j) / Σ_k g_k for the Gamma draws g (eq. 35)."""
    alpha = np.asarray(alpha, float)[..., None, :]
    size = alpha.shape[:-2] + (samples, alpha.shape[-1])
    g = np.maximum(rng.gamma(alpha, size=size), TINY)
    total = np.sum(g, axis=-1, keepdims=True)
    return g / total, gamma_shape_derivative(alpha, g) / total


def dirichlet_quantiles(alpha, levels) -> np.ndarray:
    """Dir(α) draws by inversion at fixed uniform `levels` (..., S, K): normalised Gamma quantiles."""
    g = np.maximum(gammaincinv(np.asarray(alpha, float)[..., None, :], levels), TINY)
    return g / np.sum(g, axis=-1, keepdims=True)


def same_draws_solve(dt, df) -> np.ndarray:
    """∇_μ E[f] ≈ Ĉ⁻ᵀ ĝ from per-draw Jacobians dt = ∂t(z_s)/∂λ (..., S, T, P) and gradients
    df = ∂f(z_s)/∂λ (..., S, P): Ĉ and ĝ are their means over the draws (axis −3 and −2).
    (∂E[f]/∂λ_j = Σ_i ∂E[f]/∂μ_i · ∂μ_i/∂λ_j, so ĝ = Ĉᵀ m.)"""
    c = np.swapaxes(np.mean(dt, axis=-3), -1, -2)
    g = np.mean(df, axis=-2)[..., None]
    try:
        return np.linalg.solve(c, g)[..., 0]
    except np.linalg.LinAlgError:  # draws that coincide (a shape near 0 or 1e300): least squares where
        finite = np.all(np.isfinite(c), axis=(-2, -1)) & np.all(np.isfinite(g), axis=(-2, -1))
        out = np.full(g.shape[:-1], np.nan)  # not finite: NaN, which the guarded update rejects
        out[finite] = (np.linalg.pinv(c[finite]) @ g[finite])[..., 0]
        return out


def gamma_jacobian(z, dz) -> np.ndarray:
    """∂t(z_s)/∂λ for t = (log z, z): t'(z) ⊗ ∂z/∂λ, (..., S, 2, 2)."""
    return np.stack([1.0 / z, np.ones_like(z)], axis=-1)[..., :, None] * dz[..., None, :]


def dirichlet_jacobian(pi, d) -> np.ndarray:
    """∂ log π_i / ∂α_j = (δ_ij / π_i − 1) d_j per draw, (..., S, K, K)."""
    k = pi.shape[-1]
    return (np.eye(k) / pi[..., :, None] - 1.0) * d[..., None, :]


def dirichlet_fisher_solve(alpha, grad) -> np.ndarray:
    """C_λ⁻¹ g for a Dirichlet, C_λ = ∇²A = diag(ψ'(α)) − ψ'(α₀)11ᵀ, by Sherman–Morrison in O(K):
    C⁻¹g = D⁻¹g + c (D⁻¹1)(1ᵀD⁻¹g) / (1 − c 1ᵀD⁻¹1), D = diag(ψ'(α)), c = ψ'(α₀) (SSMF eq. 38)."""
    alpha = np.asarray(alpha, float)
    inverse = 1.0 / trigamma(alpha)
    c = trigamma(np.sum(alpha, axis=-1, keepdims=True))
    scaled = inverse * grad
    return scaled + c * inverse * np.sum(scaled, axis=-1, keepdims=True) / (
        1.0 - c * np.sum(inverse, axis=-1, keepdims=True))
