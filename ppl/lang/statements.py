"""Typing one `~` or `=` statement: arguments bound to roles, supports of constant arguments
checked, event and batch shapes derived, and the target variable declared or checked."""

from __future__ import annotations

import math
from dataclasses import replace

from ppl.diagnostics import ModelError, nearest
from ppl.lang import ast
from ppl.lang.builtins import ShapeMismatch, broadcast, show
from ppl.lang.distributions import DISTRIBUTIONS, SUPPORTS, Distribution, value_type
from ppl.lang.exprtypes import Scope, Type, infer
from ppl.lang.model import Factor, Variable

# Which element types of data a distribution's values may come from.
_VALUE_ELEMS = {
    "binary": ("bool", "int"), "count": ("int",), "counts": ("int",), "category": ("cat",), "ordinal": ("cat", "int"),
}


def bind_arguments(call: ast.Call, dist: Distribution) -> dict:
    """Map a distribution call's arguments to roles (keyword alternatives keep their keyword)."""
    roles = dist.roles()
    if len(call.args) > len(roles):
        raise ModelError("E251", f"`{dist.name}` takes {len(roles)} argument(s) ({', '.join(roles)}), "
                         f"got {len(call.args)}", span=call.span)
    args = dict(zip(roles, call.args))
    alternatives = {a.keyword: a for a in dist.alternatives}
    for key, value in call.kwargs:
        replaced = alternatives[key].replaces if key in alternatives else key
        if replaced not in roles:
            allowed = list(roles) + list(alternatives)
            guess = nearest(key, allowed)
            raise ModelError("E252", f"`{dist.name}` has no parameter `{key}`", span=value.span,
                             expected=", ".join(allowed), hint=f"did you mean `{guess}`?" if guess else None)
        if replaced in args or any(alternatives.get(k) and alternatives[k].replaces == replaced for k in args):
            raise ModelError("E253", f"`{dist.name}`'s {replaced} is given twice", span=value.span)
        args[key] = value
    given = {alternatives[k].replaces if k in alternatives else k for k in args}
    missing = [r for r in roles if r not in given]
    if missing:
        raise ModelError("E251", f"`{dist.name}` needs {', '.join(missing)}: it takes "
                         f"({', '.join(roles)})", span=call.span)
    return args


def type_sample(stmt: ast.Sample, plates, scope: Scope) -> Factor:
    call = stmt.dist
    dist = DISTRIBUTIONS.get(call.func)
    if dist is None:
        guess = nearest(call.func, DISTRIBUTIONS)
        raise ModelError("E250", f"unknown distribution `{call.func}`", span=call.func_span,
                         hint=f"did you mean `{guess}`?" if guess else
                         "distributions: " + ", ".join(DISTRIBUTIONS))
    args = bind_arguments(call, dist)
    types = {role: infer(expr, scope) for role, expr in args.items()}
    event, levels = _event_shape(dist, types, args)
    batches = []
    for role, t in types.items():
        param = dist.param(role)
        if t.elem == "cat":
            raise ModelError("E254", f"{dist.name}'s {role} is a category; use it as an index",
                             span=args[role].span)
        if len(t.shape) < param.rank:
            raise ModelError("E255", f"{dist.name}'s {role} must have {param.rank} dimension(s), "
                             f"got {show(t.shape)}", span=args[role].span)
        batches.append(t.shape[: len(t.shape) - param.rank])
        _check_support(dist, role, t, args[role])
    _check_dof(dist, types, args)
    _check_event(dist, event, types, args)
    try:
        batch = broadcast(*batches)
    except ShapeMismatch as exc:
        raise ModelError("E256", f"the arguments of `{dist.name}` do not fit together: {exc}",
                         span=call.span) from None
    element = batch + event
    target = stmt.target
    index_dims = tuple(_index_dim(i, plates) for i in target.indices)
    variable = scope.variables.get(target.name)
    if variable is not None and variable.kind == "data":
        _check_data_target(stmt, dist, variable, index_dims, element, levels)
        scope.variables[target.name] = replace(variable, event_rank=len(event), dist=dist.name)
        shape = variable.shape
        element = variable.shape[len(index_dims):]
    else:
        if not dist.latent:
            raise ModelError("E257", f"a {dist.name} variable must be observed: declare "
                             f"`{target.name}` with `data`", span=target.name_span)
        if stmt.type is not None:
            element = _declared(stmt, dist, element, event, scope)
        shape = _full_shape(variable, index_dims, element, stmt)
        elem = value_type(dist)
        scope.variables[target.name] = Variable(target.name, "latent", elem, shape, len(event),
                                                levels=levels if elem == "cat" else None,
                                                dist=dist.name, span=target.name_span)
    plate_dims = tuple(p.dim for p in plates)
    batch_shape = plate_dims + element[: len(element) - len(event)]
    return Factor(ast.lvalue_text(target), target, dist, args, tuple(plates), stmt.annotations,
                  batch_shape, stmt.span)


