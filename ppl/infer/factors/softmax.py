"""`y ~ Categorical(softmax(η))` with η a K-vector whose component k is linear in Gaussian latents.

The class axis: a Gaussian latent in η read without an index for a plate of size K (the levels
of y) is read at class k in component k — `w @ x[n]` with `w[k] ~ MvNormal` has η_k = w[k]·x[n].
So η_k is one `LinearForm` per class, and under a q that factorises across classes the margins
η_nk are independent with means m_nk and variances v_nk. Each (n, k) becomes a scalar Gaussian
site τ̃ = −g2, ỹ = m + g1/τ̃ from a rule of `ppl.infer.softmax`, and the message to the read of
class k is the linear-Gaussian message of `read_message`, exactly as for a scalar GLM factor.

A latent read by every class (z[n] in `lam[j] @ z[n] + b[j]`, factor analysis) correlates the
margins; the sites still see each margin alone, so Böhning's bound takes the diagonal ½·I ⪰ A.
A missing outcome is marginalised: no site, a zero ELBO term, and q(y) the class probabilities
averaged over q(η).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
from scipy import special

from ppl.infer import softmax
from ppl.infer.access import Unsupported
from ppl.infer.factors.base import FactorRuntime
from ppl.infer.factors.glm import gaussian_site
from ppl.infer.factors.glm_options import piecewise_table
from ppl.infer.linear import LinearBuilder, margin
from ppl.infer.linear_message import read_message
from ppl.lang import ast


def is_softmax(factor) -> bool:
    call = factor.args.get("probs")
    return factor.dist.name == "Categorical" and isinstance(call, ast.Call) and call.func == "softmax"


class SoftmaxFactor(FactorRuntime):
    def __init__(self, factor, model, env, dataset, families, rule: str, options: dict):
        super().__init__(factor, model, env, dataset)
        self.rule = rule
        self.samples = int(options.get("samples", 16))
        if rule == "ncvmp" or (rule == "cvi" and self.samples == 0):
            self.approximation = softmax.expected
        elif rule == "cvi":
            self.approximation = softmax.expected_term  # the sites come from fresh draws
        elif rule in softmax.RULES:
            self.approximation = softmax.RULES[rule]
        elif rule == "bound:stick":
            self.approximation = softmax.stick(piecewise_table(options, factor, "stick"))
        else:
            raise Unsupported(f"rule `{rule}` for Categorical `{factor.name}` with a softmax link is not available "
                              f"in this version: the engine runs cvi, ncvmp, laplace, delta, bound:bohning and "
                              f"bound:stick for it", factor.span)
        if self.components != 1:
            raise Unsupported(f"`{factor.name}`: a softmax likelihood selected by a latent category", factor.span)
        target = model.variables[factor.target.name]
        if target.kind == "latent":
            raise Unsupported(f"rule `{rule}` for Categorical `{factor.name}` with a softmax link is not available in "
                              f"this version when `{factor.target.name}` is latent: the engine runs it for an "
                              f"observed outcome, whose missing cells it imputes", factor.span)
        self.classes = env.size(target.levels)
        eta = self.args["probs"].args[0]
        self.forms, self.owner, axes = [], {}, {}
        # stick-breaking reads the first K − 1 predictors only: the last class's weights keep their prior
        for k in range(self.classes - (rule == "bound:stick")):
            try:
                form = LinearBuilder(self.builder, self.plate, model, 0).build(
                    _at_class(eta, k, model, env, self.classes, axes))
            except ValueError:
                raise Unsupported(f"`{ast.text(eta)}` in `{factor.name}`: each class's margin must be linear in "
                                  f"Gaussian latents read per class; data offsets must not vary by class",
                                  eta.span) from None
            self.forms.append(form)
            for access in self.add_linear_reads(form):
                self.owner[id(access)] = k
        self.eta_names = sorted({a.name for form in self.forms for a in form.reads()})
        shared = [name for name, axis in axes.items() if axis is None]
        # the latents read at class k in class k's margin, by their class axis (ppl.infer.softmax_shift)
        self.class_axes = {name: axis for name, axis in axes.items() if axis is not None}
        # a latent read by every class (the factors z[n] of `lam[j] @ z[n]`) correlates the margins:
        # Böhning's bound then takes the diagonal ½·I ⪰ A, which holds whatever the correlation
        if rule == "bound:bohning" and shared:
            self.approximation = functools.partial(softmax.bohning, curvature=0.5)
        values = np.asarray(dataset.arrays[factor.target.name]).reshape(-1, 1)
        mask = dataset.masks.get(factor.target.name)
        # missing cells are marginalised: no site, and q(y) there is the predictive (`_message`)
        self.missing = None if mask is None else ~self.target.gather(np.asarray(mask).reshape(-1, 1))[..., 0]
        codes = self.target.gather(values)[..., 0]
        self.y = (codes if mask is None else np.where(self.missing, 0, codes)).astype(np.int64)  # plate + (1,)
        # (row, class) pairs the likelihood reads: all, but for stick-breaking only the sticks up to y
        present = softmax.stick_data(self.y, len(self.forms))[1] > 0 if rule == "bound:stick" else True
        self.present = present if mask is None else present & ~self.missing[..., None]

    def margins(self, state):
        """(m, v) of η: plate + (1, K), computed once while the variables read by η are unchanged."""
        key = self.version_key(state, self.eta_names)
        if getattr(self, "_margins_key", None) != key:
            margins = [margin(state, form) for form in self.forms]
            self._margins_key, self._values, self._sites = key, None, None
            self._margins = tuple(np.stack([np.broadcast_to(part[i], self.builder.shape()) for part in margins], -1)
                                  for i in (0, 1))
        return self._margins

    def expectations(self, state):
        """(m, v, term, g1, g2) of the rule at the current margins, computed once per change of q."""
        m, v = self.margins(state)
        if self._values is None:
            self._values = (m, v) + tuple(self.approximation(self.y, m, v))
        return self._values

    def sites(self, state):
        """(ỹ, τ̃) per element and class: plate + (1, K); fresh draws once per change of q under cvi."""
        m, v = self.margins(state)
        if self._sites is None:
            if self.rule == "cvi" and self.samples > 0:  # the sites need no deterministic term
                g1, g2 = softmax.monte_carlo(self.y, m, v, state.rng, self.samples)
            else:
                g1, g2 = self.expectations(state)[3:]
            target, tau = gaussian_site(m, v, g1, g2)
            self._sites = target, np.where(self.present, tau, 0.0)  # no site where no stick is read
        return self._sites

    def predictive(self, state, cells=True, spread=None):
        """The class probabilities averaged over q(η) of the cells `cells` (a mask on plate + (1,)):
        (cells, K). `spread` (elements, K, K): covariances the margins have beyond their own
        variances (a Gaussian block's, in prediction: ppl.infer.predict.block_spread)."""
        m, v = self.margins(state)
        if self.rule == "bound:stick":
            return softmax.stick_predictive(m[cells], v[cells])
        if spread is None:
            return softmax.predictive(m[cells], v[cells])
        at = np.broadcast_to(cells, self.builder.shape()).reshape(-1)
        cov = spread[at] + v.reshape(-1, self.classes)[at][..., None] * np.eye(self.classes)
        return softmax.predictive(m.reshape(-1, self.classes)[at], np.diagonal(cov, axis1=1, axis2=2), cov)

    def _message(self, state, access):
        if access is self.target:  # q(y) of a missing cell: the log predictive (observed cells keep λ = 0)
            out = np.zeros(self.y.shape + (self.classes,))
            with np.errstate(divide="ignore"):
                out[self.missing] = np.log(self.predictive(state, self.missing))
            return out
        k = self.owner[id(access)]
        target, tau = self.sites(state)
        return read_message(state, self.forms[k], access, tau[..., k], target[..., k], self.factor)

    def _expected_log(self, state):
        term = self.expectations(state)[2]
        if self.missing is None:
            return term
        # a missing cell adds nothing to the ELBO (q(y, η) = q(η) p(y | η)): its term cancels the
        # entropy of q(y) that the engine adds for the cell
        q = self.target.gather(state.moments(self.factor.target.name))
        return np.where(self.missing, np.sum(special.xlogy(q, q), -1), term)


def _at_class(expr, k: int, model, env, classes: int, axes: dict):
    """`expr` with every Gaussian latent read that stops short of a class plate (size K) read at class k.
    `axes` records each latent read: name -> the axis of its class plate, or None for a read that
    every class shares (or a name read both ways, or at two class axes)."""
    if isinstance(expr, (ast.Name, ast.Index)) and isinstance(getattr(expr, "base", expr), ast.Name):
        name = expr.id if isinstance(expr, ast.Name) else expr.base.id
        var = model.variables.get(name)
        if var is not None and var.kind == "latent":
            given = expr.indices if isinstance(expr, ast.Index) else ()
            per_class = len(given) < len(var.plates) and env.size(var.plates[len(given)]) == classes
            axis = len(given) if per_class else None
            axes[name] = axis if axes.get(name, axis) == axis else None
            if per_class:
                at = ast.Number(k + 1, True, expr.span)
                base = expr if isinstance(expr, ast.Name) else expr.base
                return ast.Index(base, tuple(given) + (at,), expr.span)
            return expr
    if not dataclasses.is_dataclass(expr):
        return expr
    changes = {}
    for f in dataclasses.fields(expr):
        value = getattr(expr, f.name)
        if dataclasses.is_dataclass(value):
            changes[f.name] = _at_class(value, k, model, env, classes, axes)
        elif isinstance(value, tuple):
            changes[f.name] = tuple(_at_class(v, k, model, env, classes, axes) if dataclasses.is_dataclass(v) else v
                                    for v in value)
    return dataclasses.replace(expr, **changes)
