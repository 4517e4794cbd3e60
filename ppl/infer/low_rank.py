"""Messages to a Gaussian vector kept in data space, so that its update can use Woodbury.

A contraction `X @ w` over N rows sends w the message Σ_n (h_n x_n, vec(−½ τ_n x_n x_nᵀ)): a
precision of rank N. Summed densely it costs a D × D inverse per update, O(D³); kept as its
rows (X, h, τ) next to the node's other, dense messages it can be solved in the N-dimensional
data space instead (`MvNormal.solve_low_rank`), O(N²D + ND²) — the Bayesian linear regression
of CVI's site form done the cheap way round when D > N (Khan & Lin App. E.1).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.rows import weighted_gram


class GaussianSum:
    """A dense natural parameter plus low-rank parts (rows R (N, D), h (N,), τ (N,)), each
    meaning (Rᵀh, vec(−½ Rᵀ diag(τ) R)). Adds like an array; `dense` makes it one."""

    __array_ufunc__ = None  # ndarray + GaussianSum → GaussianSum.__radd__

    def __init__(self, dense=0.0, parts=()):
        self.dense_part, self.parts = dense, tuple(parts)

    def __add__(self, other):
        if not isinstance(other, GaussianSum):
            return GaussianSum(self.dense_part + other, self.parts)
        parts = list(self.parts)
        for rows, h, tau in other.parts:  # parts on the same rows merge: a damped step keeps rank N
            same = next((i for i, p in enumerate(parts) if _same_array(p[0], rows)), None)
            if same is None:
                parts.append((rows, h, tau))
            else:
                parts[same] = (rows, parts[same][1] + h, parts[same][2] + tau)
        return GaussianSum(self.dense_part + other.dense_part, parts)

    __radd__ = __add__

    def scaled(self, factor: float) -> "GaussianSum":
        """factor × the sum, still factored: the damped update (1 − β)λ + β·Σ messages."""
        return GaussianSum(factor * self.dense_part, [(rows, factor * h, factor * tau) for rows, h, tau in self.parts])

    def dense(self) -> np.ndarray:
        total = self.dense_part
        for rows, h, tau in self.parts:
            total = total + np.concatenate([rows.T @ h, (-0.5 * weighted_gram(rows, tau)).reshape(-1)])[None, :]
        return total

    def solve(self, family):
        """(natural, moments, entropy, self) by Woodbury when the parts have fewer rows than the
        dimension and the dense part is a diagonal precision; None otherwise (solve densely)."""
        if not self.parts or np.ndim(self.dense_part) != 2:
            return None
        if sum(len(p[0]) for p in self.parts) >= family.dim:
            return None
        rows = np.concatenate([p[0] for p in self.parts])
        h, tau = (np.concatenate([p[k] for p in self.parts]) for k in (1, 2))
        solved = family.solve_low_rank(self.dense_part, rows, h, tau)
        return None if solved is None else (self.dense(),) + solved + (self,)


def _same_array(a, b) -> bool:
    """The same rows in memory (the data of one contraction, met again in a later sweep)."""
    return a.shape == b.shape and a.strides == b.strides and \
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
