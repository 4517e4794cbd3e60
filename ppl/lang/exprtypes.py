"""Types of expressions: element type, symbolic shape, category levels, and constant value.

`infer(expr, scope)` walks an expression once. Constant scalars are folded (so the checker can
test the support of constant arguments); nothing else is evaluated here.
"""

from __future__ import annotations

from dataclasses import dataclass

from ppl.diagnostics import ModelError, nearest
from ppl.lang import ast
from ppl.lang.builtins import BUILTINS, ShapeMismatch, broadcast, matmul, show
from ppl.lang.distributions import DISTRIBUTIONS
from ppl.lang.model import Plate, Variable
from ppl.lang.rules import RULES


@dataclass(frozen=True)
class Type:
    """What an expression holds. `fill` is the value of every element when known at compile
    time (``0.001 * ones(K)`` has fill 0.001); `pd` is True for a known positive-definite matrix."""

    elem: str
    shape: tuple
    levels: str | int | None = None
    fill: float | None = None
    pd: bool | None = None
    values: tuple | None = None  # element values of a constant vector literal


INT = Type("int", ())


@dataclass
class Scope:
    """The names visible at a statement: variables, sizes and enclosing loop variables."""

    variables: dict
    sizes: dict
    constants: dict
    loops: dict  # loop variable -> Plate

    def names(self):
        return set(self.variables) | set(self.sizes) | set(self.loops) | set(BUILTINS)


def infer(expr: ast.Expr, scope: Scope) -> Type:
    """The type of `expr`, or a located `ModelError`."""
    if isinstance(expr, ast.Number):
        if expr.is_int and abs(expr.value) >= 2**63:
            raise ModelError("E215", f"the integer {expr.value} does not fit in 64 bits", span=expr.span,
                             hint="write it as a real number (with a decimal point) if that is what you mean")
        return Type("int" if expr.is_int else "real", (), fill=float(expr.value))
    if isinstance(expr, ast.Name):
        return _name(expr, scope)
    if isinstance(expr, ast.Index):
        return _index(expr, scope)
    if isinstance(expr, ast.Call):
        return _call(expr, scope)
    if isinstance(expr, ast.BinOp):
        return _binop(expr, scope)
    if isinstance(expr, ast.Neg):
        t = infer(expr.operand, scope)
        return Type(t.elem if t.elem in ("int", "real") else "real", t.shape,
                    fill=None if t.fill is None else -t.fill)
    if isinstance(expr, ast.Vector):
        items = [infer(i, scope) for i in expr.items]
        for item, node in zip(items[1:], expr.items[1:]):
            if item.shape != items[0].shape:
                raise ModelError("E216", f"the items of a vector literal must have one shape: "
                                 f"`{ast.text(expr.items[0])}` is {show(items[0].shape)}, "
                                 f"`{ast.text(node)}` is {show(item.shape)}", span=node.span)
        shape = items[0].shape
        elem = "int" if all(i.elem == "int" for i in items) else "real"
        values = tuple(i.fill for i in items) if all(i.fill is not None and not i.shape for i in items) else None
        fill = values[0] if values and len(set(values)) == 1 else None
        return Type(elem, (len(items),) + shape, fill=fill, values=values)
    raise TypeError(f"unknown expression node {expr!r}")


def _name(expr: ast.Name, scope: Scope) -> Type:
    name = expr.id
    if name in scope.loops:
        return INT
    if name in scope.variables:
        v: Variable = scope.variables[name]
        if v.elem == "weight":
            raise ModelError("E269", f"`{name}` is a weight: it says how many observations each row stands for "
                             "and is not data of the model", span=expr.span,
                             hint="a weight may not appear in an expression; declare a copy of the column "
                                  "as `real` to use its values")
        fill = scope.constants.get(name) if v.kind == "const" else None
        return Type(v.elem, v.shape, v.levels, fill=fill)
    if name in scope.sizes:
        return Type("int", (), fill=scope.constants.get(name))
    if name in DISTRIBUTIONS or name in BUILTINS:
        raise ModelError("E202", f"`{name}` is a function; call it with arguments", span=expr.span,
                         hint=f"write `{name}(...)`")
    if name in RULES:
        raise ModelError("E201", f"unknown name `{name}`", span=expr.span,
                         hint=f"rule annotations follow the distribution: `y ~ Bernoulli(p) @{name}`")
    guess = nearest(name, scope.names())
    raise ModelError("E201", f"unknown name `{name}`", span=expr.span,
                     hint=f"did you mean `{guess}`?" if guess else "declare it with `const`, `data`, `~` or `=` first")


