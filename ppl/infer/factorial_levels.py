"""The levels of a factorial model (ppl.infer.factors.factorial) moved along the ridge that the
likelihood cannot see, after their chain-by-chain updates.

Shifting every level of chain m by c_m, with Σ_m c_m = 0, leaves the expected log likelihood
unchanged: the mean output Σ_m Ŵ_tm moves by Σ_m c_m = 0 and each chain's variance term
Σ_k γ_k E[W_k²] − (Σ_k γ_k E[W_k])² is shift-invariant (Σ_k γ_tmk = 1). Only the levels' priors
pin the shifts. Updated one chain at a time (Gauss–Seidel), the means creep along that ridge at a
rate of about 1 − (prior precision)/(data precision) per sweep: on models/factorial_hmm.vim 1e-5
sd a sweep, 2 sd short of the fixed point after 500 sweeps (docs/rules/vmp.md#convergence).

The ridge step maximises the ELBO over the shifts exactly. With (h_mk, p_mk) the natural
parameters of the messages to W_mk from its other factors (its prior), μ the current means,
g_m = Σ_k (h_mk − p_mk μ_mk) and s_m = Σ_k p_mk, the ELBO along the ridge is
Σ_m (g_m c_m − ½ s_m c_m²) and its maximiser under Σ_m c_m = 0 is

    c_m = (g_m − λ) / s_m,    λ = Σ_m (g_m / s_m) / Σ_m (1 / s_m).

An exact maximisation along directions of a concave function: an ascent step that keeps the
chains' labelling and each chain's spread of levels, O(Σ_m K_m).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.factors.factorial import FactorialNormal


def level_groups(problem) -> tuple:
    """(factor, level names) for every factorial factor whose levels can be shifted: two or more
    distinct global Normal vectors W_m of shape (K_m,), each read once, as W[z[t]], whose other
    factors read no other level (so that only their priors see a shift)."""
    groups = []
    for factor in problem.factors:
        if not isinstance(factor, FactorialNormal):
            continue
        names = [weight.name for weight, _, _ in factor.components]
        shapes_ok = all(problem.shapes.get(n) == (k,) and getattr(problem.families.get(n), "name", "") == "Normal"
                        and len(factor.reads[n]) == 1 for n, (_, _, k) in zip(names, factor.components))
        alone = all(not (set(f.reads) & (set(names) - {n})) for n in names
                    for f in problem.neighbours.get(n, ()) if f is not factor)
        globals_ = all(n in problem.order and n not in problem.local for n in names)
        if len(set(names)) == len(names) > 1 and shapes_ok and alone and globals_:
            groups.append((factor, tuple(names)))
    return tuple(groups)


def shift_levels(problem, state, factor, names) -> None:
    """Move q(W_1)..q(W_M) to the best point of the ridge (module docstring); precisions stay."""
    g, s, precisions, means = [], [], [], []
    for name in names:
        prior, p, total = _prior(problem, state, factor, name)
        q = state.families[name].params(state.natural[name])
        mean, precision = q["mean"], q["precision"]
        g.append(float((prior[..., 0] - p * mean).sum()))
        s.append(total)
        precisions.append(precision)
        means.append(mean)
    g, s = np.array(g), np.array(s)
    if not np.all(s > 0):
        return  # a flat prior: the ridge has no maximum
    shifts = (g - np.sum(g / s) / np.sum(1 / s)) / s
    for name, precision, mean, shift in zip(names, precisions, means, shifts):
        state.set(name, state.families[name].natural(mean=mean + shift, precision=precision))


def _prior(problem, state, factor, name) -> tuple:
    """(h, p) of the messages to W_m from its other factors, summed, its precisions p and Σ p: kept
    (on the factor) while each message is the very array it was, as a prior with constant
    parameters sends one read-only array every sweep."""
    messages = tuple(f.message(state, name) for f in problem.neighbours[name] if f is not factor)
    kept = factor.level_priors.get(name)
    if kept is None or len(kept[0]) != len(messages) or any(a is not b for a, b in zip(kept[0], messages)):
        prior = sum(messages)
        p = state.families[name].params(prior)["precision"]
        kept = factor.level_priors[name] = messages, (prior, p, float(p.sum()))
    return kept[1]
