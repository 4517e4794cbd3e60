"""Factors of a discrete chain q(z) (`ppl.graph.chain`, family `CategoricalChain`): a hidden
Markov model's initial state and transition, and the adapter for its emissions.

With q(z) one chain per sequence and Dirichlet q(π), q(A):

  z[1] ~ Categorical(π):        to z at every sequence start, unary E[log π];
                                to π, Σ_starts γ_s;   E[log f] = Σ_starts γ_s · E[log π]
  z[t] ~ Categorical(A[z[t-1]]): to z at t, pair block E[log A] (the sub-normalised
                                exp E[log A] of Beal 2003); to row i of A, Σ_t ξ_t[i, ·];
                                E[log f] = Σ_t Σ_ij ξ_t[i, j] E[log A_ij]

(ξ_t[i, j] = q(z_{t−1} = i, z_t = j)). Inside a sequence the transition holds; at a row that
starts one (`@sequences(by=seq)`) it is switched off and the initial factor holds instead.
Every other factor reads z[t] as a mixture selector and sends its expected log-likelihoods
as unary evidence (`Emission`), so one update of z is forward–backward on the whole chain.
"""

from __future__ import annotations

import numpy as np

from ppl.families.base import dot_last
from ppl.graph.forms import inline
from ppl.infer.access import AccessBuilder, Unsupported, sum_by_index
from ppl.infer.factors.base import version_key
from ppl.infer.factors.factorial import FactorialNormal
from ppl.infer.plates import Plate
from ppl.lang import ast


class _ChainFactor:
    """What the engine asks of a factor runtime: `reads`, `message`, `elbo`, `elbo_estimate`."""

    selector = None
    bilinear: frozenset = frozenset()

    def __init__(self, factor, model, env, family, components: int, selector_expr=None):
        self.factor = factor
        self.name = factor.name
        self.family = family  # the chain's CategoricalChain
        self.k = family.k
        self.plate = Plate(factor, env)
        self.builder = AccessBuilder(self.plate, env, model, components, selector_expr)
        target = factor.target
        self.target = self.builder.build(ast.Index(ast.Name(target.name, target.span), target.indices, target.span),
                                         selected=False)
        self.chain = target.name
        self.reads = {self.chain: [self.target]}
        self.probs = None
        probs = inline(factor.args["probs"], model.definitions)
        if any(isinstance(n, ast.Name) and model.variables.get(n.id) is not None
               and model.variables[n.id].kind == "latent" for n in ast.walk(probs)):
            if not isinstance(probs, (ast.Name, ast.Index)):
                raise Unsupported(f"`{self.name}`: the probabilities must be a Dirichlet variable or a row of one",
                                  factor.span)
            self.probs = self.builder.build(probs)
            self.reads[self.probs.name] = [self.probs]
        else:
            with np.errstate(divide="ignore"):
                self.log_probs = np.log(self.plate.over_components(probs))

    def elbo_estimate(self, state) -> tuple[float, float]:
        return self.elbo(state), 0.0

    def _expected_log_probs(self, state):
        """E[log p] gathered over the plate: plate + (C, K)."""
        return self.probs.read(state) if self.probs is not None else self.log_probs


class ChainStart(_ChainFactor):
    """`z[1] ~ Categorical(pi)`, applied at the first row of every sequence."""

    def __init__(self, factor, model, env, family):
        super().__init__(factor, model, env, family, 1)
        rows = np.flatnonzero(family.starts())
        self.rows = slice(rows[0], rows[0] + 1) if len(rows) == 1 else rows  # one sequence: a slice, a view

    def _start_marginals(self, state):
        return state.moments(self.chain)[self.rows, : self.k]

    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        if name == self.chain:
            return _full(self, state, name)
        return self.probs.scatter(self._start_marginals(state).sum(axis=0).reshape(1, 1, self.k))

    def add_to(self, state, unary: np.ndarray, out: np.ndarray) -> None:
        """Its message to the chain added in place: E[log π] to the unary part at the starts."""
        unary[self.rows] += np.reshape(self._expected_log_probs(state), (-1, self.k))[0]

    def elbo(self, state) -> float:
        log_probs = np.reshape(self._expected_log_probs(state), (-1, self.k))[0]
        return float(dot_last(self._start_marginals(state), log_probs).sum())


