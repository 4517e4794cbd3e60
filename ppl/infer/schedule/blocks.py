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
    components of; `doc` the element of θ each row reads."""

    def __init__(self, problem, theta: str, z: str, own, data):
        self.problem, self.theta, self.z, self.own, self.data = problem, theta, z, own, data
        self.doc = own.reads[theta][0].index.reshape(-1)
        self.groups = int(np.prod(problem.shapes[theta], dtype=np.int64))
        order = np.diff(self.doc)
        self.starts = np.flatnonzero(np.r_[True, order != 0]) if np.all(order >= 0) else None

    def fit(self, state, inner: int, tol: float, estep: str = "vmp") -> int:
        """At most `inner` sweeps until the largest relative change of E[log θ] is below `tol`;
        returns the sweeps taken."""
        problem, theta = self.problem, self.theta
        prior = sum(f.message(state, theta) for f in problem.neighbours[theta] if f is not self.own)
        log_b = self.data.expected_log(state).reshape(len(self.doc), -1)
        shift = log_b.max(axis=1, keepdims=True)
        b = np.exp(log_b - shift)
        count = self.own.count(theta)
        count = None if count is None else np.asarray(count, float).reshape(-1, 1)
        elog = state.moments(theta)
        alpha = prior + 1.0
        resp = None
        sweeps = 0
        for sweeps in range(1, inner + 1):
            if estep == "cvb0" and resp is not None:
                weight = (totals[self.doc] - resp + alpha[self.doc]) * b  # one token out, even of a counted row
            else:
                weight = np.exp(elog - elog.max(axis=1, keepdims=True))[self.doc] * b
            resp = weight / weight.sum(axis=1, keepdims=True)
            totals = self._sum(resp if count is None else resp * count)
            gamma = alpha + totals
            new = digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))
            change = float(np.max(np.abs(new - elog) / (1.0 + np.abs(elog)), initial=0.0))
            elog = new
            if change < tol:
                break
        with np.errstate(divide="ignore"):  # a topic that a token cannot have: log 0
            state.set(self.z, np.log(resp), moments=resp)
        state.set(theta, gamma - 1.0)
        return sweeps

    def _sum(self, rows: np.ndarray) -> np.ndarray:
        """Σ of `rows` over each group's rows: a running sum over contiguous groups, else bincount."""
        if self.starts is not None:
            out = np.zeros((self.groups, rows.shape[1]))
            out[self.doc[self.starts]] = np.add.reduceat(rows, self.starts, axis=0)
            return out
        return np.stack([np.bincount(self.doc, rows[:, k], minlength=self.groups) for k in range(rows.shape[1])],
                        axis=1)


def dirichlet_categorical(problem, names) -> DirichletCategorical | None:
    """The fused block when `names` are a Dirichlet θ and a Categorical z whose only factors are
    z ~ Categorical(θ[d]) and one observed categorical whose components z selects from globals;
    None otherwise (the generic sweep then runs)."""
    if len(names) != 2:
        return None
    families = {problem.families[n].name: n for n in names}
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
    return DirichletCategorical(problem, theta, z, own, data)
