"""The variational state: natural parameters of every latent variable, with cached moments.

Observed and partially observed variables live here too: their moments are the sufficient
statistics of the data, with missing cells taken from q (imputation by the same messages).
An observed categorical stays integer codes (`codes`): factors read the codes (gathers and
bincounts), and its one-hot statistics are made only for a factor that asks for them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ppl.infer.access import Unsupported
from ppl.infer.held_gaussian import HeldGaussian

ONE_HOT_LIMIT = 2 ** 27  # cells (1 GiB of float64): a larger one-hot array is refused, not allocated
# versions of q come from one process-wide sequence: a version is never given twice, so putting an
# earlier q back with its version (`State.restore`) cannot make a cache of another q look valid
_VERSIONS = itertools.count(1)


class NumericalBreakdown(Exception):
    """q(`name`) has no moments in floating point: its natural parameters overflowed (values far
    outside the prior's scale) or its precision is not positive definite. `Model.infer` reports
    it at the variable's declaration."""

    def __init__(self, name: str, detail: str):
        super().__init__(f"{name}: {detail}")
        self.name, self.detail = name, detail

    def __reduce__(self):  # raised on a Dask worker, it reaches the client as a pickle
        return NumericalBreakdown, (self.name, self.detail)


class Naturals(dict):
    """name -> λ. A Gaussian vector solved in a structured form (in data space, or by its
    coordinate sites) is held as its `HeldGaussian`: reading it by key gives λ in the family's
    layout (formed then, D × D); `items()`, `get` and copies keep the `HeldGaussian`, which code
    that knows the form reads without a D × D covariance."""

    def __getitem__(self, name):
        value = dict.__getitem__(self, name)
        return value.natural() if isinstance(value, HeldGaussian) else value


@dataclass(frozen=True)
class Kept:
    """q of some variables as it was: name -> (λ as held, cached moments and entropy or None,
    GaussianSum, version), for `State.restore`."""

    entries: dict


class State:
    """λ per latent variable as a (elements, size) array; moments E[t(x)] computed on demand."""

    def __init__(self, families: dict, shapes: dict):
        self.families = families  # name -> Family
        self.shapes = shapes  # name -> plate shape
        self.natural = Naturals()
        self.observed: dict = {}  # name -> (stats (elements, size), mask (elements,) or None)
        self.codes: dict = {}  # name -> codes (elements,) of an observed categorical (stats None)
        self.counts: dict = {}  # name -> row weight per element: multiplies its entropy (ppl.infer.weights)
        self._moments: dict = {}
        self._entropy: dict = {}  # name -> H[q] given with its moments by a structured solve
        # name -> H[q] per element solved with the moments (ppl.families.MvNormal), or None: the cached
        # moments are to_mean(λ), which `entropy` may reuse
        self._derived: dict = {}
        self.factored: dict = {}  # name -> λ as a GaussianSum, when it was solved that way
        self.versions: dict = {}  # name -> version of its q (`_VERSIONS`), so factors can reuse what is unchanged
        self._rng = None  # Monte Carlo rules draw from `rng` (the run's seed)
        self.pinned: dict = {}  # name -> (mask (elements,), λ): elements that updates leave as they are
        # the relative standard error a Monte Carlo ELBO term may carry in the trace (the run's
        # stopping rule sets it); a noisier term is computed exactly instead
        self.noise = 0.0
        self.notes: list = []  # what the start did that the reader should know (ppl.infer.initialise)
        self.refused: dict = {}  # name -> searched steps refused in a row (ppl.infer.update)
        self.extrapolated = False  # the sweep runs from an accelerator's λ' (ppl.infer.accelerate.move_to)

    @property
    def rng(self) -> np.random.Generator:
        """The generator Monte Carlo rules draw from: the run's, or seed 0's, made when first asked
        for (a run sets its own, and a generator costs 6 µs to make)."""
        if self._rng is None:
            self._rng = np.random.default_rng(0)
        return self._rng

    @rng.setter
    def rng(self, rng: np.random.Generator) -> None:
        self._rng = rng

    def set(self, name: str, natural: np.ndarray, moments=None, entropy=None, factored=None) -> None:
        """New λ for `name`; `moments` and `entropy` when the caller solved them already, and λ
        `factored` as the GaussianSum it was solved from (Woodbury; ppl.infer.low_rank), `natural`
        a `HeldGaussian` when it was solved in a structured form. Pinned elements (`pin`) keep their λ."""
        if name in self.pinned:
            mask, fixed = self.pinned[name]
            dense = natural.natural() if isinstance(natural, HeldGaussian) else natural
            natural, moments, entropy, factored = np.where(mask[:, None], fixed, dense), None, None, None
        if isinstance(natural, HeldGaussian):
            entropy = natural.entropy
        self.natural[name] = natural
        self.factored[name] = factored
        self._derived.pop(name, None)
        if moments is not None:
            self._moments[name] = moments
        else:
            self._moments.pop(name, None)
        if entropy is not None:
            self._entropy[name] = entropy
        else:
            self._entropy.pop(name, None)
        self.versions[name] = next(_VERSIONS)
        if hasattr(self.families.get(name), "distribute"):  # a Gaussian block: its members' marginals
            self.families[name].distribute(self)

    def keep(self, names, bare=()) -> Kept:
        """q of `names` as it is now, to put back with `restore` (the arrays are held, not copied:
        an update replaces λ and its moments, never writes them); of those in `bare` only λ, their
        moments recomputed if restored (a fused sweep may then write over an N-sized E[z])."""
        return Kept({n: (dict.get(self.natural, n), None if n in bare else self._moments.get(n),
                         None if n in bare else self._entropy.get(n), self.factored.get(n),
                         self.versions.get(n, 0)) for n in names})

    def restore(self, kept: Kept) -> None:
        """Put back q as `keep` held it, with its versions: what a factor cached for that q
        (under those versions) is valid again, and nothing cached since is."""
        for name, (natural, moments, entropy, factored, version) in kept.entries.items():
            self.set(name, natural, moments=moments, entropy=entropy, factored=factored)
            self.versions[name] = version

    def pin(self, name: str, mask: np.ndarray, natural: np.ndarray) -> None:
        """Hold the elements `mask` of `name` at λ = `natural` (elements, size) through every later
        update: the groups of new data that were seen in training keep their q (ppl.infer.predict)."""
        self.pinned[name] = (mask, natural)
        self.set(name, self.natural[name])

    def observe(self, name: str, stats: np.ndarray, mask: np.ndarray | None) -> None:
        self.observed[name] = (stats, mask)
        self._moments.pop(name, None)
        self._derived.pop(name, None)

    def observe_codes(self, name: str, codes: np.ndarray, mask: np.ndarray | None) -> None:
        """An observed categorical as its codes (elements,): no one-hot array."""
        self.codes[name] = codes
        self.observe(name, None, mask)

    @property
    def kernel(self) -> dict:
        """name -> HeldGaussian: the q's of Gaussian vectors held in a structured form (read from λ)."""
        return {k: v for k, v in dict.items(self.natural) if isinstance(v, HeldGaussian)}

    def kernel_of(self, name: str) -> HeldGaussian | None:
        """q(`name`) when it is held in a structured form, else None: one lookup (the hot path's `kernel`)."""
        value = dict.get(self.natural, name)
        return value if isinstance(value, HeldGaussian) else None

    def moments(self, name: str) -> np.ndarray:
        cached = self._moments.get(name)
        if cached is None:
            if name in self.codes:
                cached = self._one_hot(name)
            elif isinstance(dict.get(self.natural, name), HeldGaussian):
                cached = dict.get(self.natural, name).moments()
            elif name in self.observed and self.observed[name][1] is None:
                cached = self.observed[name][0]
            elif hasattr(self.families[name], "solve"):  # a chain: moments and entropy in one pass
                cached, self._entropy[name] = self.families[name].solve(self.natural[name])
            else:
                family, entropy = self.families[name], None
                try:
                    if hasattr(family, "moments_and_entropy") and name not in self.observed:
                        cached, entropy = family.moments_and_entropy(self.natural[name])
                    else:
                        cached = family.to_mean(self.natural[name])
                except (np.linalg.LinAlgError, ValueError) as exc:  # non-finite λ, or a precision not PD
                    raise NumericalBreakdown(name, str(exc)) from None
                if name in self.observed:
                    stats, mask = self.observed[name]
                    cached = np.where(mask[:, None], stats, cached)
                else:
                    self._derived[name] = entropy
            self._moments[name] = cached
        return cached

    def _one_hot(self, name: str) -> np.ndarray:
        """E[onehot] of an observed categorical, for a factor that reads it densely: the one-hot
        rows where observed, q's probabilities where missing."""
        codes, (_, mask) = self.codes[name], self.observed[name]
        k = self.families[name].size
        if codes.size * k > ONE_HOT_LIMIT and mask is None:
            raise Unsupported(f"a factor reads `{name}` as one-hot statistics, {codes.size} × {k} values; this "
                              "version reads an observed category that large as codes only (Categorical with "
                              "Dirichlet or constant probabilities)")
        out = self.families[name].to_mean(self.natural[name]) if mask is not None else np.zeros((codes.size, k))
        rows = np.arange(codes.size) if mask is None else np.flatnonzero(mask)
        out[rows] = 0.0
        out[rows, codes[rows]] = 1.0
        return out

    def entropy(self, name: str) -> float:
        """H[q] summed over the latent elements (the missing cells of a partially observed array)."""
        family = self.families[name]
        if hasattr(family, "solve"):
            self.moments(name)
        if name in self._entropy:
            return float(self._entropy[name])
        if hasattr(family, "entropy_of_mean"):  # reuse the cached moments when the family can
            h = family.entropy_of_mean(self.moments(name) if name not in self.observed else
                                       family.to_mean(self.natural[name]))
        elif self._derived.get(name) is not None:
            h = self._derived[name]
        elif name in self._derived and getattr(family, "entropy_reads_mean", False):  # not every family is generic
            h = family.entropy_with_mean(self.natural[name], self._moments[name])
        else:
            h = family.entropy(self.natural[name])
        if name in self.observed:
            h = np.where(self.observed[name][1], 0.0, h)
        if name in self.counts:
            return float(np.sum(self.counts[name] * h))
        return float(h.sum() if isinstance(h, np.ndarray) else h)

    def copy(self, natural: dict | None = None) -> "State":
        """An independent state with this one's λ, or with `natural` (an earlier `dict(state.natural)`)."""
        other = State(self.families, self.shapes)
        other.natural = Naturals({k: v.copy() for k, v in (self.natural if natural is None else natural).items()})
        other.versions = {k: -1 - v for k, v in self.versions.items()}  # never equal to a live version
        other.observed = self.observed
        other.codes = self.codes
        other.counts = self.counts
        other.rng = self.rng
        other.pinned = self.pinned
        other.noise = self.noise
        return other