def type_define(stmt: ast.Define, plates, scope: Scope) -> None:
    t = infer(stmt.value, scope)
    index_dims = tuple(_index_dim(i, plates) for i in stmt.target.indices)
    existing = scope.variables.get(stmt.target.name)
    shape = _full_shape(existing, index_dims, t.shape, stmt)
    scope.variables[stmt.target.name] = Variable(stmt.target.name, "deterministic", t.elem, shape,
                                                 span=stmt.target.name_span)


def _event_shape(dist: Distribution, types: dict, args: dict):
    """The event shape of a draw, and for Categorical the number of levels."""
    if dist.name == "Categorical":
        probs = types["probs"]
        return (), (probs.shape[-1] if probs.shape else None)
    if dist.event == "scalar":
        return (), None
    role, k = dist.event
    candidates = [(role, types[role])] + [(r, t) for r, t in types.items() if r != role]
    for r, t in candidates:
        rank = dist.param(r).rank
        if rank >= 1 and len(t.shape) >= rank:
            return t.shape[len(t.shape) - rank:][:k] if k <= rank else t.shape[-k:], None
    raise ModelError("E255", f"`{dist.name}` cannot tell its dimension from scalar arguments",
                     span=args[role].span, hint="give a vector mean or a matrix, e.g. `zeros(D)`")


def _check_event(dist: Distribution, event: tuple, types: dict, args: dict) -> None:
    """Every parameter that carries the event ends in the event's dimensions
    (`MvNormal(zeros(3), eye(2))`: the precision is [2, 2], not [3, 3]); known sizes only."""
    if dist.event == "scalar":
        return
    for role, t in types.items():
        rank = dist.param(role).rank
        want = event if len(event) == rank else event * rank if len(event) == 1 else None
        have = t.shape[len(t.shape) - rank:]
        if rank and want and any(isinstance(a, int) and isinstance(b, int) and a != b for a, b in zip(have, want)):
            raise ModelError("E287", f"{dist.name}'s {role} is {show(have)} but the event is {show(event)}",
                             span=args[role].span, hint="the mean, precision or scale must agree in dimension")


def _check_support(dist: Distribution, role: str, t: Type, expr: ast.Expr) -> None:
    """A constant argument must lie in its parameter's support."""
    support = dist.param(role).support
    value, bad = t.fill, False
    if value is not None and not math.isfinite(value):
        raise ModelError("E258", f"{dist.name}'s {role} must be finite, got `{ast.text(expr)}`", span=expr.span)
    if support == "positive_vector" and t.values is not None:
        bad = any(v <= 0 for v in t.values)
    elif support in ("positive", "positive_vector", "dof") and value is not None:
        bad = value <= 0
    elif support == "unit" and value is not None:
        bad = not 0 <= value <= 1
    elif support == "count" and value is not None:
        bad = value < 0 or value != int(value)
    elif support == "pd":
        matrix = _literal_matrix(expr)
        bad = t.pd is False or (value is not None and not t.shape) or (matrix is not None and not _is_pd(matrix))
    elif support == "simplex" and t.values is not None:
        bad = any(v < 0 for v in t.values) or abs(sum(t.values) - 1) > 1e-9
    elif support == "ordered" and t.values is not None:
        bad = not all(math.isfinite(v) for v in t.values) or any(b <= a for a, b in zip(t.values, t.values[1:]))
    if bad:
        shown = ast.text(expr)
        raise ModelError("E258", f"{dist.name}'s {role} must be {SUPPORTS[support]}, got `{shown}`",
                         span=expr.span)


def _literal_matrix(expr):
    """A matrix written out as numbers (`[[1, 0.5], [0.5, 1]]`), as rows of floats, else None."""
    if not isinstance(expr, ast.Vector) or not all(isinstance(r, ast.Vector) for r in expr.items):
        return None
    rows = []
    for row in expr.items:
        values = [(-1 if isinstance(v, ast.Neg) else 1) * (v.operand if isinstance(v, ast.Neg) else v).value
                  for v in row.items if isinstance(v, ast.Number) or
                  (isinstance(v, ast.Neg) and isinstance(v.operand, ast.Number))]
        if len(values) != len(row.items):
            return None
        rows.append(values)
    return rows if all(len(r) == len(rows) for r in rows) else None


def _is_pd(rows) -> bool:
    """Symmetric with a Cholesky factor (plain Python: the checker does not import numpy)."""
    n = len(rows)
    if any(abs(rows[i][j] - rows[j][i]) > 1e-12 * max(1.0, abs(rows[i][j])) for i in range(n) for j in range(n)):
        return False
    low = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1):
            s = rows[i][j] - sum(low[i][k] * low[j][k] for k in range(j))
            if i == j:
                if s <= 0:
                    return False
                low[i][i] = math.sqrt(s)
            else:
                low[i][j] = s / low[j][j]
    return True


