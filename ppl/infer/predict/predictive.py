"""The posterior predictive of one response cell under q: a finite mixture Σ_j w_j p(y | θ_j).

- `y ~ Bernoulli(logistic(η))`, `probit`, `Binomial(n, logistic(η))`, `Poisson(exp(η))`: η is
  Gaussian under q, N(m, v) per cell (the margin the non-conjugate rules integrate over);
  Gauss–Hermite with `NODES` nodes (a wide margin: the fitting's split Gauss–Legendre rule,
  `margin_nodes`) turns E_q[p(y | η)] into the mixture over the nodes, so
  P(y = 1) = E_q[σ(η)] for a logistic regression.
- `y ~ Categorical(p)` with p Dirichlet under q (LDA's `word[t] ~ Categorical(beta[z[t]])`):
  P(y = k) = Σ_j r_j E[p_jk], the components mixed by q(z) (`CategoricalMixture`; the log
  density at an observed code is a gather, never a cells × levels array).
- `x ~ MvNormal(mu[z], Lambda[z])` with `@joint` (mu, Lambda): per component the Student-t of
  Bishop (10.81), df ν + 1 − D, precision L = df β/(1 + β) W; each coordinate of an empty row
  gets its marginal, a univariate t of scale √(L⁻¹)_dd, mixed by q(z) (`_student`).
- `y ~ Categorical(softmax(η))`: the class probabilities averaged over q(η) by the factor's own
  rule (`SoftmaxFactor.predictive`: per-class quadrature, or the sticks under `bound:stick`).
- `y ~ OrderedLogistic(η, cut)`: P(y = k) = E_q[σ(φ_k − η) − σ(φ_{k−1} − η)], Gauss–Hermite over
  η's margin, as a `CategoricalMixture` whose components are the nodes.
- `y ~ Normal(η, τ)` with η linear in Gaussian variables: N(y; m, v + 1/τ) exactly for a known
  τ; for τ ~ Gamma under q, Gauss–Legendre over the Gamma's quantiles (`_gamma_nodes`). A latent
  category that selects the component (`mu[z[n]]`) mixes the components by q(z).

The mean and variance of the mixture are exact sums; its quantiles are found by bisection on its
CDF; its log density at an observed value is a log-sum-exp over the components.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from ppl.infer.factors.glm import GLMFactor
from ppl.infer.margin_nodes import margin_nodes
from ppl.infer.linear import margin
from ppl.lang import ast

NODES = 96  # Gauss–Hermite nodes over a narrow margin: E[σ(η)] to 1e-12 for sd(η) up to 4; wider: split Legendre
GAMMA_NODES = 48  # Gauss–Legendre nodes over the quantiles of a Gamma precision (`_gamma_nodes`)
_CONTINUOUS_STEPS = 80  # bisection steps of a continuous quantile (2^-80 of the bracket)


@dataclass
class Mixture:
    """Per cell (rows) the mixture Σ_j weights[:, j] · dist(*params[:, j]) of a scipy.stats family."""

    dist: object  # scipy.stats.bernoulli, binom, poisson or norm
    weights: np.ndarray  # (cells, J), rows sum to 1
    params: tuple  # arrays (cells, J)
    discrete: bool

    def _frozen(self):
        return self.dist(*self.params)

    def _weighted(self, values) -> np.ndarray:
        """Σ_j w_j values_j, a component of weight 0 left out (a t without a mean has NaN)."""
        with np.errstate(invalid="ignore"):
            return np.sum(np.where(self.weights > 0, self.weights * values, 0.0), axis=1)

    def mean(self) -> np.ndarray:
        return self._weighted(self._frozen().mean())

    def var(self) -> np.ndarray:
        frozen = self._frozen()
        return np.maximum(self._weighted(frozen.var() + frozen.mean() ** 2) - self.mean() ** 2, 0.0)

    def sample(self, n: int, rng) -> np.ndarray:
        """n draws per cell, (n, cells): a component by its weight, then a draw of it."""
        cumulative = np.cumsum(self.weights, axis=1)
        u = rng.random((n, len(self.weights), 1)) * cumulative[:, -1:]
        j = np.minimum(np.sum(cumulative[None] < u, axis=-1), self.weights.shape[1] - 1)
        cells = np.arange(len(self.weights))
        return self.dist(*(p[cells, j] for p in self.params)).rvs(random_state=rng).astype(float)

    def logpdf(self, y: np.ndarray) -> np.ndarray:
        frozen = self._frozen()
        log = frozen.logpmf(y[:, None]) if self.discrete else frozen.logpdf(y[:, None])
        with np.errstate(divide="ignore"):
            return special.logsumexp(log + np.log(self.weights), axis=1)

    def cdf(self, x: np.ndarray) -> np.ndarray:
        return np.sum(self.weights * self._frozen().cdf(x[:, None]), axis=1)

    def quantile(self, q: float) -> np.ndarray:
        """The smallest value whose CDF reaches q (an integer for a discrete response)."""
        frozen = self._frozen()
        if self.discrete:
            mean, sd = frozen.mean(), np.sqrt(frozen.var())
            lo, hi = np.maximum(np.floor(np.min(mean - 12 * sd, axis=1)), 0.0), np.ceil(np.max(mean + 12 * sd, axis=1)) + 1
            while np.any(hi > lo):
                mid = np.floor((lo + hi) / 2)
                reached = self.cdf(mid) >= q
                hi, lo = np.where(reached, mid, hi), np.where(reached, lo, mid + 1)
            return hi
        # the mixture's quantile lies between its components' own (a t may lack a variance)
        lo, hi = np.min(frozen.ppf(min(q, 1e-9)), axis=1), np.max(frozen.isf(min(1 - q, 1e-9)), axis=1)
        for _ in range(_CONTINUOUS_STEPS):
            mid = (lo + hi) / 2
            reached = self.cdf(mid) >= q
            hi, lo = np.where(reached, mid, hi), np.where(reached, lo, mid)
        return (lo + hi) / 2


@dataclass
class CategoricalMixture:
    """Per cell the categorical Σ_j weights[:, j] · E[p_j] over levels 1..K (`probs`: E[p_j],
    (cells or 1, J, K)). Values are level numbers 1..K, as the language reads a `cat` value."""

    weights: np.ndarray  # (cells, J)
    probs: np.ndarray  # (cells or 1, J, K)
    offset: int = 0  # what the bound data hold for level 1: 0 for `cat` codes, 1 for `int` values

    def probabilities(self) -> np.ndarray:
        """P(y = k) per cell and level: (cells, K)."""
        return np.einsum("nj,njk->nk", self.weights, np.broadcast_to(self.probs, self.weights.shape + self.probs.shape[-1:]))

    def mean(self) -> np.ndarray:
        return self.probabilities() @ np.arange(1, self.probs.shape[-1] + 1)

    def var(self) -> np.ndarray:
        levels = np.arange(1, self.probs.shape[-1] + 1)
        table = self.probabilities()
        return np.maximum(table @ levels ** 2 - (table @ levels) ** 2, 0.0)

    def logpdf(self, values: np.ndarray) -> np.ndarray:
        """log P(y) at the values the bound data hold (`offset`): a gather of each cell's level."""
        codes = np.asarray(values, dtype=np.int64) - self.offset
        probs = np.broadcast_to(self.probs, self.weights.shape + self.probs.shape[-1:])
        at = np.take_along_axis(probs, codes[:, None, None], axis=-1)[..., 0]
        with np.errstate(divide="ignore"):
            return np.log(np.sum(self.weights * at, axis=1))

    def quantile(self, q: float) -> np.ndarray:
        """The smallest level whose cumulative probability reaches q."""
        cumulative = np.cumsum(self.probabilities(), axis=1)
        return 1.0 + np.argmax(cumulative >= q - 1e-12, axis=1)


