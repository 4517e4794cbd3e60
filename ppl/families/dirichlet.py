"""Dirichlet distribution over the K-simplex.

t(x) = log x, λ = α − 1, h(x) = 1,
A(λ) = Σ_k log Γ(α_k) − log Γ(α₀) with α₀ = Σ_k α_k,
E[t] = ψ(α) − ψ(α₀).  ``to_natural`` uses ``solve_dirichlet``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy.special import digamma, gammaln, logsumexp, polygamma

from .base import ExponentialFamily, Marginal, leading, require_count

_MAX_ITER = 100
_MAX_HALVINGS = 60
_FIXED_POINT_STEPS = 5


def _objective(alpha, s):
    """Concave f(α) = α·s − A(α) and the magnitude of its terms.

    The maximiser of f satisfies ψ(α) − ψ(α₀) = s; the magnitude sets the
    round-off tolerance of the ascent test.
    """
    terms = (alpha * s, -gammaln(alpha))
    last = gammaln(np.sum(alpha, axis=-1))
    f = np.sum(terms[0] + terms[1], axis=-1) + last
    scale = np.sum(np.abs(terms[0]) + np.abs(terms[1]), axis=-1) + np.abs(last)
    return f, scale


def inv_digamma(y) -> np.ndarray:
    """ψ⁻¹(y) elementwise: Newton's method from Minka's starting point.

    Start at exp(y) + ½ for y ≥ −2.22 and at −1/(y + γ) below (ψ(x) ≈ −1/x − γ
    for small x); ψ is increasing and concave, so Newton converges from there
    in a handful of steps; a fixed count of 8 reaches round-off.
    """
    y = np.asarray(y, dtype=float)
    large = np.exp(np.minimum(y, 700.0)) + 0.5
    small = -1.0 / (np.minimum(y, -2.22) - digamma(1.0))
    x = np.where(y >= -2.22, large, small)
    for _ in range(8):
        x = x - (digamma(x) - y) / polygamma(1, x)
    return x


def solve_dirichlet(s) -> np.ndarray:
    """Solve ψ(α_k) − ψ(Σα) = s_k (the E[log x] of a Dirichlet) for α > 0.

    1. A few of Minka's fixed-point steps α_k ← ψ⁻¹(ψ(α₀) + s_k) from α = 1;
       each step increases the concave f(α) = α·s − A(α), and they bring α
       to the right order of magnitude even when some α_k are tiny.
    2. Damped Newton ascent on f, vectorised over the leading axes.  The
       Hessian diag(−ψ′(α)) + ψ′(α₀) 11ᵀ is inverted in O(K) by
       Sherman–Morrison (Minka, "Estimating a Dirichlet distribution").  A
       step is halved until α stays positive and f does not decrease beyond
       round-off; iterates stop when the relative step is at round-off level.
    """
    s = np.asarray(s, dtype=float)
    alpha = np.ones_like(s)
    for _ in range(_FIXED_POINT_STEPS):
        alpha = inv_digamma(digamma(np.sum(alpha, axis=-1, keepdims=True)) + s)
    f, _ = _objective(alpha, s)
    for _ in range(_MAX_ITER):
        a0 = np.sum(alpha, axis=-1, keepdims=True)
        grad = s - digamma(alpha) + digamma(a0)
        q = polygamma(1, alpha)
        b = np.sum(grad / q, axis=-1, keepdims=True) / (
            np.sum(1.0 / q, axis=-1, keepdims=True) - 1.0 / polygamma(1, a0)
        )
        step = (grad - b) / q  # = −H⁻¹ grad, an ascent direction
        t = np.ones(alpha.shape[:-1] + (1,))
        for _ in range(_MAX_HALVINGS):
            new = alpha + t * step
            f_new, scale = _objective(np.where(new > 0, new, 1.0), s)
            ok = np.all(new > 0, axis=-1) & (f_new >= f - 64 * np.finfo(float).eps * scale)
            if np.all(ok):
                break
            t = np.where(ok[..., None], t, 0.5 * t)
        new = np.where(ok[..., None], new, alpha)
        f = np.where(ok, f_new, f)
        done = np.all(np.abs(new - alpha) <= 4e-16 * new)
        alpha = new
        if done:
            break
    return alpha


@dataclass(frozen=True)
class Dirichlet(ExponentialFamily):
    """Dir(x | α) with K categories; flat size K."""

    k: int

    name: ClassVar[str] = "Dirichlet"
    support: ClassVar[str] = "simplex"
    arg_constraints: ClassVar = MappingProxyType({"alpha": "positive_vector"})

    def __post_init__(self):
        require_count("Dirichlet", "k", self.k, 2)

    @property
    def event_shape(self) -> tuple:
        return (self.k,)

    @property
    def size(self) -> int:
        return self.k

    def natural(self, *, alpha) -> np.ndarray:
        return np.asarray(alpha, float) - 1.0

    def params(self, nat) -> dict:
        return {"alpha": np.asarray(nat, float) + 1.0}

    def log_partition(self, nat) -> np.ndarray:
        alpha = self.params(nat)["alpha"]
        return gammaln(alpha).sum(axis=-1) - gammaln(alpha.sum(axis=-1))

    def to_mean(self, nat) -> np.ndarray:
        alpha = self.params(nat)["alpha"]
        return digamma(alpha) - digamma(alpha.sum(axis=-1, keepdims=True))

    def moments_and_entropy(self, nat) -> tuple:
        """(`to_mean`, `entropy`) from one α: the same operations as the two apart (E[log h] is 0,
        and x − 0 is x), which a state needs both of each sweep. λ·E[log x] without `dot_last`'s
        guard: a finite λ makes no 0 · ∞, and a λ that is not gives NaN moments either way (the
        guard's +0 for a −0 changes no sum)."""
        nat = np.asarray(nat, float)
        alpha = nat + 1.0
        total = alpha.sum(axis=-1, keepdims=True)
        mean = digamma(alpha) - digamma(total)
        return mean, gammaln(alpha).sum(axis=-1) - gammaln(total[..., 0]) - (mean * nat).sum(axis=-1)

    def to_natural(self, mean) -> np.ndarray:
        """Damped Newton solve (``solve_dirichlet``)."""
        return self.natural(alpha=solve_dirichlet(mean))

    def expected_log(self, nat) -> np.ndarray:
        """E[log x_k] = ψ(α_k) − ψ(α₀)."""
        return self.to_mean(nat)

    def stats(self, x) -> np.ndarray:
        return np.log(np.asarray(x, float))

    def log_base(self, x) -> np.ndarray:
        return np.zeros(np.shape(x)[:-1])

    def expected_log_base(self, nat) -> np.ndarray:
        return np.zeros(np.shape(nat)[:-1])

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        """Normalised Gamma draws, in log space so tiny α cannot give 0/0.

        Uses G(α) = G(α + 1) · U^(1/α), i.e. log G = log G(α+1) + log(U)/α.
        """
        alpha = self.params(nat)["alpha"]
        shape = leading(n) + alpha.shape
        log_g = np.log(rng.gamma(alpha + 1.0, size=shape)) + np.log(rng.random(shape)) / alpha
        return np.exp(log_g - logsumexp(log_g, axis=-1, keepdims=True))

    def mean(self, nat) -> np.ndarray:
        alpha = self.params(nat)["alpha"]
        return alpha / alpha.sum(axis=-1, keepdims=True)

    def sd(self, nat) -> np.ndarray:
        """Marginals are Beta(α_k, α₀ − α_k)."""
        alpha = self.params(nat)["alpha"]
        a0 = alpha.sum(axis=-1, keepdims=True)
        return np.sqrt(alpha * (a0 - alpha) / (a0**2 * (a0 + 1.0)))

    def _marginal(self, nat):
        alpha = self.params(nat)["alpha"]
        return Marginal("beta", alpha, np.sum(alpha, axis=-1, keepdims=True) - alpha)

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        return np.all(np.isfinite(nat) & (nat > -1.0), axis=-1)
