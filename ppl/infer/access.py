"""Reads of a latent variable inside a factor: which element each plate element sees.

Every array a factor computes has the shape ``plate + (C,) + ...``: the plate of the factor,
then a component axis C that is the number of mixture components when a latent category
selects parameters (``mu[z[n]]``) and 1 otherwise. An `Access` gathers a variable's moments
into that shape and scatters messages back (summing over plate elements that read the same
element, as `np.bincount` does, which is the map-reduce seam of the design).
"""

from __future__ import annotations

import numpy as np

from ppl.diagnostics import ModelError
from ppl.lang import ast


class Unsupported(ModelError):
    """A construct the engine cannot run yet; reported at the statement, never a traceback."""

    def __init__(self, message: str, span=None):
        super().__init__("E500", message, span=span,
                         hint="see docs/language.md for what the inference engine supports")


class Access:
    """One read `v[...]` of latent variable `name`: flat element index of shape plate + (C,)."""

    def __init__(self, name: str, index: np.ndarray, size: int, selector: "Access | None" = None):
        self.name = name
        self.index = index
        self.size = size
        self.selector = selector

    def gather(self, moments: np.ndarray) -> np.ndarray:
        """moments (size, S) → plate + (C, S)."""
        return moments[self.index]

    def scatter(self, message: np.ndarray) -> np.ndarray:
        """message plate + (C, S) → (size, S), summed over the plate elements reading each element."""
        flat = self.index.reshape(-1)
        values = message.reshape(flat.size, -1)
        if self.size == 1:
            return values.sum(axis=0, keepdims=True)
        out = np.empty((self.size, values.shape[1]))
        for column in range(values.shape[1]):
            out[:, column] = np.bincount(flat, values[:, column], minlength=self.size)
        return out


def selector_of(expr: ast.Expr, latent: dict) -> str | None:
    """The latent categorical variable that selects components in `expr`, if any."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Index):
            for index in node.indices:
                for inner in ast.walk(index):
                    if isinstance(inner, ast.Name) and latent.get(inner.id) == "Categorical":
                        return inner.id
    return None


class AccessBuilder:
    """Builds the accesses of one factor over its plate, with the factor's component axis."""

    def __init__(self, plate, env, model, components: int, selector_expr: ast.Expr | None):
        self.plate = plate
        self.env = env
        self.model = model
        self.components = components
        self.selector = None
        if selector_expr is not None:
            self.selector = self.build(selector_expr, selected=False)

    def shape(self) -> tuple:
        return self.plate.shape + (self.components,)

    def build(self, expr: ast.Expr, selected: bool = True) -> Access:
        name = expr.id if isinstance(expr, ast.Name) else expr.base.id
        var = self.model.variables[name]
        dims = [self.env.size(d) for d in var.plates]
        indices = expr.indices if isinstance(expr, ast.Index) else ()
        if len(indices) > len(dims):
            raise Unsupported(f"`{ast.text(expr)}` indexes inside the event of `{name}`; index its plates only",
                              span=expr.span)
        plate_rank = len(self.plate.shape)
        axes, uses_selector = [], False
        for index in indices:
            if self.selector is not None and selected and _reads_latent_category(index, self.model):
                axes.append(np.arange(self.components).reshape((1,) * plate_rank + (-1,)))
                uses_selector = True
            else:
                values = np.asarray(self.plate.evaluate(index)) - 1
                axes.append(_with_component_axis(values, plate_rank))
        rest = dims[len(indices):]
        if len(rest) > plate_rank or tuple(rest) != self.plate.shape[plate_rank - len(rest):]:
            if rest:
                raise Unsupported(f"`{ast.text(expr)}` leaves dimensions of `{name}` that do not match "
                                  f"the plate of this statement", span=expr.span)
        for j, size in enumerate(rest):
            axis = plate_rank - len(rest) + j
            axes.append(np.arange(size).reshape([-1 if a == axis else 1 for a in range(plate_rank + 1)]))
        full = self.plate.shape + ((self.components,) if uses_selector else (1,))
        if dims:
            flat = np.ravel_multi_index(tuple(np.broadcast_to(a, full) for a in axes), dims)
        else:
            flat = np.zeros(full, dtype=np.int64)
        flat = np.broadcast_to(flat, self.shape()) if uses_selector or self.components == 1 else flat
        return Access(name, np.ascontiguousarray(np.broadcast_to(flat, self.shape())), int(np.prod(dims, dtype=np.int64)),
                      self.selector if uses_selector else None)


def _with_component_axis(values: np.ndarray, plate_rank: int) -> np.ndarray:
    values = values.reshape(values.shape + (1,) * (plate_rank - values.ndim)) if values.ndim < plate_rank else values
    return values[..., None]


def _reads_latent_category(expr: ast.Expr, model) -> bool:
    return any(isinstance(n, ast.Name) and n.id in model.variables
               and model.variables[n.id].kind == "latent" and model.variables[n.id].dist == "Categorical"
               for n in ast.walk(expr))
