"""Built-in functions: arity, which are links, and how each maps argument shapes to a result shape.

Shapes are tuples of dimensions, each a size name or an integer. A shape rule returns the
result shape or raises `ShapeMismatch` with a sentence the checker turns into a located error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

Shape = tuple


class ShapeMismatch(Exception):
    """Raised by a shape rule; the message is shown to the user."""


def broadcast(*shapes: Shape) -> Shape:
    """numpy broadcasting over symbolic dimensions (a dimension broadcasts only if it is 1)."""
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(rank):
        dims = {s[len(s) - rank + axis] for s in shapes if len(s) - rank + axis >= 0} - {1}
        if len(dims) > 1:
            raise ShapeMismatch("shapes " + " and ".join(show(s) for s in shapes) + " do not broadcast")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def show(shape: Shape) -> str:
    return "scalar" if not shape else "[" + ", ".join(str(d) for d in shape) + "]"


def matmul(a: Shape, b: Shape) -> Shape:
    if not a or not b:
        raise ShapeMismatch("`@` needs arrays on both sides; use `*` for a scalar")
    if a[-1] != (b[-2] if len(b) > 1 else b[0]):
        raise ShapeMismatch(f"`@` of {show(a)} and {show(b)}: inner dimensions differ")
    if len(b) == 1:
        return a[:-1]
    if len(a) == 1:
        return b[:-2] + b[-1:]
    return broadcast(a[:-2], b[:-2]) + (a[-2], b[-1])


def _dot(a: Shape, b: Shape) -> Shape:
    if not a or not b or a[-1] != b[-1]:
        raise ShapeMismatch(f"dot of {show(a)} and {show(b)}: last dimensions must agree")
    return broadcast(a[:-1], b[:-1])


def _softmax(a: Shape) -> Shape:
    if not a:
        raise ShapeMismatch("softmax needs a vector")
    return a


def _rbf(x: Shape, lengthscale: Shape, variance: Shape) -> Shape:
    if lengthscale or variance:
        raise ShapeMismatch("rbf's lengthscale and variance must be scalars")
    if len(x) not in (1, 2):
        raise ShapeMismatch("rbf takes inputs of shape [N] or [N, D]")
    return (x[0], x[0])


def _diag(v: Shape) -> Shape:
    if len(v) != 1:
        raise ShapeMismatch("diag takes a vector")
    return (v[0], v[0])


def _sum(a: Shape) -> Shape:
    return ()


@dataclass(frozen=True)
class Builtin:
    """A function: its parameter names, whether it is a link (non-linear in its argument),
    and its shape rule. Constructors (`zeros`, `ones`, `eye`) take dimensions, not arrays."""

    name: str
    params: tuple[str, ...]
    shape: Callable[..., Shape] | None
    link: bool = False
    constructor: bool = False


def _elementwise(a: Shape) -> Shape:
    return a


BUILTINS: dict[str, Builtin] = {b.name: b for b in (
    Builtin("exp", ("x",), _elementwise, link=True),
    Builtin("log", ("x",), _elementwise, link=True),
    Builtin("sqrt", ("x",), _elementwise, link=True),
    Builtin("logistic", ("x",), _elementwise, link=True),
    Builtin("probit", ("x",), _elementwise, link=True),
    Builtin("softmax", ("x",), _softmax, link=True),
    Builtin("dot", ("a", "b"), _dot),
    Builtin("sum", ("x",), _sum),
    Builtin("diag", ("v",), _diag),
    Builtin("rbf", ("x", "lengthscale", "variance"), _rbf),
    Builtin("zeros", ("dims",), None, constructor=True),
    Builtin("ones", ("dims",), None, constructor=True),
    Builtin("eye", ("dim",), None, constructor=True),
)}
