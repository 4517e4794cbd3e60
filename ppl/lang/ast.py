"""The abstract syntax tree of a .vim model: frozen dataclasses, each with the span it came from.

The parser builds it and nobody changes it afterwards; the checker reads it and returns a
separate checked model. Expressions are plain trees that later stages interpret (never `eval`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ppl.diagnostics import Source, Span


# ---- expressions ---------------------------------------------------------

@dataclass(frozen=True)
class Number:
    value: float
    is_int: bool
    span: Span


@dataclass(frozen=True)
class Name:
    id: str
    span: Span


@dataclass(frozen=True)
class Index:
    """``base[i, j, ...]``: by a loop variable, a lag (``t-1``), data or a latent category."""

    base: "Expr"
    indices: tuple["Expr", ...]
    span: Span


@dataclass(frozen=True)
class Call:
    """A distribution or a built-in function: positional then keyword arguments."""

    func: str
    args: tuple["Expr", ...]
    kwargs: tuple[tuple[str, "Expr"], ...]
    span: Span
    func_span: Span


@dataclass(frozen=True)
class BinOp:
    op: str  # one of + - * / @ ^
    left: "Expr"
    right: "Expr"
    span: Span


@dataclass(frozen=True)
class Neg:
    operand: "Expr"
    span: Span


@dataclass(frozen=True)
class Vector:
    items: tuple["Expr", ...]
    span: Span


Expr = Union[Number, Name, Index, Call, BinOp, Neg, Vector]


# ---- declarations and statements ----------------------------------------

@dataclass(frozen=True)
class TypeSpec:
    """``real[N, D]``, ``int[N]``, ``bool[N]``, ``cat(K)[N]``: element type, level count, dims."""

    elem: str
    levels: str | int | None
    dims: tuple[str | int, ...]
    span: Span


@dataclass(frozen=True)
class Column:
    name: str
    span: Span


@dataclass(frozen=True)
class ColumnGroup:
    """``x1..xD``: the columns from `first` to `last`, numbered consecutively."""

    first: Column
    last: Column
    span: Span


@dataclass(frozen=True)
class ColumnList:
    columns: tuple[Column, ...]
    span: Span


Binding = Union[Column, ColumnGroup, ColumnList]


@dataclass(frozen=True)
class ConstDecl:
    name: str
    type: TypeSpec | None
    value: Expr
    span: Span
    name_span: Span


@dataclass(frozen=True)
class DataDecl:
    name: str
    type: TypeSpec
    binding: Binding | None
    span: Span
    name_span: Span


@dataclass(frozen=True)
class LValue:
    name: str
    indices: tuple[Expr, ...]
    span: Span
    name_span: Span


@dataclass(frozen=True)
class Annotation:
    """``@cvi(step=0.5, samples=16)``: the rule to use for this statement's factor."""

    rule: str
    options: tuple[tuple[str, Expr], ...]
    span: Span


@dataclass(frozen=True)
class Sample:
    """``target [: type] ~ Dist(args) @rule...``: a factor."""

    target: LValue
    type: TypeSpec | None
    dist: Call
    annotations: tuple[Annotation, ...]
    span: Span


@dataclass(frozen=True)
class Define:
    """``target = expr``: a deterministic node."""

    target: LValue
    value: Expr
    span: Span


@dataclass(frozen=True)
class Loop:
    """``for var in lo..hi { body }``: a plate."""

    var: str
    lo: Expr
    hi: Expr
    body: tuple["Stmt", ...]
    span: Span
    var_span: Span


@dataclass(frozen=True)
class Schedule:
    """``schedule svi(batch=64)``: which groups a step visits and how the globals move."""

    name: str
    options: tuple[tuple[str, Expr], ...]
    span: Span


@dataclass(frozen=True)
class GaussianBlock:
    """``block (mu, a, b)``: one joint Gaussian q over these Normal latent variables."""

    names: tuple[str, ...]
    name_spans: tuple[Span, ...]
    span: Span


Stmt = Union[Sample, Define, Loop]
Item = Union[ConstDecl, DataDecl, Schedule, GaussianBlock, Sample, Define, Loop]


@dataclass(frozen=True)
class Program:
    items: tuple[Item, ...]
    source: Source


def walk(expr: Expr):
    """Yield `expr` and every sub-expression, parents first."""
    yield expr
    if isinstance(expr, Index):
        yield from walk(expr.base)
        for i in expr.indices:
            yield from walk(i)
    elif isinstance(expr, Call):
        for a in expr.args:
            yield from walk(a)
        for _, a in expr.kwargs:
            yield from walk(a)
    elif isinstance(expr, BinOp):
        yield from walk(expr.left)
        yield from walk(expr.right)
    elif isinstance(expr, Neg):
        yield from walk(expr.operand)
    elif isinstance(expr, Vector):
        for i in expr.items:
            yield from walk(i)


def text(expr: Expr) -> str:
    """The expression as the user would write it (for reports and node labels)."""
    if isinstance(expr, Number):
        return repr(int(expr.value)) if expr.is_int else repr(expr.value)
    if isinstance(expr, Name):
        return expr.id
    if isinstance(expr, Index):
        return f"{text(expr.base)}[{', '.join(text(i) for i in expr.indices)}]"
    if isinstance(expr, Call):
        parts = [text(a) for a in expr.args] + [f"{k}={text(v)}" for k, v in expr.kwargs]
        return f"{expr.func}({', '.join(parts)})"
    if isinstance(expr, BinOp):
        return f"{_wrap(expr.left)} {expr.op} {_wrap(expr.right)}"
    if isinstance(expr, Neg):
        return f"-{_wrap(expr.operand)}"
    if isinstance(expr, Vector):
        return f"[{', '.join(text(i) for i in expr.items)}]"
    raise TypeError(f"not an expression: {expr!r}")


def _wrap(expr: Expr) -> str:
    return f"({text(expr)})" if isinstance(expr, (BinOp, Neg)) else text(expr)


def lvalue_text(target: LValue) -> str:
    if not target.indices:
        return target.name
    return f"{target.name}[{', '.join(text(i) for i in target.indices)}]"
