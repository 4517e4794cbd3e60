"""Checking `const` and `data` declarations: constants folded (with `--set` overrides applied),
data variables typed, and every size name given an origin."""

from __future__ import annotations

import math

import numpy as np

from ppl.diagnostics import ModelError, OptionError, nearest
from ppl.lang import ast
from ppl.lang.exprtypes import Scope, infer
from ppl.lang.model import Size, Variable

TYPES = ("real", "int", "bool", "cat", "weight")


def check_declarations(program: ast.Program, overrides: dict) -> Scope:
    """A scope holding every constant, data variable and size of the program."""
    scope = Scope(variables={}, sizes={}, constants={}, loops={})
    consts = [i for i in program.items if isinstance(i, ast.ConstDecl)]
    unknown = set(overrides) - {c.name for c in consts}
    if unknown:
        name = sorted(unknown)[0]
        guess = nearest(name, [c.name for c in consts])
        names = ", ".join(c.name for c in consts) or "none"
        raise OptionError("E300", f"--set {name}: the model has no constant `{name}`",
                          hint=f"did you mean `{guess}`?" if guess else
                          f"only names declared with `const` can be set; this model's constants: {names}")
    for item in program.items:
        if isinstance(item, ast.ConstDecl):
            _const(item, scope, overrides)
        elif isinstance(item, ast.DataDecl):
            _data(item, scope)
    return scope


def _declare(scope: Scope, name: str, span) -> None:
    if name in scope.variables or name in scope.sizes:
        raise ModelError("E240", f"`{name}` is declared twice", span=span)


def _const(item: ast.ConstDecl, scope: Scope, overrides: dict) -> None:
    _declare(scope, item.name, item.name_span)
    value_type = infer(item.value, scope)
    declared = item.type.elem if item.type else None
    if item.name in overrides:
        value = overrides[item.name]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise OptionError("E812", f"--set {item.name}={value!r}: a constant is set to a number")
        if declared == "int" or (declared is None and value_type.elem == "int"):
            if not math.isfinite(value) or float(value) != int(value):
                raise OptionError("E301", f"--set {item.name}={value}: `{item.name}` is an integer")
            value = int(value)
        if value_type.shape:
            raise OptionError("E302", f"--set {item.name}: only scalar constants can be set")
        scope.constants[item.name] = value
        elem = "int" if isinstance(value, int) else "real"
    else:
        if value_type.shape == () and value_type.fill is None:
            raise ModelError("E241", f"constant `{item.name}` must be known before the data is read",
                             span=item.value.span, hint="use numbers and other constants only")
        elem = value_type.elem
        if value_type.shape == ():
            value = value_type.fill
            scope.constants[item.name] = int(value) if elem == "int" else float(value)
    if declared and declared not in ("real", "int"):
        raise ModelError("E242", f"a constant is `real` or `int`, not `{declared}`", span=item.type.span)
    if declared == "int" and elem != "int":
        raise ModelError("E243", f"constant `{item.name}` is declared int but its value is real",
                         span=item.value.span)
    elem = declared or elem
    scope.variables[item.name] = Variable(item.name, "const", elem, value_type.shape, span=item.name_span)
    if elem == "int" and not value_type.shape:
        scope.sizes[item.name] = Size(item.name, "const", None, item.name_span)


def _data(item: ast.DataDecl, scope: Scope) -> None:
    _declare(scope, item.name, item.name_span)
    spec = item.type
    if spec.elem not in TYPES:
        raise ModelError("E244", f"unknown type `{spec.elem}`", span=spec.span, expected=", ".join(TYPES))
    if spec.levels is not None and spec.elem != "cat":
        raise ModelError("E245", "only `cat` takes a number of levels", span=spec.span)
    if not spec.dims:
        raise ModelError("E246", f"data `{item.name}` needs its dimensions, e.g. `{spec.elem}[N]`",
                         span=spec.span, hint="the first dimension is the number of rows")
    if len(spec.dims) > 2:
        raise ModelError("E247", "data has one row dimension and at most one column dimension",
                         span=spec.span)
    if len(spec.dims) == 2 and isinstance(item.binding, ast.Column):
        raise ModelError("E248", f"`{item.name}` has two dimensions but binds one column",
                         span=item.binding.span, hint="bind a group `x1..xD` or a list `(a, b, c)`")
    if len(spec.dims) == 1 and isinstance(item.binding, (ast.ColumnGroup, ast.ColumnList)):
        raise ModelError("E248", f"`{item.name}` has one dimension but binds several columns",
                         span=item.binding.span, hint=f"declare it as `{spec.elem}[N, D]`")
    if spec.elem == "weight":
        _weight(item, scope)
    shape = []
    for axis, dim in enumerate(spec.dims):
        origin = "rows" if axis == 0 else "group"
        shape.append(_size(dim, origin, item, scope))
    levels = _size(spec.levels, "levels", item, scope) if spec.levels is not None else None
    scope.variables[item.name] = Variable(item.name, "data", spec.elem, tuple(shape), levels=levels,
                                          span=item.name_span)


def _weight(item: ast.DataDecl, scope: Scope) -> None:
    """`data count: weight[N]`: row t of plate N stands for count[t] identical observations. One
    dimension (the rows it weights), and one weight per dimension."""
    dims = item.type.dims
    if len(dims) != 1:
        raise ModelError("E267", f"weight `{item.name}` has {len(dims)} dimensions; a weight has exactly one, "
                         "the plate whose rows it weights", span=item.type.span, hint="write `weight[N]`")
    dim = dims[0]
    if isinstance(dim, int) or dim in scope.constants:
        raise ModelError("E267", f"weight `{item.name}` is sized by `{dim}`, a number; a weight's dimension is "
                         "a size name that the data fixes (the rows it weights)", span=item.type.span,
                         hint="write `weight[N]` with N the number of rows")
    other = next((v for v in scope.variables.values() if v.elem == "weight" and v.shape == (dim,)), None)
    if other is not None:
        raise ModelError("E268", f"rows of `{dim}` are already weighted by `{other.name}`; a plate takes at most "
                         "one weight", span=item.name_span, hint="multiply the counts into one column")


def _size(dim, origin: str, item: ast.DataDecl, scope: Scope):
    """A dimension as a number (integer or constant) or as a size name bound by this declaration."""
    value = dim if isinstance(dim, int) else scope.constants.get(dim)
    if isinstance(value, int):
        if value < 1:
            raise ModelError("E217", f"a dimension of `{item.name}` is {value}; dimensions are at least 1",
                             span=item.type.span)
        return value
    if dim in scope.variables:
        raise ModelError("E249", f"`{dim}` is a variable, not a size", span=item.type.span)
    scope.sizes.setdefault(dim, Size(dim, origin, item.name, item.type.span))
    return dim
