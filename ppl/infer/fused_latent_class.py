"""The sweep of a mixture of categoricals (latent class analysis) fused: the generic engine's
updates, float for float (tests/test_fused_latent_class.py), without its per-factor calls.

It applies to π ~ Dirichlet (constant prior), z ~ Categorical(π) over a plate, and one or more
observed categorical statements x ~ Categorical(φ[z, ...]) whose probabilities are Dirichlet
globals with constant priors, read through z (a latent class model: x[n, j] ~
Categorical(φ[z[n], j]); items in one statement or several), all VMP, with no other latent
variable, no missing cell and no row weights. One sweep is

- M-step: λ_π = η_π + Σ_n r_n (one product 1ᵀR) and, per statement, λ_φ = η_φ + the counts
  Σ_n r_nk of each observed code, one `np.bincount` over the integer codes (never a one-hot
  array);
- E-step: λ_z[n, k] = E[log π_k] + Σ_j E[log φ[k, j, x_nj]], E[log φ] gathered at the codes by
  one `take` and summed over the items of a row, then E[z] = softmax(λ_z);
- the ELBO at q(z)'s optimum: Σ_n log Σ_k exp λ_nk − KL(q(π) ‖ p(π)) − Σ KL(q(φ) ‖ p(φ)), each
  KL by the exponential-family identity (λ_q − η_p)·E_q[t] − A(λ_q) + A(η_p).

Every message is the one the factors send, summed in the order `update` sums them, so the
sweep's q equals the generic sweep's bit for bit; only the ELBO is another sum of the same
terms (equal to round-off). Where each row's items come in the same number (a person answers
every item), the gathers are laid out item-major, (items, rows, K): a row's sum is then J − 1
additions of contiguous rows in the order `np.bincount` adds them, and the counts are summed
from R copied J times in that layout when that keeps each code's additions in the plate's order
(a statement whose φ element is shared by several items does not: it takes the plate's layout).
"""

from __future__ import annotations

import numpy as np

from ppl.families import Categorical, Dirichlet
from ppl.infer.access import sum_by_index
from ppl.infer.factors.base import version_key
from ppl.infer.factors.conjugate import ConjugateFactor
from ppl.infer.rows import row_max, sum_in_order

SEQUENTIAL = 8  # np.sum adds a row of fewer entries left to right (a longer one in blocks)


def latent_class_kernel(problem):
    """A `FusedLatentClass` when `problem` is a mixture of categoricals it covers, else None."""
    if (problem.stochastic or problem.damped or problem.guarded or problem.steps or problem.inner != 1
            or not problem.pure_vmp or problem.dataset.masks or problem.schedule.restarted
            or problem.schedule.estep != "vmp" or not problem.order):
        return None
    z = problem.order[-1]  # updated last, as the E-step: every other variable is a Dirichlet it reads
    families = problem.families
    if (type(families.get(z)) is not Categorical or z not in problem.local or z in problem.dataset.arrays
            or any(type(f) is not ConjugateFactor or f.row_weights for f in problem.factors)):
        return None
    own = [f for f in problem.neighbours[z] if f.factor.target.name == z]
    likelihoods = [f for f in problem.neighbours[z] if f.factor.target.name != z]
    if len(own) != 1 or not likelihoods:
        return None
    own = own[0]
    pi = _read_of(own)
    if (pi is None or own.dist != "Categorical" or set(own.reads) != {z, pi.name} or len(own.reads[z]) != 1
            or not own.target.in_order[0] or not pi.plate_free or pi.size != 1):
        return None
    phis = []
    for f in likelihoods:
        read = _read_of(f)
        if (f.dist != "Categorical" or f.codes is None or read is None or f.selector is None
                or f.selector.name != z or set(f.reads) != {z, read.name} or f.reads[z] != [f.selector]
                or read.selector is not f.selector or read.name in (z, pi.name)):
            return None
        if read.name not in phis:
            phis.append(read.name)
    globals_ = [pi.name] + phis
    if set(problem.latent) != {z, *globals_} or any(type(families[n]) is not Dirichlet for n in globals_):
        return None
    priors = {}
    for name in globals_:
        others = [f for f in problem.neighbours[name] if f is not own and f not in likelihoods]
        if (len(others) != 1 or others[0].dist != "Dirichlet" or others[0].latent_params
                or set(others[0].reads) != {name} or not others[0].target.in_order[0]):
            return None
        priors[name] = others[0]
    return FusedLatentClass(problem, z, pi.name, phis, own, likelihoods, priors)


