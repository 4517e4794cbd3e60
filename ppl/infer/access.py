"""Reads of a latent variable inside a factor: which element each plate element sees.

Every array a factor computes has the shape ``plate + (C,) + ...``: the plate of the factor,
then a component axis C that is the number of mixture components when a latent category
selects parameters (``mu[z[n]]``) and 1 otherwise. An `Access` gathers a variable's moments
into that shape and scatters messages back (summing over plate elements that read the same
element, as `np.bincount` does, which is the map-reduce seam of the design).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ppl.diagnostics import ModelError
from ppl.lang import ast

ADD_AT_ENTRIES = 64  # entries np.add.at adds in about the time of one bincount call (1 µs): `sum_by_index`
# takes one pass of it over the rows where that is cheaper than a bincount per column (1 µs + 15 ns an entry
# against 1 µs a column: one row of a 5-vector's D + D² statistics, 18 against 1.3 µs)


class Unsupported(ModelError):
    """A construct the engine cannot run yet; reported at the statement, never a traceback."""

    def __init__(self, message: str, span=None, hint: str | None = None):
        super().__init__("E500", message, span=span,
                         hint=hint or "docs/rules/ says what each rule runs on; docs/tutorials/README.md lists "
                                      "the models that run end to end")


class Access:
    """One read `v[...]` of latent variable `name`: flat element index of shape plate + (C,),
    with C = 1 unless a latent category selects the element.

    A read whose index does not change along the plate (a global parameter, or the components
    of a mixture) is `plate_free`: it gathers as a broadcast view of shape (1, ..., 1, C, S) and
    scatters weighted messages as one matrix product wᵀ·m, never an N × C × S array.
    """

    _key = None  # version key of the cached gather (`read`): none yet

    def __init__(self, name: str, index: np.ndarray, size: int, selector: "Access | None" = None):
        self.name = name
        self.index = index
        self.size = size
        self.selector = selector
        self.plate_rank = index.ndim - 1
        first = index[(0,) * self.plate_rank]
        self.plate_free = bool((index == first).all())
        self.components = first

    @functools.cached_property
    def in_order(self) -> tuple[bool, bool]:
        """Whether the flat index, and the components, read elements 0..size−1 once each in order:
        a scatter through them is a copy (tested once per read, not once per message)."""
        return tuple(len(i) == self.size and bool(np.array_equal(i, np.arange(self.size)))
                     for i in (self.index.reshape(-1), self.components))

    def take(self, rows: np.ndarray) -> "Access":
        """This read on `rows` of the first plate axis alone (a minibatch of a factor's data)."""
        index = self.index if self.index.shape[0] == 1 else self.index[rows]
        return Access(self.name, index, self.size, self.selector)

    def read(self, state) -> np.ndarray:
        """`gather` of the variable's current moments, reused while the variable is unchanged."""
        key = (id(state), state.versions.get(self.name, 0))
        if self._key != key:
            self._key, self._value = key, self.gather(state.moments(self.name))
        return self._value

    def gather(self, moments: np.ndarray) -> np.ndarray:
        """moments (size, S) → plate + (C, S), a broadcast view when the read is plate-free."""
        if self.plate_free:
            return moments[self.components].reshape((1,) * self.plate_rank + (len(self.components), -1))
        return np.asarray(moments).take(self.index, axis=0)  # moments[self.index], faster; np.take: 1 us more

    def scatter(self, message: np.ndarray) -> np.ndarray:
        """message plate + (C, S) → (size, S), summed over the plate elements reading each element."""
        shape = self.index.shape + message.shape[self.plate_rank + 1:]
        message = message if message.shape == shape else np.broadcast_to(message, shape)
        return sum_by_index(self.index.reshape(-1), message.reshape(self.index.size, -1), self.size, self.in_order[0])

    def scatter_weighted(self, message, weights: np.ndarray, factored: bool = False) -> np.ndarray:
        """Σ over the plate of weights (plate + (C,)) times message (plate + (C or 1, S)).

        A message with a `weighted_sum` (a low-rank form, see linear_message.OuterMessage) is reduced by
        it when the read is plate-free and unselected — or, `factored`, kept as its rows for the
        read of a single vector — and made dense otherwise."""
        if hasattr(message, "weighted_sum"):
            if self.plate_free and weights.shape[-1] == 1 and len(self.components) == 1:
                if factored and self.size == 1:
                    return message.low_rank(weights)
                return sum_by_index(self.components, message.weighted_sum(weights), self.size, self.in_order[1])
            message = message.dense()
        if not self.plate_free:
            w = weights.reshape(weights.shape + (1,) * (message.ndim - weights.ndim))
            weighted = message * w
            if self.index.shape[-1] == 1 and weighted.shape[self.plate_rank] > 1:
                weighted = weighted.sum(axis=self.plate_rank, keepdims=True)  # Σ_k r_k · message_k
            return self.scatter(weighted)
        plate = weights.shape[: self.plate_rank]
        count = math.prod(plate)
        w = weights.reshape(count, -1)
        shape = plate + message.shape[self.plate_rank:]
        m = message if message.shape == shape else np.broadcast_to(message, shape)
        m = m.reshape(count, m.shape[self.plate_rank], -1)
        # Contiguous operands keep matmul on BLAS; a sliced broadcast view is ~50x slower.
        if m.shape[1] == 1:
            per_component = np.ascontiguousarray(w.T) @ np.ascontiguousarray(m[:, 0, :])
        else:
            per_component = np.einsum("pc,pcs->cs", w, m)
        return sum_by_index(self.components, per_component, self.size, self.in_order[1])

    def scatter_rows(self, rows: np.ndarray) -> np.ndarray:
        """rows plate + (S,), one per plate element (not per component) → (size, S)."""
        index = self.index[..., 0]
        shape = index.shape + rows.shape[-1:]
        rows = rows if rows.shape == shape else np.broadcast_to(rows, shape)  # np.broadcast_to: ~4 us of Python
        return sum_by_index(index.reshape(-1), rows.reshape(index.size, -1), self.size, self._rows_in_order)

    @functools.cached_property
    def _rows_in_order(self) -> bool:
        """Whether the plate elements read elements 0..size−1 once each in order (`scatter_rows`)."""
        index = self.index[..., 0].reshape(-1)
        return len(index) == self.size and bool(np.array_equal(index, np.arange(self.size)))


def sum_by_index(index: np.ndarray, values: np.ndarray, size: int, in_order: bool | None = None) -> np.ndarray:
    """out[i] = Σ values[j] over j with index[j] = i; (len(index), S) → (size, S). `in_order`: whether
    `index` is 0..size−1 (tested here when not given)."""
    if size == 1:
        return values.sum(axis=0, keepdims=True)
    if in_order is None:
        in_order = len(index) == size and np.array_equal(index, np.arange(size))
    if in_order:
        return np.array(values, dtype=float)  # one value per element already
    if values.size < (values.shape[1] - 1) * ADD_AT_ENTRIES:  # in index order, as bincount adds: the same sums
        out = np.zeros((size, values.shape[1]))
        np.add.at(out, index, values)
        return out
    out = np.empty((size, values.shape[1]))
    for column in range(values.shape[1]):
        out[:, column] = np.bincount(index, values[:, column], minlength=size)
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
        if rest and (len(rest) > plate_rank or tuple(rest) != self.plate.shape[plate_rank - len(rest):]):
            whole = ", ".join(str(d) for d in var.plates[len(indices):])
            loop = f"`{name}[p]` in `for p in 1..{var.plates[len(indices)]}`" if len(indices) == 0 else "its plate"
            raise Unsupported(f"`{ast.text(expr)}` reads the elements of `{name}` along its plate [{whole}] all at "
                              f"once, not one per element of this statement's plate", span=expr.span,
                              hint=f"index it inside a loop over its plate ({loop}, one statement per element)" + (
                                  "; a vector of Normals read whole is one MvNormal: "
                                  f"`{name} ~ MvNormal(zeros({whole}), ...)`" if var.dist == "Normal" else ""))
        for j, size in enumerate(rest):
            axis = plate_rank - len(rest) + j
            axes.append(np.arange(size).reshape([-1 if a == axis else 1 for a in range(plate_rank + 1)]))
        # The component axis is C long only for reads that a latent category selects.
        full = self.plate.shape + ((self.components,) if uses_selector else (1,))
        for axis, size in zip(axes, dims):
            if ((axis < 0) | (axis >= size)).any():
                raise ModelError("E503", f"`{ast.text(expr)}` reads outside `{name}`'s 1..{size} with these data",
                                 span=expr.span, hint="an index past the number of rows, or a lag before the first")
        # The index over the axes' own broadcast shape, then a read-only view of the plate's shape:
        # a read that does not vary along a plate (mu[z[n]], pi) costs no N × C integers.
        flat = np.ravel_multi_index(np.broadcast_arrays(*axes), dims) if dims else np.zeros((), dtype=np.int64)
        flat = np.broadcast_to(flat, full) if flat.shape != tuple(full) else np.ascontiguousarray(flat)
        return Access(name, flat, int(math.prod(dims)), self.selector if uses_selector else None)


def _with_component_axis(values: np.ndarray, plate_rank: int) -> np.ndarray:
    values = values.reshape(values.shape + (1,) * (plate_rank - values.ndim)) if values.ndim < plate_rank else values
    return values[..., None]


def _reads_latent_category(expr: ast.Expr, model) -> bool:
    return any(isinstance(n, ast.Name) and n.id in model.variables
               and model.variables[n.id].kind == "latent" and model.variables[n.id].dist == "Categorical"
               for n in ast.walk(expr))