def _index(expr: ast.Index, scope: Scope) -> Type:
    base = infer(expr.base, scope)
    if len(expr.indices) > len(base.shape):
        name = ast.text(expr.base)
        raise ModelError("E210", f"`{name}` has {len(base.shape)} dimension(s) but is indexed with "
                         f"{len(expr.indices)}", span=expr.span,
                         hint=f"`{name}` is one scalar: draw one per level in a loop (`for k in 1..K {{ {name}[k] ~ "
                              f"... }}`) or give it a shape (`{name}: real[K] ~ ...`)" if not base.shape
                         and getattr(scope.variables.get(name), "kind", None) == "latent" else None)
    shape = list(base.shape)
    out: list = []
    for axis, index in enumerate(expr.indices):
        itype = infer(index, scope)
        dim = shape[axis]
        if itype.elem not in ("int", "cat", "bool"):
            raise ModelError("E211", f"index `{ast.text(index)}` is {itype.elem}; indices must be "
                             "integers or categories", span=index.span)
        if itype.elem == "cat" and itype.levels is not None and itype.levels != dim and dim != 1:
            raise ModelError("E212", f"`{ast.text(index)}` takes {itype.levels} levels but "
                             f"`{ast.text(expr.base)}` has {dim} along this dimension",
                             span=index.span, hint="the number of levels must equal the indexed size")
        _check_range(index, dim, scope, expr)
        out.extend(itype.shape)  # an array index gathers (numpy fancy indexing)
    return Type(base.elem, tuple(out) + tuple(shape[len(expr.indices):]), base.levels)


def index_range(index: ast.Expr, scope: Scope):
    """(lo, hi, plate) of an index that is a loop variable plus or minus an integer, else None."""
    offset = 0
    if isinstance(index, ast.BinOp) and index.op in "+-" and isinstance(index.right, ast.Number):
        offset = int(index.right.value) * (1 if index.op == "+" else -1)
        index = index.left
    if isinstance(index, ast.Name) and index.id in scope.loops:
        plate: Plate = scope.loops[index.id]
        return (plate.lo[0], plate.lo[1] + offset), (plate.hi[0], plate.hi[1] + offset), plate
    if isinstance(index, ast.Number) and index.is_int:
        return (None, int(index.value)), (None, int(index.value)), None
    if isinstance(index, ast.Neg) and isinstance(index.operand, ast.Number) and index.operand.is_int:
        return (None, -int(index.operand.value)), (None, -int(index.operand.value)), None
    return None


def _check_range(index: ast.Expr, dim, scope: Scope, whole: ast.Index) -> None:
    found = index_range(index, scope)
    if found is None:
        return
    (lo_name, lo), (hi_name, hi), plate = found
    base = ast.text(whole.base)
    if lo_name is None and lo < 1:
        at = f" when {plate.var} = {plate.lo[1]}" if plate else ""
        raise ModelError("E213", f"`{ast.text(whole)}` reaches {base}[{lo}]{at}; indices start at 1",
                         span=index.span, hint="start the loop later, e.g. `for t in 2..T`")
    dim_value = scope.constants.get(dim) if isinstance(dim, str) else dim
    hi_value = scope.constants.get(hi_name, None) if hi_name else 0
    if isinstance(dim_value, (int, float)) and hi_value is not None and (hi_name is None or hi_name in scope.constants):
        if hi_value + hi > dim_value:
            raise ModelError("E214", f"`{ast.text(whole)}` goes past the end of `{base}` (size {dim})",
                             span=index.span)
    elif hi_name is not None and hi_name != dim and dim != 1:
        raise ModelError("E214", f"`{ast.text(index)}` runs up to {hi_name} but `{base}` has size {dim} here",
                         span=index.span, hint=f"loop up to {dim}")
    elif hi_name == dim and hi > 0:
        raise ModelError("E214", f"`{ast.text(whole)}` goes past the end of `{base}` (size {dim})",
                         span=index.span)


