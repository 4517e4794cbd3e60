"""Constant matrices that are diagonal by construction, read as their diagonal.

`eye(D)`, `diag(v)`, a scalar times or over one of them, and sums and negations of them are
recognised in the expression itself, so that a prior `MvNormal(zeros(D), eye(D))` costs D numbers
and never a D × D array, whatever D is (ppl.infer.low_rank solves it in data space when D > N).
Anything else is evaluated densely by the caller.
"""

from __future__ import annotations

import numpy as np

from ppl.lang import ast


def constant_diagonal(expr: ast.Expr, plate) -> np.ndarray | None:
    """The diagonal (D,) of the constant matrix `expr`, the same at every element of `plate`
    (a `ppl.infer.plates.Plate`), or None when `expr` is not diagonal by construction."""
    if isinstance(expr, ast.Call) and not expr.kwargs:
        if expr.func == "eye" and len(expr.args) == 1:
            arg = expr.args[0]
            return np.ones(plate.env.size(arg.id if isinstance(arg, ast.Name) else int(arg.value)))
        if expr.func == "diag" and len(expr.args) == 1:
            return _vector(plate.evaluate(expr.args[0]))
        return None
    if isinstance(expr, ast.Neg):
        inner = constant_diagonal(expr.operand, plate)
        return None if inner is None else -inner
    if not isinstance(expr, ast.BinOp):
        return None
    if expr.op in "+-":
        left, right = constant_diagonal(expr.left, plate), constant_diagonal(expr.right, plate)
        if left is None or right is None or left.shape != right.shape:
            return None
        return left + right if expr.op == "+" else left - right
    if expr.op == "*":
        for matrix, scalar in ((expr.left, expr.right), (expr.right, expr.left)):
            inner = constant_diagonal(matrix, plate)
            if inner is not None:
                factor = _scalar(plate, scalar)
                return None if factor is None else factor * inner
        return None
    if expr.op == "/":
        inner, factor = constant_diagonal(expr.left, plate), _scalar(plate, expr.right)
        return None if inner is None or factor is None else inner / factor
    return None


def _scalar(plate, expr: ast.Expr):
    """The value of `expr` when it is one number for the whole plate, else None."""
    if isinstance(expr, ast.Call) and expr.func in ("eye", "diag", "zeros", "ones"):
        return None  # a matrix or vector: not a scale (and `eye` is not evaluated densely)
    value = np.asarray(plate.evaluate(expr), dtype=float)
    return float(value) if value.size == 1 else None


def _vector(value) -> np.ndarray | None:
    value = np.asarray(value, dtype=float)
    return value.copy() if value.ndim == 1 else None
