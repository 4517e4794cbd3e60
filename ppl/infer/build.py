"""Checked model + data + analysis → an inference `Problem`: families, factor runtimes,
neighbourhoods and the sweep order. Refuses, with the factor's name, any rule not built yet."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ppl import families as fam
from ppl.diagnostics import DataError, ModelError
from ppl.infer.access import Unsupported
from ppl.infer.block_build import block_read_by, block_runtime, gaussian_families, in_blocks
from ppl.infer.factors.chain import ChainTransition, chain_neighbours
from ppl.infer.factors.conjugate import ConjugateFactor
from ppl.infer.factors.discrete_chain import ChainStart, DiscreteTransition, discrete_chain_neighbours
from ppl.infer.factors.gamma_cvi import GammaCVIFactor, gamma_role
from ppl.infer.factors.factorial import FactorialNormal, is_factorial
from ppl.infer.factors.gaussian import GaussianFactor
from ppl.infer.factors.glm import APPROXIMATIONS, GLMFactor
from ppl.infer.factors.glm_options import cvi_step, step_size
from ppl.infer.factors.joint import JointGaussian, JointPrior, group_key
from ppl.infer.factors.poisson_rate import PoissonRateFactor, is_positive_rate
from ppl.infer.factors.softmax import SoftmaxFactor, is_softmax
from ppl.infer.factors.softmax_vector import SoftmaxVectorFactor, reads_vector
from ppl.infer.factorial_levels import level_groups
from ppl.infer.intercept_shift import intercept_pairs
from ppl.infer.softmax_shift import shift_groups
from ppl.infer.fused_latent_class import latent_class_kernel
from ppl.infer.fused_mixture import mixture_kernel
from ppl.infer.schedule.fused_lda import lda_kernel
from ppl.infer.terms import elbo_terms
from ppl.lang import ast
from ppl.infer.schedule.blocks import block_defaults
from ppl.lang.schedule import ScheduleSpec
from ppl.infer.plates import Environment, check_coverage

GLM_RULES = tuple(APPROXIMATIONS) + ("bound:piecewise", "bound:stick")
AVAILABLE_RULES = ("vmp",) + GLM_RULES
# coordinate ascent on the ELBO or on a strict lower bound (majorise–minimise for the bounds)
MONOTONE_RULES = ("vmp", "bound:jaakkola", "bound:bohning")
# deterministic but not ascent: their step is halved, and the run says so, if the objective falls
# (bound:stick is piecewise bounds on K − 1 sticks: a site precision that is not a curvature bound)
DAMPED_RULES = ("ncvmp", "bound:piecewise", "bound:stick", "laplace", "delta")
APPROXIMATE_RULES = ("laplace", "delta")  # Wang & Blei: the objective is not a bound
GLM_DISTRIBUTIONS = ("Bernoulli", "Binomial", "Poisson", "Normal", "OrderedLogistic")
NO_FAMILY = ("OrderedLogistic",)  # observed only, read from the data by its factor: no q, no statistics
OBSERVED_ONLY = ("Bernoulli", "Binomial", "Poisson", "Exponential", "Multinomial")


@dataclass
class Problem:
    model: object
    dataset: object
    env: Environment
    families: dict  # variable -> Family (latent variables and observed targets)
    shapes: dict  # variable -> concrete plate shape
    factors: list
    neighbours: dict  # latent variable -> factor runtimes that send it messages
    order: list  # sweep order
    latent: list  # latent (and partially observed) variables, dependency order
    steps: dict  # latent variable -> (β, κ): step ρ_t = β·t^−κ of its damped update
    stochastic: bool  # some rule estimates gradients by Monte Carlo
    pure_vmp: bool  # every rule is closed-form VMP, so the ELBO must not decrease
    damped: tuple = ()  # variables updated by a rule in DAMPED_RULES (their step halves if the objective falls)
    guarded: tuple = ()  # variables whose step is halved, element by element, until λ stays valid
    notes: tuple = ()  # what the reader of the result must know (an objective that is not a bound)
    low_rank: tuple = ()  # single Gaussian vectors whose contraction messages may be solved by Woodbury
    scopes: dict = None  # latent variable (or @joint group) -> ("global" | "local", reason)
    schedule: object = None  # ppl.lang.schedule.ScheduleSpec
    analysis: object = None  # the analyzer's tags and scopes, for binding the model to minibatches
    local: tuple = ()  # local variables, in the order the batch E-step sweeps them
    kernel: object = None  # a fused sweep for a structure it covers (ppl.infer.fused_mixture), or None
    searched: tuple = ()  # Gaussian blocks with a log precision: Newton steps, searched (ppl.infer.block_step)
    blocks: dict = field(default_factory=dict)  # local names -> fused E-step block or None (schedule.blocks)
    levels: tuple = ()  # (factorial factor, its levels) updated jointly (ppl.infer.factorial_levels)
    class_shifts: dict = field(default_factory=dict)  # softmax class weights -> class axis (ppl.infer.softmax_shift)
    intercept_shifts: dict = field(default_factory=dict)  # later name -> [(a, u)] (ppl.infer.intercept_shift)
    prior_params: dict = field(default_factory=dict)  # Gaussian -> (its priors' messages, params): prior_gaussian

    def own(self, name: str) -> list:
        """The factors of `name`'s own statements (its prior): those whose target it is."""
        return [f for f in self.neighbours[name] if f.target.name == name]

    def prior_message(self, state, name: str):
        """Σ of the messages to `name` from its own statements."""
        return sum(f.message(state, name) for f in self.own(name))

    def prior_gaussian(self, state, name: str) -> dict:
        """The mean and precision of the message from Gaussian `name`'s own statements at each
        element (the ridge shifts: ppl.infer.intercept_shift, softmax_shift); kept while those
        statements send the very same arrays (a constant prior's message is made once a run: its
        factorisation then is too, not once a sweep)."""
        messages = [f.message(state, name) for f in self.own(name)]
        kept = self.prior_params.get(name)
        if kept is None or len(kept[0]) != len(messages) or any(a is not b for a, b in zip(kept[0], messages)):
            # (held with the params, the kept messages stay alive: a new array is never taken for one of them)
            params = state.families[name].params(np.broadcast_to(sum(messages), state.natural[name].shape))
            kept = self.prior_params[name] = (messages, params)
        return kept[1]

    @property
    def inner(self) -> int:
        """E-step sweeps at most: local blocks to convergence when their updates are closed-form
        coordinate ascent, one sweep (today's plain VMP) when some rule is damped or stochastic."""
        return self.schedule.local_sweeps if self.pure_vmp else 1

    @property
    def minibatched(self) -> bool:
        """Some factor steps on a minibatch of its rows (`@cvi(minibatch=)`): its estimates of the
        ELBO and its step clock are the batch's own."""
        return any(getattr(f, "batch", None) for f in self.factors)

    @property
    def approximate(self) -> bool:
        """Some rule's objective is Wang & Blei's approximation, not a bound (Laplace, delta)."""
        return any(getattr(f, "rule", "") in APPROXIMATE_RULES for f in self.factors)

    def step(self, name: str, iteration: int) -> float:
        if name not in self.steps:  # step_size((1, 0), t) = 1 · t⁰: the plain update, without the call
            return 1.0
        return step_size(self.steps[name], iteration)

    def elbo(self, state) -> float:
        fused = self.kernel.elbo(state) if self.kernel is not None else None
        if fused is not None:  # computed by the fused sweep that produced this state
            return fused
        return sum(f.elbo(state) for f in self.factors) + sum(state.entropy(v) for v in self.latent)

    def elbo_estimate(self, state) -> tuple[float, float]:
        """(ELBO, standard error): exact, unless a factor subsamples its data (`minibatch`) and
        estimates its term, whose standard errors add in quadrature."""
        fused = self.kernel.elbo(state) if self.kernel is not None else None
        if fused is not None:
            return fused, 0.0
        value = variance = entropy = 0  # summed in the order of sum() over the pairs: the same floats
        for factor in self.factors:
            term, se = factor.elbo_estimate(state)
            value, variance = value + term, variance + se ** 2
        for name in self.latent:
            entropy = entropy + state.entropy(name)
        return value + entropy, float(np.sqrt(variance))

    def exact_elbo(self, state) -> float:
        """`elbo`, or the located error when it is not finite (`not_finite`): the ELBO a run reports."""
        value = self.elbo(state)
        if not np.isfinite(value):
            raise self.not_finite(state)
        return value

    def not_finite(self, state) -> Unsupported:
        """The error for a sweep or step whose ELBO is not finite, at the first factor whose term is not."""
        factor = next((f for f in self.factors if not np.isfinite(f.elbo(state))), None)
        return self.not_finite_at(factor.name if factor is not None else None)

    def not_finite_at(self, name: str | None) -> Unsupported:
        """`not_finite` at the factor named `name` (None: at none): where a cluster's partitions,
        which sum the terms, found the first that is not finite."""
        factor = next((f for f in self.factors if f.name == name), None)
        where = f" at `{factor.name}`" if factor is not None else ""
        return Unsupported(f"the ELBO is not finite{where}: the model and data give a degenerate posterior "
                           "(an overflowing link, or values far outside the prior's scale)",
                           factor.factor.span if factor is not None else None)

    def elbo_terms(self, state) -> dict:
        """E_q[log f] per factor and H[q] per variable: the pieces that add up to the ELBO; those a
        fused kernel sums in blocks of rows come from it."""
        own = self.kernel.own_terms(state) if hasattr(self.kernel, "own_terms") else None
        return elbo_terms(self.factors, self.latent, state, own)


