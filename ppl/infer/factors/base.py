"""What every factor runtime shares: its plate, its reads, mixture weights, and the two
operations the scheduler calls — the message to one neighbour and the factor's ELBO term."""

from __future__ import annotations

import abc
import functools
from itertools import repeat

import numpy as np

from ppl.graph.forms import inline
from ppl.infer.access import AccessBuilder, Unsupported, selector_of
from ppl.infer.linear import rows_of
from ppl.infer.plates import Plate
from ppl.infer.weights import count_for, factor_counts, weighted_sum
from ppl.lang import ast

_ZEROS = repeat(0)  # the version of a variable never set, for every name (map stops at the names)


def version_key(state, names) -> tuple:
    """Identifies q of the variables `names` in `state`: a value computed from them can be
    reused while the key is unchanged (`FactorRuntime.version_key` for a factor's reads)."""
    return (id(state), *map(state.versions.get, names, _ZEROS))


class FactorRuntime(abc.ABC):
    """Base of the conjugate factor runtimes.

    Subclasses fill `self.reads` (variable → list of reads) and implement `_message(state,
    access, weights)` → per-element message of shape plate + (C, S), and `_expected_log(state)`
    → E[log f] per element and component, plate + (C,).
    """

    _log_key = None  # version key of the cached E[log f] (`expected_log`): none yet

    def __init__(self, factor, model, env, dataset):
        self.factor = factor
        self.name = factor.name
        self.model = model
        self.plate = Plate(factor, env)
        self.row_weights = factor_counts(factor, self.plate, model, dataset)  # row weights (ppl.infer.weights)
        latent = {n: v.dist for n, v in model.variables.items() if v.kind == "latent"}
        args = {role: inline(expr, model.definitions) for role, expr in factor.args.items()}
        self.args = args
        selector = None
        for expr in args.values():
            found = selector_of(expr, latent)
            if found is not None:
                if selector is not None and found != selector:
                    raise Unsupported(f"`{factor.name}` is selected by two latent categories", factor.span)
                selector = found
        components, selector_expr = 1, None
        if selector is not None:
            components = env.size(model.variables[selector].levels)
            selector_expr = _selector_read(args, selector)
        self.builder = AccessBuilder(self.plate, env, model, components, selector_expr)
        self.components = components
        self.selector = self.builder.selector
        target = factor.target
        target_expr = ast.Index(ast.Name(target.name, target.span), target.indices, target.span) \
            if target.indices else ast.Name(target.name, target.span)
        self.target = self.builder.build(target_expr, selected=False)
        self.reads: dict = {}
        self.bilinear: set = set()  # vectors of bilinear terms (initialise breaks their symmetry)
        if model.variables[target.name].kind == "latent" or target.name in dataset.masks:
            self.reads.setdefault(target.name, []).append(self.target)
        if self.selector is not None:
            self.reads.setdefault(self.selector.name, []).append(self.selector)

    def add_read(self, access):
        self.reads.setdefault(access.name, []).append(access)
        return access

    def add_linear_reads(self, form) -> list:
        """Reads every latent of a linear form (`ppl.infer.linear`); returns the reads."""
        self.bilinear |= form.bilinear()
        return [self.add_read(access) for access in form.reads()]

    def weights(self, state, rows=None) -> np.ndarray:
        """Responsibilities plate + (C,) when a latent category selects components, else ones; only
        on `rows` of the first plate axis when given (a minibatch)."""
        if self.selector is None:
            return self._ones if rows is None else np.broadcast_to(1.0, (len(rows),) + self.plate.shape[1:] + (1,))
        weights = self.selector.read(state)[..., 0, : self.components]  # a chain's q adds pair blocks after
        return weights if rows is None else weights[rows]

    @functools.cached_property
    def _ones(self) -> np.ndarray:
        """The weights of an unselected factor: a read-only view of one 1, made once."""
        return np.broadcast_to(1.0, self.plate.shape + (1,))

    def count(self, name: str | None = None):
        """Row weights, plate + (1,), that multiply this factor's message to `name`: those of the
        weighted plates `name` is not indexed by (all of them for the ELBO term, `name` None);
        None when no weight applies."""
        if not self.row_weights:
            return None
        var = self.model.variables.get(name) if name is not None else None
        return count_for(self.row_weights, var.plates if var is not None else ())

    def message_weights(self, state, name: str | None, rows=None) -> np.ndarray:
        """`weights` times the row weights that apply to the message to `name` (to the ELBO term,
        `name` None), on `rows` as `weights`."""
        weights, count = self.weights(state, rows), self.count(name)
        if count is None:
            return weights
        return weights * (count if rows is None else rows_of(count, rows))

    def message(self, state, name: str, factored: bool = False) -> np.ndarray:
        """The summed message to variable `name` in its natural layout, (elements, size);
        `factored`: a contraction's message to a single vector may stay in data space
        (ppl.infer.low_rank). A `_constant_prior`'s to its target is made once per runtime."""
        if self._constant_prior and not self.row_weights and name == self.target.name:
            return self._kept_message(factored)  # (row weights may be set after the build: ppl.infer.predict.fold)
        return self._summed_message(state, name, factored)

    _constant_prior = False  # whether the message to the target depends on nothing q holds

    def _kept_message(self, factored: bool) -> np.ndarray:
        """The summed message of a `_constant_prior` to its target, made once and read-only (every
        sweep sends it, and a caller that wrote into it would change every later sweep's)."""
        kept = self.__dict__.setdefault("_kept_messages", {})
        if factored not in kept:
            total = self._summed_message(None, self.target.name, factored)
            if not isinstance(total, np.ndarray):  # a form of another kind: made each time
                return total
            total = np.array(total, dtype=float)
            total.flags.writeable = False
            kept[factored] = total
        return kept[factored]

    def _summed_message(self, state, name: str, factored: bool) -> np.ndarray:
        """Σ over the plate of the messages of every read of `name`."""
        count = self.count(name) if self.row_weights else None  # (`count` without a call per message)
        weights = None  # read when a non-selector read needs them: the selector's message does not
        total = 0.0
        for access in self.reads.get(name, ()):
            if access is self.selector:
                rows = self.expected_log(state)
                total = total + access.scatter_rows(rows if count is None else rows * count)
            else:
                if weights is None:
                    weights = self.weights(state) if count is None else self.message_weights(state, name)
                total = total + access.scatter_weighted(self._message(state, access), weights, factored)
        return total

    def elbo(self, state) -> float:
        """Σ over the plate of E_q[log f] (responsibility-weighted across components, and times
        the row weights)."""
        count = self.count() if self.row_weights else None
        if count is None and self.selector is None:
            value = np.asarray(self.expected_log(state))  # unit weights: summed as it is if it fills the plate
            return float((value if value.shape == self._ones.shape else self._ones * value).sum())
        if count is None:
            return float((self.weights(state) * self.expected_log(state)).sum())
        return weighted_sum(self.weights(state) * count, self.expected_log(state))

    def elbo_estimate(self, state) -> tuple[float, float]:
        """(`elbo`, its standard error): exact here; a factor that subsamples its data overrides it."""
        return self.elbo(state), 0.0

    def version_key(self, state, names=None) -> tuple:
        """Identifies q of the variables `names` (default: all this factor reads): a value computed
        from them can be reused while the key is unchanged."""
        return version_key(state, self._read_names if names is None else names)

    @functools.cached_property
    def _read_names(self) -> tuple:
        """The variables this factor reads, sorted (its reads are fixed once it is built)."""
        return tuple(sorted(self.reads))

    @functools.cached_property
    def _log_names(self) -> tuple:
        """What E[log f] depends on: every read but a selector read only to select (z[n] in
        mu[z[n]]), which a Markov chain's z[t] ~ Categorical(A[z[t-1]]) reads otherwise too."""
        selector = self.selector.name if self.selector else None
        return tuple(sorted(n for n in self.reads if n != selector or len(self.reads[n]) > 1))

    def expected_log(self, state) -> np.ndarray:
        """`_expected_log`, reused while none of the variables this factor reads has changed
        (the selector's message and the ELBO of a sweep need the same values)."""
        key = self.version_key(state, self._log_names)
        if self._log_key != key:
            self._log_key, self._log_value = key, self._expected_log(state)
        return self._log_value

    @abc.abstractmethod
    def _message(self, state, access) -> np.ndarray:
        """Per-element message to the read `access`: plate + (C, S)."""

    @abc.abstractmethod
    def _expected_log(self, state) -> np.ndarray:
        """E_q[log f] per element and component: plate + (C,)."""

    def data(self, expr) -> np.ndarray:
        """A data/constant expression over the plate, with the component axis added."""
        return self.plate.over_components(expr)


def _selector_read(args: dict, selector: str) -> ast.Expr:
    """The first index expression that reads the selecting category, e.g. `z[n]` in `mu[z[n]]`."""
    for expr in args.values():
        for node in ast.walk(expr):
            if isinstance(node, ast.Index):
                for index in node.indices:
                    if any(isinstance(n, ast.Name) and n.id == selector for n in ast.walk(index)):
                        return index
    raise AssertionError("selector_of found it")
