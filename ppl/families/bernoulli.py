"""Bernoulli distribution on {0, 1}.

t(x) = x, λ = logit p (flat size 1), h(x) = 1,
A(λ) = log(1 + e^λ), E[t] = σ(λ).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy.special import expit, log_expit, logit

from .base import ExponentialFamily, leading, scipy_stats


@dataclass(frozen=True)
class Bernoulli(ExponentialFamily):
    """Bern(x | p); values 0/1, natural parameter the logit."""

    name: ClassVar[str] = "Bernoulli"
    support: ClassVar[str] = "boolean"
    arg_constraints: ClassVar = MappingProxyType({"p": "unit_interval"})

    @property
    def size(self) -> int:
        return 1

    def natural(self, *, p) -> np.ndarray:
        return logit(np.asarray(p, float))[..., None]

    def params(self, nat) -> dict:
        return {"p": expit(np.asarray(nat, float)[..., 0])}

    def log_partition(self, nat) -> np.ndarray:
        return -log_expit(-np.asarray(nat, float)[..., 0])

    def to_mean(self, nat) -> np.ndarray:
        return expit(np.asarray(nat, float))

    def to_natural(self, mean) -> np.ndarray:
        return logit(np.asarray(mean, float))

    def stats(self, x) -> np.ndarray:
        return np.asarray(x, float)[..., None]

    def log_base(self, x) -> np.ndarray:
        return np.zeros(np.shape(x))

    def expected_log_base(self, nat) -> np.ndarray:
        return np.zeros(np.shape(nat)[:-1])

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        p = self.params(nat)["p"]
        return (rng.random(leading(n) + p.shape) < p).astype(np.int64)

    def mean(self, nat) -> np.ndarray:
        return self.params(nat)["p"]

    def sd(self, nat) -> np.ndarray:
        p = self.params(nat)["p"]
        return np.sqrt(p * (1.0 - p))

    def _marginal(self, nat):
        return scipy_stats().bernoulli(self.params(nat)["p"])

    def valid(self, nat) -> np.ndarray:
        return np.isfinite(np.asarray(nat, float)[..., 0])