def build_problem(model, dataset, analysis, schedule=None) -> Problem:
    for tag in analysis.tags:
        if tag.rule not in AVAILABLE_RULES:
            raise Unsupported(f"rule `{tag.rule}` for `{tag.factor}` → `{tag.variable}` is not available in "
                              f"this version ({tag.reason})", model.factor(tag.factor).span)
    env = Environment(model, dataset)
    families, shapes = {}, {}
    for name, var in model.variables.items():
        if var.dist is None or var.dist in NO_FAMILY:
            continue
        shapes[name] = tuple(env.size(d) for d in var.plates)
        families[name] = family_for(var, env)
    transitions = {c.transition for c in analysis.chains if c.family == "NormalChain"}
    for chain in analysis.chains:
        families[chain.variable] = fam.NormalChain() if chain.family == "NormalChain" else \
            discrete_chain_family(chain, model, dataset, env)
    runtimes, latent = _joint_factors(model, dataset, env, analysis, families, shapes)
    runtimes += _discrete_chain_factors(model, env, analysis, families)
    blocks, notes = gaussian_families(model, env, analysis, families, shapes, dataset.masks)
    done = {f.factor.name for f in runtimes} | {
        f.name for g in analysis.groups for f in model.factors_of(g.precision)}
    runtimes += [factor_runtime(factor, model, env, dataset, families, analysis, blocks, transitions)
                 for factor in model.factors if factor.name not in done]
    check_coverage(runtimes, model, shapes)
    latent = in_blocks(latent, blocks)
    latent += [n for n in dataset.masks if n in families]
    neighbours = {name: [f for f in runtimes if name in f.reads] for name in latent}
    neighbours.update({c.variable: chain_neighbours(c, runtimes) if c.family == "NormalChain" else
                       discrete_chain_neighbours(c, families[c.variable], runtimes) for c in analysis.chains})
    for f in runtimes:
        if isinstance(f, SoftmaxVectorFactor):
            f.attach(neighbours)
    scopes = dict(analysis.scopes)
    scopes.update({group_key(g): analysis.scopes[g.mean] for g in analysis.groups})
    scopes.update({b.key: ("global", f"one Gaussian q over {', '.join(b.members)}") for b in blocks.values()})
    if blocks and (schedule or model.schedule or ScheduleSpec()).stochastic:
        raise ModelError("E382", f"a Gaussian block ({next(iter(blocks))}) runs under the batch schedule only",
                         span=(schedule or model.schedule).span, hint="drop the block or the stochastic schedule")
    order = [n for n in latent if scopes.get(n, ("local",))[0] == "global"] + \
            [n for n in latent if scopes.get(n, ("local",))[0] != "global"]
    steps = {}
    positive_q = (GammaCVIFactor, PoissonRateFactor)  # CVI steps on Gamma / Dirichlet q: guarded
    cvi = [f for f in runtimes if isinstance(f, (GLMFactor, SoftmaxFactor) + positive_q) and f.rule == "cvi"]
    for f in cvi:
        if getattr(f, "form", "meanfield") == "site":
            continue  # the factor damps its own sites; the node takes them whole
        beta, kappa = cvi_step(next(t.options for t in analysis.for_factor(f.name) if t.rule == "cvi"))
        for name in f.reads:
            steps[name] = (min(beta, steps.get(name, (1.0, 0))[0]), kappa)
    stochastic = any(f.samples > 0 or getattr(f, "batch", None) for f in cvi)
    guarded = tuple(sorted({n for f in runtimes if isinstance(f, positive_q) for n in f.reads}))
    notes = tuple(notes)
    searched = tuple(key for key, b in blocks.items() if b.logs(model))
    pure = all(t.rule in MONOTONE_RULES for t in analysis.tags) and not searched
    glms = [f for f in runtimes if isinstance(f, (GLMFactor, SoftmaxFactor, SoftmaxVectorFactor))]
    damped = tuple(sorted({n for f in glms if f.rule in DAMPED_RULES for n in f.reads if n in latent}))
    approximate = sorted({f.rule for f in glms if f.rule in APPROXIMATE_RULES})
    notes += (f"{' and '.join(approximate)}: the reported ELBO is Wang & Blei's second-order approximation "
              "(eq. 19), not a bound",) if approximate else ()
    low_rank = tuple(n for n in latent if isinstance(families.get(n), fam.MvNormal) and shapes.get(n) == ())
    local = [n for n in order if scopes.get(n, ("local",))[0] != "global"]
    problem = Problem(model, dataset, env, families, shapes, runtimes, neighbours, order, latent, steps,
                      stochastic, pure, damped, guarded, notes, low_rank, scopes,
                      schedule or model.schedule or ScheduleSpec(), analysis, tuple(local))
    problem.schedule = block_defaults(problem)
    problem.searched = searched
    problem.kernel = mixture_kernel(problem) or latent_class_kernel(problem) or lda_kernel(problem)
    problem.levels = level_groups(problem)
    problem.class_shifts = dict(shift_groups(problem))
    problem.intercept_shifts = intercept_pairs(problem)
    return problem


