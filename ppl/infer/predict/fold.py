"""Fold-in: the local variables of new data fitted with the global variables held at q.

The schedule's own E-step does the fitting (`SVI.e_step`, ppl.infer.schedule): the model is
bound to the new rows, every global takes its natural parameters from the posterior (a block's
log-normal precision as the Gamma of its E[τ] and E[1/τ]: the fold-in is mean field, and a
block's correlations enter the predictive through `block_spread`), the locals start from their
priors and are swept to convergence. Two additions:

- a held-out response cell (empty in the new data, or every cell when scoring) has zero weight
  in its factor, through the row-weight mechanism (ppl.infer.weights): it sends no message and
  adds no ELBO term, so it is predicted, not imputed;
- a group seen in training (a known `site`) is pinned at its q from training (`State.pin`);
  only new groups are fitted, and the Normal and MvNormal locals of a new group with no observed
  rows get the moments of their prior under q (`_population_level`): the population-level
  prediction.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppl.diagnostics import DataError, ModelError
from ppl.infer.predict.block_spread import spreads

HELD = "\0held-out"  # the row-weight key of held-out cells: no plate has this name
LOCAL_SWEEPS, LOCAL_TOL = 1000, 1e-8  # the E-step sweeps at most, and its relative tolerance


@dataclass
class Fold:
    """The model bound to the new data (`problem`), q after the E-step (`state`), the plan (which
    variables are local), the new data and the cells held out (name → mask, True = held out)."""

    problem: object
    state: object
    plan: object
    new: object
    held: dict
    spreads: dict  # factor -> the variance its margin gains from a Gaussian block's correlations


def fold_in(posterior, model, data, *, hold_all: bool = False, na=None, seed=0) -> Fold:
    """Bind `data` to `model`, set the globals from `posterior`, fit the locals of the new groups.
    `hold_all`: hold out every response cell (scoring), not only the empty ones."""
    from ppl.data.held_out import bind_new
    from ppl.graph import analyze
    from ppl.infer.access import Unsupported
    from ppl.infer.build import build_problem
    from ppl.infer.initialise import initialise
    from ppl.infer.schedule.plan import plan_for
    from ppl.infer.schedule.svi import SVI
    from ppl.lang.schedule import ScheduleSpec
    checked = model.checked
    latent = [n for n, v in checked.variables.items() if v.kind == "latent"]
    base = analyze(checked)
    try:
        plan = plan_for(checked, base.scopes, latent, None, base.chains)
    except Unsupported as error:  # said in a schedule's terms: say it in predict's
        raise ModelError("E813", "predict and score fit the new rows' local variables group by group, which this "
                         f"model does not allow: {error.message}", hint="this version predicts and scores models "
                         "whose locals fall into groups of rows (rows, documents, hierarchy groups, sequences "
                         "of a chain with @sequences)") from None
    new = bind_new(model, data, posterior.levels, plan.group_column, na)
    methods = {t.factor: t.rule for t in posterior.tags if t.rule != "vmp"}
    problem = build_problem(checked, new.dataset, model.analyze(new.dataset, methods, gaussian_block="none"),
                            ScheduleSpec(inner=LOCAL_SWEEPS, local_tol=LOCAL_TOL))
    held = {name: np.ones_like(mask) if hold_all else ~mask for name, mask in new.observed.items()}
    _hold(problem, held)
    rng = np.random.default_rng(seed)
    svi = SVI(problem, rng)
    state = initialise(problem, rng)
    _set_globals(problem, state, posterior, svi.plan.globals)
    _pin_seen(problem, state, posterior, svi.plan, new.seen)
    with np.errstate(all="ignore"):
        svi.e_step(problem, state)
        population = _population_level(problem, state, svi.plan)
    return Fold(problem, state, svi.plan, new, held, spreads(problem, posterior.blocks, new.seen, population))


def _population_level(problem, state, plan) -> dict:
    """A Normal or MvNormal local of an element that no observed cell informs (a new group with
    no observed rows) ← the moments of its prior under q: mean E[m], variance Var[m] + E[1/τ]
    for `a[g] ~ Normal(m, τ)` (covariance Cov[m] + E[Λ⁻¹] for `u[g] ~ MvNormal(m, Λ)`). The
    fold-in's fixed point, N(E[m], 1/E[τ]), leaves out the spread of q(m) and q(τ) (Jensen:
    1/E[τ] < E[1/τ]): a new site's effect came out narrower than the population it is drawn
    from. A group seen in training is pinned and left as it is. Returns {local: the elements set}."""
    from ppl.infer.linear import mean_spread
    population = {}
    for name in plan.locals:
        family, own = problem.families.get(name), problem.own(name)
        if getattr(family, "name", "") not in ("Normal", "MvNormal") or len(own) != 1 \
                or not hasattr(own[0], "precision") or own[0].selector is not None:
            continue
        informed = [f.message(state, name) for f in problem.neighbours[name] if f is not own[0]]
        empty = ~np.any(sum(informed, np.zeros_like(state.natural[name])) != 0, axis=-1)
        pinned = state.pinned.get(name)
        if pinned is not None:
            empty &= ~pinned[0]
        extra = own[0].precision.expected_inverse(state)
        if not empty.any() or extra is None:
            continue
        prior, event = own[0], tuple(getattr(family, "event_shape", ()))
        index = np.broadcast_to(prior.target.index, prior.builder.shape()).reshape(-1)  # the element each writes
        mean, spread = mean_spread(state, prior.mean)
        mean = np.broadcast_to(mean, prior.builder.shape() + event).reshape((-1,) + event)
        spread = np.broadcast_to(spread + extra, prior.builder.shape() + 2 * event).reshape((-1,) + 2 * event)
        rows = empty[index]
        if not rows.any():
            continue
        natural = state.natural[name].copy()
        precision = np.linalg.inv(spread[rows]) if event else 1.0 / spread[rows]
        natural[index[rows]] = family.natural(mean=mean[rows], precision=precision)
        state.set(name, natural)
        population[name] = index[rows]
    return population


def _hold(problem, held: dict) -> None:
    """Zero weight, in its factor, for every held-out cell of a response."""
    from ppl.infer.predict.predictive import predicted
    for f in problem.factors:
        name = f.factor.target.name
        mask = held.get(name)
        if mask is None or not mask.any():
            continue
        if not predicted(problem, f):
            raise ModelError("E352", f"`{name}` has cells to predict, but this version computes the predictive of "
                             "scalar Bernoulli, Binomial, Poisson (of a link, a Beta or a Gamma), Normal and "
                             "OrderedLogistic responses, of "
                             "Categorical responses of a Dirichlet or a softmax, and of MvNormal responses of a "
                             "@joint group",
                             span=f.factor.span, hint=f"give every cell of `{name}` in the new data")
        if mask.ndim > 1 and mask.size and f.target.index.size != mask.size:  # a vector per row: whole rows
            if np.any(mask.any(axis=1) != mask.all(axis=1)):
                raise ModelError("E352", f"`{name}` has rows with some cells given and some empty; this version "
                                 "predicts whole rows of a vector response", span=f.factor.span,
                                 hint="leave a row's cells all empty, or give them all")
            mask = mask[:, 0]
        keep = f.target.gather((~mask).reshape(-1, 1).astype(float))
        f.row_weights = {**f.row_weights, HELD: keep.reshape(f.plate.shape + (1,))}


def _set_globals(problem, state, posterior, names) -> None:
    """Each global's natural parameters from the posterior, its shape checked (E351)."""
    joint = {f"({g.mean}, {g.precision})": g for g in posterior.joint}
    for name in names:
        source = joint.get(name) or posterior.marginals.get(name)
        if source is None:
            raise ModelError("E351", f"the posterior has no q for the global variable `{name}`",
                             span=problem.model.variables[name.strip("()").split(",")[0]].span)
        family, natural = problem.families[name], _natural(source, problem.families[name])
        ours = tuple(problem.shapes[name]) + tuple(getattr(family, "event_shape", ()))
        theirs = natural.shape[:-1] + tuple(getattr(source.family, "event_shape", ()))
        var = problem.model.variables.get(name)  # None for a `@joint` key, "(mu, Lambda)"
        rows = [i for i, d in enumerate(var.shape if var is not None else ())
                if getattr(problem.model.sizes.get(d), "origin", None) == "rows"]
        if rows:  # the training rows' values, whatever the new rows are
            axis = rows[0]
            raise DataError("E351", f"`{name}` is one global variable over the rows ({var.shape[axis]}: {theirs[axis]} "
                            f"in training, {ours[axis]} in the new data): this version does not predict new rows of "
                            "it (a Gaussian process at new inputs)", source=problem.dataset.source)
        if ours != theirs:
            raise DataError("E351", f"`{name}` has shape {list(ours)} with the new data but {list(theirs)} in the "
                            "posterior: a size read off the data differs (columns of a matrix, levels of a "
                            "category)", source=problem.dataset.source,
                            hint="give the new data the columns and levels of the training data")
        natural = natural.reshape(-1, family.size)
        state.set(name, natural.copy())


