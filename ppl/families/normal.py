"""Univariate normal in mean / precision form.

t(x) = (x, x²), λ = (τm, −τ/2) with τ the precision, log h(x) = −½ log 2π,
A(λ) = τm²/2 − ½ log τ = −λ₁²/(4λ₂) − ½ log(−2λ₂).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from .base import ExponentialFamily, Marginal, leading, stack_last

_LOG_2PI = np.log(2.0 * np.pi)


@dataclass(frozen=True)
class Normal(ExponentialFamily):
    """N(x | m, τ⁻¹); natural layout (τm, −τ/2), statistics (x, x²)."""

    name: ClassVar[str] = "Normal"
    support: ClassVar[str] = "real"
    arg_constraints: ClassVar = MappingProxyType({"mean": "real", "precision": "positive"})

    @property
    def size(self) -> int:
        return 2

    def natural(self, *, mean, precision) -> np.ndarray:
        mean, tau = np.asarray(mean, float), np.asarray(precision, float)
        if mean.shape != tau.shape:  # (np.broadcast_arrays costs a dozen Python calls)
            mean, tau = np.broadcast_arrays(mean, tau)
        return stack_last(tau * mean, -0.5 * tau)

    def params(self, nat) -> dict:
        nat = np.asarray(nat, float)
        tau = -2.0 * nat[..., 1]
        return {"mean": nat[..., 0] / tau, "precision": tau}

    def log_partition(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        l1, l2 = nat[..., 0], nat[..., 1]
        return -(l1**2) / (4.0 * l2) - 0.5 * np.log(-2.0 * l2)

    def to_mean(self, nat) -> np.ndarray:
        p = self.params(nat)
        return _moments(p["mean"], p["precision"])

    def to_natural(self, mean) -> np.ndarray:
        mean = np.asarray(mean, float)
        m = mean[..., 0]
        return self.natural(mean=m, precision=1.0 / (mean[..., 1] - m**2))

    def stats(self, x) -> np.ndarray:
        x = np.asarray(x, float)
        return stack_last(x, x**2)

    def log_base(self, x) -> np.ndarray:
        return np.full(np.shape(x), -0.5 * _LOG_2PI)

    def expected_log_base(self, nat) -> np.ndarray:
        return np.full(np.shape(nat)[:-1], -0.5 * _LOG_2PI)

    def entropy(self, nat) -> np.ndarray:
        """½(1 + log 2π) − ½ log τ."""
        return _entropy(self.params(nat)["precision"])

    def moments_and_entropy(self, nat) -> tuple:
        """(`to_mean`, `entropy`) from one `params`: a state needs both of each q once a sweep."""
        p = self.params(nat)
        return _moments(p["mean"], p["precision"]), _entropy(p["precision"])

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        p = self.params(nat)
        shape = leading(n) + p["mean"].shape
        return p["mean"] + rng.standard_normal(shape) / np.sqrt(p["precision"])

    def mean(self, nat) -> np.ndarray:
        return self.params(nat)["mean"]

    def sd(self, nat) -> np.ndarray:
        return 1.0 / np.sqrt(self.params(nat)["precision"])

    def _marginal(self, nat):
        return Marginal("normal", self.mean(nat), self.sd(nat))

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        return np.isfinite(nat).all(axis=-1) & (nat[..., 1] < 0)


def _moments(m, tau) -> np.ndarray:
    """(E[x], E[x²]) = (m, m² + 1/τ)."""
    return stack_last(m, m**2 + 1.0 / tau)


def _entropy(tau) -> np.ndarray:
    """½(1 + log 2π) − ½ log τ."""
    return 0.5 * (1.0 + _LOG_2PI) - 0.5 * np.log(tau)