def factor_runtime(factor, model, env, dataset, families, analysis, blocks, transitions: set):
    """The runtime of a factor that no joint group, discrete chain or `@joint` precision took."""
    rules = {t.rule for t in analysis.for_factor(factor.name) if t.role != "value"}
    nonconjugate = rules & set(GLM_RULES)
    block = block_read_by(factor, blocks, model)
    if block is not None:
        return block_runtime(factor, model, env, dataset, families, block,
                             _rule(factor, analysis, nonconjugate) if nonconjugate else None)
    if factor.name in transitions:
        if nonconjugate:
            raise Unsupported(f"rule `{sorted(nonconjugate)[0]}` on the chain transition `{factor.name}`: "
                              "its updates are conjugate (vmp)", factor.span)
        return ChainTransition(factor, model, env, dataset, families)
    if nonconjugate:
        rule, options = _rule(factor, analysis, nonconjugate)
        if rule == "cvi" and gamma_role(factor, model) is not None:
            return GammaCVIFactor(factor, model, env, dataset, families, options)
        if rule == "cvi" and is_positive_rate(factor, model):
            return PoissonRateFactor(factor, model, env, dataset, families, options)
        if is_softmax(factor):
            runtime = SoftmaxVectorFactor if reads_vector(factor, model) else SoftmaxFactor
            return runtime(factor, model, env, dataset, families, rule, options)
        if factor.dist.name not in GLM_DISTRIBUTIONS:
            raise Unsupported(f"rule `{rule}` for {factor.dist.name} `{factor.name}` is not available in this "
                              f"version: the engine runs it for scalar links of Bernoulli, Binomial, Poisson "
                              f"and Normal likelihoods, OrderedLogistic, for a Gamma variable as the shape of a "
                              f"Gamma, and for Poisson(dot(a, b)) with Gamma or Dirichlet a, b",
                              factor.span)
        return GLMFactor(factor, model, env, dataset, families, rule, options)
    if is_factorial(factor, model):
        return FactorialNormal(factor, model, env, dataset, families)
    if factor.dist.name in ("Normal", "MvNormal"):
        return GaussianFactor(factor, model, env, dataset, families)
    if factor.target.name not in families:  # OrderedLogistic: a likelihood of η alone
        raise Unsupported(f"`{factor.name}`: no parameter of {factor.dist.name} reads a latent variable, so "
                          "the statement has nothing to fit; its linear predictor must read one, as in "
                          "`OrderedLogistic(dot(x[n], w), cut)`", factor.span)
    return ConjugateFactor(factor, model, env, dataset, families, families[factor.target.name])


