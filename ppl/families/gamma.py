"""Gamma distribution with shape a and RATE b.

t(x) = (log x, x), λ = (a − 1, −b), h(x) = 1,
A(λ) = log Γ(a) − a log b,  E[t] = (ψ(a) − log b, a/b).

``to_natural`` must invert ψ(a) − log a = E[log x] − log E[x]; see
``solve_gamma_shape``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy.special import digamma, gammaln, polygamma

from .base import ExponentialFamily, Marginal, leading, stack_last

_MAX_ITER = 100


def solve_gamma_shape(c) -> np.ndarray:
    """Solve log a − ψ(a) = c (c > 0) for a > 0, elementwise.

    log a − ψ(a) falls from +∞ to 0 and behaves like 1/a for small a and
    1/(2a) for large a, so F(a) = 1/(log a − ψ(a)) is close to linear in a.
    Newton's method is run on F(a) = 1/c (quadratic convergence, no
    overshoot to a ≤ 0 in practice; a step that would leave a > 0 is halved
    instead), started from Minka's approximation
    a₀ = (3 − c + √((c − 3)² + 24c)) / (12c), and stopped when the relative
    step is at round-off level.
    """
    c = np.asarray(c, dtype=float)
    a = (3.0 - c + np.sqrt((c - 3.0) ** 2 + 24.0 * c)) / (12.0 * c)
    target = 1.0 / c
    for _ in range(_MAX_ITER):
        g = np.log(a) - digamma(a)
        dg = 1.0 / a - polygamma(1, a)
        step = (1.0 / g - target) / (-dg / g**2)
        new = np.where(a - step > 0, a - step, 0.5 * a)
        done = np.all(np.abs(new - a) <= 4e-16 * new)
        a = new
        if done:
            break
    return a


@dataclass(frozen=True)
class Gamma(ExponentialFamily):
    """Ga(x | a, b) with density b^a x^(a−1) e^(−bx) / Γ(a)."""

    name: ClassVar[str] = "Gamma"
    support: ClassVar[str] = "positive"
    arg_constraints: ClassVar = MappingProxyType({"shape": "positive", "rate": "positive"})

    @property
    def size(self) -> int:
        return 2

    def natural(self, *, shape, rate) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(shape, float), np.asarray(rate, float))
        return stack_last(a - 1.0, -b)

    def params(self, nat) -> dict:
        nat = np.asarray(nat, float)
        return {"shape": nat[..., 0] + 1.0, "rate": -nat[..., 1]}

    def log_partition(self, nat) -> np.ndarray:
        p = self.params(nat)
        return gammaln(p["shape"]) - p["shape"] * np.log(p["rate"])

    def to_mean(self, nat) -> np.ndarray:
        p = self.params(nat)
        a, b = p["shape"], p["rate"]
        return _moments(a, b, digamma(a), np.log(b))

    def to_natural(self, mean) -> np.ndarray:
        """Newton solve for the shape (``solve_gamma_shape``), then b = a / E[x]."""
        mean = np.asarray(mean, float)
        elog, ex = mean[..., 0], mean[..., 1]
        a = solve_gamma_shape(np.log(ex) - elog)
        return self.natural(shape=a, rate=a / ex)

    def expected_log(self, nat) -> np.ndarray:
        """E[log x] = ψ(a) − log b."""
        return self.to_mean(nat)[..., 0]

    def stats(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        return stack_last(np.log(x), x)

    def log_base(self, x) -> np.ndarray:
        return np.zeros(np.shape(x))

    def expected_log_base(self, nat) -> np.ndarray:
        return np.zeros(np.shape(nat)[:-1])

    def entropy(self, nat) -> np.ndarray:
        """a − log b + log Γ(a) + (1 − a) ψ(a)."""
        p = self.params(nat)
        a = p["shape"]
        return _entropy(a, np.log(p["rate"]), digamma(a))

    def moments_and_entropy(self, nat) -> tuple:
        """(`to_mean`, `entropy`) with one ψ(a) and one log b: a state needs both of each q once a
        sweep."""
        p = self.params(nat)
        a, b = p["shape"], p["rate"]
        psi, log_b = digamma(a), np.log(b)
        return _moments(a, b, psi, log_b), _entropy(a, log_b, psi)

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        p = self.params(nat)
        shape = leading(n) + p["shape"].shape
        return rng.gamma(p["shape"], 1.0 / p["rate"], size=shape)

    def mean(self, nat) -> np.ndarray:
        p = self.params(nat)
        return p["shape"] / p["rate"]

    def sd(self, nat) -> np.ndarray:
        p = self.params(nat)
        return np.sqrt(p["shape"]) / p["rate"]

    def _marginal(self, nat):
        p = self.params(nat)
        return Marginal("gamma", p["shape"], p["rate"])

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        return np.isfinite(nat).all(axis=-1) & (nat[..., 0] > -1.0) & (nat[..., 1] < 0)


def _moments(a, b, psi, log_b) -> np.ndarray:
    """(E[log x], E[x]) = (ψ(a) − log b, a / b)."""
    return stack_last(psi - log_b, a / b)


def _entropy(a, log_b, psi) -> np.ndarray:
    """a − log b + log Γ(a) + (1 − a) ψ(a)."""
    return a - log_b + gammaln(a) + (1.0 - a) * psi