def _check_dof(dist: Distribution, types: dict, args: dict) -> None:
    """Wishart degrees of freedom must exceed the dimension minus one (when both are known; a
    dimension the data set is checked when they are bound: `dof_error`)."""
    if dist.name != "Wishart" or types["dof"].fill is None or not types["scale"].shape:
        return
    dim = types["scale"].shape[-1]
    if isinstance(dim, int) and types["dof"].fill <= dim - 1:
        raise dof_error(dim, args["dof"])


def dof_error(dim: int, expr: ast.Expr, value: float | None = None) -> ModelError:
    """E258 at a Wishart's `dof` of at most D − 1 (`value`: what a constant named there is)."""
    got = f"`{ast.text(expr)}`" + ("" if value is None or isinstance(expr, ast.Number) else f" = `{value:g}`")
    return ModelError("E258", f"Wishart's dof must be greater than the dimension minus one ({dim - 1}), got {got}",
                      span=expr.span)


def _index_dim(index: ast.Expr, plates):
    """The dimension a left-hand-side index runs along: its loop's size, or the integer itself."""
    if isinstance(index, ast.Number):
        return int(index.value)
    for plate in plates:
        if plate.var == index.id:
            return plate.dim
    raise AssertionError("left-hand side indices were checked already")


def _check_data_target(stmt, dist: Distribution, variable: Variable, index_dims, element, levels) -> None:
    target = stmt.target
    if stmt.type is not None:
        raise ModelError("E259", f"`{target.name}` is data; its type comes from its declaration",
                         span=stmt.type.span)
    allowed = _VALUE_ELEMS.get(dist.value, ("real", "int", "bool"))
    if variable.elem not in allowed:
        raise ModelError("E260", f"{dist.name} values are {SUPPORTS[dist.value]}, but `{target.name}` "
                         f"is declared {variable.elem}", span=target.span,
                         hint=f"declare it as {' or '.join(allowed)}")
    if len(index_dims) > len(variable.shape):
        raise ModelError("E261", f"`{target.name}` has {len(variable.shape)} dimension(s)", span=target.span)
    have = variable.shape[len(index_dims):]
    try:
        fits = broadcast(have, element) == tuple(have)
    except ShapeMismatch:
        fits = False
    if not fits:
        raise ModelError("E261", f"`{ast.lvalue_text(target)}` has shape {show(have)} but "
                         f"`{dist.name}(...)` draws {show(element)}", span=stmt.span)
    if levels is not None and variable.levels is not None and levels != variable.levels and levels != 1:
        raise ModelError("E262", f"`{target.name}` takes {variable.levels} levels but the "
                         f"probabilities have {levels}", span=stmt.dist.span)


def _resolve(dim, scope: Scope):
    """A declared dimension with constants replaced by their values (sizes stay names)."""
    value = scope.constants.get(dim) if isinstance(dim, str) else dim
    return value if isinstance(value, int) else dim


def _declared(stmt: ast.Sample, dist: Distribution, element, event, scope: Scope):
    spec = stmt.type
    if spec.elem != value_type(dist) and not (spec.elem == "real" and value_type(dist) == "real"):
        raise ModelError("E263", f"{dist.name} draws {value_type(dist)} values, not {spec.elem}",
                         span=spec.span)
    declared = tuple(_resolve(d, scope) for d in spec.dims)
    if declared[len(declared) - len(event):] != tuple(event) and event:
        raise ModelError("E264", f"declared shape {show(declared)} must end with the event "
                         f"shape {show(event)}", span=spec.span)
    try:
        broadcast(declared, element)
    except ShapeMismatch:
        raise ModelError("E264", f"declared shape {show(declared)} does not fit `{dist.name}` "
                         f"arguments of shape {show(element)}", span=spec.span) from None
    return declared


def widen_to_pieces(name: str, pieces, scope: Scope) -> None:
    """Give a variable defined in pieces (`x[1]`, then `x[t]` for t in 2..T) its whole extent
    before a piece that reads its own earlier elements is typed."""
    variable = scope.variables.get(name)
    if variable is None:
        return
    dims = list(variable.shape)
    for stmt, plates in pieces:
        for axis, index in enumerate(stmt.target.indices):
            dim = _index_dim(index, plates)
            if axis < len(dims) and (isinstance(dim, str) or (isinstance(dims[axis], int) and dim > dims[axis])):
                dims[axis] = dim
    scope.variables[name] = replace(variable, shape=tuple(dims))


def _full_shape(existing: Variable | None, index_dims, element, stmt):
    """The whole variable's shape; a second statement for the same variable must agree."""
    shape = tuple(index_dims) + tuple(element)
    if existing is None:
        return shape
    old = existing.shape
    if len(old) != len(shape) or old[len(index_dims):] != shape[len(index_dims):]:
        raise ModelError("E265", f"`{stmt.target.name}` has shape {show(old)} elsewhere but "
                         f"{show(shape)} here", span=stmt.target.span)
    # Pieces along the first axis (x[1] and x[t] for t in 2..T): keep the named size.
    merged = tuple(o if isinstance(o, str) else n for o, n in zip(old, shape))
    return merged
