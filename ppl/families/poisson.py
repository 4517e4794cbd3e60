"""Poisson distribution on the non-negative integers.

t(x) = x, λ = log rate (flat size 1), log h(x) = −log x!,
A(λ) = e^λ, E[t] = e^λ.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy.special import gammaln

from .base import ExponentialFamily, leading, scipy_stats


@dataclass(frozen=True)
class Poisson(ExponentialFamily):
    """Poi(x | rate); natural parameter the log rate."""

    name: ClassVar[str] = "Poisson"
    support: ClassVar[str] = "nonnegative_integer"
    arg_constraints: ClassVar = MappingProxyType({"rate": "positive"})

    @property
    def size(self) -> int:
        return 1

    def natural(self, *, rate) -> np.ndarray:
        return np.log(np.asarray(rate, float))[..., None]

    def params(self, nat) -> dict:
        return {"rate": np.exp(np.asarray(nat, float)[..., 0])}

    def log_partition(self, nat) -> np.ndarray:
        return np.exp(np.asarray(nat, float)[..., 0])

    def to_mean(self, nat) -> np.ndarray:
        return np.exp(np.asarray(nat, float))

    def to_natural(self, mean) -> np.ndarray:
        return np.log(np.asarray(mean, float))

    def stats(self, x) -> np.ndarray:
        return np.asarray(x, float)[..., None]

    def log_base(self, x) -> np.ndarray:
        return -gammaln(np.asarray(x, float) + 1.0)

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        rate = self.params(nat)["rate"]
        return rng.poisson(rate, size=leading(n) + rate.shape)

    def mean(self, nat) -> np.ndarray:
        return self.params(nat)["rate"]

    def sd(self, nat) -> np.ndarray:
        return np.sqrt(self.params(nat)["rate"])

    def _marginal(self, nat):
        return scipy_stats().poisson(self.params(nat)["rate"])

    def valid(self, nat) -> np.ndarray:
        return np.isfinite(np.asarray(nat, float)[..., 0])
