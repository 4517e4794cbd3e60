"""The class weights of a softmax likelihood moved along the ridge that the likelihood cannot see,
after their update.

softmax(η + s·1) = softmax(η): adding one vector c to the weights of every class (w_k → w_k + c
for all k in `softmax(w @ x[n])`) adds c·x_n to every class's margin and leaves each E[log f]
unchanged, under every rule but stick-breaking (which reads K − 1 classes). Only the weights'
priors pin the shift. The class sites of NC-VMP, CVI, Laplace and delta each carry one class's
curvature E[p_k(1 − p_k)], blind to the shift, so the updates move all classes together along it
at a rate of about 1 − (prior precision)/(data precision) a sweep: a 2,000-row, 20-covariate
regression took 181 sweeps under `ncvmp` and did not converge in 500 under `cvi`
(docs/rules/softmax.md#the-shift-step).

The shift step maximises the ELBO over c exactly. With (μ0_k, P_k) the mean and precision of the
message to w_k from its priors (every other factor of w), m_k the current means, the ELBO along
the ridge is Σ_k −½ (m_k + c − μ0_k)ᵀ P_k (m_k + c − μ0_k) + const, maximised at

    c = (Σ_k P_k)⁻¹ Σ_k P_k (μ0_k − m_k).

The covariances stay; an exact maximisation of a concave function along a subspace, so an ascent
step whatever the rule, O(K D³) for D-vectors, once per sweep. Like the factorial models' level
shift (ppl.infer.factorial_levels).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.factors.gaussian import GaussianFactor
from ppl.infer.factors.softmax import SoftmaxFactor

SHIFTED = ("Normal", "MvNormal")


def shift_groups(problem) -> tuple:
    """(name, class axis) of every global Normal or MvNormal variable read only by its own Gaussian
    priors and by softmax likelihoods (not stick-breaking) that read it at class k in class k's
    margin, each read times data alone (not times another latent, whose margin variance a shift
    would change), at the same class axis."""
    groups = []
    for name in problem.order:
        if name in problem.local or getattr(problem.families.get(name), "name", "") not in SHIFTED:
            continue
        axes, priors = set(), 0
        for factor in problem.neighbours.get(name, ()):
            if isinstance(factor, GaussianFactor) and factor.factor.target.name == name:
                priors += 1
            elif isinstance(factor, SoftmaxFactor) and factor.rule != "bound:stick" and name in factor.class_axes \
                    and all(len(t.reads()) == 1 for f in factor.forms for t in f.terms
                            if any(a.name == name for a in t.reads())):
                axes.add(factor.class_axes[name])
            else:
                axes.add(None)
        if priors and len(axes) == 1 and None not in axes:
            groups.append((name, axes.pop()))
    return tuple(groups)


def shift_classes(problem, state, name: str, axis: int) -> None:
    """Move q(name) to the best point of the ridge along its class axis (module docstring)."""
    family, natural = state.families[name], state.natural[name]
    q, p = family.params(natural), problem.prior_gaussian(state, name)
    shape = problem.shapes[name]  # λ holds one element a row: the plates back as axes, for `axis`
    event = q["mean"].shape[1:]
    mean, gap = q["mean"].reshape(shape + event), (p["mean"] - q["mean"]).reshape(shape + event)
    weights = p["precision"].reshape(shape + p["precision"].shape[1:])
    if family.name == "MvNormal":
        pulled = np.einsum("...ij,...j->...i", weights, gap)
        c = np.linalg.solve(weights.sum(axis), pulled.sum(axis)[..., None])[..., 0]
    else:
        c = (weights * gap).sum(axis) / weights.sum(axis)
    if np.all(np.isfinite(c)):  # a flat prior: the ridge has no maximum
        moved = (mean + np.expand_dims(c, axis)).reshape(q["mean"].shape)
        state.set(name, family.natural(mean=moved, precision=q["precision"]))
