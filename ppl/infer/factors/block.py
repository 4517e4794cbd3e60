"""Factors that read the members of a Gaussian block (ppl.infer.block): the Normal statements
of the hierarchy (`a[g] ~ Normal(mu_a, tau_a)`) and the non-conjugate likelihoods (`y ~
Bernoulli(logistic(a[site[n]] + b[site[n]] * x[n]))`) under every GLM rule.

Each splits its linear form into the block part c_pᵀz (a `BlockRows`) and the rest (other
latents, independent of the block under q, and data). Then, for a Gaussian (or a GLM's
Gaussian site) of precision τ_p on r_p = c_pᵀz + e_p,

    E[r²] = E[r]² + c_pᵀΣc_p + Var[e_p]        (the ELBO term, the message to a Gamma τ)
    m → z:  h = Σ τ_p c_p (−E[e_p]),  J = Σ τ_p c_p c_pᵀ      (the linear-Gaussian message)

which is the message of ppl.infer.linear on the one stacked vector: NC-VMP, CVI, Laplace,
delta and the bounds differ only in the site (τ̃, ỹ) they hand it (ppl.infer.factors.glm).
"""

from __future__ import annotations

import numpy as np

from ppl.diagnostics import ModelError
from ppl.infer.block import BlockRows
from ppl.infer.factors.gaussian import GaussianFactor
from ppl.infer.factors.glm import GLMFactor
from ppl.infer.linear import LinearForm, margin


def refuse(factor, why: str):
    """E381: a factor reads a block member in a way the block does not run."""
    return ModelError("E381", f"`{factor.name}` reads a Gaussian block member {why}", span=factor.span,
                      hint="leave that variable out of the block (mean field), or drop the block")


def block_parts(f, form: LinearForm, members) -> tuple[list, list]:
    """(parts, rest) of factor `f`'s linear `form`: the terms that read a member of `members` as
    (member, element index (P,), coefficient (P, width)) over the plate's P elements, and the
    other terms. E381 for a term a block cannot run."""
    parts, rest = [], []
    for term in form.terms:
        names = [r.name for r in term.reads()]
        if not set(members).intersection(names):
            rest.append(term)
            continue
        if len(names) != 1 or (term.vector is not None and not term.contract):
            raise refuse(f.factor, f"in `{' * '.join(names)}`: a block term is one Normal read times "
                         "data, or data contracted with one MvNormal (`X @ w`)")
        coef = flat_rows(f, term.coef, event=term.vector is not None)
        parts.append((names[0], flat_rows(f, term.reads()[0].index)[:, 0], coef))
    return parts, rest


def flat_rows(f, a, event: bool = False) -> np.ndarray:
    """An index or coefficient over factor `f`'s plate + (1,) [+ (D,) for an `event`], broadcast,
    as rows (P, 1 or D)."""
    a = np.asarray(a) if event else np.asarray(a)[..., None]
    return np.broadcast_to(a, f.builder.shape() + a.shape[-1:]).reshape(-1, a.shape[-1])


class _BlockReads:
    """What both runtimes share: the block rows of their form, the rest, and the message to z."""

    def _attach(self, block, family, form, target_sign=None):
        if self.components > 1:
            raise refuse(self.factor, "through a latent category (a mixture)")
        members = set(block.members)
        weighted = [m for m in members if set(self.row_weights) & set(self.model.variables[m].plates)]
        if weighted:  # its entropy would be weighted too: not in a block
            raise refuse(self.factor, f"`{weighted[0]}` on a plate with row weights")
        parts, rest = block_parts(self, form, members)
        if target_sign:
            parts = [(name, index, -coef) for name, index, coef in parts]
        if target_sign and self.factor.target.name in members:
            parts.append((self.factor.target.name, flat_rows(self, self.target.index)[:, 0], np.ones((1, 1))))
        self.block_key = block.key
        self.rows = BlockRows(family, parts, int(np.prod(self.plate.shape, dtype=np.int64)), self.factor.span)
        self.rest = LinearForm(form.offset, rest, form.event)
        self.reads[block.key] = []

    def margin_reads(self) -> set:
        """The variables its margin reads: the block and the rest's latents."""
        return {a.name for a in self.rest.reads()} | {self.block_key}

    def _block_moments(self, state):
        """(E[c_pᵀz], Var[c_pᵀz]) in the factor's plate + (1,) shape."""
        sol = state.moments(self.block_key)
        shape = self.builder.shape()
        return self.rows.mean(sol).reshape(shape), self.rows.variance(sol).reshape(shape)

    def _to_block(self, tau, mean_rest):
        """The message to z of Gaussians of precision `tau` on r = c_pᵀz + e with E[e] = `mean_rest`."""
        shape = self.builder.shape()
        count = self.count(self.block_key)  # row weights: a weighted row is that many rows
        tau = tau if count is None else tau * count
        return self.rows.message(np.broadcast_to(tau, shape).reshape(-1),
                                 -np.broadcast_to(mean_rest, shape).reshape(-1))