class DiscreteTransition(_ChainFactor):
    """`z[t] ~ Categorical(A[z[t-1]])` inside each sequence."""

    def __init__(self, factor, model, env, family):
        index = inline(factor.args["probs"], model.definitions).indices
        lag = next(i for i in index if any(isinstance(n, ast.Name) and n.id == factor.target.name
                                           for n in ast.walk(i)))
        super().__init__(factor, model, env, family, family.k, selector_expr=lag)
        if self.probs is None:
            raise Unsupported(f"`{self.name}`: the transition rows must be latent Dirichlet variables", factor.span)
        rows = self.target.index[:, 0]
        self.starts = np.flatnonzero(family.starts())  # where the transition is switched off
        contiguous = np.array_equal(rows, np.arange(rows[0], rows[0] + len(rows)))
        self.rows = slice(rows[0], rows[0] + len(rows)) if contiguous else rows  # a slice reads a view
        self._summed = None  # (version key of q(z), Σ_t ξ_t)

    def _pairwise(self, state):
        """ξ_t over the plate, (T − 1, K, K), zero where a sequence starts (as the family gives it)."""
        return state.moments(self.chain)[self.rows, self.k:].reshape(-1, self.k, self.k)

    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        if name == self.chain:
            return _full(self, state, name)
        if self.probs.plate_free:  # one A for every step: row i takes Σ_t ξ_t[i, ·]
            return sum_by_index(self.probs.components, self._total(state)[0], self.probs.size)
        return self.probs.scatter(self._pairwise(state))

    def add_to(self, state, unary: np.ndarray, out: np.ndarray) -> None:
        """Its message to the chain written into the pair block of `out` (T, K + K²), the only
        one that has a pair block: E[log A] on every row the transition holds, 0 at the starts."""
        log_a = self._expected_log_probs(state)
        out[self.rows, self.k:] = log_a.reshape(len(log_a), -1)
        out[self.starts, self.k:] = 0.0

    def _total(self, state):
        """Σ_t ξ_t (1, K, K), kept for the q(z) it was summed from (its version): the message to A
        and the ELBO term read it at the same q in consecutive steps of a sweep."""
        key = version_key(state, (self.chain,))
        if self._summed is None or self._summed[0] != key:
            self._summed = (key, self._pairwise(state).sum(axis=0, keepdims=True))
        return self._summed[1]

    def elbo(self, state) -> float:
        log_a = self._expected_log_probs(state)
        xi = self._total(state) if log_a.shape[0] == 1 else self._pairwise(state)  # one E[log A]: Σ_t ξ_t first
        if log_a.shape != xi.shape:  # (np.broadcast_to costs a dozen Python calls)
            log_a = np.broadcast_to(log_a, xi.shape)
        return float(dot_last(xi.reshape(len(xi), -1), log_a.reshape(len(xi), -1)).sum())


class Emission:
    """A factor that reads the chain as a mixture selector, `y[t] ~ F(theta[z[t]])`: its message
    to z is the unary evidence E[log F(y_t | theta_k)] per row, carried into the chain's layout
    with a zero pair block. Everything else is the factor's own."""

    def __init__(self, runtime, chain: str, family):
        self.runtime = runtime
        self.chain = chain
        self.family = family

    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        return _full(self, state, name)

    def add_to(self, state, unary: np.ndarray, out: np.ndarray) -> None:
        """Its message to the chain added in place: the evidence, to the unary part."""
        unary += self.runtime.message(state, self.chain)

    def __getattr__(self, attribute):
        return getattr(self.runtime, attribute)


class ChainNeighbours(list):
    """The factors that send a discrete chain messages, in order, and `total`: the sum of their
    messages formed in one (T, K + K²) array, where summing them whole makes and adds a
    T (K + K²) array per factor (about 1 ms a sweep at T = 10⁴, K = 4, mostly fresh pages).
    The unary parts add up in a (T, K) array in the factors' order, so each number is the
    sum of the whole messages' (adding their zeros changes nothing); the transition alone
    writes the pair block."""

    def __init__(self, factors, family):
        super().__init__(factors)
        self.family = family
        transitions = [f for f in factors if isinstance(f, DiscreteTransition)]
        assert len(transitions) == 1, "one transition writes the pair block"
        covered = np.zeros(sum(family.lengths), dtype=bool)
        covered[transitions[0].rows] = covered[transitions[0].starts] = True
        assert covered.all(), "the transition writes every row of the pair block"

    def total(self, state, name: str) -> np.ndarray:
        out = np.empty((state.natural[name].shape[0], self.family.size))
        unary = np.zeros((len(out), self.family.k))
        for factor in self:
            factor.add_to(state, unary, out)
        out[:, : self.family.k] = unary
        return out


def _full(factor, state, name: str) -> np.ndarray:
    """One factor's message to the chain alone, (T, K + K²) with zeros where it sends nothing."""
    out = np.zeros((state.natural[name].shape[0], factor.family.size))
    unary = np.zeros((len(out), factor.family.k))
    factor.add_to(state, unary, out)
    out[:, : factor.family.k] += unary
    return out


def _state_reads(runtime, name: str) -> set:
    """The distinct index expressions through which a factor's arguments read the chain."""
    return {ast.text(i) for expr in runtime.factor.args.values() for node in ast.walk(inline(expr, runtime.model.definitions))
            if isinstance(node, ast.Index) for i in node.indices
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(i))}


def discrete_chain_neighbours(chain, family, runtimes: list) -> list:
    """The chain's own two factors, and emissions that read z[t] only as a selector, one row each
    (located E500 otherwise)."""
    neighbours = []
    for f in runtimes:
        if chain.variable not in f.reads:
            continue
        if isinstance(f, _ChainFactor) and f.chain == chain.variable:
            neighbours.append(f)
        elif isinstance(f, FactorialNormal):  # reads z[t] as one of several selectors
            neighbours.append(Emission(f, chain.variable, family))
        elif (len(f.reads[chain.variable]) == 1 and f.selector is not None and f.reads[chain.variable][0] is f.selector
              and not f.selector.plate_free and len(_state_reads(f, chain.variable)) == 1):
            neighbours.append(Emission(f, chain.variable, family))
        else:
            raise Unsupported(f"`{f.name}` reads `{chain.variable}` other than as `{chain.variable}[t]` selecting "
                              f"parameters; q({chain.variable}) is one discrete chain, and this version runs "
                              f"only factors that read one element of it as a mixture selector", f.factor.span)
    return ChainNeighbours(neighbours, family)
