"""Multinomial distribution over count vectors with K categories.

t(x) = counts x, λ = log-probabilities up to an additive constant
(overcomplete, flat size K), log h(x) = log n! − Σ_k log x_k!,
A(λ) = n logsumexp(λ), E[t] = n softmax(λ).  ``trials`` (n) broadcasts
against the plates.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy.special import gammaln, logsumexp, softmax

from .base import ExponentialFamily, as_trials, leading, require_count, scipy_stats


@dataclass(frozen=True, eq=False)
class Multinomial(ExponentialFamily):
    """Mult(x | n, p).  ``to_natural`` returns the normalised log p (needs n > 0).

    Equality is identity (``eq=False``) because ``trials`` is an array.
    """

    k: int
    trials: np.ndarray

    name: ClassVar[str] = "Multinomial"
    support: ClassVar[str] = "multinomial(trials)"
    arg_constraints: ClassVar = MappingProxyType({"probs": "simplex"})

    def __post_init__(self):
        require_count("Multinomial", "k", self.k, 2)
        object.__setattr__(self, "trials", as_trials(self.trials, "Multinomial"))

    @property
    def event_shape(self) -> tuple:
        return (self.k,)

    @property
    def size(self) -> int:
        return self.k

    def natural(self, *, probs) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(probs, float))

    def params(self, nat) -> dict:
        return {"probs": softmax(np.asarray(nat, float), axis=-1)}

    def log_partition(self, nat) -> np.ndarray:
        return self.trials * logsumexp(np.asarray(nat, float), axis=-1)

    def to_mean(self, nat) -> np.ndarray:
        return self.trials[..., None] * self.params(nat)["probs"]

    def to_natural(self, mean) -> np.ndarray:
        return self.natural(probs=np.asarray(mean, float) / self.trials[..., None])

    def stats(self, x) -> np.ndarray:
        return np.asarray(x, float)

    def log_base(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        return gammaln(self.trials + 1.0) - np.sum(gammaln(x + 1.0), axis=-1)

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        p = self.params(nat)["probs"]
        plates = np.broadcast_shapes(p.shape[:-1], self.trials.shape)
        return rng.multinomial(self.trials, p, size=leading(n) + plates)

    def mean(self, nat) -> np.ndarray:
        return self.to_mean(nat)

    def sd(self, nat) -> np.ndarray:
        """Marginals are Binomial(n, p_k)."""
        p = self.params(nat)["probs"]
        return np.sqrt(self.trials[..., None] * p * (1.0 - p))

    def _marginal(self, nat):
        return scipy_stats().binom(self.trials[..., None], self.params(nat)["probs"])

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        ok = ~np.isnan(nat) & (nat < np.inf)
        return np.all(ok, axis=-1) & np.any(np.isfinite(nat), axis=-1)
