"""Under-coverage of a converged mean-field run: how much narrower each Gaussian's sd is than a
joint Gaussian q over the Gaussians one likelihood reads together would make it, at this fixed point.

Mean field fits correlated Gaussians apart. With J their joint precision given everything else
(prior precision plus the likelihood's curvature: E[τ] XᵀX for a Normal response, Σ τ̃_n x_n x_nᵀ
for a GLM's Gaussian sites), each member's mean-field variance is 1/J_ii while a joint q's is
(J⁻¹)_ii, so r_i = sd_mean_field / sd_joint = 1/√(J_ii (J⁻¹)_ii) ≤ 1. When the members are strongly
correlated (an intercept beside covariates far from 0) r is far below 1 and a converged run says
nothing. J is assembled by the Gaussian block's own runtimes (ppl.infer.factors.block): the block
that `--gaussian-block` would run, its q set to the product of the mean-field marginals, and the
messages of its factors summed, as one block update would. Its arrow-shaped precision is solved in
O(groups) (ppl.infer.arrow); a set too large for one block (ppl.infer.block.MAX_DENSE) is skipped.

THRESHOLD: below r = 0.5 a nominal 95% interval of mean field spans ±0.98 of the joint q's sds,
which covers at most 67% (a Gaussian truth); two members with correlation 0.87 give r = 0.5. The
mild shrinkage mean field always has (hierarchical_logistic's sds are 0.77–0.99 of NUTS's) stays
above it.
"""

from __future__ import annotations

import numpy as np

from ppl import families as fam
from ppl.diagnostics import PplError
from ppl.graph.gaussian_block import GaussianBlock
from ppl.infer.block import BlockFamily, layout_for, solution_sd
from ppl.infer.factors.glm import GLMFactor
from ppl.infer.factors.softmax import SoftmaxFactor
from ppl.infer.state import NumericalBreakdown

THRESHOLD = 0.5


def coverage(problem, run) -> list[dict]:
    """A record (`Ratios.record`: its note, the worst ratio, its element, the set, the threshold)
    for each set of Gaussians whose worst ratio r is below THRESHOLD, after a converged
    deterministic mean-field run in one process (a block, a stochastic rule or schedule, a cluster
    run, whose client binds a few groups: none)."""
    if not run.converged or run.sampled or problem.stochastic or problem.schedule.stochastic or any(
            isinstance(f, BlockFamily) for f in problem.families.values()) or any(
            n not in run.state.natural for n in problem.latent):
        return []
    notes = []
    for members, factors in candidate_sets(problem):
        found = ratios(problem, run.state, members, factors)
        if found is not None and found.worst < THRESHOLD:
            notes.append(found.record())
    return notes


def candidate_sets(problem) -> list[tuple[tuple, list]]:
    """(members, the factors that read them) of every set of Normal and MvNormal latents that
    Normal statements, scalar GLMs and softmax likelihoods read together (joined by a factor reading two of them), none
    read by any other factor: the sets a Gaussian block could hold."""
    model = problem.model
    gaussian = [n for n in problem.latent if model.variables.get(n) is not None and model.variables[n].kind ==
                "latent" and isinstance(problem.families.get(n), (fam.Normal, fam.MvNormal))]
    runs = [f for f in problem.factors if isinstance(f, (GLMFactor, SoftmaxFactor))
            or f.factor.dist.name in ("Normal", "MvNormal")]
    other = {n for f in problem.factors if f not in runs for n in f.reads}
    owner = {n: n for n in gaussian if n not in other}
    def root(n):
        while owner[n] != n:
            n = owner[n]
        return n
    for f in runs:
        read = [n for n in f.reads if n in owner]
        for n in read[1:]:
            owner[root(n)] = root(read[0])
    sets = {}
    for n in owner:
        sets.setdefault(root(n), []).append(n)
    def apart(m):  # fitted apart: several variables, or a softmax's class weights (one per class)
        return len(m) > 1 or any(isinstance(f, SoftmaxFactor) and m[0] in f.class_axes for f in runs)
    return [(tuple(m), [f for f in runs if set(f.reads) & set(m)]) for m in sets.values() if apart(m)]


