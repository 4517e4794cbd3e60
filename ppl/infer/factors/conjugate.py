"""Conjugate factors other than Gaussians: each parameter is data (a constant) or a read of a
latent variable, possibly scaled by data (``Poisson(s * lam)``).

E[log f] and the messages follow from writing log f as linear in the sufficient statistics
of the target and of each latent parameter:

  Gamma(x | a, s·β):     to x (a−1, −sE[β]);          to β (a, −sE[x])
  Poisson(y | s·λ):      to λ (y, −s)                   Exponential(y | s·λ): to λ (1, −s·y)
  Bernoulli(y | p):      to p (y, 1−y)                  Binomial(y | n, p):    to p (y, n−y)
  Categorical(z | π):    to z E[log π];  to π E[onehot z]      Multinomial(x | n, π): to π x
  any family with constant parameters η:  to x η,  E[log f] = η·E[t(x)] − A(η) + E[log h(x)]
"""

from __future__ import annotations

import functools

import numpy as np
from scipy.special import gammaln

from ppl.families.base import stack_last
from ppl.infer.access import Unsupported
from ppl.infer.factors.base import FactorRuntime
from ppl.lang import ast
from ppl.lang.statements import dof_error


class ConjugateFactor(FactorRuntime):
    """A non-Gaussian factor whose latent parameters (if any) are conjugate reads."""

    def __init__(self, factor, model, env, dataset, families, family):
        super().__init__(factor, model, env, dataset)
        self.family = family  # the target's family (for constant-parameter priors)
        self.dist = factor.dist.name
        self.params = {}
        for role, expr in self.args.items():
            self.params[role] = self._param(role, expr, model)
        self.latent_params = {r: p for r, p in self.params.items() if p[0] == "read"}
        if self.dist == "Wishart" and "dof" not in self.latent_params:  # D known now, from the data
            check_dof(self.params["dof"][1], family.dim, self.args["dof"])
        if self.latent_params and self.dist not in _LATENT_PARAM:
            raise Unsupported(f"latent parameters of {self.dist} are not conjugate", factor.span)
        self.codes = None
        target = factor.target.name
        if self.dist == "Categorical" and target in dataset.arrays and target not in dataset.masks:
            # An observed category reads one probability per element: gather and scatter that
            # entry only, never the whole probability vector (V can be a vocabulary).
            self.codes = np.asarray(dataset.arrays[target]).reshape(-1)[self.target.index]
        self._positions = None  # `code_positions`, made on first use

    def _param(self, role, expr, model):
        reads = [n.id for n in ast.walk(expr) if isinstance(n, ast.Name) and model.variables.get(n.id)
                 is not None and model.variables[n.id].kind == "latent"]
        if not reads:
            return ("data", self.data(expr))
        scale, read = 1.0, expr
        if isinstance(expr, ast.BinOp) and expr.op == "*":
            left_latent = any(isinstance(n, ast.Name) and n.id in reads for n in ast.walk(expr.left))
            read, data = (expr.left, expr.right) if left_latent else (expr.right, expr.left)
            if any(isinstance(n, ast.Name) and n.id in reads for n in ast.walk(data)):
                raise Unsupported(f"{self.dist}'s {role} `{ast.text(expr)}` is a product of two latent "
                                  f"variables; a conjugate read scales one latent by data", expr.span)
            scale = self.data(data)
        if not isinstance(read, (ast.Name, ast.Index)):
            raise Unsupported(f"{self.dist}'s {role} `{ast.text(expr)}` is not a conjugate read", expr.span)
        return ("read", self.add_read(self.builder.build(read)), scale)

    def _target(self, state):
        return self.target.gather(state.moments(self.factor.target.name))

    def _read(self, state, role):
        kind, access, scale = self.params[role]
        return access.gather(state.moments(access.name)), scale

    # -- E[log f]
    def _expected_log(self, state):
        if not self.latent_params:
            eta, log_partition = self._constant_natural(), self._constant_log_partition
            if self.codes is not None:  # an observed category: η at its code, no one-hot
                eta = np.broadcast_to(eta, self.codes.shape + eta.shape[-1:])
                return np.take_along_axis(eta, self.codes[..., None], -1)[..., 0] - \
                    np.broadcast_to(log_partition, eta.shape[:-1])
            value = self._target(state)
            return ((value * eta).sum(-1) - log_partition + self._log_base(state))
        return _LATENT_PARAM[self.dist][0](self, state)

    def _constant_natural(self):
        """η of constant parameters: they are data, so it is computed once."""
        return self._constant_eta

    @functools.cached_property
    def _constant_eta(self):
        kwargs = {r: p[1] for r, p in self.params.items() if (self.dist, r) not in _STRUCTURAL}
        return self.family.natural(**kwargs)

    @functools.cached_property
    def _constant_message(self):
        """The message of constant parameters to the target: a read-only view of η over the plate,
        made once (a prior with constant parameters sends it every sweep)."""
        return np.broadcast_to(self._constant_natural(), self.builder.shape() + (self.family.size,))

    @functools.cached_property
    def _constant_log_partition(self):
        """A(η) of the constant parameters, once."""
        return self.family.log_partition(self._constant_eta)

    def _log_base(self, state):
        """E[log h(x)]: data-dependent for observed counts, zero for the latent families here."""
        name = self.factor.target.name
        if name not in state.observed or self.dist not in ("Poisson", "Binomial", "Multinomial"):
            return 0.0
        y = self._observed_values(state)
        if self.dist == "Poisson":
            return -gammaln(y + 1)
        if self.dist == "Binomial":
            n = self.params["trials"][1]
            return gammaln(n + 1) - gammaln(y + 1) - gammaln(n - y + 1)
        n = self.params["trials"][1]
        return gammaln(n + 1) - np.sum(gammaln(y + 1), -1)

    def _observed_values(self, state):
        value = self._target(state)
        return value[..., 0] if value.shape[-1] == 1 and self.dist != "Multinomial" else value

    # -- messages
    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        probs = self.params.get("probs")
        if self.codes is None or probs is None or probs[0] != "read" or probs[1].name != name:
            return super().message(state, name, factored)
        access = probs[1]
        k = state.families[name].size
        weights = np.broadcast_to(self.message_weights(state, name), access.index.shape)
        flat = self.code_positions(k).reshape(-1)
        counts = np.bincount(flat, weights.reshape(-1), minlength=access.size * k)
        return counts.reshape(access.size, k)

    @functools.cached_property
    def _constant_prior(self) -> bool:
        """Constant parameters, no selector, the target read once (a prior such as
        pi ~ Dirichlet(ones(K))): the message to the target is made once (`FactorRuntime.message`)."""
        return not self.latent_params and self.selector is None and len(self.reads.get(self.factor.target.name, ())) == 1

    def code_positions(self, k: int) -> np.ndarray:
        """Where each observed category sits in the flat (elements × k) moments of the probabilities
        it reads, index · k + code: made once, as the reads and the codes are fixed once built."""
        if self._positions is None:
            self._positions = self.params["probs"][1].index * k + self.codes
        return self._positions

    def _message(self, state, access):
        if access is self.target:
            if not self.latent_params:
                return self._constant_message
            return _LATENT_PARAM[self.dist][1](self, state)
        return _LATENT_PARAM[self.dist][2](self, state, access)