def _call(expr: ast.Call, scope: Scope) -> Type:
    if expr.func in DISTRIBUTIONS:
        raise ModelError("E203", f"`{expr.func}` is a distribution, not a function", span=expr.func_span,
                         hint=f"draw a variable with `~`: `x ~ {ast.text(expr)}`")
    fn = BUILTINS.get(expr.func)
    if fn is None:
        guess = nearest(expr.func, set(BUILTINS) | set(DISTRIBUTIONS))
        raise ModelError("E204", f"unknown function `{expr.func}`", span=expr.func_span,
                         hint=f"did you mean `{guess}`?" if guess else "see docs/language.md for the built-ins")
    if expr.kwargs and fn.constructor:
        raise ModelError("E205", f"`{fn.name}` takes no keyword arguments", span=expr.span)
    if fn.constructor:
        return _constructor(expr, scope)
    args = list(expr.args)
    for key, value in expr.kwargs:
        if key not in fn.params[len(args):]:
            raise ModelError("E205", f"`{fn.name}` has no argument `{key}`", span=value.span,
                             expected=", ".join(fn.params))
        args.append(value)
    if len(args) != len(fn.params):
        raise ModelError("E206", f"`{fn.name}` takes {len(fn.params)} argument(s) "
                         f"({', '.join(fn.params)}), got {len(args)}", span=expr.span)
    types = [infer(a, scope) for a in args]
    try:
        shape = fn.shape(*(t.shape for t in types))
    except ShapeMismatch as exc:
        raise ModelError("E220", str(exc), span=expr.span) from None
    return Type("real", shape)


def _constructor(expr: ast.Call, scope: Scope) -> Type:
    dims = []
    for a in expr.args:
        if isinstance(a, ast.Number) and a.is_int:
            dims.append(int(a.value))
        elif isinstance(a, ast.Name) and a.id in scope.sizes:
            value = scope.constants.get(a.id)
            dims.append(value if isinstance(value, int) else a.id)
        else:
            raise ModelError("E207", f"`{expr.func}` takes sizes (integers or size names), "
                             f"not `{ast.text(a)}`", span=a.span)
    if not dims or (expr.func == "eye" and len(dims) != 1):
        raise ModelError("E206", f"`{expr.func}` needs {'one size' if expr.func == 'eye' else 'sizes'}",
                         span=expr.span)
    if expr.func == "eye":
        return Type("real", (dims[0], dims[0]), pd=True)
    return Type("real", tuple(dims), fill=0.0 if expr.func == "zeros" else 1.0, pd=False)


def _binop(expr: ast.BinOp, scope: Scope) -> Type:
    left, right = infer(expr.left, scope), infer(expr.right, scope)
    if expr.op == "@":
        try:
            return Type("real", matmul(left.shape, right.shape))
        except ShapeMismatch as exc:
            raise ModelError("E220", str(exc), span=expr.span) from None
    shape = _broadcast([left.shape, right.shape], expr)
    elem = "int" if left.elem == right.elem == "int" and expr.op in "+-*" else "real"
    fill = _fold(expr.op, left.fill, right.fill)
    pd = None
    if expr.op in "*/" and (left.pd or right.pd):  # a positive multiple of a known PD matrix
        scalar = right if left.pd else left
        pd = bool(scalar.fill is not None and scalar.fill > 0 and not scalar.shape) or None
    if left.shape and right.shape and (left.fill is None or right.fill is None):
        fill = None
    return Type(elem, shape, fill=fill, pd=pd)


def _fold(op: str, a, b):
    """The constant value of `a op b`, inf/nan where the arithmetic has no finite answer."""
    if a is None or b is None:
        return None
    try:
        if op == "+":
            return a + b
        if op == "-":
            return a - b
        if op == "*":
            return a * b
        if op == "/":
            return a / b if b != 0 else (float("nan") if a == 0 else float("inf"))
        if op == "^":
            if a < 0 and not float(b).is_integer():
                return float("nan")
            return float(a) ** float(b)
    except ZeroDivisionError:
        return float("inf")
    except OverflowError:
        return float("inf")
    return None


def _broadcast(shapes, expr) -> tuple:
    try:
        return broadcast(*shapes)
    except ShapeMismatch as exc:
        raise ModelError("E220", f"{exc} in `{ast.text(expr)}`", span=expr.span) from None


__all__ = ["Type", "Scope", "infer", "index_range", "show"]
