"""Categorical distribution over codes 0..K−1 (one-hot statistics).

t(x) = one-hot(x), λ = log-probabilities up to an additive constant
(overcomplete), h(x) = 1, A(λ) = logsumexp(λ), E[t] = softmax(λ).
λ_k = −∞ encodes a zero-probability category.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from scipy.special import logsumexp, softmax

from .base import ExponentialFamily, leading, qs_column, require_count


def xlogy0(p, logp):
    """p · log p with the convention 0 · log 0 = 0 (also 0 · −∞ = 0)."""
    with np.errstate(invalid="ignore"):
        return np.where(p > 0, p * logp, 0.0)


@dataclass(frozen=True)
class Categorical(ExponentialFamily):
    """Cat(x | p) with K categories; values are integer codes, flat size K.

    Because λ is overcomplete, ``to_natural`` returns the normalised
    representative log p (A = 0); λ and λ + c describe the same law.
    """

    k: int

    name: ClassVar[str] = "Categorical"
    support: ClassVar[str] = "integer_interval(0, k - 1)"
    arg_constraints: ClassVar = MappingProxyType({"probs": "simplex"})

    def __post_init__(self):
        require_count("Categorical", "k", self.k, 2)

    @property
    def size(self) -> int:
        return self.k

    def natural(self, *, probs) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(np.asarray(probs, float))

    def params(self, nat) -> dict:
        return {"probs": self.to_mean(nat)}

    def log_partition(self, nat) -> np.ndarray:
        return logsumexp(np.asarray(nat, float), axis=-1)

    def to_mean(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        e = nat - np.max(nat, axis=-1, keepdims=True)  # numpy's, ~2x faster than scipy's; one
        np.exp(e, out=e)  # array written in place (a mixture's N × K: no second and third)
        e /= np.sum(e, axis=-1, keepdims=True)
        return e

    def to_natural(self, mean) -> np.ndarray:
        return self.natural(probs=mean)

    def log_probs(self, nat) -> np.ndarray:
        """Normalised log-probabilities λ − A(λ)."""
        nat = np.asarray(nat, float)
        return nat - self.log_partition(nat)[..., None]

    def stats(self, x) -> np.ndarray:
        x = np.asarray(x)
        return (x[..., None] == np.arange(self.k)).astype(float)

    def log_base(self, x) -> np.ndarray:
        return np.zeros(np.shape(x))

    def expected_log_base(self, nat) -> np.ndarray:
        return np.zeros(np.shape(nat)[:-1])

    def entropy_of_mean(self, probs) -> np.ndarray:
        """−Σ_k p_k log p_k from the probabilities themselves (no log-partition to recompute)."""
        with np.errstate(divide="ignore"):
            return -np.sum(xlogy0(probs, np.log(probs)), axis=-1)

    def entropy(self, nat) -> np.ndarray:
        """−Σ_k p_k log p_k."""
        logp = self.log_probs(nat)
        return -np.sum(xlogy0(np.exp(logp), logp), axis=-1)

    def kl(self, nat_q, nat_p) -> np.ndarray:
        """Σ_k q_k (log q_k − log p_k); +∞ if q puts mass where p has none."""
        logq, logp = self.log_probs(nat_q), self.log_probs(nat_p)
        q = np.exp(logq)
        with np.errstate(invalid="ignore"):
            terms = np.where(q > 0, q * (logq - logp), 0.0)
        return np.sum(terms, axis=-1)

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        """Inverse-CDF draws; returns integer codes of shape leading(n) + plates."""
        cdf = np.cumsum(self.to_mean(nat), axis=-1)
        u = rng.random(leading(n) + cdf.shape[:-1] + (1,))
        return np.minimum(np.sum(cdf < u, axis=-1), self.k - 1)

    def mean(self, nat) -> np.ndarray:
        """Category probabilities, shape plates + (K,)."""
        return self.to_mean(nat)

    def sd(self, nat) -> np.ndarray:
        """√(p(1 − p)) per category (indicator standard deviations)."""
        return indicator_sd(self.to_mean(nat))

    def quantiles(self, nat, qs) -> np.ndarray:
        """Quantiles of the code: smallest k with CDF(k) ≥ q; shape (len(qs),) + plates."""
        cdf = np.cumsum(self.to_mean(nat), axis=-1)
        q = qs_column(qs, cdf.ndim)
        return np.minimum(np.sum(cdf < q, axis=-1), self.k - 1)

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        ok = ~np.isnan(nat) & (nat < np.inf)
        return np.all(ok, axis=-1) & np.any(np.isfinite(nat), axis=-1)


FEW = 8  # categories up to which `indicator_sd` adds its columns one at a time


def indicator_sd(p) -> np.ndarray:
    """√(p_k (1 − p_k)) for category probabilities p (last axis), with 1 − p_k summed from the other
    categories rather than subtracted from 1: a near-certain category (p_k = 1 − 1e-17, stored as 1)
    keeps the sd √(1e-17) of its indicator instead of 0."""
    p = np.asarray(p, dtype=float)
    return np.sqrt(p * (_others_by_columns(p) if p.shape[-1] <= FEW else _others(p)))


def _others(p: np.ndarray) -> np.ndarray:
    """Σ_{j≠k} p_j as Σ_{j<k} (left to right) + Σ_{j>k} (right to left), never 1 − p_k."""
    zero = np.zeros(p.shape[:-1] + (1,))
    before = np.concatenate([zero, np.cumsum(p[..., :-1], axis=-1)], -1)
    after = np.concatenate([np.flip(np.cumsum(np.flip(p[..., 1:], -1), axis=-1), -1), zero], -1)
    return before + after


def _others_by_columns(p: np.ndarray) -> np.ndarray:
    """`_others`' sums added column by column (the cumulative sums' order, so the same numbers): a
    few categories cost 2K numpy calls, where cumsum over a short last axis and the flips cost more
    (26 µs against 8 for 300 rows of 3)."""
    k = p.shape[-1]
    before, after = [0.0] * k, [0.0] * k
    for j in range(1, k):
        before[j] = p[..., 0] if j == 1 else before[j - 1] + p[..., j - 1]
    for j in range(k - 2, -1, -1):
        after[j] = p[..., k - 1] if j == k - 2 else after[j + 1] + p[..., j + 1]
    out = np.empty(p.shape)
    for j in range(k):
        np.add(before[j], after[j], out=out[..., j])
    return out
