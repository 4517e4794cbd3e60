"""An intercept and the group effects added to it (or two crossed group effects), moved along the
ridge the likelihood cannot see.

In a margin `a + u[g[n]] + …` (a scalar Normal a read on every row and a Normal vector u read once
per row, each with coefficient 1), a → a + c with u_j → u_j − c for every j leaves every margin
unchanged, so every likelihood term. Only the priors pin c, and updated one variable at a time
the two creep along that ridge at about 1 − (prior precision)/(data precision) a sweep: a
varying-intercept Poisson with counts near e⁷ took 279 sweeps under `ncvmp`
(docs/rules/vmp.md#convergence).

The step maximises the ELBO over c exactly. With (μ_a, P_a) and (μ_j, P_j) the means and
precisions of the priors' messages and m the current means, the ELBO along the ridge is
−½ P_a (m_a + c − μ_a)² − ½ Σ_j P_j (m_j − c − μ_j)² + const, maximised at

    c = [Σ_j P_j (m_j − μ_j) − P_a (m_a − μ_a)] / (P_a + Σ_j P_j).

Precisions stay. Like the softmax's class shift (ppl.infer.softmax_shift) and the factorial
models' levels (ppl.infer.factorial_levels).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.factors.gaussian import GaussianFactor
from ppl.infer.factors.glm import GLMFactor


def intercept_pairs(problem) -> dict:
    """later of the two in sweep order -> [(a, u)] for every global scalar or vector Normal a and
    later global Normal vector u that every factor other than their own priors reads as
    `a + u[...]` (each alone in its term, coefficient 1) or not at all; priors that read neither.
    Two vectors are crossed effects, `u[g[n]] + v[h[n]]`: u + c, v − c moves no margin either."""
    globals_ = [n for n in problem.order if n not in problem.local
                and getattr(problem.families.get(n), "name", "") == "Normal"]
    vectors = [n for n in globals_ if len(problem.shapes[n]) == 1]
    candidates = [(a, u) for a in globals_ if problem.shapes[a] == () for u in vectors] + \
        [(a, u) for i, a in enumerate(vectors) for u in vectors[i + 1:]]
    pairs: dict = {}
    for a, u in candidates:
        if _ridge(problem, a, u):
            pairs.setdefault(max(a, u, key=problem.order.index), []).append((a, u))
    return pairs


def _ridge(problem, a: str, u: str) -> bool:
    priors = set()
    for factor in {*problem.neighbours[a], *problem.neighbours[u]}:
        form = _form(factor)
        if form is None:
            return False
        if factor.factor.target.name in (a, u):  # a prior: one that reads neither
            if {r.name for r in form.reads()} & {a, u}:
                return False
            priors.add(factor.factor.target.name)
        elif not all(_unit_term(form, name) for name in (a, u)):
            return False
    return priors == {a, u}


def _form(factor):
    """The one linear form of a factor whose margins the shift must leave unchanged, or None."""
    if getattr(factor, "components", 1) != 1:
        return None
    if isinstance(factor, GaussianFactor):
        return factor.mean
    if isinstance(factor, GLMFactor):
        return factor.margin
    return None


def _unit_term(form, name: str) -> bool:
    """`name` read in exactly one term of `form`, alone, with coefficient 1."""
    terms = [t for t in form.terms if any(r.name == name for r in t.reads())]
    return len(terms) == 1 and len(terms[0].reads()) == 1 and terms[0].vector is None and np.all(terms[0].coef == 1)


def shift_intercepts(problem, state, a: str, u: str) -> None:
    """Move q(a) and q(u) to the best point of the ridge (module docstring)."""
    moved = {}
    for name in (a, u):
        family = state.families[name]
        q, p = family.params(state.natural[name]), problem.prior_gaussian(state, name)
        moved[name] = (family, q, p["precision"], q["mean"] - p["mean"])
    (_, _, pa, da), (_, _, pu, du) = moved[a], moved[u]
    c = (np.sum(pu * du) - np.sum(pa * da)) / (np.sum(pa) + np.sum(pu))
    if np.isfinite(c):
        for name, sign in ((a, 1.0), (u, -1.0)):
            family, q = moved[name][:2]
            state.set(name, family.natural(mean=q["mean"] + sign * c, precision=q["precision"]))