class BlockGaussian(_BlockReads, GaussianFactor):
    """`v ~ Normal(m, τ)` with the value or the mean reading block members: r = v − m."""

    def __init__(self, factor, model, env, dataset, families, block):
        super().__init__(factor, model, env, dataset, families)
        self.member_target = factor.target.name in block.members
        if self.dim:  # an MvNormal member's own prior: its value message, placed into z
            if not self.member_target or any(r.name in block.members for r in self.mean.reads()):
                raise refuse(factor, "as the mean of an MvNormal: a vector member's prior must not read the block")
            self.block_key, self.family = block.key, families[block.key]
            self.reads[block.key] = []
            return
        self._attach(block, families[block.key], self.mean, target_sign=True)

    def _residual(self, state):
        """(E[e], Var[e]) of the rest of r = v − m: the value when it is not a member, minus the
        mean's offset and its terms outside the block."""
        mean_rest, var_rest = margin(state, self.rest)
        if self.member_target:
            return -mean_rest, var_rest
        y1, y2 = self._value(state)
        return y1 - mean_rest, var_rest + (y2 - y1 * y1)

    def _squared_error(self, state):
        if self.dim:  # only its value reads the block: the member's marginal is all it needs
            return super()._squared_error(state)
        e1, ev = self._residual(state)
        b1, bv = self._block_moments(state)
        return (b1 + e1) ** 2 + bv + ev

    def message(self, state, name, factored=False):
        if name != self.block_key:
            return super().message(state, name, factored)
        if self.dim:
            value = self._to_value(state)
            value = np.broadcast_to(value, self.builder.shape() + value.shape[-1:]).reshape(-1, value.shape[-1])
            return self.family.place(self.factor.target.name, flat_rows(self, self.target.index)[:, 0], value)
        prec, _ = self.precision.expect(state)
        return self._to_block(prec, self._residual(state)[0])


class BlockGLM(_BlockReads, GLMFactor):
    """A non-conjugate scalar likelihood whose margin η reads block members."""

    def __init__(self, factor, model, env, dataset, families, rule, options, block):
        super().__init__(factor, model, env, dataset, families, rule, options)
        if self.batch is not None:
            raise ModelError("E382", f"`@cvi(minibatch=...)` on `{factor.name}` with a Gaussian block: a block "
                             "takes every row's site each step", span=factor.span)
        self._attach(block, families[block.key], self.margin)

    def _margin(self, state):
        mean_rest, var_rest = margin(state, self.rest)
        b1, bv = self._block_moments(state)
        return mean_rest + b1, var_rest + bv

    def message(self, state, name, factored=False):
        if name != self.block_key:
            return super().message(state, name, factored)
        target, tau = self.sites(state)
        mean_rest, _ = margin(state, self.rest)
        return self._to_block(tau, mean_rest - target)

    def start_message(self, state, name, factored=False):
        """The block's message from the sites of IRLS's start (`GLMFactor.start_message`)."""
        if name != self.block_key:
            return super().start_message(state, name, factored)
        target, tau = self.count_sites()
        mean_rest, _ = margin(state, self.rest)
        return self._to_block(tau, mean_rest - target)

