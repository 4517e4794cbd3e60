"""The layout of several discrete chains held one after another in rows (`Chains`), and the
small pieces every forward–backward pass over them shares: the potentials of `nat`, a shift that
is 0 where a maximum is not finite, and time-major arrays put back in row order."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Chains:
    """Chains of `lengths` held in consecutive rows, laid out time-major for the recursions:
    `index` (L, S) the row of step t of the s-th longest chain (0 past its end), `active[t]` the
    number of chains longer than t (the first ones), `position` (T,) each row's flat place in
    (L, S), `starts` (T,) the first rows and `firsts` (S,) their indices."""

    index: np.ndarray
    active: tuple
    position: np.ndarray
    starts: np.ndarray
    firsts: np.ndarray
    spare: dict = field(default_factory=dict, compare=False, repr=False)  # K -> `_Buffers` not in use

    def __getstate__(self):
        """Pickled (a family sent to a Dask worker) without its spare buffers."""
        return {**self.__dict__, "spare": {}}

    @functools.cached_property
    def continuing(self):
        """The rows that continue a chain: a slice (a view) when they are all rows but the first."""
        if len(self.firsts) == 1 and self.firsts[0] == 0:
            return slice(1, None)
        return np.flatnonzero(~self.starts)

    @functools.cached_property
    def totals(self) -> np.ndarray:
        """What each row of moments sums to: 1 at a chain's first row (no pair block), 2 elsewhere."""
        return np.where(self.starts, 1.0, 2.0)

    @classmethod
    def of(cls, lengths) -> "Chains":
        """The layout of chains of `lengths` (at least one, each of at least one step)."""
        lengths = np.asarray(lengths, dtype=np.int64).reshape(-1)
        if not len(lengths) or lengths.min() < 1:
            raise ValueError(f"a chain layout needs at least one chain and at least one step in each; got lengths "
                             f"{lengths.tolist()}")
        order = np.argsort(-lengths, kind="stable")
        firsts = np.cumsum(lengths) - lengths
        steps = np.arange(lengths.max())[:, None]
        running = steps < lengths[order]
        index = np.where(running, firsts[order] + steps, 0)
        position = np.empty(int(lengths.sum()), dtype=np.int64)
        position[index[running]] = np.flatnonzero(running)
        starts = np.zeros(len(position), dtype=bool)
        starts[firsts] = True
        for array in (index, position, starts, firsts):
            array.flags.writeable = False  # shared by every caller of the family
        return cls(index, tuple(running.sum(axis=1).tolist()), position, starts, firsts)


def potentials(nat: np.ndarray, k: int):
    """Unary (T, K) and pairwise (T, K, K) log-potentials, views of `nat`."""
    return nat[:, :k], nat[:, k:].reshape(-1, k, k)


def or_zero(top: np.ndarray) -> np.ndarray:
    """A shift by a maximum, 0 where it is not finite (a row of −∞: nothing to shift)."""
    return np.where(np.isfinite(top), top, 0.0)


def row_order(x: np.ndarray, chains: Chains, out=None) -> np.ndarray:
    """A time-major (L, S, ...) array back in row order, (T, ...): `take`, about 8× faster than
    indexing with the array."""
    return np.take(x.reshape((-1,) + x.shape[2:]), chains.position, axis=0, out=out)
