"""Factors of a Gaussian chain q(x[1..T]) (`ppl.graph.chain`, family `NormalChain`).

The transition `x[t] ~ Normal(c·x[t-1] + b, τ)` (c = data × latent scalars, b the rest of the
linear mean) is the Gaussian factor with one difference: x_t and x_{t−1} are dependent under q,
so every moment that pairs them uses E[x_t x_{t−1}] = E[x_t]E[x_{t−1}] + Cov(x_t, x_{t−1}):

  E[(x_t − c x_{t−1} − b)²] gains −2 E[c] Cov,        (the ELBO term, the message to τ)
  to a scalar s in c = s·c′:  (E[τ] E[c′] (E[x_t x_{t−1}] − E[x_{t−1}]E[b]), −½ E[τ] E[c′²] E[x²_{t−1}]),
  to x, in (h, J, K) per element:
      x_t:      (E[τ]E[b],          −½E[τ],         E[τ]E[c])
      x_{t−1}:  (−E[τ]E[c]E[b],     −½E[τ]E[c²],    0).

Summed with the first element's prior and the observations' Gaussian sites (ỹ_t, τ̃_t) — the
messages of every other factor, which read x one element at a time (`ElementReads`) — the
update of x is a Kalman smoother on the pseudo-data (Khan & Lin, App. E.2).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.access import Unsupported
from ppl.infer.factors.gaussian import GaussianFactor
from ppl.infer.linear import form_mean, scalar_moments, term_mean


class ChainTransition(GaussianFactor):
    def __init__(self, factor, model, env, dataset, families):
        super().__init__(factor, model, env, dataset, families)
        self.chain = factor.target.name
        weighted = [d for d in model.variables[self.chain].plates if d in model.weights]
        if weighted:
            raise Unsupported(f"`{self.name}`: rows of `{weighted[0]}` are weighted by `{model.weights[weighted[0]]}`, "
                              f"but `{weighted[0]}` is the time axis of the chain `{self.chain}`: copies of a "
                              "time step are not a chain; weight another plate", factor.span)
        self.lag_term = next(t for t in self.mean.terms if any(s.name == self.chain for s in t.scalars))
        self.lag = next(s for s in self.lag_term.scalars if s.name == self.chain)
        if self.lag_term.vector is not None or self.selector is not None:
            raise Unsupported(f"`{self.name}`: the chain's coefficient of `{self.chain}[t-1]` must be data times "
                              "scalar Normal variables, with no mixture selection", factor.span)

    def _covariance(self, state):
        """Cov(x_t, x_{t−1}) over the plate: plate + (1,)."""
        now, before = self.target.read(state), self.lag.read(state)
        return now[..., 2] - now[..., 0] * before[..., 0]

    def _coefficient(self, state, skip=None):
        """(E[c], E[c²]) of the coefficient c of x[t-1], leaving out the read `skip` too."""
        first, second = self.lag_term.coef, self.lag_term.coef ** 2
        for access in self.lag_term.scalars:
            if access is not self.lag and access is not skip:
                e1, e2 = scalar_moments(state, access)
                first, second = first * e1, second * e2
        return first, second

    def _squared_error(self, state):
        return super()._squared_error(state) - 2 * self._coefficient(state)[0] * self._covariance(state)

    def _message(self, state, access):
        message = super()._message(state, access)
        if any(access is s for s in self.lag_term.scalars):  # s in c·x[t-1]: E[x_t x_{t−1}], not the product
            prec, _ = self.precision.expect(state)
            message = message.copy()
            message[..., 0] += prec * self._coefficient(state, skip=access)[0] * self._covariance(state)
        return message

    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        if name != self.chain:
            return super().message(state, name, factored)
        prec, _ = self.precision.expect(state)
        c1, c2 = self._coefficient(state)
        b1 = form_mean(state, self.mean) - term_mean(state, self.lag_term)
        now = np.stack(np.broadcast_arrays(prec * b1, -0.5 * prec, prec * c1), axis=-1)
        before = np.stack(np.broadcast_arrays(-prec * c1 * b1, -0.5 * prec * c2, 0.0 * prec), axis=-1)
        return self.target.scatter(now) + self.lag.scatter(before)


class ElementReads:
    """A factor that reads a chain one element at a time (a prior of x[1], an observation of
    x[t]): its messages are Normal messages (τm, −τ/2) per element, and the chain's layout
    carries them with K = 0. Everything else is the factor's own."""

    def __init__(self, runtime):
        self.runtime = runtime

    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        message = self.runtime.message(state, name)
        return np.concatenate([message, np.zeros(message.shape[:-1] + (1,))], axis=-1)

    def __getattr__(self, attribute):
        return getattr(self.runtime, attribute)


def chain_neighbours(chain, runtimes: list) -> list:
    """The factors that send the chain messages, each reading it in a way the chain q can serve:
    the transition, and factors reading one element at a time (located E500 otherwise)."""
    neighbours = []
    for f in runtimes:
        if chain.variable not in f.reads:
            continue
        if isinstance(f, ChainTransition) and f.chain == chain.variable:
            neighbours.append(f)
        elif len(f.reads[chain.variable]) == 1:
            neighbours.append(ElementReads(f))
        else:
            raise Unsupported(f"`{f.name}` reads two elements of `{chain.variable}` together; q({chain.variable}) "
                              f"is one Gaussian chain, and this version runs only factors that read one element "
                              f"of it each", f.factor.span)
    return neighbours
