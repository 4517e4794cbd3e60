"""`z[t] ~ Categorical(softmax(eta[doc[t]]))` with `eta[d]` a K-dimensional MvNormal: one
full-covariance Gaussian q per group of the read (a document), Laplace or delta-method VI
(`ppl.infer.softmax_vector`). The outcome may be latent (a topic) or observed (a class).

Per sweep, tokens are reduced to expected counts per group by one scatter-add of E[onehot z_t]
(the map-reduce seam), each group's prior is the sum of the other messages to η (the cavity:
(E[Λ]E[μ], −½E[Λ]) from `eta[d] ~ MvNormal(mu, Lambda)`), the rule's inner solve runs on all
groups at once, and η receives the site that turns the prior into N(μ̂, H(μ̂)⁻¹). A latent outcome
receives E_q[log softmax(η)] by the second-order expansion, under the q(η) the engine holds.
"""

from __future__ import annotations

import numpy as np

from ppl.graph.forms import inline
from ppl.infer import softmax_vector as sv
from ppl.infer.access import Unsupported
from ppl.infer.factors.base import FactorRuntime
from ppl.infer.linear_message import pack
from ppl.lang import ast


def reads_vector(factor, model) -> bool:
    """`softmax(v[...])` with v an MvNormal latent read whole (every plate indexed by data)."""
    read = inline(factor.args["probs"], model.definitions).args[0]
    base = read.base if isinstance(read, ast.Index) else read
    var = model.variables.get(base.id) if isinstance(base, ast.Name) else None
    given = read.indices if isinstance(read, ast.Index) else ()
    return var is not None and var.kind == "latent" and var.dist == "MvNormal" and len(given) == len(var.plates)


class SoftmaxVectorFactor(FactorRuntime):
    def __init__(self, factor, model, env, dataset, families, rule: str, options: dict):
        super().__init__(factor, model, env, dataset)
        eta = self.args["probs"].args[0]
        if rule not in sv.SOLVERS:
            raise Unsupported(f"rule `{rule}` for Categorical `{factor.name}` with a softmax link of the "
                              f"MvNormal `{ast.text(eta)}` is not available in this version: the engine runs "
                              f"laplace and delta for it", factor.span)
        if self.components != 1:
            raise Unsupported(f"`{factor.name}`: a softmax likelihood selected by a latent category", factor.span)
        self.rule = rule
        self.solve = sv.SOLVERS[rule]
        self.eta = self.add_read(self.builder.build(eta))
        if self.eta.selector is not None:
            raise Unsupported(f"`{ast.text(eta)}` in `{factor.name}` must be indexed by data", eta.span)
        self.family = families[self.eta.name]
        classes = families[factor.target.name].size
        if self.family.dim != classes:
            raise Unsupported(f"`{ast.text(eta)}` has {self.family.dim} components but `{factor.target.name}` "
                              f"has {classes} levels", eta.span)
        self.cavity: tuple = ()

    def attach(self, neighbours: dict) -> None:
        """The other factors that send η messages: their sum is the prior of each group's solve."""
        self.cavity = tuple(f for f in neighbours[self.eta.name] if f is not self)

    def counts(self, state) -> np.ndarray:
        """n per group: E[onehot z_t] (one-hot data when observed) summed over each group's tokens."""
        count = self.count(self.eta.name)
        codes = self._codes(state)
        if codes is not None:
            k = self.family.dim
            rows = self.eta.index.reshape(-1) * k + codes.reshape(-1)
            weights = None if count is None else np.broadcast_to(count, self.eta.index.shape).reshape(-1)
            return np.bincount(rows, weights, minlength=self.eta.size * k).reshape(self.eta.size, k)
        expected = self.target.read(state)
        return self.eta.scatter(expected if count is None else expected * count[..., None])

    def _prior(self, state):
        """(m0, Λ0) per group from the sum of the cavity's messages."""
        params = self.family.params(sum(f.message(state, self.eta.name) for f in self.cavity))
        return params["mean"], params["precision"]

    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        if name != self.eta.name:
            return super().message(state, name, factored)
        key = self.version_key(state, sorted({n for f in self.cavity for n in f.reads} | set(self.reads)
                                             - {self.eta.name}))
        if getattr(self, "_site_key", None) != key:
            counts = self.counts(state)
            mean0, prec0 = self._prior(state)
            start = self.family.mean(state.natural[self.eta.name])
            point = self.solve(counts, mean0, prec0, start)
            h, own = sv.site(point, counts, mean0, prec0)
            self._site_key, self._site = key, pack(h, -0.5 * own)
        return self._site

    def expected_log_softmax(self, state) -> np.ndarray:
        """E_q[log softmax(η)] per group under the current q(η): (groups, K)."""
        key = self.version_key(state, [self.eta.name])
        if getattr(self, "_rows_key", None) != key:
            mean, cov = self.family.mean_cov(state.natural[self.eta.name])
            self._rows_key, self._rows = key, sv.expected_log_softmax(mean, cov)
        return self._rows

    def _message(self, state, access):
        return self.eta.gather(self.expected_log_softmax(state))  # to the outcome z_t

    def _expected_log(self, state):
        rows = self.eta.gather(self.expected_log_softmax(state))
        codes = self._codes(state)
        if codes is not None:
            return np.take_along_axis(rows, codes, -1)[..., 0]
        return np.sum(self.target.read(state) * rows, -1)

    def _codes(self, state):
        """The observed classes, plate + (1, 1), when the outcome is observed in every row (codes,
        not one-hot rows); None otherwise."""
        name = self.factor.target.name
        if name not in state.codes or state.observed[name][1] is not None:
            return None
        return self.target.gather(state.codes[name][:, None])
