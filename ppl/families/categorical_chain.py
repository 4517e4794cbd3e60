"""A discrete Markov chain q(z[1..T]) over K states: one q for a whole hidden state sequence.

Per element t the statistics are t(z)_t = (onehot(z_t), onehot(z_{t−1}) ⊗ onehot(z_t)) (the
pair block is 0 at the first element of each sequence), K + K² numbers, and the natural
parameters λ_t = (u_t, P_t) give

    log q(z) = Σ_t u_t[z_t] + Σ_{t not first} P_t[z_{t−1}, z_t] − A(λ),

A(λ) = Σ_sequences log Z_s. The mean parameters are the marginals γ_t and the pairwise
marginals ξ_t[i, j] = q(z_{t−1} = i, z_t = j), by forward–backward (forward_backward.py).
The elements are the rows of the data, each sequence a contiguous run of them (`lengths`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from . import forward_backward as fb
from .base import ExponentialFamily, dot_last, leading, qs_column, require_count
from .categorical import indicator_sd
from .chain_sampling import sample


@dataclass(frozen=True)
class CategoricalChain(ExponentialFamily):
    """q(z) of S chains with K states; `lengths` the length of each, in row order."""

    k: int
    lengths: tuple

    name: ClassVar[str] = "CategoricalChain"
    rowwise: ClassVar[bool] = False
    support: ClassVar[str] = "integer_interval(0, k - 1)"
    arg_constraints: ClassVar = MappingProxyType({"unary": "real", "pair": "real"})

    def __post_init__(self):
        require_count("CategoricalChain", "k", self.k, 2)

    @property
    def size(self) -> int:
        return self.k + self.k * self.k

    # -- the layout of forward_backward.py -----------------------------------------
    @cached_property
    def _chains(self) -> fb.Chains:
        return fb.Chains.of(self.lengths)

    def starts(self) -> np.ndarray:
        """Boolean per element: the first row of a sequence."""
        return self._chains.starts

    def _solve(self, nat):
        """(mean (T, K + K²), log Z per sequence)."""
        return fb.forward_backward(np.asarray(nat, float), self.k, self._chains)

    def solve(self, nat):
        """(E[t(z)], H[q]) from one forward–backward: H = log Z − λ·E[t(z)]."""
        mean, log_z = self._solve(nat)
        return mean, float(log_z.sum() - _potential(mean, np.asarray(nat, float)))

    # -- parameter maps -------------------------------------------------------------
    def natural(self, *, unary, pair) -> np.ndarray:
        """λ from log-potentials: unary (T, K), pair (T, K, K) on (z_{t−1}, z_t)."""
        unary = np.asarray(unary, float)
        pair = np.broadcast_to(np.asarray(pair, float), unary.shape[:-1] + (self.k, self.k))
        return np.concatenate([unary, pair.reshape(unary.shape[:-1] + (-1,))], axis=-1)

    def params(self, nat) -> dict:
        nat = np.asarray(nat, float)
        return {"unary": nat[..., : self.k], "pair": nat[..., self.k:].reshape(nat.shape[:-1] + (self.k, self.k))}

    def log_partition(self, nat) -> np.ndarray:
        """log Z of each sequence, shape (S,)."""
        return self._solve(nat)[1]

    def to_mean(self, nat) -> np.ndarray:
        return self._solve(nat)[0]

    def to_natural(self, mean) -> np.ndarray:
        """log ξ_t − log γ_{t−1} (the conditionals q(z_t | z_{t−1})) and log γ_1 at starts: a chain
        with the given marginals (its log Z is 0)."""
        mean = np.asarray(mean, float)
        gamma = mean[:, : self.k]
        xi = mean[:, self.k:].reshape(-1, self.k, self.k)
        with np.errstate(divide="ignore", invalid="ignore"):
            unary = np.where(self.starts()[:, None], np.log(gamma), 0.0)
            previous = np.roll(gamma, 1, axis=0)[:, :, None]
            pair = np.where(self.starts()[:, None, None], 0.0, np.log(xi) - np.log(previous))
        return self.natural(unary=unary, pair=np.nan_to_num(pair, nan=-np.inf))

    # -- values -------------------------------------------------------------------
    def stats(self, z) -> np.ndarray:
        z = np.asarray(z)
        one = (z[..., None] == np.arange(self.k)).astype(float)
        before = np.roll(one, 1, axis=-2)
        pair = before[..., :, None] * one[..., None, :]
        pair[..., self.starts(), :, :] = 0.0
        return np.concatenate([one, pair.reshape(one.shape[:-1] + (-1,))], axis=-1)

    def log_base(self, z) -> np.ndarray:
        return np.zeros(np.shape(z))

    def expected_log_base(self, nat) -> np.ndarray:
        return np.zeros(np.shape(nat)[:-1])

    def entropy(self, nat) -> np.ndarray:
        """H[q] of each sequence: log Z_s − Σ_{t in s} λ_t · E[t(z)_t]."""
        mean, log_z = self._solve(nat)
        return log_z - np.add.reduceat(dot_last(mean, nat), self._chains.firsts)

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        """Joint draws of every sequence (FFBS): integer codes, shape leading(n) + (T,)."""
        draws = sample(np.asarray(nat, float), self.k, self._chains, rng, 1 if n is None else n)
        return draws[0] if n is None else draws.reshape(leading(n) + draws.shape[1:])

    def mean(self, nat) -> np.ndarray:
        """The marginals q(z_t = k), shape (T, K)."""
        return self.to_mean(nat)[..., : self.k]

    def sd(self, nat) -> np.ndarray:
        return self.location_of_moments(self.to_mean(nat))[1]

    def location_of_moments(self, mean) -> tuple:
        """(mean, sd) of the one-hot z_t from E[t(z)] (a state's cached moments): no forward–backward."""
        p = np.asarray(mean)[..., : self.k]
        return p, indicator_sd(p)

    def quantiles(self, nat, qs) -> np.ndarray:
        cdf = np.cumsum(self.mean(nat), axis=-1)
        return np.minimum(np.sum(cdf < qs_column(qs, cdf.ndim), axis=-1), self.k - 1)

    def valid(self, nat) -> np.ndarray:
        """Per element: no NaN or +∞, and some state possible. Every λ finite: all, by one test of
        the whole array (the row tests over a short last axis cost 15 µs at 300 rows)."""
        nat = np.asarray(nat, float)
        if np.isfinite(nat).all():
            return np.ones(nat.shape[:-1], dtype=bool)
        return ~np.any(np.isnan(nat) | (nat == np.inf), axis=-1) & np.any(np.isfinite(nat[:, : self.k]), axis=-1)


def _potential(mean: np.ndarray, nat: np.ndarray) -> float:
    """Σ λ·E[t(z)] over every element (the pair block is 0 at sequence starts), one dot product;
    element by element only if it met 0 · (−∞), a state or move of probability 0, which counts 0."""
    total = np.vdot(mean, nat)
    return float(total) if np.isfinite(total) else float(np.sum(dot_last(mean, nat)))
