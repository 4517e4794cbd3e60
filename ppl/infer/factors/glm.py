"""`y ~ Bernoulli(logistic(η))` and kin: a non-conjugate scalar likelihood whose margin η is
linear in Gaussian latent variables (a GLM, a GP value, a hierarchical predictor).

Each data point becomes a Gaussian *site*: with g1 and g2 the rule's first and second
derivatives of E[log f] in the margin's mean m and (twice) its variance v,

    τ̃ = −g2,   ỹ = m + g1 / τ̃,

and the message to every Gaussian read in η is the linear-Gaussian message of a Normal
likelihood N(ỹ | η, τ̃⁻¹) — the natural gradient of E[log f] in that read's mean parameters
(Khan & Lin, eqs. 29–31). The rules differ only in how they approximate E[log f]
(`ppl.infer.likelihoods`, `APPROXIMATIONS` below):

- `ncvmp`: Gauss–Hermite, exact (Knowles & Minka's NC-VMP);
- `cvi`: the same ELBO term, gradients by Monte Carlo with `samples` draws (Khan & Lin). In
  the mean-field form (Alg. 2) the engine damps the whole update with ρ_t = β·t^−κ; in the site
  form (Alg. 1, `form=site`) the factor keeps one site per data point, O(N) numbers, damps the
  sites with ρ_t and sends them whole, so the other messages to the node stay exact. With
  `minibatch=B`, a step computes gradients on B rows of the data plate only and scales them by
  N/B (eq. 14), and the factor's ELBO term becomes an unbiased estimate on another B rows,
  with its standard error;
- `bound:jaakkola`, `bound:bohning`, `bound:piecewise`: a local bound on log(1 + e^η), whose
  expectation is the factor's ELBO term, so the objective is a strict lower bound;
- `laplace`, `delta`: Wang & Blei's second-order expansions; their term is not a bound.

`y ~ OrderedLogistic(η, cut)` is one more scalar likelihood of η (`links.ordered_logistic`):
its (y, n) are the cutpoints either side of each observed category.
"""

from __future__ import annotations

import functools

import numpy as np

from ppl.infer import likelihoods
from ppl.diagnostics import ModelError
from ppl.infer.access import Unsupported
from ppl.infer.factors.base import FactorRuntime
from ppl.infer.factors.glm_options import cvi_step, minibatch, piecewise_rule, step_size
from ppl.infer.likelihoods import monte_carlo
from ppl.infer.links import LIKELIHOODS, gaussian, ordered_logistic
from ppl.infer.linear import LinearBuilder, margin, take_rows
from ppl.infer.linear_message import read_message
from ppl.infer.repeated import find_repeats
from ppl.lang import ast

MIN_PRECISION = 1e-10  # a site never has zero or negative precision (guards non-log-concave f)
TRUST = 1e4  # a site may shrink its margin's variance v by this factor at most in one step (τ̃ ≤ TRUST / v)
FORMS = ("meanfield", "site")
SMALLEST_SCALE = 1e-150  # the site form's running scale is folded into its sites below this

# rule -> (likelihood, y, n, m, v) -> (the factor's objective term, g1, g2)
APPROXIMATIONS = {
    "ncvmp": likelihoods.quadrature,
    "cvi": likelihoods.quadrature,
    "bound:jaakkola": likelihoods.jaakkola,
    "bound:bohning": likelihoods.bohning,
    "laplace": likelihoods.laplace,
    "delta": likelihoods.delta,
}
LOGISTIC_ONLY = ("bound:jaakkola", "bound:bohning")