# ---- distributions with a latent parameter: (E[log f], message to target, message to parameter)

def _gamma_elbo(f, state):
    a = f.params["shape"][1]
    x = f._target(state)
    (rate, s) = f._read(state, "rate")
    return a * (np.log(s) + rate[..., 0]) - gammaln(a) + (a - 1) * x[..., 0] - s * rate[..., 1] * x[..., 1]


def _gamma_to_target(f, state):
    a = f.params["shape"][1]
    rate, s = f._read(state, "rate")
    return stack_last(a - 1.0, -s * rate[..., 1])


def _gamma_to_param(f, state, access):
    a = f.params["shape"][1]
    x = f._target(state)
    s = f.params["rate"][2]
    return stack_last(a + 0 * x[..., 1], -s * x[..., 1])


def _rate_elbo(f, state):
    y = f._observed_values(state)
    rate, s = f._read(state, "rate")
    log_rate = np.log(s) + rate[..., 0]
    if f.dist == "Poisson":
        return y * log_rate - s * rate[..., 1] - gammaln(y + 1)
    return log_rate - s * rate[..., 1] * y


def _rate_to_param(f, state, access):
    y = f._observed_values(state)
    s = f.params["rate"][2]
    if f.dist == "Poisson":
        return stack_last(y, -s + 0 * y)
    return stack_last(1.0 + 0 * y, -s * y)


def _beta_elbo(f, state):
    y = f._observed_values(state)
    p, _ = f._read(state, "p")
    n = f.params["trials"][1] if "trials" in f.params else 1.0
    return y * p[..., 0] + (n - y) * p[..., 1] + f._log_base(state)


def _beta_to_param(f, state, access):
    y = f._observed_values(state)
    n = f.params["trials"][1] if "trials" in f.params else 1.0
    return stack_last(y, n - y)


def _categorical_elbo(f, state):
    kind, access, _ = f.params["probs"]
    if f.codes is not None:
        return state.moments(access.name).take(f.code_positions(state.families[access.name].size))
    probs, _ = f._read(state, "probs")
    return np.sum(f._target(state) * probs, -1) + f._log_base(state)


def _categorical_to_target(f, state):
    probs, _ = f._read(state, "probs")
    return probs


def _categorical_to_param(f, state, access):
    return f._target(state)


def _no_target_message(f, state):
    raise Unsupported(f"`{f.factor.target.name}` must be observed in `{f.name}`", f.factor.span)


_LATENT_PARAM = {
    "Gamma": (_gamma_elbo, _gamma_to_target, _gamma_to_param),
    "Poisson": (_rate_elbo, _no_target_message, _rate_to_param),
    "Exponential": (_rate_elbo, _no_target_message, _rate_to_param),
    "Bernoulli": (_beta_elbo, _no_target_message, _beta_to_param),
    "Binomial": (_beta_elbo, _no_target_message, _beta_to_param),
    "Categorical": (_categorical_elbo, _categorical_to_target, _categorical_to_param),
    "Multinomial": (_categorical_elbo, _no_target_message, _categorical_to_param),
}

# Parameters that belong to the family's structure (trials) rather than its natural parameters.
_STRUCTURAL = {("Binomial", "trials"), ("Multinomial", "trials")}


def check_dof(dof, dim: int, expr) -> None:
    """A Wishart whose degrees of freedom are at most D − 1 has no density (E258, `dof_error`)."""
    low = np.asarray(dof, dtype=float)
    if np.any(low <= dim - 1):
        raise dof_error(dim, expr, float(np.min(low)))
