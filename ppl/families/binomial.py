"""Binomial distribution with a fixed number of trials per plate element.

t(x) = x, λ = logit p (flat size 1), log h(x) = log C(n, x),
A(λ) = n log(1 + e^λ), E[t] = n σ(λ).  ``trials`` broadcasts against the
plates, so results have the broadcast plate shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy.special import expit, gammaln, log_expit, logit

from .base import ExponentialFamily, as_trials, leading, scipy_stats


@dataclass(frozen=True, eq=False)
class Binomial(ExponentialFamily):
    """Bin(x | n, p); ``trials`` (n) is a non-negative integer array.

    Equality is identity (``eq=False``) because ``trials`` is an array.
    """

    trials: np.ndarray

    name: ClassVar[str] = "Binomial"
    support: ClassVar[str] = "integer_interval(0, trials)"
    arg_constraints: ClassVar = MappingProxyType({"p": "unit_interval"})

    def __post_init__(self):
        object.__setattr__(self, "trials", as_trials(self.trials, "Binomial"))

    @property
    def size(self) -> int:
        return 1

    def natural(self, *, p) -> np.ndarray:
        return logit(np.asarray(p, float))[..., None]

    def params(self, nat) -> dict:
        return {"p": expit(np.asarray(nat, float)[..., 0])}

    def log_partition(self, nat) -> np.ndarray:
        return -self.trials * log_expit(-np.asarray(nat, float)[..., 0])

    def to_mean(self, nat) -> np.ndarray:
        return self.trials[..., None] * expit(np.asarray(nat, float))

    def to_natural(self, mean) -> np.ndarray:
        return logit(np.asarray(mean, float) / self.trials[..., None])

    def stats(self, x) -> np.ndarray:
        return np.asarray(x, float)[..., None]

    def log_base(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        n = self.trials
        return gammaln(n + 1.0) - gammaln(x + 1.0) - gammaln(n - x + 1.0)

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        p = self.params(nat)["p"]
        shape = leading(n) + np.broadcast_shapes(p.shape, self.trials.shape)
        return rng.binomial(self.trials, p, size=shape)

    def mean(self, nat) -> np.ndarray:
        return self.trials * self.params(nat)["p"]

    def sd(self, nat) -> np.ndarray:
        p = self.params(nat)["p"]
        return np.sqrt(self.trials * p * (1.0 - p))

    def _marginal(self, nat):
        return scipy_stats().binom(self.trials, self.params(nat)["p"])

    def valid(self, nat) -> np.ndarray:
        return np.isfinite(np.asarray(nat, float)[..., 0])