def _rule(factor, analysis, nonconjugate: set) -> tuple[str, dict]:
    """(rule, options) of a non-conjugate factor: the annotated rule, else the analyzer's default ncvmp."""
    rule = next(iter(sorted(nonconjugate - {"ncvmp"})), "ncvmp")
    return rule, next(t.options for t in analysis.for_factor(factor.name) if t.rule == rule)


def _discrete_chain_factors(model, env, analysis, families) -> list:
    """The initial-state and transition runtimes of every discrete chain (hidden Markov models)."""
    runtimes = []
    for chain in analysis.chains:
        if chain.family == "CategoricalChain":
            family = families[chain.variable]
            runtimes.append(ChainStart(model.factor(chain.first), model, env, family))
            runtimes.append(DiscreteTransition(model.factor(chain.transition), model, env, family))
    return runtimes


def discrete_chain_family(chain, model, dataset, env):
    """CategoricalChain over the rows, one sequence per run of equal `sequences` values (each
    sequence's rows must be contiguous: a value met again after another began is data error E422)."""
    var = model.variables[chain.variable]
    rows = env.size(var.plates[0])
    if chain.sequences is None:
        return fam.CategoricalChain(env.size(var.levels), (rows,))
    seq = np.asarray(dataset.arrays[chain.sequences]).reshape(-1)
    starts = np.flatnonzero(np.r_[True, seq[1:] != seq[:-1]])
    labels = seq[starts]
    order = np.argsort(labels, kind="stable")
    repeated = order[1:][labels[order][1:] == labels[order][:-1]]
    if repeated.size:
        again = starts[repeated.min()]
        raise DataError("E422", f"`{chain.sequences}` names the sequence of each row, and the rows of a sequence "
                        f"must be contiguous: row {again + 1} returns to a sequence that ended before",
                        column=chain.sequences, row=int(again) + 1,
                        hint="sort the data by sequence, then by time")
    return fam.CategoricalChain(env.size(var.levels), tuple(int(n) for n in np.diff(np.r_[starts, rows])))


