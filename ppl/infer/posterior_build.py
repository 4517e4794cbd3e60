"""A `Posterior` from a finished run: every latent variable's marginal (an imputed response's empty
cells by their predictive), `@joint` groups split in two, and what reports need about them (axis
names and coordinates, the priors for plots, the model and data it came from)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ppl import families as fam
from ppl.infer.coverage import coverage
from ppl.infer.factors.joint import group_key
from ppl.infer.marginals import FamilyMarginal, ImputedMarginal, JointDraws, KernelMarginal
from ppl.infer.posterior import Posterior, assemble, origin
from ppl.infer.state import NumericalBreakdown


def build_posterior(problem, run, analysis) -> Posterior:
    """Marginals for every latent variable (groups split in two) and imputed data cells, in the
    order of the model's declarations, with what reports need to know about them."""
    from ppl.infer.labels import dims_and_coords
    state, model = run.state, problem.model
    blocks, narrow = _blocks(problem, state), coverage(problem, run)
    q = {}
    for name in model.variables:
        kernel = state.kernel_of(name)
        if kernel is not None and problem.shapes[name] == ():
            q[name] = KernelMarginal(problem.families[name], kernel)
        elif name in state.natural:
            nat = state.natural[name].reshape(problem.shapes[name] + (-1,))
            q[name] = _own(problem, state, name, nat, blocks)
    joint = [JointDraws(g.mean, g.precision, problem.families[group_key(g)],
                        state.natural[group_key(g)].reshape(problem.shapes[group_key(g)] + (-1,)),
                        model.variables[g.mean].dist == "Normal") for g in analysis.groups]
    marginals = assemble(list(model.variables), q, joint)
    components = {s: {v: a for v, a in members.items() if v in marginals}
                  for s, members in analysis.components.items() if s in marginals}
    data = problem.dataset.arrays
    shapes = {n: _draw_shape(n, m) for n, m in marginals.items()} | {n: np.shape(v) for n, v in data.items()}
    dims, coords = dims_and_coords(model, problem.dataset, shapes, components)
    scopes = {name: analysis.scopes.get(name, ("data",))[0] for name in marginals}
    observed = tuple(n for n in data if model.factors_of(n))
    return Posterior(marginals, run.elbo, run.trace, run.elbo_terms, run.iterations, run.converged,
                     run.seconds, analysis.tags, dict(problem.dataset.levels), run.restart,
                     list(problem.dataset.notes) + list(run.warnings) + _block_hint(problem, run)
                     + [c["note"] for c in narrow],
                     joint, run.trace_se, scopes, components, dims, coords, list(run.term_trace),
                     origin(model, problem.dataset), _priors(problem, run.state, q), observed, problem.dataset,
                     run.convergence, run.interrupted, blocks, narrow)


def _blocks(problem, state) -> list:
    """The joint q of every Gaussian block that ran."""
    from ppl.infer.block_q import BlockQ
    return [BlockQ.of(family, state.natural[key], problem.shapes,
                      [m for m in family.members if isinstance(problem.families[m], fam.LogNormal)])
            for key, family in problem.families.items() if getattr(family, "name", "") == "GaussianBlock"]


def _block_hint(problem, run) -> list[str]:
    """A run that stopped short while Gaussians that likelihoods read together were fitted apart
    (mean field crawls along their correlation: an intercept beside covariates far from 0): a note
    that names them and the Gaussian block of them, which moves them together. Only sets a block
    can hold (`coverage.candidate_sets`: latents, not an imputed response's cells)."""
    if run.converged or problem.stochastic:
        return []
    from ppl.infer.coverage import candidate_sets
    for members, factors in candidate_sets(problem):
        factors = [f for f in factors if len(set(f.reads) & set(members)) > 1]  # the likelihoods, not priors
        verb = "reads" if len(factors) == 1 else "read"
        return [f"{', '.join(f'`{n}`' for n in members)} are Gaussians that "
                f"{', '.join(f'`{f.factor.name}`' for f in factors)} {verb} together, fitted apart under mean field, "
                "which crawls when they are correlated (an intercept beside covariates far from 0, group effects "
                f"beside their mean); --gaussian-block {','.join(members)} fits them as one joint Gaussian"]
    return []


def _own(problem, state, name: str, natural: np.ndarray, blocks: list) -> FamilyMarginal:
    """q of a variable; a partially observed response whose predictive `predict` computes as a
    `Mixture` (not a categorical's class table) reports its empty cells by that predictive, with
    the correlations of the Gaussian `blocks` it reads."""
    family, mask = problem.families[name], problem.dataset.masks.get(name)
    f = next((f for f in problem.factors if mask is not None and f.factor.target.name == name), None)
    if f is None or f.factor.dist.name in ("Categorical", "OrderedLogistic"):
        return FamilyMarginal(family, natural, mask)
    from ppl.infer.predict.predictive import predicted, response_mixture  # scipy.stats: only here
    if not predicted(problem, f):
        return FamilyMarginal(family, natural, mask)
    if type(f).__name__ == "JointGaussian":  # a vector response: predicted by whole rows
        return FamilyMarginal(family, natural, mask)
    from ppl.infer.predict.block_spread import spreads
    return ImputedMarginal(family, natural, mask, response_mixture(problem, state, name, ~mask.reshape(-1),
                                                                   spreads(problem, blocks)))


def _priors(problem, state, q: dict) -> "Priors":
    """Natural parameters of each variable's own `~` statements at the final q of their parents
    (the prior itself when its parameters are constants), for plots against the prior. A variable
    drawn by several statements (`x[1] ~ …` and `x[t] ~ …` for the rest) has their sum; one that a
    statement reads beside its target (`x[t] ~ Normal(a * x[t-1], τ)`, a chain) has no prior of
    its own to draw from, and none is listed."""
    own = {}
    for name in q:
        statements = [f for f in problem.neighbours.get(name, ()) if getattr(f, "factor", None) is not None
                      and f.factor.target.name == name]
        if statements and all(len(f.reads.get(name, ())) == 1 for f in statements):  # each reads its target once
            own[name] = statements
    return Priors(own, state, problem.shapes)


class Priors(Mapping):
    """name -> the natural parameters of its own statements, each computed when first asked for: a
    prior `eye(D)` of a q held in data space is D × D only if a plot or a saved file needs it."""

    def __init__(self, own: dict, state, shapes: dict):
        self._own, self._state, self._shapes, self._values = own, state, shapes, {}

    def __getitem__(self, name):
        if name not in self._values:
            message = sum(np.asarray(f.message(self._state, name)) for f in self._own[name])
            self._values[name] = message.reshape(self._shapes[name] + (-1,))
        return self._values[name]

    def __iter__(self):
        return iter(self._own)

    def __len__(self) -> int:
        return len(self._own)


def _draw_shape(name: str, marginal) -> tuple:
    """`draw_shape`, a q whose precision is not positive definite in floating point (a constant
    near 1e300 read through a Woodbury solve, which never factors it) reported at its variable."""
    try:
        return draw_shape(marginal)
    except np.linalg.LinAlgError:
        raise NumericalBreakdown(name, "its precision is not positive definite in floating point") from None


def draw_shape(marginal) -> tuple:
    """Shape of one draw: a family's q says it (`FamilyMarginal.shape`: an MvNormal's mean would
    solve its D × D system, 50 ms at D = 1,000); any other, the mean's without the probabilities
    axis of a Categorical."""
    if isinstance(marginal, FamilyMarginal):
        return marginal.shape
    shape = np.shape(marginal.mean)
    return shape[:-1] if marginal.name == "Categorical" else shape