def _natural(source, family) -> np.ndarray:
    """A global's natural parameters in the fold-in's family. The fold-in is mean field: a
    precision that a Gaussian block held log-normal becomes the Gamma of the same E[τ] = m and
    E[1/τ] = (1 + v/m²)/m (v its variance): shape m²/v + 1, rate shape/m. A predictive's
    variance is E[1/τ] beside the mean's (a Normal response; a new group's effect)."""
    from ppl import families as fam
    natural = np.asarray(source.natural, dtype=float)
    if isinstance(getattr(source, "family", None), fam.LogNormal) and isinstance(family, fam.Gamma):
        m, v = source.family.mean(natural), source.family.sd(natural) ** 2
        shape = m * m / v + 1.0
        return family.natural(shape=shape, rate=shape / m)
    return natural


def _pin_seen(problem, state, posterior, plan, seen: np.ndarray) -> None:
    """The locals of groups seen in training (seen ≥ 0) held at their q from training."""
    if plan.group_column is None or not (seen >= 0).any():
        return
    for name in plan.locals:
        variable = problem.model.variables.get(name)
        trained = posterior.marginals.get(name)
        if variable is None or plan.group_dim not in variable.plates or trained is None:
            continue
        axis = variable.plates.index(plan.group_dim)
        size = problem.families[name].size
        shape = problem.shapes[name]
        natural = np.take(np.asarray(trained.natural).reshape(tuple(np.shape(trained.natural)[:len(shape)]) + (size,)),
                          np.maximum(seen, 0), axis=axis)
        mask = np.broadcast_to(np.expand_dims(seen >= 0, tuple(i for i in range(len(shape)) if i != axis)), shape)
        state.pin(name, mask.reshape(-1), natural.reshape(-1, size))
