"""Row weights (`data count: weight[N]`): row t of plate N stands for count[t] identical rows.

The weighted model is the expanded one (count[t] copies of row t) with the copies of a per-row
variable sharing one q, so that

- a factor whose plate runs over N multiplies its ELBO term by count[t], and its message to a
  variable that is not indexed by N (a global, `theta[doc[t]]`) by count[t];
- its message to a variable indexed by N itself (`z[t]`, a missing cell of `y[t]`) is not
  multiplied: every copy receives the same message;
- the entropy of a variable indexed by N is multiplied by count[t].

Weights multiply across plates (`count_n[n] · count_j[j]` for a factor over N × J). Integer
weights give the expanded data's ELBO and posterior exactly; fractional ones are importance
weights, and a zero weight removes the row.
"""

from __future__ import annotations

import numpy as np


def factor_counts(factor, plate, model, dataset) -> dict:
    """{size name: weights shaped plate + (1,)} for every weighted plate the factor runs over."""
    weights = model.weights
    if not weights:
        return {}
    rank = len(plate.shape)
    counts = {}
    if factor.plates:
        for loop in factor.plates:
            if loop.dim in weights:
                values = np.asarray(dataset.arrays[weights[loop.dim]], dtype=float)
                counts[loop.dim] = values[plate.grids[loop.var] - 1]
    elif not factor.target.indices:  # a vectorised statement over its batch shape
        for axis, dim in enumerate(factor.batch_shape):
            if dim in weights:
                values = np.asarray(dataset.arrays[weights[dim]], dtype=float)
                counts[dim] = values.reshape([-1 if a == axis else 1 for a in range(rank)])
    return {dim: np.expand_dims(value.reshape(value.shape + (1,) * (rank - value.ndim)), rank)
            for dim, value in counts.items()}


def count_for(counts: dict, plates: tuple):
    """The product of the weights of the plates a variable with `plates` is not indexed by (all
    of them for the ELBO term: plates = ()); None when none applies."""
    total = None
    for dim, value in counts.items():
        if dim not in plates:
            total = value if total is None else total * value
    return total


def element_counts(model, dataset, shapes: dict) -> dict:
    """{variable: weight per element (elements,)} for the variables indexed by a weighted plate:
    the multiplier of their entropy."""
    weights = model.weights
    out = {}
    for name, shape in shapes.items():
        var = model.variables.get(name)
        if var is None or not any(d in weights for d in var.plates):
            continue
        total = np.ones(shape)
        for axis, dim in enumerate(var.plates):
            if dim in weights:
                values = np.asarray(dataset.arrays[weights[dim]], dtype=float)
                total = total * values.reshape([-1 if a == axis else 1 for a in range(len(shape))])
        out[name] = total.reshape(-1)
    return out


def weighted_sum(weights, values) -> float:
    """Σ weights · values, where a zero weight drops its value even when it is infinite."""
    if weights is None:
        return float(np.sum(values))
    with np.errstate(invalid="ignore"):
        return float(np.sum(np.where(weights > 0, weights * values, 0.0)))
