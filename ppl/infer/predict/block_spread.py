"""A Gaussian block's correlations in a predictive margin.

The fold-in holds every global at its marginal, so the margin of a response, η_p = c_pᵀz + the
rest, comes out with the variance of independent terms, Σ_t c_ptᵀ Σ_tt c_pt, one term per member
element read. Under the block's joint q the variance is c_pᵀ Σ c_p: the difference is added to the
margin (`spreads`). An intercept beside covariates far from 0 is where it matters: their
covariance nearly cancels the terms' variances, and a margin without it comes out far wider.

A row of a new group (not in the training data) with no observed rows reads that group's effect
u = m + ε at its population level (`fold._population_level`): its prior's mean m, a linear form
of block members (`mu_a`), correlates with the block, and ε, of variance E[1/τ], does not; so the
row's term c·u counts in the block part as c·m. The effects of a new group fitted to its own
observed rows stay outside the block's part: their covariance with it is not known here.
"""

from __future__ import annotations

import numpy as np

from ppl.infer.block import BlockRows
from ppl.infer.factors.block import block_parts, flat_rows
from ppl.infer.factors.gaussian import GaussianFactor
from ppl.infer.factors.glm import GLMFactor
from ppl.infer.factors.softmax import SoftmaxFactor


def spreads(problem, blocks, seen=None, population=None) -> dict:
    """{factor name: c_pᵀΣc_p − Σ_t c_ptᵀ Σ_tt c_pt per plate element} of every response factor
    whose margin reads members of `blocks` (BlockQ) (a softmax's: per element, the classes'
    K × K covariance less the marginals' diagonal); `seen`: the training group of each of the
    rows' groups (−1 for a new one), None when the rows are the training rows; `population`:
    {local: its elements at their population level}."""
    extra = {}
    for block in blocks:
        sol = block.solution()
        for f in problem.factors:
            forms = margin_forms(f)
            if not forms or problem.model.variables[f.factor.target.name].kind == "latent":
                continue
            elements = int(np.prod(f.plate.shape, dtype=np.int64))
            rows, apart = [], []
            for form in forms:
                parts, _ = block_parts(f, form, block.members)
                parts = [p for part in parts for p in _to_training(problem, block, part, seen, population or {})]
                rows.append(BlockRows(block, parts, elements, f.factor.span))
                apart.append(sum((BlockRows(block, [part], elements).variance(sol) for part in parts),
                                 np.zeros(elements)))  # each term alone: what the marginals give
            if not any(r.cg.any() or r.cl.any() for r in rows):
                continue
            if isinstance(f, SoftmaxFactor):  # the classes' joint covariance, less what the marginals give
                joint = np.stack([np.stack([r.covariance(t, sol) for t in rows], -1) for r in rows], -2)
                spread = joint - np.stack(apart, -1)[..., None] * np.eye(len(rows))
            else:
                spread = (rows[0].variance(sol) - apart[0]).reshape(f.builder.shape())
            extra[f.name] = extra.get(f.name, 0.0) + spread
    return extra


def margin_forms(f) -> list:
    """The linear forms a response factor's predictive reads: a GLM's margin, a scalar Normal's
    mean, a softmax's classes' margins (not stick-breaking's)."""
    if isinstance(f, GLMFactor):
        return [f.margin]
    if isinstance(f, SoftmaxFactor):
        return f.forms if f.rule != "bound:stick" else []
    return [f.mean] if isinstance(f, GaussianFactor) and not f.dim else []


def _to_training(problem, block, part, seen, population: dict) -> list:
    """A part's group indices as the training's. A new group's effect: through its prior's mean
    where it is at its population level, else outside the block (coefficients 0)."""
    name, index, coef = part
    if seen is None or not block.placements[name].local:
        return [part]
    trained = np.asarray(seen)[index] if len(seen) else np.full(len(index), -1)  # no group column: all new
    new = trained < 0
    parts = [(name, np.maximum(trained, 0), np.where(new[:, None], 0.0, coef))]
    at_prior = new & np.isin(index, population.get(name, ()))
    if at_prior.any() and coef.shape[1] == 1:
        prior = problem.own(name)[0]
        through, rest = block_parts(prior, prior.mean, block.members)
        if all(not block.placements[m].local for m, _, _ in through):  # m reads globals only
            written = flat_rows(prior, prior.target.index)[:, 0]  # the element each cell of the prior writes
            cell = np.zeros(int(written.max()) + 1, dtype=np.int64)
            cell[written] = np.arange(written.size)
            c = np.where(at_prior[:, None], coef, 0.0)
            parts += [(m, i[cell[index]], c * k[cell[index]]) for m, i, k in through]
    return parts
