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
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from . import forward_backward as fb
from .base import ExponentialFamily, dot_last, leading, qs_column, require_count


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

    # -- the padded layout of forward_backward.py ----------------------------------
    def _rows(self):
        """(S, L) row index of step τ of sequence s (−1 past its end), and the lengths."""
        lengths = np.asarray(self.lengths, dtype=np.int64)
        steps = np.arange(lengths.max())
        rows = (np.cumsum(lengths) - lengths)[:, None] + steps
        return np.where(steps < lengths[:, None], rows, -1), lengths

    def starts(self) -> np.ndarray:
        """Boolean per element: the first row of a sequence."""
        first = np.zeros(int(np.sum(self.lengths)), dtype=bool)
        first[np.cumsum(self.lengths) - np.asarray(self.lengths)] = True
        return first

    def _padded(self, nat):
        nat = np.asarray(nat, float)
        rows, lengths = self._rows()
        padded = np.where((rows >= 0)[..., None], nat[np.maximum(rows, 0)], 0.0)
        unary = padded[..., : self.k]
        pair = padded[..., self.k:].reshape(padded.shape[:2] + (self.k, self.k))
        return unary, pair, rows, lengths

    def _solve(self, nat):
        """(mean (T, K + K²), log Z per sequence)."""
        unary, pair, rows, lengths = self._padded(nat)
        marginals, pairwise, log_z = fb.forward_backward(unary, pair, lengths)
        inside = rows >= 0
        mean = np.empty((int(lengths.sum()), self.size))
        mean[rows[inside], : self.k] = marginals[inside]
        mean[rows[inside], self.k:] = pairwise[inside].reshape(-1, self.k * self.k)
        return mean, log_z

    def solve(self, nat):
        """(E[t(z)], H[q]) from one forward–backward: H = log Z − λ·E[t(z)]."""
        mean, log_z = self._solve(nat)
        return mean, float(np.sum(log_z) - np.sum(self._potential(nat, mean)))

    def _potential(self, nat, mean):
        """λ_t · E[t(z)_t] per element, the pair block left out at sequence starts."""
        nat = np.array(nat, float)
        nat[self.starts(), self.k:] = 0.0
        return dot_last(mean, nat)

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
        per_element = self._potential(nat, mean)
        sequence = np.repeat(np.arange(len(self.lengths)), self.lengths)
        return log_z - np.bincount(sequence, per_element, minlength=len(self.lengths))

    def sample(self, nat, rng: np.random.Generator, n: int | None = None):
        """Joint draws of every sequence (FFBS): integer codes, shape leading(n) + (T,)."""
        unary, pair, rows, lengths = self._padded(nat)
        draws = fb.sample(unary, pair, lengths, rng, 1 if n is None else n)
        out = np.empty((draws.shape[0], int(lengths.sum())), dtype=np.int64)
        inside = rows >= 0
        out[:, rows[inside]] = draws[:, inside]
        return out[0] if n is None else out.reshape(leading(n) + out.shape[1:])

    def mean(self, nat) -> np.ndarray:
        """The marginals q(z_t = k), shape (T, K)."""
        return self.to_mean(nat)[..., : self.k]

    def sd(self, nat) -> np.ndarray:
        p = self.mean(nat)
        return np.sqrt(p * (1.0 - p))

    def quantiles(self, nat, qs) -> np.ndarray:
        cdf = np.cumsum(self.mean(nat), axis=-1)
        return np.minimum(np.sum(cdf < qs_column(qs, cdf.ndim), axis=-1), self.k - 1)

    def valid(self, nat) -> np.ndarray:
        nat = np.asarray(nat, float)
        return ~np.any(np.isnan(nat) | (nat == np.inf), axis=-1) & np.any(np.isfinite(nat[:, : self.k]), axis=-1)