def mixed(parts: list):
    """Σ_k w_k · predictive_k of one response over the (weight, predictive) `parts` of a posterior
    (a grid's nodes): every part's components side by side, its weights times its own."""
    if len(parts) == 1:
        return parts[0][1]
    first = parts[0][1]
    weights = np.concatenate([w * m.weights for w, m in parts], axis=1)
    if isinstance(first, CategoricalMixture):
        probs = [np.broadcast_to(m.probs, m.weights.shape + m.probs.shape[-1:]) for _, m in parts]
        return CategoricalMixture(weights, np.concatenate(probs, axis=1), first.offset)
    params = tuple(np.concatenate(p, axis=1) for p in zip(*(m.params for _, m in parts)))
    return Mixture(first.dist, weights, params, first.discrete)


def predicted(problem, f) -> bool:
    """Whether `response_mixture` computes the predictive of factor `f`'s response."""
    kind = type(f).__name__
    if kind == "ConjugateFactor":
        categorical = f.factor.dist.name == "Categorical" and parameter_read(f) is not None
        return categorical or conjugate_parameter(problem, f) is not None
    if kind == "JointGaussian":
        return bool(np.all(np.asarray(f.scale) == 1.0))
    scalar = ("GLMFactor", "GaussianFactor", "BlockGLM", "BlockGaussian")  # not a log-normal precision's
    return kind == "SoftmaxFactor" or (kind in scalar and not getattr(f, "dim", 0))


