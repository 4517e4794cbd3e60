"""`y[t] ~ Normal(W1[z1[t]] + ... + WM[zM[t]] + c, τ)`: a Gaussian whose mean adds components
chosen by M different latent categories — the factorial HMM of Ghahramani & Jordan (1997),
seed 001 §21.4.1, with scalar outputs.

Under q = Π_m q(z_m) q(W_m) q(τ) (each z_m one chain, or factorised), with Ŵ_tm = Σ_k γ_tmk E[W_mk],
S_tm = Σ_k γ_tmk E[W_mk²] and r̂_tm = c_t + Σ_{l≠m} Ŵ_tl (the other chains' expected output):

  E[(y_t − μ_t)²] = (y_t − c_t − Σ_m Ŵ_tm)² + Σ_m (S_tm − Ŵ_tm²)
  to z_m at t, state k:  E[τ] (E[W_mk](y_t − r̂_tm) − ½E[W_mk²])      the local evidence log ξ_tm
  to W_mk:               (E[τ] Σ_t γ_tmk (y_t − r̂_tm), −½E[τ] Σ_t γ_tmk)
  to τ (Gamma):          (½, −½ E[(y_t − μ_t)²]) per row

The message to z_m is eq. 21.62 (log ξ_tm = W_mᵀΣ⁻¹ỹ_tm − ½δ_m, ỹ_tm = y_t − Σ_{l≠m} W_l E[x_tl]),
up to a constant in k, with q(W) and q(τ) averaged over: each chain then takes one forward–backward
pass with that evidence. A sweep costs O(T M K) here (Ŵ once per chain, r̂_m as the total minus
chain m's own) and O(T K²) per chain in forward–backward: O(T M K²) in all.
"""

from __future__ import annotations

import functools

import numpy as np

from ppl.graph.forms import inline
from ppl.infer.access import AccessBuilder, Unsupported
from ppl.infer.factors.base import version_key
from ppl.infer.factors.gaussian import LOG_2PI, _Precision
from ppl.infer.plates import Plate
from ppl.lang import ast


def _terms(expr) -> list:
    """The summands of `a + b + ...`."""
    if isinstance(expr, ast.BinOp) and expr.op == "+":
        return _terms(expr.left) + _terms(expr.right)
    return [expr]


def _selector(expr, model) -> ast.Expr | None:
    """The index expression of a summand `W[z[t]]` that reads a latent category, if any."""
    if isinstance(expr, ast.Index):
        for index in expr.indices:
            if any(isinstance(n, ast.Name) and model.variables.get(n.id) is not None
                   and model.variables[n.id].kind == "latent" and model.variables[n.id].dist == "Categorical"
                   for n in ast.walk(index)):
                return index
    return None


def is_factorial(factor, model) -> bool:
    """A scalar Normal whose mean sums components selected by two or more latent categories."""
    if factor.dist.name != "Normal" or "mean" not in factor.args:
        return False
    chosen = {ast.text(s) for s in (_selector(t, model) for t in _terms(inline(factor.args["mean"], model.definitions)))
              if s is not None}
    return len(chosen) >= 2


