"""Exponential distribution on the positive reals.

t(x) = x, λ = −rate (flat size 1), h(x) = 1,
A(λ) = −log(−λ), E[t] = −1/λ = 1/rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from .base import ExponentialFamily, leading, scipy_stats


@dataclass(frozen=True)
class Exponential(ExponentialFamily):
    """Exp(x | rate); natural parameter −rate."""

    name: ClassVar[str] = "Exponential"
    support: ClassVar[str] = "positive"
    arg_constraints: ClassVar = MappingProxyType({"rate": "positive"})

    @property
    def size(self) -> int:
        return 1

    def natural(self, *, rate) -> np.ndarray:
        return -np.asarray(rate, float)[..., None]

    def params(self, nat) -> dict:
        return {"rate": -np.asarray(nat, float)[..., 0]}

    def log_partition(self, nat) -> np.ndarray:
        return -np.log(-np.asarray(nat, float)[..., 0])

    def to_mean(self, nat) -> np.ndarray:
        return -1.0 / np.asarray(nat, float)

    def to_natural(self, mean) -> np.ndarray:
        return -1.0 / np.asarray(mean, float)

    def stats(self, x) -> np.ndarray:
        return np.asarray(x, float)[..., None]

    def log_base(self, x) -> np.ndarray:
        return np.zeros(np.shape(x))

    def expected_log_base(self, nat) -> np.ndarray:
        return np.zeros(np.shape(nat)[:-1])

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        rate = self.params(nat)["rate"]
        return rng.exponential(1.0 / rate, size=leading(n) + rate.shape)

    def mean(self, nat) -> np.ndarray:
        return 1.0 / self.params(nat)["rate"]

    def sd(self, nat) -> np.ndarray:
        return 1.0 / self.params(nat)["rate"]

    def _marginal(self, nat):
        return scipy_stats().expon(scale=1.0 / self.params(nat)["rate"])

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)[..., 0]
        return np.isfinite(nat) & (nat < 0)
