"""Gaussian means that are linear in each latent variable: ``offset + Σ_j coef_j · Π latents``.

A term is a data coefficient times a product of Gaussian latent reads, at most two of them
vectors; with ``dot``/``@`` the coefficient is a data vector contracted with that vector
(``dot(x[n], w)``, ``X @ w``), and a ``dot`` of two MvNormal vectors is a bilinear term
Σ_d c_d u_d v_d (``dot(lam[j], z[n])``, factor analysis). Each latent variable appears in one
term (ppl.infer.linear_merge sums reads of coordinates of one MvNormal, ``b[1] + b[2] * x``, into
one contraction b · (1, x)), so under mean field the terms, and the two vectors of a bilinear term,
are independent: E[m²] = E[m]² + Σ_j Var(term_j), with E[uᵀv] = E[u]ᵀE[v] and
E[(uᵀv)²] = tr(E[uuᵀ]E[vvᵀ]).
That covers linear and hierarchical regression (``a[g[n]] + b * x[n]``), mixtures
(``mu[z[n]]``), Markov chains (``a * x[t-1]``) and factor models.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ppl.infer.access import Unsupported
from ppl.infer.linear_merge import merged
from ppl.infer.rows import dot_rows, quadratic_rows
from ppl.lang import ast


@dataclass
class Term:
    coef: np.ndarray  # plate + (C,) [+ (D,) when contracted with the vector latent]
    scalars: list = field(default_factory=list)  # Access of scalar Normal latents
    vector: object = None  # Access of an MvNormal latent, or None
    contract: bool = False
    vector2: object = None  # a second MvNormal read: the term is Π s · Σ_d coef_d vector_d vector2_d

    def reads(self) -> list:
        """Every latent read of the term."""
        return self.scalars + [v for v in (self.vector, self.vector2) if v is not None]

    @property
    def rows(self) -> np.ndarray:
        """A contracted coefficient as (rows, D): one view of `coef`, the same object while `coef`
        is, so that a q held in data space knows its own rows at once (`low_rank.same_array`:
        reading a view's address costs a microsecond). A reshape that copies is made each time."""
        kept = self.__dict__.get("_rows")
        if kept is None or kept[0] is not self.coef:
            flat = self.coef.reshape(-1, self.coef.shape[-1])
            if not np.may_share_memory(flat, self.coef):  # a copy: another array each time, as before
                return flat
            kept = self.__dict__["_rows"] = (self.coef, flat)
        return kept[1]


@dataclass
class LinearForm:
    offset: np.ndarray  # plate + (C,) + event
    terms: list
    event: int  # 0 for a scalar mean, D for a vector mean
    _term_of: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # id(read) -> term

    def reads(self) -> list:
        return [access for term in self.terms for access in term.reads()]

    def term_of(self, access) -> Term:
        """The term that reads `access` (each read is in one term): searched once, then looked up
        (every message to a read asks)."""
        term = self._term_of.get(id(access))
        if term is None:
            term = self._term_of[id(access)] = next(t for t in self.terms if any(access is r for r in t.reads()))
        return term

    def bilinear(self) -> set:
        """Names of the vectors in bilinear terms: an all-zero mean of both is a saddle point."""
        return {a.name for t in self.terms if t.vector2 is not None for a in (t.vector, t.vector2)}


class LinearBuilder:
    """Parses a mean expression of one factor into a `LinearForm`."""

    def __init__(self, accesses, plate, model, event: int):
        self.accesses = accesses
        self.plate = plate
        self.model = model
        self.event = event

    def build(self, expr: ast.Expr) -> LinearForm:
        offset, terms = self._parse(expr)
        terms = merged(terms, expr)
        shape = self.accesses.shape() + ((self.event,) if self.event else ())
        return LinearForm(np.broadcast_to(offset, shape).astype(float), terms, self.event)

    def _latent(self, expr) -> bool:
        return any(isinstance(n, ast.Name) and self.model.variables.get(n.id) is not None
                   and self.model.variables[n.id].kind == "latent" for n in ast.walk(expr))

    def _data(self, expr) -> np.ndarray:
        return self.plate.over_components(expr)

    def _parse(self, expr, contracted: bool = False):
        """(offset, terms) of `expr`; `contracted`: it is the vector of a product `X @ w`, read whole
        (never coordinate by coordinate, even when the plate happens to be as long as the vector)."""
        if not self._latent(expr):
            return self._data(expr), []
        if isinstance(expr, (ast.Name, ast.Index)) and _is_read(expr):
            coordinate = None if contracted and isinstance(expr, ast.Name) else self._coordinate(expr)
            if coordinate is not None:
                return 0.0, [coordinate]
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

    def _coordinate(self, expr) -> Term | None:
        """`f[n]` reading one coordinate of an MvNormal `f`: a contraction with a one-hot vector.
        A bare `f` in a vectorised scalar statement over f's own length (`y ~ Normal(f, τ)`) reads
        coordinate i at plate element i."""
        if isinstance(expr, ast.Name):
            var = self.model.variables[expr.id]
            dim = self.accesses.env.size(var.event_shape[0]) if var.dist == "MvNormal" else None
            if var.plates or self.event or self.plate.factor.plates or self.plate.shape[-1:] != (dim,):
                return None
            access = self.accesses.build(expr)
            position = np.arange(dim).reshape((1,) * (len(self.plate.shape) - 1) + (dim,))
        elif isinstance(expr, ast.Index):
            var = self.model.variables[expr.base.id]
            if var.dist != "MvNormal" or len(expr.indices) != len(var.plates) + 1:
                return None
            if self._latent(expr.indices[-1]):
                raise Unsupported(f"`{ast.text(expr)}` picks a coordinate of MvNormal `{expr.base.id}` by a latent "
                                  f"category", expr.span)
            plate_read = ast.Index(expr.base, expr.indices[:-1], expr.span) if var.plates else expr.base
            access = self.accesses.build(plate_read)
            dim = self.accesses.env.size(var.event_shape[0])
            position = np.asarray(self.plate.evaluate(expr.indices[-1])) - 1
        else:
            return None
        onehot = (position[..., None] == np.arange(dim)).astype(float)
        coef = np.expand_dims(onehot, onehot.ndim - 1) if onehot.ndim > 1 else onehot
        return Term(coef, vector=access, contract=True)

    def _product(self, expr: ast.BinOp):
        left_latent, right_latent = self._latent(expr.left), self._latent(expr.right)
        if expr.op == "/":
            if right_latent:
                raise Unsupported(f"division by a latent variable in `{ast.text(expr)}`", expr.span)
            offset, terms = self._parse(expr.left)
            return _scale(offset, terms, 1.0 / self._data(expr.right))
        if not (left_latent and right_latent):
            data, latent = (expr.left, expr.right) if right_latent else (expr.right, expr.left)
            offset, terms = self._parse(latent, contracted=True)
            return _scale(offset, terms, self._data(data))
        o1, t1 = self._parse(expr.left)
        o2, t2 = self._parse(expr.right)
        if np.any(o1) or np.any(o2) or len(t1) != 1 or len(t2) != 1 or (t1[0].vector and t2[0].vector):
            raise Unsupported(f"`{ast.text(expr)}`: a product of latent sums is not linear in each", expr.span)
        a, b = t1[0], t2[0]
        return 0.0, [Term(a.coef * b.coef, a.scalars + b.scalars, a.vector or b.vector, a.contract or b.contract,
                          a.vector2 or b.vector2)]

    def _contract(self, left, right, expr):
        if self._latent(left) and self._latent(right):
            return self._bilinear(left, right, expr)
        data, latent = (left, right) if self._latent(right) else (right, left)
        self._joint(latent, expr)
        offset, terms = self._parse(latent, contracted=True)
        if np.any(offset) or len(terms) != 1 or terms[0].vector is None:
            raise Unsupported(f"`{ast.text(expr)}` must contract data with one MvNormal vector", expr.span)
        term = terms[0]
        coef = self._data(data)
        if np.shape(term.coef) == (1,) and term.coef[0] == 1.0:  # `X @ w`: the data themselves, not a copy
            term.coef = coef
        else:
            term.coef = term.coef * coef if np.ndim(term.coef) else coef * float(term.coef.ravel()[0])
        term.contract = True
        return 0.0, [term]

    def _joint(self, latent, expr):
        """Refuses a contraction with a vector of independent Normals (elements not jointly Gaussian in q)."""
        name = latent.id if isinstance(latent, ast.Name) else getattr(getattr(latent, "base", None), "id", None)
        if name in self.model.variables and self.model.variables[name].dist == "Normal":
            raise Unsupported(f"`{ast.text(expr)}` couples the elements of `{name}`, which are independent "
                              f"Normals in q; declare `{name} ~ MvNormal(zeros(D), ...)` for one joint "
                              f"Gaussian q({name})", expr.span)

    def _bilinear(self, left, right, expr):
        """`dot(u, v)` of two MvNormal reads (each optionally scaled): one bilinear term."""
        sides = []
        for side in (left, right):
            self._joint(side, expr)
            offset, terms = self._parse(side)
            if np.any(offset) or len(terms) != 1 or terms[0].vector is None or terms[0].contract \
                    or terms[0].vector2 is not None:
                raise Unsupported(f"`{ast.text(expr)}`: a `dot` of two latent expressions needs one MvNormal "
                                  f"vector on each side", expr.span)
            sides.append(terms[0])
        a, b = sides
        if a.vector.name == b.vector.name:
            raise Unsupported(f"`{ast.text(expr)}` reads `{a.vector.name}` on both sides; a bilinear term "
                              f"needs two different variables (independent under mean field)", expr.span)
        dim = self.accesses.env.size(self.model.variables[a.vector.name].event_shape[0])
        coef = expand(a.coef) * expand(b.coef) * np.ones(dim)
        return 0.0, [Term(coef, a.scalars + b.scalars, a.vector, True, b.vector)]


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


def contraction(state, term: Term):
    """(E[x], E[x²]) of the contracted vector part of a term: x = cᵀv, or x = Σ_d c_d u_d v_d
    for a bilinear term (u, v independent: E[x²] = Σ_de c_d c_e E[u uᵀ]_de E[v vᵀ]_de)."""
    c = term.coef
    kernel = state.kernel_of(term.vector.name)
    if kernel is not None and term.vector2 is None:  # q held in a structured form: cᵀμ and cᵀΣc, no D × D matrix
        mean = kernel.linear(c, term.rows)
        return mean, mean * mean + kernel.quadratic(c, term.rows)
    mean, outer = vector_moments(state, term.vector, vector_dim(state, term.vector))
    if term.vector2 is None:
        return dot_rows(c, mean), quadratic_rows(c, outer)
    mean2, outer2 = vector_moments(state, term.vector2, vector_dim(state, term.vector2))
    return np.sum(c * mean * mean2, -1), np.einsum("...d,...e,...de,...de->...", c, c, outer, outer2)


def term_moments(state, term: Term):
    """Scalar mean: (E[t], E[t²]). Vector-valued: (E[t], E[t tᵀ])."""
    s1, s2 = scalar_part(state, term)
    coef = term.coef
    if term.vector is None:
        return coef * s1, coef ** 2 * s2
    if term.contract:
        x1, x2 = contraction(state, term)
        return x1 * s1, x2 * s2
    mean, outer = vector_moments(state, term.vector, vector_dim(state, term.vector))
    scale, scale2 = coef * s1, coef ** 2 * s2  # vector-valued term: a scalar times v
    return expand(scale) * mean, expand(expand(scale2)) * outer


def take_rows(form: LinearForm, rows: np.ndarray):
    """`form` on `rows` of the first plate axis alone (a minibatch), and a map from each read
    (by id) to its restricted read: every moment, margin and message computed from the result
    costs O(|rows|), not O(plate)."""
    reads = {id(a): a.take(rows) for a in form.reads()}
    terms = [replace(t, coef=rows_of(t.coef, rows), scalars=[reads[id(s)] for s in t.scalars],
                     vector=reads.get(id(t.vector)), vector2=reads.get(id(t.vector2))) for t in form.terms]
    return LinearForm(rows_of(form.offset, rows), terms, form.event), reads


def rows_of(a, rows):
    """`a` restricted to `rows` of the first plate axis; arrays broadcast along it stay whole."""
    if np.ndim(a) < 2 or np.shape(a)[0] == 1:
        return a
    return a[rows]


def term_mean(state, term: Term):
    """E[t] alone: what a message needs of the other terms (no second moments, no D×D work)."""
    s1 = 1.0
    for access in term.scalars:
        s1 = s1 * scalar_moments(state, access)[0]
    if term.vector is None:
        return term.coef * s1
    mean = _first_moment(state, term.vector)
    if term.vector2 is not None:
        return np.sum(term.coef * mean * _first_moment(state, term.vector2), -1) * s1
    return dot_rows(term.coef, mean) * s1 if term.contract else expand(term.coef * s1) * mean


def _first_moment(state, access):
    """E[v] of an MvNormal read, plate + (C, D), gathered from the first D moments only."""
    kernel = state.kernel_of(access.name)
    if kernel is not None:
        return access.gather(kernel.mean[None])
    return access.gather(state.moments(access.name)[:, :vector_dim(state, access)])


def form_mean(state, form: LinearForm):
    """E[m] of the whole linear form."""
    mean = form.offset
    for term in form.terms:
        mean = mean + term_mean(state, term)
    return mean


def form_moments(state, form: LinearForm):
    """E[m] and E[m²] (scalar) or E[m mᵀ] (vector) of the whole linear form."""
    mean, spread = mean_spread(state, form)
    if not form.event:
        return mean, mean * mean + spread
    return mean, np.einsum("...i,...j->...ij", mean, mean) + spread


def margin(state, form: LinearForm):
    """(mean, variance) of a scalar linear form under q: the Gaussian margin η ~ N(m, v) that
    the non-conjugate rules integrate over (v kept positive for a form with no latent term)."""
    mean, spread = mean_spread(state, form)
    return mean, np.maximum(spread, 1e-300)


def mean_spread(state, form: LinearForm):
    """E[m] and the summed (co)variances of the independent terms."""
    mean = form.offset.copy()
    spread = 0.0
    for term in form.terms:
        t1, t2 = term_moments(state, term)
        mean = mean + t1
        spread = spread + (t2 - (t1 * t1 if not form.event else np.einsum("...i,...j->...ij", t1, t1)))
    return mean, spread


def vector_dim(state, access) -> int:
    """D of an MvNormal read."""
    return state.families[access.name].event_shape[0]


def expand(x):
    """A trailing axis for broadcasting against a vector (scalars stay scalars)."""
    if isinstance(x, np.ndarray):  # the usual cases first, without np.ndim's three calls
        return x[..., None] if x.ndim else x
    if isinstance(x, (int, float)):
        return x
    return np.asarray(x)[..., None] if np.ndim(x) else x