def _joint_factors(model, dataset, env, analysis, families, shapes):
    """Runtimes for `@joint` groups, and the latent list with each group in place of its pair."""
    runtimes, grouped = [], {}
    for group in analysis.groups:
        key = group_key(group)
        mean_var = model.variables[group.mean]
        dim = env.size(mean_var.event_shape[0]) if mean_var.event_shape else 1
        families[key] = fam.NormalWishart(dim)
        shapes[key] = shapes[group.mean]
        grouped[group.mean], grouped[group.precision] = key, key
        own = model.factors_of(group.mean)[0]
        partner = model.factors_of(group.precision)[0]
        runtimes.append(JointPrior(own, partner, group, model, env, dataset, families[key]))
        for factor in model.factors:
            if factor is not own and factor.args.get("mean") is not None and any(
                    isinstance(n, ast.Name) and n.id == group.mean for n in ast.walk(factor.args["mean"])):
                runtimes.append(JointGaussian(factor, group, model, env, dataset, families[key]))
    latent = []
    for name, var in model.variables.items():
        if var.kind == "latent":
            key = grouped.get(name, name)
            if key not in latent:
                latent.append(key)
    return runtimes, latent


def family_for(var, env):
    """The exponential family of a variable's values, from its distribution and event shape."""
    try:
        return _family(var, env)
    except ValueError as exc:  # a family rejects its structure, e.g. one category (K = 1)
        raise Unsupported(f"`{var.name}` ({var.dist}): {exc}", var.span) from None


def _family(var, env):
    event = [env.size(d) for d in var.event_shape]
    dist = var.dist
    if dist == "MvNormal":
        return fam.MvNormal(event[0])
    if dist == "Wishart":
        return fam.Wishart(event[0])
    if dist == "Dirichlet":
        return fam.Dirichlet(event[0])
    if dist == "Categorical":
        return fam.Categorical(env.size(var.levels))
    if dist == "Binomial":
        return fam.Binomial(trials=np.zeros((), dtype=np.int64))
    if dist == "Multinomial":
        return fam.Multinomial(event[0], trials=np.zeros((), dtype=np.int64))
    return getattr(fam, dist)()


def observed_stats(family, values: np.ndarray) -> np.ndarray:
    """Sufficient statistics of observed values (counts and 0/1 data are their own statistic)."""
    if family.name in OBSERVED_ONLY:
        return values[..., None].astype(float) if family.name != "Multinomial" else values.astype(float)
    return family.stats(values)
