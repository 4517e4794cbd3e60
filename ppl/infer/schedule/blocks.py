"""Fused E-steps for a local block that is a Dirichlet–Categorical pair, LDA's
θ_d ~ Dirichlet(α), z_t ~ Categorical(θ_{d_t}), y_t ~ Categorical(β_{z_t}) with β global:

- `vmp`: the mean-field inner loop with z summed out of each sweep (Blei et al. 2003 in the
  form of every online LDA): with θ'_d = exp E[log θ_d] and b_t = exp E[log β_{·,y_t}],
  r_t = θ'_{d_t} ⊙ b_t / (θ'_{d_t}·b_t) and γ_d = α + Σ_{t∈d} c_t r_t. The same fixed point,
  sweep for sweep, as updating z then θ through the factors, without z's logarithms;
- `cvb0`: the zero-order collapsed update (Asuncion et al. 2009): θ integrated out, each
  token's r_t ∝ (n_{d_t} − c_t r_t + α) ⊙ b_t, all tokens at once from the last sweep's counts
  n_d = Σ_{t∈d} c_t r_t (the parallel form), then γ_d = α + n_d.

The block's factors give everything: b_t from the data factor's E[log p(y_t | β_k)], α from
θ's other messages, c_t from the row weights. The locals are written back to the state as
the factors would leave them (z's natural parameters, θ's), so the M-step and the ELBO read
them unchanged.
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma


class DirichletCategorical:
    """The block (θ, z): `own` the factor z ~ Categorical(θ[d]), `data` the factor that z selects
    components of. Sums over a group's rows are one sparse product (groups × rows, the rows'
    weights as values), so no row is ever looped over."""

    def __init__(self, problem, theta: str, z: str, own, data):
        from scipy.sparse import csr_matrix
        self.problem, self.theta, self.z, self.own, self.data = problem, theta, z, own, data
        self.doc = own.reads[theta][0].index.reshape(-1)
        count = own.count(theta)
        weights = np.ones(len(self.doc)) if count is None else np.asarray(count, float).reshape(-1)
        groups = int(np.prod(problem.shapes[theta], dtype=np.int64))
        self.rows = csr_matrix((weights, (self.doc, np.arange(len(self.doc)))), shape=(groups, len(self.doc)))

    def fit(self, state, inner: int, tol: float, estep: str = "vmp") -> int:
        """At most `inner` sweeps, a group's stopping once the largest relative change of its
        E[log θ] is below `tol`; the last sweep updates z then θ of every group. Returns the
        sweeps taken."""
        theta = self.theta
        prior = sum(f.message(state, theta) for f in self.problem.neighbours[theta] if f is not self.own)
        alpha = prior + 1.0
        log_b = self.data.expected_log(state).reshape(len(self.doc), -1)
        b = np.exp(log_b - log_b.max(axis=1, keepdims=True))
        if estep == "cvb0":
            resp, sweeps = self._cvb0(alpha, b, state.moments(theta), inner, tol)
        else:
            elog, sweeps = self._collapsed(alpha, b, state.moments(theta).copy(), inner - 1, tol)
            weight = np.exp(elog - elog.max(axis=1, keepdims=True))[self.doc] * b
            resp = weight / weight.sum(axis=1, keepdims=True)
            sweeps += 1
        with np.errstate(divide="ignore"):  # a topic that a token cannot have: log 0
            state.set(self.z, np.log(resp), moments=resp)
        state.set(theta, alpha - 1.0 + self.rows @ resp)
        return sweeps

    def _collapsed(self, alpha, b, elog, sweeps: int, tol: float):
        """`sweeps` mean-field sweeps with z summed out: γ_d = α + θ'_d ⊙ Σ_{t∈d} c_t b_t/(θ'_d·b_t),
        each group frozen from the sweep its own change falls below `tol` (so that a group's fit
        does not depend on the others in the block: a partition of a cluster run gives the same
        answer); the settled groups' rows leave the products once they are a tenth of them."""
        active = np.arange(len(elog))
        live = np.ones(len(active), bool)
        rows, part, doc = self.rows, b, self.doc
        done = 0
        for done in range(1, sweeps + 1):
            theta = np.exp(elog[active] - elog[active].max(axis=1, keepdims=True))
            norm = np.einsum("tk,tk->t", theta[doc], part)
            gamma = alpha[active] + theta * (rows @ (part / norm[:, None]))
            new = digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))
            moving = live & (np.max(np.abs(new - elog[active]) / (1.0 + np.abs(elog[active])), axis=1) >= tol)
            elog[active[live]] = new[live]
            live = moving
            if not moving.any():
                break
            if moving.sum() < 0.9 * len(active):  # drop the settled groups and their rows
                active, live = active[moving], live[moving]
                rows = self.rows[active]
                tokens = rows.indices
                part, doc = b[tokens], np.repeat(np.arange(len(active)), np.diff(rows.indptr))
                rows = type(rows)((rows.data, np.arange(len(tokens)), rows.indptr), shape=(len(active), len(tokens)))
        return elog, done

    def _cvb0(self, alpha, b, elog, inner: int, tol: float):
        """A mean-field sweep from E[log θ], then CVB0 sweeps from the last sweep's counts."""
        weight = np.exp(elog - elog.max(axis=1, keepdims=True))[self.doc] * b
        sweeps = 1
        for sweeps in range(1, inner + 1):
            if sweeps > 1:
                weight = ((self.rows @ resp)[self.doc] - resp + alpha[self.doc]) * b  # one token out
            new = weight / weight.sum(axis=1, keepdims=True)
            if sweeps > 1 and np.max(np.abs(new - resp)) < tol:
                resp = new
                break
            resp = new
        return resp, sweeps


