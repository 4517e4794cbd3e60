"""Gaussian means that are linear in each latent variable: ``offset + Σ_j coef_j · Π latents``.

A term is a data coefficient times a product of Gaussian latent reads, at most one of them
a vector; with ``dot``/``@`` the coefficient is a data vector contracted with that vector
(``dot(x[n], w)``, ``X @ w``). Each latent variable appears in one term, so under mean field
the terms are independent and E[m²] = E[m]² + Σ_j Var(term_j). That covers linear and
hierarchical regression (``a[g[n]] + b * x[n]``), mixtures (``mu[z[n]]``) and Markov chains
(``a * x[t-1]``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ppl.infer.access import Unsupported
from ppl.lang import ast


@dataclass
class Term:
    coef: np.ndarray  # plate + (C,) [+ (D,) when contracted with the vector latent]
    scalars: list = field(default_factory=list)  # Access of scalar Normal latents
    vector: object = None  # Access of an MvNormal latent, or None
    contract: bool = False


@dataclass
class LinearForm:
    offset: np.ndarray  # plate + (C,) + event
    terms: list
    event: int  # 0 for a scalar mean, D for a vector mean


class LinearBuilder:
    """Parses a mean expression of one factor into a `LinearForm`."""

    def __init__(self, accesses, plate, model, event: int):
        self.accesses = accesses
        self.plate = plate
        self.model = model
        self.event = event

    def build(self, expr: ast.Expr) -> LinearForm:
        offset, terms = self._parse(expr)
        shape = self.accesses.shape() + ((self.event,) if self.event else ())
        return LinearForm(np.broadcast_to(offset, shape).astype(float), terms, self.event)

    def _latent(self, expr) -> bool:
        return any(isinstance(n, ast.Name) and self.model.variables.get(n.id) is not None
                   and self.model.variables[n.id].kind == "latent" for n in ast.walk(expr))

    def _data(self, expr) -> np.ndarray:
        value = np.asarray(self.plate.evaluate(expr), dtype=float)
        rank = len(self.plate.shape)
        if value.ndim <= rank and value.ndim > 0 and value.shape == self.plate.shape[rank - value.ndim:]:
            return value.reshape(value.shape + (1,) * 1)  # a plate-shaped value: add the component axis
        if value.ndim > rank:  # plate + element dims: component axis goes between
            return np.expand_dims(value, rank)
        return value

    def _parse(self, expr):
        if not self._latent(expr):
            return self._data(expr), []
        if isinstance(expr, (ast.Name, ast.Index)) and _is_read(expr):
            access = self.accesses.build(expr)
            dist = self.model.variables[access.name].dist
            if dist == "MvNormal":
                return 0.0, [Term(np.ones(1), vector=access)]
            if dist == "Normal":
                return 0.0, [Term(np.ones(1), scalars=[access])]
            raise Unsupported(f"`{ast.text(expr)}` is {dist}, not Gaussian, in a Gaussian mean", expr.span)
        if isinstance(expr, ast.Neg):
            offset, terms = self._parse(expr.operand)
            return _scale(offset, terms, -1.0)
        if isinstance(expr, ast.BinOp) and expr.op in "+-":
            o1, t1 = self._parse(expr.left)
            o2, t2 = self._parse(expr.right)
            sign = 1.0 if expr.op == "+" else -1.0
            o2, t2 = _scale(o2, t2, sign)
            return np.add(o1, o2), t1 + t2
        if isinstance(expr, ast.BinOp) and expr.op in "*/":
            return self._product(expr)
        if (isinstance(expr, ast.BinOp) and expr.op == "@") or (isinstance(expr, ast.Call) and expr.func == "dot"):
            left, right = (expr.left, expr.right) if isinstance(expr, ast.BinOp) else expr.args
            return self._contract(left, right, expr)
        raise Unsupported(f"the engine cannot run `{ast.text(expr)}` as a linear Gaussian mean yet", expr.span)

    def _product(self, expr: ast.BinOp):
        left_latent, right_latent = self._latent(expr.left), self._latent(expr.right)
        if expr.op == "/":
            if right_latent:
                raise Unsupported(f"division by a latent variable in `{ast.text(expr)}`", expr.span)
            offset, terms = self._parse(expr.left)
            return _scale(offset, terms, 1.0 / self._data(expr.right))
        if not (left_latent and right_latent):
            data, latent = (expr.left, expr.right) if right_latent else (expr.right, expr.left)
            offset, terms = self._parse(latent)
            return _scale(offset, terms, self._data(data))
        o1, t1 = self._parse(expr.left)
        o2, t2 = self._parse(expr.right)
        if np.any(o1) or np.any(o2) or len(t1) != 1 or len(t2) != 1 or (t1[0].vector and t2[0].vector):
            raise Unsupported(f"`{ast.text(expr)}`: a product of latent sums is not linear in each", expr.span)
        a, b = t1[0], t2[0]
        return 0.0, [Term(a.coef * b.coef, a.scalars + b.scalars, a.vector or b.vector, a.contract or b.contract)]

    def _contract(self, left, right, expr):
        if self._latent(left) == self._latent(right):
            raise Unsupported(f"`{ast.text(expr)}` must contract data with one latent vector", expr.span)
        data, latent = (left, right) if self._latent(right) else (right, left)
        name = latent.id if isinstance(latent, ast.Name) else getattr(getattr(latent, "base", None), "id", None)
        if name in self.model.variables and self.model.variables[name].dist == "Normal":
            raise Unsupported(f"`{ast.text(expr)}` couples the elements of `{name}`, which are independent "
                              f"Normals in q; declare `{name} ~ MvNormal(zeros(D), ...)` for one joint "
                              f"Gaussian q({name})", expr.span)
        offset, terms = self._parse(latent)
        if np.any(offset) or len(terms) != 1 or terms[0].vector is None:
            raise Unsupported(f"`{ast.text(expr)}` must contract data with one MvNormal vector", expr.span)
        term = terms[0]
        coef = self._data(data)
        term.coef = term.coef * coef if np.ndim(term.coef) else coef * float(term.coef.ravel()[0])
        term.contract = True
        return 0.0, [term]


def _is_read(expr) -> bool:
    return isinstance(expr, ast.Name) or (isinstance(expr, ast.Index) and isinstance(expr.base, ast.Name))


def _scale(offset, terms, factor):
    for t in terms:
        f = np.asarray(factor)
        t.coef = t.coef * (f[..., None] if t.contract and f.ndim else f)
    return np.multiply(offset, factor), terms


# ---- moments -----------------------------------------------------------------

def scalar_moments(state, access):
    """(E[v], E[v²]) of a scalar Normal read, shape plate + (C,)."""
    m = access.gather(state.moments(access.name))
    return m[..., 0], m[..., 1]


def vector_moments(state, access, dim: int):
    """(E[v], E[v vᵀ]) of an MvNormal read: plate + (C, D) and plate + (C, D, D)."""
    m = access.gather(state.moments(access.name))
    return m[..., :dim], m[..., dim:].reshape(m.shape[:-1] + (dim, dim))


def scalar_part(state, term: Term, skip=None):
    """Π E[s] and Π E[s²] over the term's scalar reads, leaving out `skip`."""
    first, second = 1.0, 1.0
    for access in term.scalars:
        if access is not skip:
            e1, e2 = scalar_moments(state, access)
            first, second = first * e1, second * e2
    return first, second


