"""Products over the rows of a data matrix, by blocks of rows that stay in cache: cᵀv, cᵀMc and
Rᵀ diag(τ) R, the margins and messages of a contraction `X @ w` (no N × D temporary per sweep:
on covtype's 290,506 × 54 the blocked forms were measured 20–30% faster than one product into a
reused buffer, and faster still than fresh temporaries). Rows with one nonzero entry each (`f[n]`,
a coordinate read, is a contraction with a one-hot row: a GP's N × N identity) are taken by their
columns: v[k], M[k, k] and a diagonal, O(N) where the products cost O(N·D) and O(N·D²) (a GP of
1,000 points spent a third of its sweep on them). And maxima and sums along short rows
(K components), column by column: numpy's reductions along a row of a few entries cost more than
K − 1 elementwise operations over the columns."""

from __future__ import annotations

import functools
import weakref

import numpy as np

ROW_BLOCK = 8192  # rows per block (8192 × D doubles stay in cache for D ≲ 50)


def dot_rows(c: np.ndarray, v: np.ndarray) -> np.ndarray:
    """cᵀv for rows c (plate + (C, D)) and vectors v, as one matrix–vector product when v is shared
    (`X @ w`: no plate × D temporary)."""
    if _shared(c, v, 2):
        unit = one_hot(c)
        if unit is not None:
            return (unit[1] * v.reshape(-1)[unit[0]]).reshape(c.shape[:-1])
        return (c.reshape(-1, c.shape[-1]) @ v.reshape(-1)).reshape(c.shape[:-1])
    return np.sum(c * v, -1)


def quadratic_rows(c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """cᵀ M c for rows c (plate + (C, D)) and matrices M, as one matrix product when M is shared."""
    if _shared(c, m, 3):
        rows, matrix = c.reshape(-1, c.shape[-1]), m.reshape(m.shape[-2:])
        unit = one_hot(c)
        if unit is not None:
            return (unit[1] ** 2 * matrix[unit[0], unit[0]]).reshape(c.shape[:-1])
        out = np.empty(len(rows))
        for start in range(0, len(rows), ROW_BLOCK):
            block = rows[start:start + ROW_BLOCK]
            out[start:start + ROW_BLOCK] = np.einsum("ij,ij->i", block @ matrix, block)
        return out.reshape(c.shape[:-1])
    return np.einsum("...i,...ij,...j->...", c, m, c)


def _shared(c: np.ndarray, a: np.ndarray, event: int) -> bool:
    """`a` (its last `event` − 1 axes the event) is one array for every row of c and c has one
    component: the product can go through BLAS on c's rows."""
    rank = c.ndim - 2  # plate axes of c (then its component axis, then D)
    return a.ndim - event == rank and a.shape[:rank + 1] == (1,) * (rank + 1) and c.shape[-2] == 1


def weighted_gram(rows: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Rᵀ diag(τ) R. With τ ≥ 0 (every site's precision) it is AᵀA for A = diag(√τ) R, which
    BLAS computes as a symmetric rank-k update: half the work of the general product."""
    unit = one_hot(rows)
    if unit is not None:
        gram = np.zeros((rows.shape[1],) * 2)
        gram.flat[::rows.shape[1] + 1] = np.bincount(unit[0], unit[1] ** 2 * tau, minlength=rows.shape[1])
        return gram
    if not np.all(tau >= 0):
        return (rows.T * tau) @ rows
    root, gram = np.sqrt(tau), np.zeros((rows.shape[1],) * 2)
    for start in range(0, len(rows), ROW_BLOCK):
        scaled = rows[start:start + ROW_BLOCK] * root[start:start + ROW_BLOCK, None]
        gram += scaled.T @ scaled
    return gram


def one_hot(c: np.ndarray) -> tuple | None:
    """(column, value) of each row of c (plate + (C, D), as (rows, D)) when no row has two nonzero
    entries (a row of zeros: column 0, value 0), else None. Found once per array (the terms of a
    model keep theirs), and at once for a dense row first (`X @ w`)."""
    if c.ndim < 2 or c.size == 0 or np.count_nonzero(c.reshape(-1, c.shape[-1])[0]) > 1:
        return None
    key = id(c)
    kept = _ONE_HOT.get(key)
    if kept is not None and kept[0]() is c:
        return kept[1]
    rows = c.reshape(-1, c.shape[-1])
    unit = None
    if np.count_nonzero(rows) <= len(rows) and (np.count_nonzero(rows, axis=1) <= 1).all():
        columns = np.argmax(rows != 0, axis=1)
        unit = (columns, rows[np.arange(len(rows)), columns])
    _ONE_HOT[key] = (weakref.ref(c, lambda _: _ONE_HOT.pop(key, None)), unit)
    return unit


_ONE_HOT: dict = {}  # id(array) -> (weak reference to it, `one_hot` of it)


def row_max(a: np.ndarray, out: np.ndarray) -> None:
    """Row maxima of an N × K array into `out`: column by column when K is small (np.max along a
    row of a few entries runs 5× slower at K = 5), along the rows otherwise."""
    if a.shape[1] > 16:
        np.max(a, axis=1, out=out)
        return
    np.maximum(a[:, 0], a[:, 1], out=out)
    for k in range(2, a.shape[1]):
        np.maximum(out, a[:, k], out=out)


def sum_in_order(x: np.ndarray, axis: int) -> np.ndarray:
    """Σ of `x` along a short `axis`, its entries added first to last: what np.sum adds along an
    axis of fewer than 8 entries, to the bit, in half the time. The entries are taken by basic
    indexing (np.moveaxis costs more than the additions at K = 3)."""
    lead = (slice(None),) * (axis % x.ndim)
    return functools.reduce(np.add, [x[lead + (i,)] for i in range(x.shape[axis])])
