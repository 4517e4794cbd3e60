"""A factor's plate as arrays: loop variables become index grids, data expressions whole arrays.

A `for n in 1..N` loop is one numpy operation: the loop variable is `arange(1, N + 1)` shaped to
broadcast along its own plate axis, and `x[n]` is the gather `x[n - 1]`. Values keep their
1-based meaning (categories included) until they index an array.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ppl.diagnostics import ModelError
from ppl.lang import ast
from ppl.lang.model import Factor


class Plate:
    """The plate of one factor: its shape, loop grids, and an evaluator for data expressions."""

    def __init__(self, factor: Factor, env: "Environment"):
        self.factor = factor
        self.env = env
        loops = factor.plates
        self.grids = {}
        shape = []
        for axis, plate in enumerate(loops):
            lo = env.bound(plate.lo)
            hi = env.bound(plate.hi)
            if hi < lo:
                raise ModelError("E501", f"the loop over `{plate.var}` runs from {lo} to {hi} with these data: "
                                 f"it has no elements", span=plate.span,
                                 hint="the data have too few rows for this model (a lag needs at least two)")
            values = np.arange(lo, hi + 1)
            self.grids[plate.var] = values.reshape([-1 if a == axis else 1 for a in range(len(loops))])
            shape.append(len(values))
        vectorised = not loops and not factor.target.indices
        if vectorised:  # a vectorised statement: the plate is the batch shape
            shape = [env.size(d) for d in factor.batch_shape]
        # which a constant argument of a distribution of scalar parameters may set by itself
        # (`mu ~ Normal(zeros(K), 1)`)
        dist = factor.dist
        self.vectorised_scalar = vectorised and all(p.rank == 0 for p in dist.params + dist.alternatives)
        self.shape = tuple(shape)

    def evaluate(self, expr: ast.Expr) -> np.ndarray:
        """The value of a data/constant expression at every plate element."""
        return self.env.evaluate(expr, self.grids)

    def over_components(self, expr: ast.Expr) -> np.ndarray:
        """A data/constant expression shaped plate + (1,) + element, ready to meet arrays with a
        component axis. Only an expression that reads loop variables or data varies along the
        plate; a constant (`eye(D)`, `m0`) keeps its own shape even when it happens to match
        the plate's (K = D), except in a vectorised statement of a scalar distribution, where
        every axis of an argument is a batch axis (numpy broadcasting)."""
        value = np.asarray(self.evaluate(expr), dtype=float)
        rank = len(self.shape)
        varies = self.vectorised_scalar or any(isinstance(n, ast.Name) and (n.id in self.grids or n.id in self.env.data)
                                               for n in ast.walk(expr))
        if not varies or rank == 0 or value.ndim == 0:
            return value
        if value.ndim < rank:  # varies along the trailing plate axes only
            value = value.reshape((1,) * (rank - value.ndim) + value.shape)
        return np.expand_dims(value, rank)


class Environment:
    """Sizes, constants and data arrays of one bound model, and a numpy evaluator over them."""

    def __init__(self, model, dataset):
        self.model = model
        self.sizes = dict(dataset.sizes)
        self.data = {name: self._data_array(name, arr) for name, arr in dataset.arrays.items()}
        self.constants = {}
        for item in model.program.items:
            if isinstance(item, ast.ConstDecl):
                value = model.constants.get(item.name)
                self.constants[item.name] = value if value is not None else self.evaluate(item.value, {})

    def _data_array(self, name, values):
        if self.model.variables[name].elem == "cat":
            return values + 1  # categories are 1-based in the language
        return values

    def size(self, dim) -> int:
        return dim if isinstance(dim, int) else int(self.sizes[dim])

    def bound(self, bound) -> int:
        name, offset = bound
        return offset + (self.size(name) if name is not None else 0)

    def evaluate(self, expr: ast.Expr, grids: dict) -> np.ndarray:
        if isinstance(expr, ast.Number):
            return np.asarray(expr.value, dtype=np.int64 if expr.is_int else float)
        if isinstance(expr, ast.Name):
            name = expr.id
            if name in grids:
                return grids[name]
            if name in self.constants:
                return np.asarray(self.constants[name])
            if name in self.data:
                return self.data[name]
            if name in self.sizes:
                return np.asarray(self.sizes[name])
            raise KeyError(f"`{name}` is not data or a constant")  # the analyzer routes latents elsewhere
        if isinstance(expr, ast.Index):
            base = self.evaluate(expr.base, grids)
            index = tuple(np.asarray(self.evaluate(i, grids)) - 1 for i in expr.indices)
            return base[index]
        if isinstance(expr, ast.BinOp):
            left, right = self.evaluate(expr.left, grids), self.evaluate(expr.right, grids)
            return _BINARY[expr.op](left, right)
        if isinstance(expr, ast.Neg):
            return -self.evaluate(expr.operand, grids)
        if isinstance(expr, ast.Vector):
            return np.stack([np.asarray(self.evaluate(i, grids), dtype=float) for i in expr.items], axis=-1)
        if isinstance(expr, ast.Call):
            return self._call(expr, grids)
        raise TypeError(expr)

    def _call(self, expr: ast.Call, grids) -> np.ndarray:
        if expr.func in ("zeros", "ones", "eye"):
            dims = [self.size(a.id if isinstance(a, ast.Name) else int(a.value)) for a in expr.args]
            return {"zeros": np.zeros, "ones": np.ones}[expr.func](dims) if expr.func != "eye" else np.eye(dims[0])
        args = [self.evaluate(a, grids) for a in expr.args] + [self.evaluate(v, grids) for _, v in expr.kwargs]
        return FUNCTIONS[expr.func](*args)


def rbf(x, lengthscale, variance):
    """Squared-exponential kernel matrix of inputs x ([N] or [N, D])."""
    x = np.asarray(x, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    sq = np.sum(x * x, axis=1)
    d2 = np.maximum(sq[:, None] + sq[None, :] - 2 * x @ x.T, 0.0)
    return variance * np.exp(-0.5 * d2 / lengthscale**2)


def _softmax(x):
    return special.softmax(x, axis=-1)


FUNCTIONS = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "logistic": special.expit, "probit": special.ndtr,
    "softmax": _softmax, "dot": lambda a, b: np.sum(a * b, axis=-1), "sum": lambda a: np.sum(a, axis=-1),
    "rbf": rbf, "diag": lambda v: v[..., :, None] * np.eye(v.shape[-1]),
}

_BINARY = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "^": np.power,
    "@": lambda a, b: a @ b,
}


def check_coverage(runtimes, model, shapes: dict) -> None:
    """Every element of a latent variable is drawn exactly once with these data (E504): the
    checker proves it only when the bounds are numbers, but `z[2]` beside `for t in 3..T` leaves
    z[1] undrawn whatever T is, as does a lone `for t in 2..T` whose z[1] is read elsewhere."""
    by_target: dict = {}
    for runtime in runtimes:
        target = getattr(runtime, "target", None)
        if target is not None and model.variables[runtime.factor.target.name].kind == "latent":
            by_target.setdefault(runtime.factor.target.name, []).append(runtime)
    for name, pieces in by_target.items():
        shape = shapes[name]
        counts = sum(np.bincount(p.target.index.reshape(-1), minlength=int(np.prod(shape))) for p in pieces)
        bad = np.flatnonzero(counts != 1)
        if bad.size:
            element = ", ".join(str(i + 1) for i in np.unravel_index(bad[0], shape))
            how = "by no statement" if counts[bad[0]] == 0 else f"by {counts[bad[0]]} statements"
            raise ModelError("E504", f"`{name}[{element}]` is drawn {how} with these data", span=pieces[0].factor.span,
                             hint="each element gets exactly one `~` statement: check the literal indices and "
                                  "loop bounds of its statements")