def _read_of(factor):
    """The probabilities' read of a Categorical statement when they are one latent read (scale 1)."""
    probs = factor.params.get("probs")
    if probs is None or probs[0] != "read" or np.ndim(probs[2]) != 0 or float(probs[2]) != 1.0:
        return None
    return probs[1]


class _Statement:
    """One observed statement x ~ Categorical(φ[z, ...]): where each (element, component) reads φ's
    flat moments, laid out item-major (items, rows, K) when each row has as many elements, else
    as the plate (elements, K)."""

    def __init__(self, factor, phi: str, levels: int, rows: int, k: int):
        self.factor, self.phi = factor, phi
        read = factor.reads[phi][0]
        self.shape = (read.size, levels)  # the message to φ: (elements of φ, levels)
        positions = factor.code_positions(levels).reshape(-1, k)  # (plate elements, K): the factor's own
        self.row = factor.selector.index[..., 0].reshape(-1)  # z's element read by each plate element
        self.layout = _item_major(self.row, rows)
        self.counted = False  # the counts summed from the item-major layout (`_keeps_order`)
        if self.layout is not None:
            self.positions = positions[self.layout]  # (J, rows, K)
            self.counted = _keeps_order(self.layout, self.positions)
            self.buffer = np.empty(self.positions.shape) if self.counted else None
        else:
            self.positions = positions
        self.plate_positions = positions.reshape(-1)

    def counts(self, resp: np.ndarray) -> np.ndarray:
        """Σ r_nk at each (φ element, code), the factor's message to φ: one bincount over the codes,
        each count's additions in the plate's order."""
        if self.counted:
            self.buffer[...] = resp  # R once per item: the weights of the item-major positions
            weights, positions = self.buffer.reshape(-1), self.positions.reshape(-1)
        else:
            weights, positions = np.take(resp, self.row, axis=0).reshape(-1), self.plate_positions
        return np.bincount(positions, weights, minlength=self.shape[0] * self.shape[1]).reshape(self.shape)

    def sums(self, elog: np.ndarray, rows: int) -> np.ndarray:
        """Σ over each row's elements of E[log φ] at their codes, the factor's message to z, added
        in the order of `np.bincount` over the plate (`sum_by_index`)."""
        values = elog.reshape(-1).take(self.positions)
        if self.layout is None:
            return sum_by_index(self.row, values, rows)
        return np.add.reduce(values, axis=0) if values.shape[0] > 1 else values[0]


def _item_major(row: np.ndarray, rows: int):
    """(J, rows) plate elements, the j-th of each row in the plate's order, when every row has
    J elements; else None."""
    per_row = np.bincount(row, minlength=rows)
    if rows == 0 or per_row.min() != per_row.max() or per_row[0] == 0:
        return None
    return np.argsort(row, kind="stable").reshape(rows, -1).T.copy()


def _keeps_order(layout: np.ndarray, positions: np.ndarray) -> bool:
    """Whether the item-major order adds the weights of each (φ element, code) in the plate's
    order, as the factor's bincount does (true unless items share a φ element). Component 0
    decides for all: two entries share a count only with the same component, and component k's
    counts are component 0's shifted by k of z's positions in φ."""
    bins = positions[..., 0].reshape(-1)
    order = np.argsort(bins, kind="stable")
    plate, bins = layout.reshape(-1)[order], bins[order]  # each entry's place in the plate, by count
    same = bins[1:] == bins[:-1]
    return bool(np.all(plate[1:][same] > plate[:-1][same]))