def parameter_read(f) -> str | None:
    """The one latent a response's factor reads besides the response and its selector (the p of
    `Categorical(p)`, `Bernoulli(p)`), or None."""
    selector = f.selector.name if f.selector is not None else None
    names = set(f.reads) - {f.factor.target.name, selector}
    return next(iter(names)) if len(names) == 1 else None


def _categorical(f, state, at) -> CategoricalMixture:
    """`y ~ Categorical(p)`, p a Dirichlet read by the factor: E[p_j] = α_j / Σ α_j from q, the
    components weighted by the selector's q (ones without one); cells put in element order `at`."""
    name = parameter_read(f)
    alpha = f.reads[name][0].gather(state.natural[name]) + 1.0
    probs = alpha / alpha.sum(axis=-1, keepdims=True)
    cells = int(np.prod(f.plate.shape, dtype=np.int64))
    weights = np.broadcast_to(f.weights(state), f.plate.shape + probs.shape[-2:-1]).reshape(cells, -1)
    probs = probs.reshape((-1,) + probs.shape[-2:])
    return CategoricalMixture(weights[at], probs if len(probs) == 1 else probs[at], _offset(f))


def _ordinal(f, state, at) -> CategoricalMixture:
    """Nodes η_j of the margin (`margin_nodes`); at each, the cumulative logits σ(φ_k − η_j)
    differenced into the K level probabilities."""
    m, v = margin(state, f.margin)
    eta, w = margin_nodes(m, v, NODES)  # plate + (1, J)
    cut = np.asarray(f.data(f.args["cut"]), dtype=float)
    cut = np.broadcast_to(cut, f.builder.shape() + cut.shape[-1:])[..., None, :]  # plate + (1, 1, K − 1)
    below = special.expit(cut - eta[..., None])
    shape = below.shape[:-1] + (1,)
    cumulative = np.concatenate([np.zeros(shape), below, np.ones(shape)], axis=-1)
    probs = np.diff(cumulative, axis=-1)
    cells = int(np.prod(f.plate.shape, dtype=np.int64))
    probs = probs.reshape(cells, -1, probs.shape[-1])
    weights = np.broadcast_to(w, eta.shape).reshape(probs.shape[:2])
    return CategoricalMixture(weights[at], probs[at], _offset(f))


def _student(problem, f, state, at) -> Mixture:
    """Each coordinate of each row: Σ_c q(z = c) t(df_c, m_cd, √(L_c⁻¹)_dd), rows in element order
    `at`, coordinates after them (the response's row-major order)."""
    p = problem.families[f.key].params(state.natural[f.key])
    d = f.dim
    df = p["dof"] + 1.0 - d
    scale = np.sqrt(np.diagonal(np.linalg.inv(p["scale"]), axis1=-2, axis2=-1)
                    * ((1.0 + p["beta"]) / (df * p["beta"]))[..., None])  # (components, D)
    cells = int(np.prod(f.plate.shape, dtype=np.int64))
    index = np.broadcast_to(f.read.index, f.plate.shape + f.read.index.shape[-1:]).reshape(cells, -1)[at]
    weights = np.broadcast_to(f.weights(state), f.plate.shape + index.shape[-1:]).reshape(cells, -1)[at]
    def per_coordinate(a):  # (rows, C, D) -> (rows·D, C)
        return np.swapaxes(a, 1, 2).reshape(-1, a.shape[1])
    params = (per_coordinate(np.broadcast_to(df[index][..., None], index.shape + (d,))),
              per_coordinate(p["mean"][index]), per_coordinate(scale[index]))
    return Mixture(stats.t, np.repeat(weights, d, axis=0), params, False)


