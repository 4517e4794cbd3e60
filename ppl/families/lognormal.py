"""Log-normal: τ = e^u with u ~ N(m, s), the q of a Gamma precision that joins a Gaussian block
through its logarithm (ppl.infer.factors.block_log).

The natural parameters are those of u's Normal, (m/s, −1/(2s)), so the block hands a member
its marginal exactly as it does a Normal member; only the summaries are of τ:
E[τ] = e^{m + s/2}, sd[τ] = E[τ] √(e^s − 1), draws e^u, quantiles e^{quantile of u}.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from .base import Marginal
from .normal import Normal


@dataclass(frozen=True)
class LogNormal(Normal):
    """τ = e^u, u ~ N(m, 1/precision); natural layout of u's Normal, statistics (log τ, (log τ)²)."""

    name: ClassVar[str] = "LogNormal"
    support: ClassVar[str] = "positive"

    def stats(self, x) -> np.ndarray:
        return super().stats(np.log(np.asarray(x, float)))

    def log_base(self, x) -> np.ndarray:
        return super().log_base(x) - np.log(np.asarray(x, float))

    def expected_log_base(self, nat) -> np.ndarray:
        return super().expected_log_base(nat) - self.params(nat)["mean"]

    def entropy(self, nat) -> np.ndarray:
        """H[τ] = H[u] + E[u]."""
        return super().entropy(nat) + self.params(nat)["mean"]

    def moments_and_entropy(self, nat) -> tuple:
        """u's (`to_mean`, `entropy`), H[τ] = H[u] + E[u] as `entropy` takes it."""
        moments, entropy = super().moments_and_entropy(nat)
        return moments, entropy + self.params(nat)["mean"]

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        return np.exp(super().sample(nat, rng, n))

    def mean(self, nat) -> np.ndarray:
        p = self.params(nat)
        return np.exp(p["mean"] + 0.5 / p["precision"])

    def sd(self, nat) -> np.ndarray:
        return self.mean(nat) * np.sqrt(np.expm1(1.0 / self.params(nat)["precision"]))

    def quantiles(self, nat, qs) -> np.ndarray:
        return np.exp(super().quantiles(nat, qs))

    def _marginal(self, nat):
        """u's Normal (`quantiles` exponentiates its quantiles)."""
        p = self.params(nat)
        return Marginal("normal", p["mean"], 1.0 / np.sqrt(p["precision"]))