class FusedLatentClass:
    """One sweep of the mixture of categoricals (M-step of π and φ, E-step of z) and its ELBO."""

    def __init__(self, problem, z, pi, phis, own, likelihoods, priors):
        self.z, self.pi, self.phis = z, pi, list(phis)
        self.own, self.priors = own, priors
        self.neighbours = {n: list(problem.neighbours[n]) for n in (z, pi, *phis)}  # `update` sums in this order
        self.k = problem.families[z].size
        self.rows = int(np.prod(problem.shapes[z], dtype=np.int64))
        self.statements = {}
        for f in likelihoods:
            phi = _read_of(f).name
            self.statements[f] = _Statement(f, phi, problem.families[phi].size, self.rows, self.k)
        self.ones = np.ones((1, self.rows))  # 1ᵀR, the message to π as the factor forms it
        self.eta = None  # the priors' messages, at the first sweep
        self.release()

    def release(self) -> None:
        """Forget the last sweep's ELBO: a new run's state may reuse the id of the last run's."""
        self._elbo = None  # (version key after the sweep, ELBO)

    def _prepare(self, state) -> None:
        self.eta = {n: np.asarray(f.message(state, n), dtype=float) for n, f in self.priors.items()}
        self.a_prior = sum(float(state.families[n].log_partition(eta).sum()) for n, eta in self.eta.items())

    def sweep(self, state) -> None:
        if self.eta is None:
            self._prepare(state)
        kl = self.a_prior
        for name in (self.pi, *self.phis):
            kl += self._dirichlet(state, name)
        elbo = self._local_step(state) - kl
        self._elbo = (self._key(state), elbo)

    def _dirichlet(self, state, name: str) -> float:
        """q(`name`) from its messages, summed in the order `update` sums them, with E[log] as its
        moments; returns (λ − η)·E[log] − A(λ) (its KL to the prior but A(η))."""
        resp, total = state.moments(self.z), None
        for f in self.neighbours[name]:
            if f is self.priors[name]:
                m = self.eta[name]
            elif f is self.own:
                m = self.ones @ resp
            else:
                m = self.statements[f].counts(resp)
            total = m if total is None else total + m
        family = state.families[name]
        elog = family.to_mean(total)
        state.set(name, total, moments=elog)
        return float(np.sum((total - self.eta[name]) * elog)) - float(family.log_partition(total).sum())

    def e_step(self, state, names) -> None:
        """The locals `names` refitted, in sweep order, to the other variables' q: SQUAREM's E-step
        after it moves the globals (ppl.infer.schedule.steps.locals_from_globals)."""
        for name in self.phis:  # a Dirichlet that is local (φ on the levels of a data column)
            if name in names:
                self._dirichlet(state, name)
        if self.z in names:
            self._local_step(state)

    def _local_step(self, state) -> float:
        """λ_z as `update` sums z's messages, E[z] = softmax(λ_z) as `Categorical.to_mean` forms it;
        returns Σ_n log Σ_k exp λ_nk."""
        total = None
        for f in self.neighbours[self.z]:
            if f is self.own:
                m = np.broadcast_to(state.moments(self.pi).reshape(1, -1), (self.rows, self.k))
            else:
                m = self.statements[f].sums(state.moments(self.statements[f].phi), self.rows)
            total = m if total is None else total + m
        resp, log_z = _softmax(total)  # λ_z a new array: z has two messages at least
        state.set(self.z, total, moments=resp)
        return log_z

    def _key(self, state) -> tuple:
        return version_key(state, (self.z, self.pi, *self.phis))

    def elbo(self, state) -> float | None:
        """The ELBO of the last fused sweep while `state` has not changed since, else None (the
        generic sum of the terms)."""
        if self._elbo is None or self._elbo[0] != self._key(state):
            return None
        return self._elbo[1]


def _softmax(natural: np.ndarray) -> tuple[np.ndarray, float]:
    """(softmax of the rows of `natural`, Σ_n log Σ_k exp natural_nk): `Categorical.to_mean`'s
    values to the bit, its row maxima and sums formed column by column when a row is short
    (np.max and np.sum along rows of a few entries cost 5× as much; np.sum adds a row of fewer
    than `SEQUENTIAL` entries left to right, as the columns are added here)."""
    rows, k = natural.shape
    top = np.empty((rows, 1))
    row_max(natural, top[:, 0])
    e = natural - top
    np.exp(e, out=e)
    total = np.sum(e, axis=-1) if k >= SEQUENTIAL else sum_in_order(e, -1)
    e /= total[:, None]
    return e, float(top.sum() + np.log(total).sum())
