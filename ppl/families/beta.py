"""Beta distribution on (0, 1).

t(x) = (log x, log(1 − x)), λ = (a − 1, b − 1), h(x) = 1,
A(λ) = log Γ(a) + log Γ(b) − log Γ(a + b),
E[t] = (ψ(a) − ψ(a + b), ψ(b) − ψ(a + b)).  This is the K = 2 Dirichlet, so
``to_natural`` reuses ``solve_dirichlet``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy.special import betaln, digamma

from .base import ExponentialFamily, Marginal, leading
from .dirichlet import solve_dirichlet


@dataclass(frozen=True)
class Beta(ExponentialFamily):
    """Beta(x | a, b); flat size 2."""

    name: ClassVar[str] = "Beta"
    support: ClassVar[str] = "unit_interval"
    arg_constraints: ClassVar = MappingProxyType({"a": "positive", "b": "positive"})

    @property
    def size(self) -> int:
        return 2

    def natural(self, *, a, b) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(a, float), np.asarray(b, float))
        return np.stack([a - 1.0, b - 1.0], axis=-1)

    def params(self, nat) -> dict:
        nat = np.asarray(nat, float)
        return {"a": nat[..., 0] + 1.0, "b": nat[..., 1] + 1.0}

    def log_partition(self, nat) -> np.ndarray:
        p = self.params(nat)
        return betaln(p["a"], p["b"])

    def to_mean(self, nat) -> np.ndarray:
        p = self.params(nat)
        dab = digamma(p["a"] + p["b"])
        return np.stack([digamma(p["a"]) - dab, digamma(p["b"]) - dab], axis=-1)

    def to_natural(self, mean) -> np.ndarray:
        """Damped Newton solve shared with the Dirichlet (``solve_dirichlet``)."""
        return solve_dirichlet(mean) - 1.0

    def expected_log(self, nat) -> np.ndarray:
        """(E[log x], E[log(1 − x)])."""
        return self.to_mean(nat)

    def stats(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        return np.stack([np.log(x), np.log1p(-x)], axis=-1)

    def log_base(self, x) -> np.ndarray:
        return np.zeros(np.shape(x))

    def expected_log_base(self, nat) -> np.ndarray:
        return np.zeros(np.shape(nat)[:-1])

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        p = self.params(nat)
        return rng.beta(p["a"], p["b"], size=leading(n) + p["a"].shape)

    def mean(self, nat) -> np.ndarray:
        p = self.params(nat)
        return p["a"] / (p["a"] + p["b"])

    def sd(self, nat) -> np.ndarray:
        p = self.params(nat)
        a, b = p["a"], p["b"]
        return np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1.0)))

    def _marginal(self, nat):
        p = self.params(nat)
        return Marginal("beta", p["a"], p["b"])

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        return np.all(np.isfinite(nat) & (nat > -1.0), axis=-1)