class GLMFactor(FactorRuntime):
    _expectations_key = None  # version key of the cached `expectations`: none yet

    def __init__(self, factor, model, env, dataset, families, rule: str, options: dict):
        super().__init__(factor, model, env, dataset)
        self.rule = rule
        self.samples = int(options.get("samples", 16))
        self.form = str(options.get("form", "meanfield"))
        if self.form not in FORMS:
            raise Unsupported(f"`@cvi(form={self.form})` on `{factor.name}`: the form is `meanfield` (Alg. 2) "
                              "or `site` (Alg. 1)", factor.span)
        self.step = cvi_step(options)
        self.batch = minibatch(options, factor, self.plate.shape)
        self.likelihood, eta = self._likelihood(factor, rule)
        if self.batch is not None and factor.dist.name == "Normal":
            raise Unsupported(f"`@cvi(minibatch=...)` on the Normal likelihood `{factor.name}`: minibatches run for "
                              "Bernoulli, Binomial, Poisson and OrderedLogistic likelihoods (a Normal mean is "
                              "conjugate: drop the annotation)", factor.span)
        self.margin = LinearBuilder(self.builder, self.plate, model, 0).build(eta)
        self.add_linear_reads(self.margin)
        if factor.target.name in self.reads:
            raise Unsupported(f"`{factor.target.name}` must be observed in `{self.name}`", factor.span)
        values = self.target.gather(_observed(dataset, factor.target.name))[..., 0]
        if factor.dist.name == "OrderedLogistic":
            self.y, self.n = self._cutpoints_around(values, model, factor)
        else:
            self.y = values.astype(float)
            self.n = self.data(self.args["trials"]) if "trials" in self.args else 1.0
        self.families = families
        logistic = self.likelihood.name in ("Bernoulli–logistic", "Binomial–logistic")
        if (rule in LOGISTIC_ONLY and not logistic) or (rule == "bound:piecewise" and self.likelihood.llp_form is None):
            raise Unsupported(f"`{rule}` needs a logistic link in `{self.name}`", factor.span)
        self.approximation = piecewise_rule(options, factor) if rule == "bound:piecewise" else APPROXIMATIONS[rule]
        # a closed form costs no more than gathering its values (and Normal's holds each row's precision)
        closed = self.likelihood.closed_form is not None
        self.repeats = None if self.drawn or closed else find_repeats(self.margin, self.y, self.n)

    def _likelihood(self, factor, rule):
        """The scalar likelihood and the expression of its margin η."""
        if factor.dist.name == "OrderedLogistic":
            return ordered_logistic(), self.args["eta"]
        if factor.dist.name == "Normal":
            role = next(r for r in ("precision", "sd", "var") if r in self.args)
            latent = [node.id for node in ast.walk(self.args[role]) if isinstance(node, ast.Name)
                      and node.id in self.model.variables and self.model.variables[node.id].kind == "latent"]
            arg = self.args[role]
            sides = (arg.left, arg.right) if isinstance(arg, ast.BinOp) and arg.op == "*" else (arg,)
            gamma = [side for side in sides if isinstance(side, ast.Name) and side.id in latent]
            if latent and role == "precision" and len(set(latent)) == 1 and len(gamma) == 1 \
                    and self.model.variables[latent[0]].dist == "Gamma":  # τ or c·τ is conjugate, the mean is not
                raise Unsupported(f"`{rule}` on `{factor.name}` needs a known {role}: a latent one is not "
                                  "available with a non-conjugate mean in this version", factor.span)
            if latent:  # `Normal(mu, sd=sigma)`, `Normal(mu, exp(s))`: the scale itself is not conjugate
                raise Unsupported(f"the {role} of `{factor.name}` reads latent `{latent[0]}`: this version runs a "
                                  "latent Normal scale only as the precision itself, a Gamma variable (or a data "
                                  "multiple of one)", factor.span,
                                  hint="put a Gamma prior on the precision, `tau ~ Gamma(a, b)` with "
                                       "`Normal(mean, tau)` (the sd is 1/√tau), and keep the sd as a quantity to "
                                       "derive from q(tau)")
            value = np.asarray(self.data(self.args[role]), dtype=float)
            tau = {"precision": value, "sd": 1.0 / value ** 2, "var": 1.0 / value}[role]
            return gaussian(np.broadcast_to(tau, self.builder.shape()).astype(float)), self.args["mean"]
        call = self.args["p" if "p" in self.args else "rate"]
        if not (isinstance(call, ast.Call) and len(call.args) == 1):
            raise Unsupported(f"`{factor.name}` needs `{factor.dist.name}(link(η))` for {rule}", factor.span)
        key = (factor.dist.name, call.func)
        if key not in LIKELIHOODS:
            raise Unsupported(f"no {rule} rule for {factor.dist.name} with the {call.func} link", call.span)
        return LIKELIHOODS[key], call.args[0]

    def _cutpoints_around(self, values, model, factor):
        """(φ_{k−1}, φ_k) per row for the observed category k (φ_0 = −∞, φ_K = +∞); the cutpoints
        must be finite and strictly increasing (E258 at the argument), k within 1..K (E421)."""
        expr = factor.args["cut"]
        if any(isinstance(n, ast.Name) and getattr(model.variables.get(n.id), "kind", None) == "latent"
               for n in ast.walk(self.args["cut"])):
            raise Unsupported(f"`{self.name}`: the cutpoints `{ast.text(expr)}` must be data or constants; "
                              "learning them is not available in this version", expr.span)
        cut = np.asarray(self.data(self.args["cut"]), dtype=float)
        cut = np.broadcast_to(cut, self.builder.shape() + cut.shape[-1:])
        if not (np.all(np.isfinite(cut)) and np.all(np.diff(cut, axis=-1) > 0)):
            raise ModelError("E258", f"OrderedLogistic's cut must be finite, strictly increasing cutpoints, "
                             f"got `{ast.text(expr)}`", span=expr.span)
        code = values.astype(np.int64) - (0 if model.variables[factor.target.name].elem == "cat" else 1)
        if np.any(code < 0) or np.any(code > cut.shape[-1]):
            raise ModelError("E421", f"`{factor.target.name}` takes categories 1..{cut.shape[-1] + 1} "
                             f"with {cut.shape[-1]} cutpoints", span=factor.span)
        ends = np.full(cut.shape[:-1] + (1,), np.inf)
        edges = np.concatenate([-ends, cut, ends], -1)
        return (np.take_along_axis(edges, code[..., None], -1)[..., 0],
                np.take_along_axis(edges, code[..., None] + 1, -1)[..., 0])

    @functools.cached_property
    def drawn(self) -> bool:
        """CVI by Monte Carlo on the whole plate: one set of draws per q gives the gradients of the
        next step and the sweep's ELBO estimate."""
        return self.rule == "cvi" and self.samples > 0 and self.batch is None

    def expectations(self, state):
        """(m, v, term, g1, g2, variance of term) at the current margins by the rule's
        approximation (by `samples` draws for CVI: the term an estimate), computed once while the
        variables read by η are unchanged (the sites and the ELBO term need the same)."""
        key = self.version_key(state)
        if self._expectations_key != key:
            m, v = self._margin(state)
            self._expectations_key = key
            if self.drawn:
                self._expectations = (m, v) + monte_carlo(self.likelihood, self.y, self.n, m, v, state.rng,
                                                          self.samples)
            elif self.repeats is not None:  # rows that repeat: one integral per group
                self._expectations = (m, v, *self.repeats.apply(self.approximation, self.likelihood, m, v), 0.0)
            else:
                self._expectations = (m, v, *self.approximation(self.likelihood, self.y, self.n, m, v), 0.0)
        return self._expectations

    def sites(self, state):
        """(ỹ, τ̃): the Gaussian pseudo-observation and precision standing in for each data point."""
        if self.form == "site":
            return self._stored_sites(state)
        m, v, _, g1, g2, _ = self.expectations(state)
        return gaussian_site(m, v, g1, g2)

    def message(self, state, name: str, factored: bool = False):
        """The message to `name`. With a minibatch it costs O(B): the mean-field form takes each
        read's message from the B rows of a fresh batch (eq. 14); the site form keeps the sum of
        its sites' messages up to date (`_stored_sites`) when that sum is linear in the sites."""
        if self.batch is None or (self.selector is not None and name == self.selector.name):
            return super().message(state, name, factored)
        if self.form == "site":
            self._site_step(state)
            return self._total if self._total is not None else super().message(state, name, factored)
        total = 0.0
        for access in self.reads.get(name, ()):
            rows, scale = self._draw_batch(state.rng)
            form, reads = take_rows(self.margin, rows)
            target, tau = self._fresh_sites(state, rows, form)
            total = total + self._rows_message(state, rows, form, reads[id(access)], scale * tau, target, factored)
        return total

    def _rows_message(self, state, rows, form, access, prec, target, factored=False):
        """Σ over `rows` of the Gaussian sites' (target, prec) messages to the read `access` of the
        restricted `form` (`take_rows`)."""
        weights = self.message_weights(state, access.name, rows)
        message = read_message(state, form, access, prec, target, self.factor)
        return access.scatter_weighted(message, weights, factored)

    def _rows(self, state, rows, form=None):
        """(y, n, m, v) on `rows` of the first plate axis, from the margin's `form` restricted to
        them (`take_rows`, made here when not given)."""
        form = take_rows(self.margin, rows)[0] if form is None else form
        y, n = (np.broadcast_to(a, self.y.shape)[rows] for a in (self.y, self.n))
        return (y, n) + margin(state, form)

    def _margin(self, state):
        """(mean, variance) of η under q on every row."""
        return margin(state, self.margin)

    def _fresh_sites(self, state, rows, form):
        """(ỹ, τ̃) on the rows of a minibatch (first plate axis) from the current q."""
        y, n, m, v = self._rows(state, rows, form)
        if self.rule == "cvi" and self.samples > 0:
            g1, g2 = monte_carlo(self.likelihood, y, n, m, v, state.rng, self.samples)[1:3]
        else:
            _, g1, g2 = self.approximation(self.likelihood, y, n, m, v)
        return gaussian_site(m, v, g1, g2)

    def _draw_batch(self, rng):
        """B rows of the first plate axis, without replacement, and the scale N/B of eq. 14."""
        total = self.y.shape[0]
        return np.sort(rng.choice(total, self.batch, replace=False)), total / self.batch

    @property
    def _sites(self):
        """The stored sites (τ̃ỹ, τ̃), shape (2,) + plate: `_scale` times `_unscaled`, so that a
        minibatch step decays every site by 1 − ρ in one multiplication of `_scale`."""
        return self._scale * self._unscaled

    def _stored_sites(self, state):
        """The stored sites as (ỹ, τ̃), after `_site_step`."""
        self._site_step(state)
        h, tau = self._sites
        return h / np.where(tau > 0, tau, 1.0), tau

    def _site_step(self, state) -> None:
        """Alg. 1: one CVI step on the stored sites whenever q has changed since the last — each
        site decays by 1 − ρ_t and the rows of the step's minibatch (every row without one) gain
        ρ_t·(N/B)·(τ̃ỹ, τ̃) from the current q (Khan & Lin eqs. 13–14). With a minibatch a step
        costs O(B): the decay is a running scale, and when the margin reads one latent shared by
        every row (`X @ w`) the sum of the sites' messages (`_total`) is linear in the sites, so
        it decays and gains the batch's part likewise."""
        key = self.version_key(state)
        if getattr(self, "_sites_key", None) != key:
            if getattr(self, "_sites_key", (None,))[0] != key[0]:  # a new run (or restart): no sites yet
                self._unscaled, self._scale, self._steps = np.zeros((2,) + self.y.shape), 1.0, 0
                self._total = 0.0 if self.batch is not None and self._linear_in_sites() else None
            self._steps += 1
            rho = step_size(self.step, self._steps)
            self._decay(1 - rho)
            if self.batch is None:
                target, tau = gaussian_site(*(self.expectations(state)[i] for i in (0, 1, 3, 4)))
                self._unscaled[0] += rho * tau * target
                self._unscaled[1] += rho * tau
            else:
                rows, scale = self._draw_batch(state.rng)
                form, reads = take_rows(self.margin, rows)
                target, tau = self._fresh_sites(state, rows, form)
                gain = rho * scale * tau
                self._unscaled[0][rows] += gain * target / self._scale
                self._unscaled[1][rows] += gain / self._scale
                if self._total is not None:
                    (access,) = reads.values()
                    self._total = (1 - rho) * self._total + self._rows_message(state, rows, form, access, gain, target)
            self._sites_key = self.version_key(state)

    def _decay(self, keep: float) -> None:
        """Every site times `keep`: the running scale alone, folded into the sites when every row
        is rewritten anyway (no minibatch) or before it underflows."""
        self._scale *= keep
        if self.batch is None or self._scale < SMALLEST_SCALE:
            self._unscaled *= self._scale
            self._scale = 1.0

    def _linear_in_sites(self) -> bool:
        """The margin reads one latent, shared by every row, with no selector: its message from
        the sites is then Σ_n τ̃_n (ỹ_n − b_n) a_n, linear in (τ̃ỹ, τ̃) with fixed a_n, b_n."""
        reads = self.margin.reads()
        return self.selector is None and len(reads) == 1 and reads[0].plate_free

    def elbo_estimate(self, state):
        """(E[log f] summed over the plate, its standard error): exact without a minibatch,
        else N/B times the sum on B fresh rows, with the finite-population standard error."""
        if self.drawn:
            return self._drawn_estimate(state)
        if self.batch is None:
            return super().elbo_estimate(state)
        rows, scale = self._draw_batch(state.rng)
        y, n, m, v = self._rows(state, rows)
        term = self.approximation(self.likelihood, y, n, m, v)[0]
        count = self.count()
        if count is not None:  # row weights (ppl.infer.weights)
            term = term * np.broadcast_to(count, self.y.shape)[rows]
        term = np.sum(term.reshape(self.batch, -1), axis=1)
        total = self.y.shape[0]
        se = total * np.std(term, ddof=1) / np.sqrt(self.batch) * np.sqrt(1 - self.batch / total)
        return float(scale * np.sum(term)), float(se)

    def _drawn_estimate(self, state):
        """(Σ E[log f], standard error) from the draws of the next CVI step (`monte_carlo`'s
        control-variate estimate): no quadrature over every row every sweep. When the estimate is
        noisier than the run's stopping rule can judge (`state.noise` × |term|: wide margins, few
        rows) the exact term instead, with standard error 0."""
        _, _, term, _, _, variance = self.expectations(state)
        weights = self.message_weights(state, None)
        value, se = float(np.sum(weights * term)), float(np.sqrt(np.sum(weights * weights * variance)))
        if not se <= state.noise * abs(value):
            return self.elbo(state), 0.0
        return value, se

    def _message(self, state, access):
        target, tau = self.sites(state)
        return read_message(state, self.margin, access, tau, target, self.factor)

    @functools.cached_property
    def counts_start(self) -> bool:
        """The latents start from the sites of IRLS's start (`start_message`): a Poisson GLM."""
        return self.likelihood.name == "Poisson–exp" and self.selector is None and self.batch is None

    def start_message(self, state, name: str, factored: bool = False):
        """The message to `name` from the sites of a Poisson GLM at IRLS's start μ = y + ½ (the
        working response ỹ = log μ and weight τ̃ = μ, as R's glm starts). From the prior's η ≈ 0,
        NC-VMP's first Newton step for a count y is y − 1 nats: counts in the thousands overflow
        e^η (docs/rules/vmp.md#initialisation)."""
        target, tau = self.count_sites()
        weights = self.message_weights(state, name)
        return sum(access.scatter_weighted(read_message(state, self.margin, access, tau, target, self.factor),
                                           weights, factored) for access in self.reads.get(name, ()))

    def count_sites(self):
        """(ỹ, τ̃) at IRLS's start μ = y + ½: (log μ, μ) per row, no site where y is missing."""
        seen = np.isfinite(self.y)
        mu = np.where(seen, self.y, 0.0) + 0.5
        return (np.broadcast_to(np.log(mu), self._ones.shape),
                np.broadcast_to(np.where(seen, mu, 0.0), self._ones.shape))

    def _expected_log(self, state):
        """E[log f] per element, exact: by quadrature when the rule's own term is a Monte Carlo
        estimate (the final ELBO of a CVI run), reusing the margins of its draws."""
        m, v, term = self.expectations(state)[:3]
        if not self.drawn:
            return term
        return likelihoods.quadrature(self.likelihood, self.y, self.n, m, v)[0]


def gaussian_site(m, v, g1, g2):
    """(ỹ, τ̃) of the Gaussian site with τ̃ = −g2 (floored at MIN_PRECISION), ỹ = m + g1/τ̃.

    A trust region on the margin: τ̃ is capped at TRUST / v, so one step can shrink a margin's
    variance by the factor TRUST at most, while ỹ keeps the Newton target m + g1/(−g2). From a
    wide start (a Poisson rate exp(η) with v ≈ 130: E[e^η] ≈ 1e28) the uncapped site would make a
    precision no Cholesky factor survives; at a fixed point τ̃·v is about 1, far below the cap,
    which therefore never moves the answer."""
    newton = np.maximum(-g2, MIN_PRECISION)
    tau = np.minimum(newton, TRUST / np.maximum(v, 1e-300))
    return m + g1 / newton, tau


def _observed(dataset, name):
    values = np.asarray(dataset.arrays[name], dtype=float)
    return values.reshape(-1, 1)