def dirichlet_categorical(problem, names) -> DirichletCategorical | None:
    """The fused block when `names` are a Dirichlet θ and a Categorical z whose only factors are
    z ~ Categorical(θ[d]) and one observed categorical whose components z selects from globals;
    None otherwise (the generic sweep then runs)."""
    parts = _parts(problem, names)
    return DirichletCategorical(problem, *parts) if parts is not None else None


INNER = 30  # E-step iterations at most of LDA's batch sweep (scikit-learn: 100, gensim: 50)


def block_defaults(problem):
    """The schedule of `problem` with LDA's batch defaults where its local block is a Dirichlet–
    Categorical pair and the user left them out: topics drawn at random (`init=random`: the
    locals' random responsibilities average out over hundreds of tokens per topic, so the topics
    would start nearly uniform) and the locals refitted from the prior each sweep for at most
    `INNER` iterations (carried over and updated once, the sweep crawls and the documents keep
    too many topics: docs/tutorials/lda.md). Other models, and stochastic schedules, keep theirs."""
    from dataclasses import replace
    spec = problem.schedule
    if spec.stochastic or _parts(problem, problem.local) is None:
        return spec
    return replace(spec, init=spec.init or "random", inner=spec.inner or INNER)


def _parts(problem, names):
    """(θ, z, z's own factor, the data factor) of a Dirichlet–Categorical block, or None."""
    if len(names) != 2:
        return None
    families = {getattr(problem.families.get(n), "name", None): n for n in names}  # a @joint key has none
    theta, z = families.get("Dirichlet"), families.get("Categorical")
    if theta is None or z is None or z in problem.dataset.arrays or theta in problem.dataset.arrays:
        return None
    own = [f for f in problem.neighbours[z] if f.target.name == z]
    data = [f for f in problem.neighbours[z] if f.target.name != z]
    if len(own) != 1 or len(data) != 1 or len(problem.neighbours[z]) != 2:
        return None
    own, data = own[0], data[0]
    if set(own.reads) != {z, theta} or len(own.reads[theta]) != 1 or own.selector is not None or \
            own.reads[theta][0].index.size != own.target.index.size:
        return None
    if data.selector is None or data.selector.name != z or len(data.reads[z]) != 1 or \
            data.factor.target.name not in problem.model.data or set(data.reads) & set(names) != {z} or \
            data.factor.dist.name != "Categorical":
        return None
    return theta, z, own, data