def _offset(f) -> int:
    return 0 if f.model.variables[f.factor.target.name].elem == "cat" else 1


def response_mixture(problem, state, name: str, only=None, spreads=None):
    """The predictive of every element of response `name` (elements in the array's order), or of
    the elements `only` (a mask or indices, in that order): a scalar Normal response's mixture is
    then computed for those cells alone (`_gaussian`), not for all and cut. `spreads`: factor →
    the variance its margin gains from a Gaussian block's correlations (`block_spread.spreads`)."""
    f = next(f for f in problem.factors if f.factor.target.name == name)
    spread = (spreads or {}).get(f.name)
    cells = int(np.prod(f.plate.shape, dtype=np.int64))
    shape = problem.shapes.get(name, np.shape(problem.dataset.arrays[name]))  # a response without a family: its data
    elements = int(np.prod(shape, dtype=np.int64))
    order = f.target.gather(np.arange(elements, dtype=float).reshape(-1, 1)).reshape(-1)[:cells].astype(np.int64)
    at = np.empty(elements, dtype=np.int64)
    at[order] = np.arange(cells)
    if only is not None:
        at = at[only]
    elements = len(at)
    if type(f).__name__ == "SoftmaxFactor":  # E_q[softmax(η)], the factor's own average over q(η)
        probs = f.predictive(state, np.ones(f.y.shape, dtype=bool), spread)
        return CategoricalMixture(np.ones((elements, 1)), probs[at][:, None, :], _offset(f))
    if f.factor.dist.name == "Categorical":
        return _categorical(f, state, at)
    if f.factor.dist.name == "OrderedLogistic":
        return _ordinal(f, state, at)
    if type(f).__name__ == "JointGaussian":
        return _student(problem, f, state, at)
    if type(f).__name__ == "ConjugateFactor":
        weights, dist, params, discrete = _conjugate(problem, f, state)
    elif isinstance(f, GLMFactor):
        weights, dist, params, discrete = _glm(f, state, spread)
    else:
        rows = at if only is not None and np.ndim(f.precision.scale) == 0 else None
        weights, dist, params, discrete = _gaussian(f, state, rows, spread)
        if rows is not None:  # already the cells asked for, in their order
            cells, at = len(rows), np.arange(len(rows))
    weights = np.broadcast_to(weights, np.broadcast_shapes(weights.shape, *(p.shape for p in params)))
    flat = [np.broadcast_to(a, weights.shape).reshape(cells, -1) for a in (weights,) + params]
    return Mixture(dist, flat[0][at], tuple(p[at] for p in flat[1:]), discrete)


CONJUGATE = {("Bernoulli", "Beta"), ("Binomial", "Beta"), ("Poisson", "Gamma")}  # (response, its parameter's q)


def conjugate_parameter(problem, f):
    """The latent parameter `p` of `y ~ Bernoulli(p)`, `Binomial(n, p)` or `Poisson(p)` read bare,
    with a Beta or Gamma q (components selected by a latent category allowed), else None."""
    role = "rate" if f.factor.dist.name == "Poisson" else "p"
    name, expr = parameter_read(f), f.args.get(role)
    bare = isinstance(expr, ast.Name) or (isinstance(expr, ast.Index) and isinstance(expr.base, ast.Name))
    if name is None or not bare or (expr.id if isinstance(expr, ast.Name) else expr.base.id) != name:
        return None
    return name if (f.factor.dist.name, problem.families[name].name) in CONJUGATE else None


def _conjugate(problem, f, state):
    """Components of a conjugate response: Bernoulli(E[p]), the beta-binomial, or the negative
    binomial of a Gamma rate (shape a, success probability b/(b + 1)), weighted by q(z)."""
    name = conjugate_parameter(problem, f)
    p = problem.families[name].params(f.reads[name][0].gather(state.natural[name]))
    weights = f.weights(state)
    if f.factor.dist.name == "Bernoulli":
        return weights, stats.bernoulli, (p["a"] / (p["a"] + p["b"]),), True
    if f.factor.dist.name == "Binomial":
        trials = np.broadcast_to(np.asarray(f.data(f.args["trials"]), dtype=float)[..., None], p["a"].shape)
        return weights, stats.betabinom, (trials, p["a"], p["b"]), True
    return weights, stats.nbinom, (p["shape"], p["rate"] / (p["rate"] + 1.0)), True


