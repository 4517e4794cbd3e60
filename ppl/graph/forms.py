"""How a parameter expression depends on one latent variable, after inlining `=` definitions.

The analyzer matches these forms against its conjugacy table:

- ``absent``: the expression does not read the variable;
- ``identity``: the variable itself, possibly indexed by loops or data (``mu[k]``, ``a[g[n]]``);
- ``scaled``: the variable times factors that do not read it (``beta0 * Lambda[k]``), or
  ``diag(alpha)``;
- ``linear``: affine in the variable (``dot(x[n], w) + b``, ``X @ w``, ``a * x[t-1]``);
- ``link:NAME``: a link (``logistic``, ``probit``, ``exp``, ``softmax``, ...) of a linear form;
- ``selector``: the variable is a latent category used only as an index (``mu[z[n]]``);
- ``nonlinear``: anything else.
"""

from __future__ import annotations

from ppl.lang import ast
from ppl.lang.builtins import BUILTINS

LINEAR_FORMS = ("identity", "scaled", "linear")


def inline(expr: ast.Expr, definitions: dict) -> ast.Expr:
    """Replace every deterministic name by its definition (loop indices substituted); `expr` itself
    when the model defines none (the AST is frozen: the same tree, not a copy of it)."""
    if not definitions:
        return expr
    if isinstance(expr, ast.Name) and expr.id in definitions:
        return inline(definitions[expr.id][0].value, definitions)
    if isinstance(expr, ast.Index) and isinstance(expr.base, ast.Name) and expr.base.id in definitions:
        definition = definitions[expr.base.id][0]
        params = [i.id for i in definition.target.indices if isinstance(i, ast.Name)]
        if len(params) == len(expr.indices) == len(definition.target.indices):
            mapping = dict(zip(params, expr.indices))
            return inline(_substitute(definition.value, mapping), definitions)
        base = inline(definition.value, definitions)
        return ast.Index(base, tuple(inline(i, definitions) for i in expr.indices), expr.span)
    return _map(expr, lambda e: inline(e, definitions))


def _substitute(expr: ast.Expr, mapping: dict) -> ast.Expr:
    if isinstance(expr, ast.Name) and expr.id in mapping:
        return mapping[expr.id]
    return _map(expr, lambda e: _substitute(e, mapping))


def _map(expr: ast.Expr, fn) -> ast.Expr:
    """Rebuild `expr` with `fn` applied to its direct children."""
    if isinstance(expr, ast.Index):
        return ast.Index(fn(expr.base), tuple(fn(i) for i in expr.indices), expr.span)
    if isinstance(expr, ast.Call):
        return ast.Call(expr.func, tuple(fn(a) for a in expr.args),
                        tuple((k, fn(v)) for k, v in expr.kwargs), expr.span, expr.func_span)
    if isinstance(expr, ast.BinOp):
        return ast.BinOp(expr.op, fn(expr.left), fn(expr.right), expr.span)
    if isinstance(expr, ast.Neg):
        return ast.Neg(fn(expr.operand), expr.span)
    if isinstance(expr, ast.Vector):
        return ast.Vector(tuple(fn(i) for i in expr.items), expr.span)
    return expr


def reads(expr: ast.Expr, name: str) -> bool:
    return any(isinstance(e, ast.Name) and e.id == name for e in ast.walk(expr))


def used_as_index_only(expr: ast.Expr, name: str) -> bool:
    """True when every use of `name` sits inside the index list of an `Index`."""
    inside = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Index):
            for index in node.indices:
                inside.update(id(e) for e in ast.walk(index))
    uses = [e for e in ast.walk(expr) if isinstance(e, ast.Name) and e.id == name]
    return bool(uses) and all(id(u) in inside for u in uses)


def form(expr: ast.Expr, name: str) -> str:
    """The form of `expr` in the variable `name` (see module docstring)."""
    if not reads(expr, name):
        return "absent"
    if _is_identity(expr, name):
        return "identity"
    if isinstance(expr, ast.BinOp) and expr.op in "*/":
        left, right = form(expr.left, name), form(expr.right, name)
        if expr.op == "*" and {left, right} in ({"identity", "absent"}, {"scaled", "absent"}):
            return "scaled"
        if expr.op == "/" and left in ("identity", "scaled") and right == "absent":
            return "scaled"
    if isinstance(expr, ast.Call) and expr.func == "diag" and form(expr.args[0], name) == "identity":
        return "scaled"  # a diagonal matrix of the variable: each element scales one coordinate
    if isinstance(expr, ast.Call) and BUILTINS.get(expr.func) and BUILTINS[expr.func].link:
        inner = expr.args[0] if expr.args else None
        if inner is not None and degree(inner, name) == 1:
            return f"link:{expr.func}"
    return "linear" if degree(expr, name) == 1 else "nonlinear"


def _is_identity(expr: ast.Expr, name: str) -> bool:
    if isinstance(expr, ast.Name):
        return expr.id == name
    if isinstance(expr, ast.Index):
        return _is_identity(expr.base, name) and not any(reads(i, name) for i in expr.indices)
    return False


def degree(expr: ast.Expr, name: str):
    """Polynomial degree of `expr` in `name`: 0, 1, or None when not a polynomial of degree ≤ 1."""
    if not reads(expr, name):
        return 0
    if _is_identity(expr, name):
        return 1
    if isinstance(expr, ast.Neg):
        return degree(expr.operand, name)
    if isinstance(expr, ast.BinOp):
        left, right = degree(expr.left, name), degree(expr.right, name)
        if left is None or right is None:
            return None
        if expr.op in "+-":
            return max(left, right)
        if expr.op in "*@":
            return left + right if left + right <= 1 else None
        if expr.op == "/":
            return left if right == 0 else None
        return None
    if isinstance(expr, ast.Call) and expr.func in ("dot", "sum"):
        degrees = [degree(a, name) for a in expr.args]
        if None in degrees or sum(degrees) > 1:
            return None
        return sum(degrees)
    if isinstance(expr, ast.Index):  # an indexed sub-expression: (X @ w)[n]
        if any(reads(i, name) for i in expr.indices):
            return None
        return degree(expr.base, name)
    return None