class Ratios:
    """The sds of each coordinate of a set's stacked vector under mean field (`apart`) and under the
    joint q (`joint`), their ratio r, and what the note says of the worst."""

    def __init__(self, members, apart, joint, through, label):
        self.members, self.apart, self.joint, self.through = members, apart, joint, through
        self.r = apart / joint
        self.at = int(np.argmin(self.r))
        self.label = label  # coordinate -> the element it is, as the summary names it
        self.worst, self.element = float(self.r[self.at]), label(self.at)

    def record(self) -> dict:
        """What the run reports: the note, and its numbers for the JSON document."""
        names = ", ".join(self.members)
        note = (f"mean field's sd of `{self.element}` is {self.worst:.2g} of what a joint Gaussian q over "
                f"`{names}` gives at this fixed point (they are correlated through "
                f"{', '.join(f'`{n}`' for n in self.through)}); --gaussian-block {','.join(self.members)} fits "
                "them jointly")
        return {"note": note, "worst": self.worst, "element": self.element, "members": list(self.members),
                "threshold": THRESHOLD}


def ratios(problem, state, members: tuple, factors: list) -> Ratios | None:
    """r = sd under the mean-field q / sd under the joint q at J for each coordinate of `members`,
    J summed from the block runtimes of `factors` at the mean-field q; None when no block of them
    runs (too large, a factor or a read it refuses, a site CVI stores) or J does not factor."""
    from ppl.infer.build import factor_runtime
    if any(getattr(f, "form", "meanfield") == "site" for f in factors):
        return None
    model, env = problem.model, problem.env
    block = GaussianBlock(members, "coverage", automatic=True)
    placed = layout_for(block, model, env, problem.scopes)
    if placed is None:
        return None
    layout, placements, _ = placed
    families = dict(problem.families)
    family = families[block.key] = BlockFamily(block.key, layout, placements, {m: families[m] for m in members})
    try:
        runtimes = [factor_runtime(f.factor, model, env, problem.dataset, families, problem.analysis,
                                   {block.key: block}, set()) for f in factors]
    except PplError:
        return None
    joint = state.copy()
    joint.families, joint.shapes = families, {**state.shapes, block.key: ()}
    apart = sum(family.place(m, np.arange(p.elements), joint.natural[m].reshape(p.elements, -1))
                for m, p in placements.items())
    try:
        joint.set(block.key, apart)
        sd_apart = solution_sd(joint.moments(block.key))  # solved by `set`, not solved again
        sd_joint = family.sd(sum(f.message(joint, block.key) for f in runtimes))
    except (np.linalg.LinAlgError, NumericalBreakdown):  # a precision no Cholesky factor survives (1e300)
        return None
    if not np.all(np.isfinite(sd_apart / sd_joint)):
        return None
    through = [f.factor.name for f in factors  # what couples them: a factor of two, a softmax's classes
               if len(set(f.reads) & set(members)) > 1 or isinstance(f, SoftmaxFactor)]
    return Ratios(members, sd_apart, sd_joint, through, lambda at: _label(problem, placements, layout, at))


def _label(problem, placements: dict, layout, at: int) -> str:
    """The element coordinate `at` of the stacked vector is, as the summary names it (`a[site_c]`, `w[2]`)."""
    from ppl.infer.labels import dims_and_coords
    local = at >= layout.corner  # a group's coordinate, else the corner's
    group, within = divmod(at - layout.corner, layout.local) if local else (0, at)
    name, place = next((n, p) for n, p in placements.items() if p.local == local
                       and p.base <= within < p.base + p.width * (1 if local else p.elements))
    flat = group * place.width + within - place.base
    model = problem.model
    shape = problem.shapes[name] + tuple(problem.env.size(d) for d in model.variables[name].event_shape)
    if not shape:
        return name
    dims, coords = dims_and_coords(model, problem.dataset, {name: shape}, {})
    index = np.unravel_index(flat, shape)
    return f"{name}[{','.join(str(coords[d][i]) for d, i in zip(dims[name], index))}]"