def _glm(f, state, spread=None):
    """Nodes of the margin η ~ N(m, v + `spread`) (`margin_nodes`): weights and the family's
    parameters at σ(η)."""
    m, v = margin(state, f.margin)
    v = v if spread is None else v + spread
    if f.factor.dist.name == "Normal":  # a known precision τ under a GLM's rule (`@delta`): N(m, v + 1/τ)
        tau = -f.likelihood.d2(f.y, f.n, m)  # its log-likelihood's curvature
        return np.ones(1), stats.norm, (m[..., None], np.sqrt(v + 1.0 / tau)[..., None]), False
    eta, weights = margin_nodes(m, v, NODES)
    dist, link = f.factor.dist.name, f.args["p" if "p" in f.args else "rate"].func
    inverse = {"logistic": special.expit, "probit": special.ndtr, "exp": np.exp}[link]
    mean = inverse(eta)
    if dist == "Bernoulli":
        return weights, stats.bernoulli, (mean,), True
    if dist == "Binomial":
        return weights, stats.binom, (np.broadcast_to(np.asarray(f.n)[..., None], eta.shape), mean), True
    return weights, stats.poisson, (mean,), True


def _gamma_nodes(shape, rate):
    """Nodes (..., J) and weights (J,) of E[h(τ)], τ ~ Gamma(shape, rate): Gauss–Legendre over the
    quantiles u, each half [0, ½], [½, 1] through u = s⁴/2 from its end, so that nodes crowd into
    the tails where h may be singular (E[1/τ] to 1e-8 relative for shape ≥ 3)."""
    s, w = np.polynomial.legendre.leggauss(GAMMA_NODES // 2)
    s, w = (s + 1) / 2, w / 2
    u, du = 0.5 * s ** 4, w * 2 * s ** 3
    shape, scale = shape[..., None], 1.0 / rate[..., None]
    nodes = np.concatenate([stats.gamma.ppf(u, shape, scale=scale), stats.gamma.isf(u, shape, scale=scale)], -1)
    return nodes, np.concatenate([du, du])


def _at_rows(a, plate: tuple, rows) -> np.ndarray:
    """`a` (broadcast to the plate, then any axes past the plate's) at the flat plate cells
    `rows`: (rows,) + those axes."""
    a = np.asarray(a)
    tail = a.shape[len(plate):] if a.ndim > len(plate) else ()
    return np.broadcast_to(a, plate + tail).reshape((-1,) + tail)[rows]


def _gaussian(f, state, rows=None, spread=None):
    """Components (a selector's q) × nodes of a Gamma precision: N(m, v + `spread` + 1/τ); `rows`:
    of those flat plate cells only (the nodes of every other cell are never formed)."""
    plate = f.plate.shape
    def pick(a):
        return a if rows is None else _at_rows(a, plate, rows)
    m, v = margin(state, f.mean)  # v is 0 for a mean with no latent
    m, v = (pick(a) for a in np.broadcast_arrays(m, v if spread is None else v + spread))
    r = pick(f.weights(state))
    precision = f.precision
    if precision.kind == "const":
        tau = np.broadcast_to(pick(precision.value), m.shape)[..., None]
        node_weights = np.ones(1)
    else:
        natural = pick(precision.access.gather(state.natural[precision.access.name]))
        tau, node_weights = _gamma_nodes(natural[..., 0] + 1.0, -natural[..., 1])
        tau = precision.scale * tau
    weights = (r[..., None] * node_weights).reshape(r.shape[:-1] + (-1,))
    loc = np.broadcast_to(m[..., None], np.broadcast_shapes(m.shape + (1,), tau.shape))
    scale = np.sqrt(v[..., None] + 1.0 / tau)
    cells = weights.shape[:-1]
    return weights, stats.norm, (loc.reshape(cells + (-1,)), np.broadcast_to(scale, loc.shape).reshape(cells + (-1,))), \
        False
