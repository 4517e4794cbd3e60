"""`y ~ Poisson(dot(a, b))` with positive latent vectors: CVI for Gamma and Dirichlet q
(Khan & Lin's Poisson–gamma matrix factorisation, App. J eq. 96; a Dirichlet weight vector).

Each side of the dot product is a read of latent Gamma elements whose last plate is the
contracted axis (`theta[user[r]]` for `theta[u, k] ~ Gamma`), a read of a latent Dirichlet
(`pi` for `pi ~ Dirichlet`), or data. The rate λ = Σ_k a_k b_k is a sum of products, so

    E[log f] = y E[log λ] − Σ_k E[a_k] E[b_k] − log y!

has a closed-form linear part and a part E[log λ] with no closed form. The message to each
latent element is ∇_μ E[log f] in its own mean parameters (t = (log x, x) for a Gamma,
t = log π for a Dirichlet), added by the engine to its prior's conjugate message:

- the linear part exactly: (0, −Σ E[b_k]) for a Gamma element; for a Dirichlet, whose E[π]
  is not a mean parameter, the Fisher solve C⁻¹ ∇_α(−E[π]·c) with ∇_α E[π_k] = (δ_jk − π̄_k)/α₀
  (`dirichlet_fisher_solve`, Sherman–Morrison);
- y E[log λ] by Monte Carlo with implicitly reparameterised draws (`ppl.infer.pathwise`): per
  draw, ∂/∂x (y log λ) = y b/λ summed over the rows reading x (one bincount), times ∂x/∂λ_q;
  C_λ from the same draws (`same_draws_solve`). Pathwise rather than score-function gradients:
  a user's term sums over all its rows and the other factors' draws, and only its derivative in
  x enters a pathwise gradient, while a score-function gradient carries all of that term's
  noise. Rows with y = 0 have no log term and are skipped.

The ELBO term averages log λ over `ELBO_SAMPLES` draws by inversion at uniform levels drawn once
(common random numbers), so the trace is a smooth function of q, the convergence test and the
restarts compare like with like, and a control variate (Jensen's bound) takes out most of the
noise; `elbo_standard_error` gives the remaining Monte Carlo standard error.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln, logsumexp

from ppl.infer.access import Access, Unsupported, sum_by_index
from ppl.infer.factors.base import FactorRuntime
from ppl.infer.factors.gamma_cvi import DEFAULT_SAMPLES, _reads_latent
from ppl.infer.pathwise import (dirichlet_draws, dirichlet_fisher_solve, dirichlet_jacobian, dirichlet_quantiles,
                                gamma_draws, gamma_jacobian, gamma_quantiles, same_draws_solve)
from ppl.lang import ast

POSITIVE = ("Gamma", "Dirichlet")
ELBO_SAMPLES = 32
JITTER = (0.5, 1.5)


def is_positive_rate(factor, model) -> bool:
    """`y ~ Poisson(dot(a, b))` where a side reads a latent Gamma or Dirichlet variable."""
    rate = factor.args.get("rate") if factor.dist.name == "Poisson" else None
    return (isinstance(rate, ast.Call) and rate.func == "dot" and len(rate.args) == 2
            and any(_reads_latent(side, model, dist) for side in rate.args for dist in POSITIVE))


@dataclass
class Side:
    """One side of the dot product: `kind` is Gamma, Dirichlet or data. `index` (rows, K) holds flat
    Gamma elements, or (rows,) Dirichlet rows; `value` (rows, K) is the data."""

    kind: str
    name: str | None = None
    index: np.ndarray | None = None
    size: int = 0
    value: np.ndarray | None = None


class PoissonRateFactor(FactorRuntime):
    """A Poisson count whose rate is a dot product of positive latent vectors (or data)."""

    rule = "cvi"

    def __init__(self, factor, model, env, dataset, families, options: dict):
        super().__init__(factor, model, env, dataset)
        self.samples = int(options.get("samples", DEFAULT_SAMPLES))
        if self.samples < 2:
            raise Unsupported(f"`{self.name}`: E[log of a sum of products] has no exact form here; cvi needs "
                              f"samples ≥ 2, not {self.samples}", factor.span)
        if {"form", "minibatch"} & set(options):
            raise Unsupported(f"`{self.name}`: the site form with minibatches (`form`, `minibatch`) is not "
                              "available in this version", factor.span)
        if self.selector is not None:
            raise Unsupported(f"`{self.name}`: a rate selected by a latent category is not available for cvi",
                              factor.span)
        self.rows = int(np.prod(self.plate.shape, dtype=np.int64))
        self.sides = [self._side(expr, model, env) for expr in self.args["rate"].args]
        names = [s.name for s in self.sides if s.name is not None]
        if len(set(names)) < len(names):
            raise Unsupported(f"`{self.name}`: `{names[0]}` on both sides of the dot product", factor.span)
        widths = {s.index.shape[-1] if s.kind == "Gamma" else s.value.shape[-1] if s.kind == "data"
                  else families[s.name].k for s in self.sides}
        if len(widths) != 1:
            raise Unsupported(f"`{self.name}`: the two sides of `{ast.text(self.args['rate'])}` have lengths "
                              f"{sorted(widths)}", self.args["rate"].span)
        for side in self.sides:
            if side.kind == "data":
                side.value = np.broadcast_to(side.value, (self.rows,) + side.value.shape[-1:])
        if factor.target.name in self.reads:
            raise Unsupported(f"`{factor.target.name}` must be observed in `{self.name}`", factor.span)
        counts = np.asarray(dataset.arrays[factor.target.name], dtype=float).reshape(-1, 1)
        self.y = self.target.gather(counts).reshape(-1)
        self.positive = np.flatnonzero(self.y > 0)  # rows with a log λ term

    def _side(self, expr, model, env) -> Side:
        if not _reads_latent(expr, model):
            value = np.asarray(self.plate.evaluate(expr), dtype=float)
            return Side("data", value=value.reshape((-1,) + value.shape[-1:]) if value.ndim > 1 else value[None])
        if not isinstance(expr, (ast.Name, ast.Index)):
            raise Unsupported(f"`{self.name}`: cvi needs a latent Gamma or Dirichlet read on each side of the dot "
                              f"product, not `{ast.text(expr)}`", expr.span)
        name = expr.id if isinstance(expr, ast.Name) else expr.base.id
        var = model.variables[name]
        indices = expr.indices if isinstance(expr, ast.Index) else ()
        if var.dist == "Dirichlet":
            access = self.add_read(self.builder.build(expr))
            return Side("Dirichlet", name, access.index.reshape(-1), access.size)
        if var.dist != "Gamma":
            raise Unsupported(f"`{self.name}`: `{name}` is {var.dist}; cvi for a Poisson rate reads Gamma or "
                              "Dirichlet variables", expr.span)
        dims = [env.size(d) for d in var.plates]
        if len(indices) != len(dims) - 1:
            raise Unsupported(f"`{ast.text(expr)}` must index all but the last plate of `{name}` (the "
                              "contracted axis)", expr.span)
        axes = [np.asarray(self.plate.evaluate(i)).reshape(-1, 1) - 1 for i in indices]
        axes.append(np.arange(dims[-1])[None, :])
        flat = np.ravel_multi_index(tuple(np.broadcast_arrays(*axes)), dims)
        flat = np.broadcast_to(flat, (self.rows, dims[-1]))
        size = int(np.prod(dims))
        self.add_read(Access(name, flat.reshape(self.plate.shape + (dims[-1],)), size))
        return Side("Gamma", name, np.ascontiguousarray(flat), size)

    def break_symmetry(self, state, rng) -> None:
        """With latent vectors on both sides, the K components are exchangeable and the prior
        start is a saddle that only Monte Carlo noise would leave: scale the rate of every Gamma
        element by a random factor in [1/2, 3/2] (Gopalan et al. start near the prior, perturbed)."""
        if any(s.kind == "data" for s in self.sides):
            return
        for side in self.sides:
            if side.kind == "Gamma":
                natural = state.natural[side.name].copy()
                natural[:, 1] *= rng.uniform(JITTER[0], JITTER[1], natural.shape[0])
                state.set(side.name, natural)

    # ---- moments and draws of one side, per row

    def _mean(self, state, side) -> np.ndarray:
        """E[side] per row, (rows, K)."""
        if side.kind == "data":
            return side.value
        family, nat = state.families[side.name], state.natural[side.name]
        return family.mean(nat)[side.index]

    def _draws(self, state, side, rows):
        """Fresh draws of one side at the given rows, (len(rows) or 1, S, K), and the side's element
        draws and their derivative in λ (None for data)."""
        if side.kind == "data":
            return side.value[rows][:, None, :], None, None
        params = state.families[side.name].params(state.natural[side.name])
        if side.kind == "Gamma":
            z, dz = gamma_draws(params["shape"], params["rate"], state.rng, self.samples)
            return np.swapaxes(z[side.index[rows]], -1, -2), z, dz
        pi, d = dirichlet_draws(params["alpha"], state.rng, self.samples)
        return pi[side.index[rows]], pi, d

    # ---- messages

    def message(self, state, name: str) -> np.ndarray:
        """∇_μ E[log f] for every element of `name`, (elements, size): one message per element of
        the variable, not per row, because the Monte Carlo solve is not linear in the rows' sums."""
        return self._message(state, self.reads[name][0])

    def _message(self, state, access):
        own = next(s for s in self.sides if s.name == access.name)
        other = next(s for s in self.sides if s is not own)
        pos = self.positive
        a, elements, derivative = self._draws(state, own, pos)
        b = self._draws(state, other, pos)[0]
        weight = self._row_weight(access.name)  # row weights (ppl.infer.weights), (rows,)
        h = (weight * self.y)[pos, None, None] * b / np.sum(a * b, axis=-1, keepdims=True)  # ∂(y log λ)/∂a
        mean_other = weight[:, None] * self._mean(state, other)
        if own.kind == "Gamma":
            index = own.index[pos]  # (pos, K)
            flat = (index[:, None, :] * self.samples + np.arange(self.samples)[None, :, None]).reshape(-1)
            per_element = np.bincount(flat, h.reshape(-1), own.size * self.samples).reshape(own.size, self.samples)
            message = same_draws_solve(gamma_jacobian(elements, derivative), per_element[..., None] * derivative)
            message[:, 1] -= np.bincount(own.index.reshape(-1), mean_other.reshape(-1), own.size)
            return message
        per_row = _sum_rows(own.index[pos], h, own.size)  # (P, S, K)
        message = same_draws_solve(dirichlet_jacobian(elements, derivative),
                                   (per_row - np.sum(per_row * elements, axis=-1, keepdims=True)) * derivative)
        alpha = state.families[own.name].params(state.natural[own.name])["alpha"]
        total = np.sum(alpha, axis=-1, keepdims=True)
        c = _sum_rows(own.index, mean_other, own.size)
        gradient = -(c - np.sum(alpha * c, axis=-1, keepdims=True) / total) / total  # ∇_α(−E[π]·c)
        return message + dirichlet_fisher_solve(alpha, gradient)

    def _row_weight(self, name: str | None = None) -> np.ndarray:
        """The row weights of the message to `name` (of the ELBO term: None), one per row."""
        count = self.count(name)
        return np.ones(self.rows) if count is None else np.broadcast_to(count, self.builder.shape()).reshape(-1)

    # ---- the ELBO term

    def _log_rate_draws(self, state) -> np.ndarray:
        """Per-draw estimates of E[log λ] at the fixed evaluation draws, rows with y > 0,
        (pos, ELBO_SAMPLES): log λ_s − φ·(l_s − E[l]) with l = log a + log b, whose mean E[l] is
        closed form, and φ = softmax(E[l]) the weights of Jensen's bound E[log λ] ≥ φ·E[l] + H(φ)
        (the auxiliary counts of Gopalan et al.): a control variate that removes the noise of a
        row whose rate one k dominates."""
        if getattr(self, "_levels", None) is None:  # once per factor: restarts are compared on the same draws
            self._levels = [None if s.kind == "data" else state.rng.random(
                (s.size, ELBO_SAMPLES) if s.kind == "Gamma" else (s.size, ELBO_SAMPLES, state.families[s.name].k))
                for s in self.sides]
        draws, logs = zip(*(self._evaluation_rows(state, side, levels) for side, levels in zip(self.sides, self._levels)))
        expected = logs[0] + logs[1]  # (pos, K)
        weights = np.exp(expected - logsumexp(expected, axis=-1, keepdims=True))
        with np.errstate(invalid="ignore"):  # a zero datum: weight 0, and −∞ − (−∞) is no term
            centred = np.where(weights[:, None, :] > 0, np.log(draws[0]) + np.log(draws[1]) - expected[:, None, :], 0)
        return np.log(np.sum(draws[0] * draws[1], axis=-1)) - np.sum(weights[:, None, :] * centred, axis=-1)

    def _evaluation_rows(self, state, side, levels):
        """(draws at the fixed levels, (pos, S, K); E[log side], (pos, K)) at the rows with y > 0."""
        pos = self.positive
        if side.kind == "data":
            return side.value[pos][:, None, :], np.log(side.value[pos])
        family, nat = state.families[side.name], state.natural[side.name]
        params = family.params(nat)
        if side.kind == "Gamma":
            z = gamma_quantiles(params["shape"], params["rate"], levels)
            return np.swapaxes(z[side.index[pos]], -1, -2), family.expected_log(nat)[side.index[pos]]
        return dirichlet_quantiles(params["alpha"], levels)[side.index[pos]], family.expected_log(nat)[side.index[pos]]

    def log_rate(self, state) -> np.ndarray:
        """log λ at the evaluation draws, rows with y > 0, (pos, ELBO_SAMPLES), while q is unchanged."""
        key = self.version_key(state)
        if getattr(self, "_log_rate_key", None) != key:
            self._log_rate_key, self._log_rate = key, self._log_rate_draws(state)
        return self._log_rate

    def elbo_standard_error(self, state) -> float:
        """The Monte Carlo standard error of this factor's ELBO term (from its evaluation draws)."""
        terms = (self._row_weight() * self.y)[self.positive] @ self.log_rate(state)
        return float(np.std(terms, ddof=1) / np.sqrt(len(terms)))

    def elbo_estimate(self, state):
        """(the ELBO term, its Monte Carlo standard error), for the trace."""
        return self.elbo(state), self.elbo_standard_error(state)

    def _expected_log(self, state):
        rate = np.sum(self._mean(state, self.sides[0]) * self._mean(state, self.sides[1]), axis=-1)
        value = -rate - gammaln(self.y + 1.0)
        value[self.positive] += self.y[self.positive] * np.mean(self.log_rate(state), axis=-1)
        return value.reshape(self.builder.shape())


def _sum_rows(index, values, size) -> np.ndarray:
    """Σ of values (rows, ...) over the rows reading each element: (size, ...)."""
    if len(index) == 0:  # no row reads any element (no positive count, say)
        return np.zeros((size,) + values.shape[1:])
    return sum_by_index(index, values.reshape(len(index), -1), size).reshape((size,) + values.shape[1:])