def term_moments(state, term: Term, dim: int):
    """Scalar mean: (E[t], E[t²]). Vector-valued: (E[t], E[t tᵀ])."""
    s1, s2 = scalar_part(state, term)
    if term.vector is None:
        return term.coef * s1, term.coef ** 2 * s2
    mean, outer = vector_moments(state, term.vector, _dim(state, term.vector))
    if term.contract:
        c = term.coef
        return np.sum(c * mean, -1) * s1, np.einsum("...i,...ij,...j->...", c, outer, c) * s2
    c = term.coef[..., None] if np.ndim(term.coef) else term.coef
    return c * s1[..., None] * mean if np.ndim(s1) else c * s1 * mean, \
        (c[..., None] ** 2 if np.ndim(c) else c ** 2) * _expand2(s2) * outer


def form_moments(state, form: LinearForm):
    """E[m] and E[m²] (scalar) or E[m mᵀ] (vector) of the whole linear form."""
    mean = form.offset.copy()
    spread = 0.0
    for term in form.terms:
        t1, t2 = term_moments(state, term, form.event)
        mean = mean + t1
        spread = spread + (t2 - (t1 * t1 if not form.event else np.einsum("...i,...j->...ij", t1, t1)))
    if not form.event:
        return mean, mean * mean + spread
    return mean, np.einsum("...i,...j->...ij", mean, mean) + spread


def _dim(state, access) -> int:
    return state.families[access.name].event_shape[0]


def _expand2(x):
    return x[..., None, None] if np.ndim(x) else x