def _expected(gamma: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Σ_k γ_k v_k over the last axis, added first to last (`rows.sum_in_order`'s numbers): the
    products in one call, then their columns added one at a time, where a reduction over the short
    last axis costs more than the K − 1 additions."""
    products = gamma * values
    total = products[..., 0] + products[..., 1]  # K ≥ 2: a category's levels
    for k in range(2, gamma.shape[-1]):
        np.add(total, products[..., k], out=total)
    return total


class FactorialNormal:
    """The factor runtime (reads, messages, ELBO term) of `is_factorial` statements."""

    selector = None
    bilinear: frozenset = frozenset()

    def __init__(self, factor, model, env, dataset, families):
        self.factor, self.name, self.model, self.dim = factor, factor.name, model, 0
        self.plate = Plate(factor, env)
        self.builder = AccessBuilder(self.plate, env, model, 1, None)
        target = factor.target
        if model.variables[target.name].kind == "latent" or target.name in dataset.masks:
            raise Unsupported(f"`{self.name}`: the output of a factorial model must be observed, with no missing "
                              "cells", factor.span)
        self.target = self.builder.build(
            ast.Index(ast.Name(target.name, target.span), target.indices, target.span) if target.indices
            else ast.Name(target.name, target.span), selected=False)
        self.reads: dict = {}
        self.components = []  # (read of W_m, read of z_m, K_m)
        self._kept = {}  # m -> (version key of q(W_m) and q(z_m), that chain's `_parts`)
        self._kept_prec = None  # (version key of q(τ), (E[τ], E[log τ]))
        self._kept_residual = None  # (the chains' keys, residual, squared error or None)
        self.level_priors = {}  # W_m -> its other factors' messages and their sum (ppl.infer.factorial_levels)
        offset = []
        for term in _terms(inline(factor.args["mean"], model.definitions)):
            index = _selector(term, model)
            if index is None:
                if any(isinstance(n, ast.Name) and model.variables.get(n.id) is not None
                       and model.variables[n.id].kind == "latent" for n in ast.walk(term)):
                    raise Unsupported(f"`{self.name}`: every latent summand of the mean must be `W[z[t]]`, a Normal "
                                      f"chosen by a latent category", term.span)
                offset.append(term)
                continue
            chooser = next(n.id for n in ast.walk(index) if isinstance(n, ast.Name)
                           and model.variables.get(n.id) is not None and model.variables[n.id].kind == "latent")
            k = env.size(model.variables[chooser].levels)
            builder = AccessBuilder(self.plate, env, model, k, index)
            weight = builder.build(term)
            if model.variables[weight.name].dist != "Normal":
                raise Unsupported(f"`{self.name}`: `{ast.text(term)}` must be a Normal variable", term.span)
            self.components.append((self.add_read(weight), self.add_read(builder.selector), k))
        self.choosers = tuple(chooser.name for _, chooser, _ in self.components)  # initialise seeds them on y
        if len(set(self.choosers)) < len(self.choosers):
            raise Unsupported(f"`{self.name}`: each latent category may choose one summand of the mean (two reads "
                              f"of one chain would need their pairwise law)", factor.span)
        self.offset = sum((np.asarray(self.plate.evaluate(t), float) for t in offset), 0.0)
        self._no_offset = not offset
        role = next(r for r in ("precision", "sd", "var") if r in factor.args)
        self.precision = _Precision(self, role, inline(factor.args[role], model.definitions), model)

    def add_read(self, access):
        self.reads.setdefault(access.name, []).append(access)
        return access

    def data(self, expr) -> np.ndarray:
        return self.plate.over_components(expr)

    # -- the expected outputs of the chains, each kept for the q it was computed from
    def _prec(self, state):
        """(E[τ], E[log τ]), kept while q(τ) is unchanged: every message and the ELBO term read it."""
        access = self.precision.access
        key = None if access is None else version_key(state, (access.name,))
        if self._kept_prec is None or self._kept_prec[0] != key:
            self._kept_prec = key, self.precision.expect(state)
        return self._kept_prec[1]

    def _parts(self, state):
        """(y (T,), per chain [γ (T, K), E[W] (1, K), E[W²] (1, K), Ŵ (T,), S (T,) or None until
        `_squared_error` needs it], their version keys), each chain's kept while its q(z_m) and
        q(W_m) are unchanged: a sweep of M chains reads them 2M + 2 times (a message to each z_m and
        W_m, one to τ, and the ELBO term), most often with one chain changed since; S only for τ's
        message and the ELBO."""
        y = self.target.read(state)[..., 0, 0]
        parts, keys = [], []
        for m, (weight, chooser, k) in enumerate(self.components):
            key = version_key(state, (weight.name, chooser.name))
            kept = self._kept.get(m)
            if kept is None or kept[0] != key:
                # γ kept when only q(W_m) changed (key: state, W_m's version, z_m's)
                gamma = kept[1][0] if kept is not None and kept[0][::2] == key[::2] else _marginals(state, chooser, k)
                w = weight.read(state)  # plate + (K, 2): E[W_mk], E[W_mk²]
                w1 = w[..., 0]
                kept = self._kept[m] = key, [gamma, w1, w[..., 1], _expected(gamma, w1), None]
            parts.append(kept[1])
            keys.append(key)
        return y, parts, tuple(keys)

    def _residual(self, state):
        """(y − c − Σ_m Ŵ_m, the chains' parts), the residual kept while no chain changed (y itself
        less the sum when c is 0: y − 0 is y, to the bit)."""
        y, parts, keys = self._parts(state)
        if self._kept_residual is None or self._kept_residual[0] != keys:
            others = functools.reduce(np.add, (p[3] for p in parts))
            self._kept_residual = keys, (y if self._no_offset else y - self.offset) - others, None
        return self._kept_residual[1], parts

    def _squared_error(self, state):
        """E[(y_t − μ_t)²] per row, kept with the residual (τ's message and the ELBO term read it at
        the same q)."""
        residual, parts = self._residual(state)
        keys, _, error = self._kept_residual
        if error is None:
            for p in parts:
                if p[4] is None:
                    p[4] = _expected(p[0], p[2])
            error = residual ** 2 + sum(p[4] - p[3] ** 2 for p in parts)
            self._kept_residual = keys, residual, error
        return error

    def elbo(self, state) -> float:
        prec, logdet = self._prec(state)
        err = self._squared_error(state)[..., None]
        terms = 0.5 * logdet - 0.5 * LOG_2PI - 0.5 * prec * err
        return float((terms if terms.shape == err.shape else np.broadcast_to(terms, err.shape)).sum())

    def elbo_estimate(self, state) -> tuple[float, float]:
        return self.elbo(state), 0.0

    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        first, *others = self.reads[name]
        total = self._message(state, first)
        for access in others:
            total = total + self._message(state, access)
        return total

    def _message(self, state, access):
        if access is self.precision.access:
            return access.scatter(self.precision.message(state, self._squared_error(state)[..., None]))
        prec = self._prec(state)[0]  # plate + (1,)
        residual, parts = self._residual(state)
        for (weight, chooser, _), (gamma, w1, w2, mean, _) in zip(self.components, parts):
            if access is chooser or access is weight:
                own = (residual + mean)[..., None]  # y − r̂_m: the output less every other chain's
                if access is chooser:  # a new array, one row per element when z[t] is read over t in order
                    rows = prec * (w1 * own - 0.5 * w2)
                    return rows if chooser.in_order[0] else chooser.scatter_rows(rows)
                message = np.empty(gamma.shape + (2,))
                np.multiply(prec * gamma, own, out=message[..., 0])
                np.multiply(-0.5 * prec, gamma, out=message[..., 1])
                return _summed(weight, message)
        raise AssertionError(access.name)


def _marginals(state, chooser, k: int) -> np.ndarray:
    """γ (plate + (K,)) of the chain that `chooser` reads: when the plate reads its rows in order
    (z[t] over t), its moments' first K columns copied (contiguous: a product with a strided view
    costs twice as much), no gather of its T (K + K²) moments; else the gather."""
    if chooser.in_order[0]:
        return np.array(state.moments(chooser.name)[:, :k]).reshape(chooser.index.shape[:-1] + (k,))
    return chooser.read(state)[..., 0, :k]


def _summed(weight, message: np.ndarray) -> np.ndarray:
    """`weight.scatter(message)`; for a plate-free read of W_1..W_K in order (W[z[t]]) the sum over
    the plate's rows, which adds each W_k's terms in the rows' order as the bincount does: the same
    numbers (tests/test_factorial_hmm.py), in one reduction where the scatter makes a bincount per
    column."""
    if weight.plate_free and weight.in_order[1] and message.shape[-2] == weight.size:
        return message.reshape((-1,) + message.shape[-2:]).sum(axis=0)
    return weight.scatter(message)
