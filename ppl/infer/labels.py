"""Names of the axes of every reported variable, and their coordinates, for ArviZ and plots.

An axis is named after its size when the model gives one (`N`, `D`, `V`, the bound `K` of the
`for k in 1..K` plate that runs along it, or the one integer constant its length equals), else
`name_dim_i`. A mixture's weights share the component axis of the variables their category
selects. Coordinates are 1-based indices, or the labels of the categorical column whose levels
define the size (LDA's words).
"""

from __future__ import annotations

import re


def dims_and_coords(model, dataset, shapes: dict, components: dict) -> tuple[dict, dict]:
    """({variable: (dim, ...)}, {dim: [label, ...]}) for the variables in `shapes` (full shapes)."""
    dims = {name: _dims(model, name, len(shape)) for name, shape in shapes.items()}
    for members in components.values():  # pi's event axis is the component axis of mu
        named = [dims[v][a] for v, a in members.items() if v in dims and not dims[v][a].startswith(f"{v}_dim_")]
        for variable, axis in members.items():
            if named and variable in dims:
                dims[variable] = dims[variable][:axis] + (named[0],) + dims[variable][axis + 1:]
    coords = {}
    for name, shape in shapes.items():
        for dim, length in zip(dims[name], shape):
            if dim in coords:
                continue
            size = model.sizes.get(dim)
            labels = dataset.levels.get(size.data) if size is not None and size.origin == "levels" else None
            coords[dim] = ([str(x) for x in labels] if labels is not None and len(labels) == length
                           else list(range(1, length + 1)))
    return dims, coords


def _dims(model, name: str, rank: int) -> tuple:
    variable = model.variables[name]
    plates = {}
    for factor in model.factors_of(name):
        for axis, plate in enumerate(factor.plates):
            bound = _written_bound(plate)
            if bound is not None:
                plates[axis] = bound
    out = []
    for axis in range(rank):
        dim = variable.shape[axis] if axis < len(variable.shape) else None
        dim = dim if isinstance(dim, str) else plates.get(axis) or _constant(model, dim) or f"{name}_dim_{axis}"
        out.append(dim if dim not in out else f"{dim}_{out.count(dim) + 1}")  # Lambda: (K, D, D_2)
    return tuple(out)


def _constant(model, length) -> str | None:
    """The integer constant whose value is `length`, if exactly one is (`K` of `ones(K)`, which the
    checker turned into its value)."""
    names = [n for n, v in model.constants.items() if type(v) is int and v == length]
    return names[0] if len(names) == 1 else None


def _written_bound(plate) -> str | None:
    """`K` of `for k in 1..K` as written (constants are already numbers in the checked plate)."""
    text = plate.span.source.line(plate.span.line)
    found = re.search(rf"\bfor\s+{re.escape(plate.var)}\s+in\s+1\s*\.\.\s*([A-Za-z_]\w*)\s*{{", text)
    return found.group(1) if found else None
