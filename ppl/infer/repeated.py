"""Rows of a non-conjugate factor that repeat: the same data in the linear predictor η, the same
indices into the latent variables it reads, and the same observation (y, n) make the same margin
N(m, v) every sweep, and so the same quadrature. `surgical_expanded` has 2,814 Bernoulli rows and
23 distinct ones (12 hospitals × died 0 or 1; one hospital had no deaths).

The groups are found once, when the factor is built; each sweep integrates one representative
row per group and gathers the results back to every row (`Repeats.apply`): the same numbers as
integrating every row, for the cost of the groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppl.infer.linear import LinearForm

WORTHWHILE = 0.5  # group only when there are at most this fraction as many groups as rows


@dataclass(frozen=True)
class Repeats:
    """The margin's `shape`, the rows (as indices into it) that stand for their groups, their
    observations (y, n), and the group of every row, flat."""

    shape: tuple
    rows: tuple
    y: np.ndarray
    n: np.ndarray | float
    group: np.ndarray

    def apply(self, approximation, likelihood, m, v):
        """`approximation(likelihood, y, n, m, v)` on the representative rows, gathered to every row
        (m and v broadcast: a margin that reads only plate-free latents has one variance)."""
        m, v = (np.broadcast_to(a, self.shape)[self.rows] for a in (m, v))
        out = approximation(likelihood, self.y, self.n, m, v)
        return tuple(np.asarray(a)[self.group].reshape(self.shape) for a in out)


def find_repeats(form: LinearForm, y, n) -> Repeats | None:
    """The groups of rows of the scalar margin `form` with the same inputs and observation, or
    None when they would save too little (more than WORTHWHILE groups per row: the rows are
    integrated one by one, as without grouping). The groups are refined one input at a time
    (a row's group and its value of the next input), the data in η first, so continuous
    covariates stop it at the first column that makes most rows distinct."""
    shape = form.offset.shape
    size = int(np.prod(shape))
    inputs = [_rows(term.coef, shape, vector=term.contract) for term in form.terms]
    inputs += [_rows(a, shape) for a in [form.offset, y, n] + [access.index for access in form.reads()]]
    if _distinct_at_least(inputs, WORTHWHILE * size):
        return None
    group = np.zeros(size, dtype=np.int64)
    for column in (column for columns in inputs for column in columns):
        _, codes = np.unique(column, return_inverse=True)
        labels, group = np.unique(group * (codes.max() + 1) + codes, return_inverse=True)
        if len(labels) > WORTHWHILE * size:
            return None
    _, first = np.unique(group, return_index=True)
    rows = np.unravel_index(first, shape)
    trials = n if type(n) is float else np.broadcast_to(n, shape)[rows]  # one number (1.0: Bernoulli) stays one
    return Repeats(shape, rows, np.broadcast_to(y, shape)[rows], trials, group)


def _rows(a, shape: tuple, vector: bool = False) -> np.ndarray:
    """`a` broadcast to the margin's `shape` as columns (1 or D, rows); `vector`: a trailing D axis."""
    a = np.asarray(a, dtype=float)
    full = shape + a.shape[-1:] if vector else shape
    a = a if a.shape == full else np.broadcast_to(a, full)  # (np.broadcast_to: a dozen Python calls)
    if not vector:
        return a.reshape(1, -1)
    return a.transpose((a.ndim - 1,) + tuple(range(a.ndim - 1))).reshape(a.shape[-1], -1)  # np.moveaxis(a, -1, 0)


def _distinct_at_least(inputs: list, bound: float) -> bool:
    """Whether the rows (columns of the `inputs`) have more than `bound` distinct values of one fixed
    combination of the inputs: equal rows combine equally, so the groups are at least as many, and
    one product per input settles what the refinement column by column would (a GP's one-hot rows: 20
    columns of 40 before it gave up), with no copy of the inputs (X's N × D for `X @ w`)."""
    weights = 1.0 / np.arange(2.0, sum(len(columns) for columns in inputs) + 2.0)
    combined, start = 0.0, 0
    for columns in inputs:
        combined = combined + weights[start:start + len(columns)] @ columns
        start += len(columns)
    return len(np.unique(combined)) > bound
