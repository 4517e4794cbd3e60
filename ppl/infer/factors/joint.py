"""Factors of a `@joint` group q(μ, Λ) (Normal–Wishart; Normal–Gamma when one-dimensional).

The pair of priors `Λ ~ Wishart(ν0, W0)`, `μ ~ MvNormal(m0, β0·Λ)` is one Normal–Wishart factor
with constant natural parameters. A likelihood `y ~ MvNormal(μ[i], s·Λ[i])` is linear in the
joint statistics t = (Λμ, μᵀΛμ, vec Λ, log|Λ|):

    log N(y | μ, sΛ) = s yᵀ(Λμ) − (s/2) μᵀΛμ − (s/2) tr(Λ y yᵀ) + ½ log|Λ| + (D/2) log s − (D/2) log 2π
"""

from __future__ import annotations

import functools

import numpy as np

from ppl.diagnostics import ModelError
from ppl.families.normal_wishart import LOG_2PI
from ppl.infer.access import Unsupported
from ppl.infer.factors.base import FactorRuntime
from ppl.infer.factors.conjugate import check_dof
from ppl.lang import ast


def group_key(group) -> str:
    return f"({group.mean}, {group.precision})"


def key_variable(name: str) -> str:
    """The variable a q is named after: itself, the mean of a `@joint` group keyed `(mu, Lambda)`,
    or the first member of a Gaussian block keyed `[b, w]`."""
    return name.strip("()[]").split(",")[0].strip()


def _scale_of(owner, expr, partner: str):
    """s in `s * partner[...]` (1 for a bare read), as data over the owner's plate."""
    if isinstance(expr, ast.BinOp) and expr.op == "*":
        left_reads = any(isinstance(n, ast.Name) and n.id == partner for n in ast.walk(expr.left))
        read, data = (expr.left, expr.right) if left_reads else (expr.right, expr.left)
        return owner.data(data), read
    return 1.0, expr


class JointPrior(FactorRuntime):
    """The two prior statements of a group as one Normal–Wishart factor."""

    def __init__(self, factor, partner_factor, group, model, env, dataset, family):
        super().__init__(factor, model, env, dataset)
        self.key = group_key(group)
        self.family = family
        self.target.name = self.key
        self.reads = {self.key: [self.target]}
        beta, _ = _scale_of(self, self.args["precision"], group.precision)
        p = {role: self.data(expr) for role, expr in partner_factor.args.items()}
        if partner_factor.dist.name == "Gamma":  # Gamma(a, b) is the one-dimensional Wishart(2a, 1/(2b))
            dof, scale = 2.0 * p["shape"], 1.0 / (2.0 * p["rate"])
        else:
            dof, scale = p["dof"], p["scale"]
            check_dof(dof, family.dim, partner_factor.args["dof"])
        mean = self.data(self.args["mean"])
        with np.errstate(over="ignore", invalid="ignore"):
            self.eta = family.natural(mean=mean, beta=beta, dof=dof, scale=scale)
            try:
                self.log_partition = family.log_partition(self.eta)  # constant: computed once
            except np.linalg.LinAlgError:
                self.log_partition = np.nan
        if not (np.all(np.isfinite(self.eta)) and np.all(np.isfinite(self.log_partition))):
            raise ModelError("E502", f"the prior of `{self.key}` breaks down numerically with these constants: "
                             "its natural parameters overflow", span=factor.span,
                             hint="a constant far outside the data's scale (near 1e300) overflows; rescale it")
        self.name = f"{factor.name}, {partner_factor.name}"

    @property
    def _constant_prior(self) -> bool:
        """Constant η: the summed message is made once (`FactorRuntime.message`) unless selected."""
        return self.selector is None

    def _message(self, state, access):
        return self._constant_message

    @functools.cached_property
    def _constant_message(self):
        """η over the plate, a read-only view made once: the prior sends it every sweep."""
        return np.broadcast_to(self.eta, self.builder.shape() + (self.family.size,))

    def _expected_log(self, state):
        moments = self.target.gather(state.moments(self.key))
        return (self.eta * moments).sum(-1) - self.log_partition + self.family.expected_log_base(moments)


class JointGaussian(FactorRuntime):
    """`y ~ MvNormal(μ[i], s·Λ[i])` (or Normal) with (μ, Λ) one group of q."""

    def __init__(self, factor, group, model, env, dataset, family):
        super().__init__(factor, model, env, dataset)
        self.key = group_key(group)
        self.dim = family.dim
        self.scale, _ = _scale_of(self, self.args["precision"], group.precision)
        self.read = self.builder.build(self.args["mean"])
        self.read.name = self.key
        self.add_read(self.read)
        if factor.target.name in self.reads and factor.target.name != self.key:
            raise Unsupported(f"`{factor.target.name}` must be observed in `{self.name}` under @joint",
                              factor.span)

    def _value(self, state):
        m = self.target.read(state)
        d = self.dim
        if m.shape[-1] == 2 and d == 1:  # Normal statistics (y, y²)
            return m[..., :1], m[..., 1:].reshape(m.shape[:-1] + (1, 1))
        return m[..., :d], m[..., d:].reshape(m.shape[:-1] + (d, d))

    def _group(self, state):
        d = self.dim
        g = self.read.read(state)
        return g[..., :d], g[..., d], g[..., d + 1: d + 1 + d * d].reshape(g.shape[:-1] + (d, d)), g[..., -1]

    def _expected_log(self, state):
        y1, y2 = self._value(state)
        lam_mu, quad, lam, logdet = self._group(state)
        s, d = self.scale, self.dim
        fit = _pair(y2.reshape(y2.shape[:-2] + (d * d,)), lam.reshape(lam.shape[:-2] + (d * d,))) \
            - 2 * _pair(y1, lam_mu) + quad
        return 0.5 * d * np.log(s) + 0.5 * logdet - 0.5 * d * LOG_2PI - 0.5 * s * fit

    def _message(self, state, access):
        """Per data point (s y, −s/2, −s/2 vec y yᵀ, ½): the same for every component, and
        constant while the value is (always, for observed data)."""
        key = (id(state), state.versions.get(self.factor.target.name, 0))
        if getattr(self, "_message_key", None) != key:
            self._message_key, self._message_value = key, self._site_statistics(state)
        return self._message_value

    def _site_statistics(self, state):
        y1, y2 = self._value(state)  # plate + (1, ...)
        s = np.asarray(self.scale, dtype=float)
        d = self.dim
        shape = np.broadcast_shapes(y1.shape[:-1], np.shape(s))
        s_ = np.broadcast_to(s, shape)[..., None]
        parts = [s_ * y1, np.broadcast_to(-0.5 * s_, shape + (1,)),
                 (-0.5 * s_[..., None] * y2).reshape(shape + (d * d,)), np.full(shape + (1,), 0.5)]
        return np.concatenate(parts, axis=-1)


def _pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Σ_i a[..., i] b[..., i] for a = plate + (1, S) and b = (1, ..., 1) + (C, S): one matrix
    product instead of a plate × C × S temporary; falls back to broadcasting otherwise."""
    rank = a.ndim - 2
    if a.shape[-2] == 1 and all(n == 1 for n in b.shape[:rank]):
        left = np.ascontiguousarray(a.reshape(-1, a.shape[-1]))
        right = np.ascontiguousarray(b.reshape(-1, b.shape[-1]).T)
        return (left @ right).reshape(a.shape[:-2] + (b.shape[-2],))
    return np.einsum("...i,...i->...", a, b)
