"""The Gaussian mixture sweep fused into a few BLAS calls: the same VMP updates and ELBO as the
generic engine (equal to 1e-10, tests/test_fused_mixture.py), at the cost of a hand-written VBEM.

It applies to the model of Bishop §10.2 exactly: π ~ Dirichlet (constant α0), a `@joint`
Normal–Wishart group (μ_k, Λ_k) with constant prior, z[n] ~ Categorical(π), and
x[n] ~ MvNormal(μ[z[n]], Λ[z[n]]) with x fully observed and no row weights. One sweep is

- statistics: one product Rᵀ F with the design F = [x_i x_j (i ≤ j) | x | 1], built once, so
  N_k, Σ r x and Σ r x xᵀ come together (the natural-parameter messages to π and to the group);
- the moments of the group from its natural parameters (K Cholesky factors of D × D);
- the E-step: λ_z = F Gᵀ with E[log π], E[Λ], E[Λμ], E[μᵀΛμ], E[log|Λ|] folded into G, and
  E[z] = softmax(λ_z) with λ_z − max clamped at −700 so that `exp` never enters the subnormal
  range (a responsibility moves by at most e^−700);
- the ELBO at q(z)'s optimum: Σ_n log Σ_k exp λ_nk − KL(q(π) ‖ p(π)) − Σ_k KL(q(μ_k, Λ_k) ‖ p),
  each KL by the exponential-family identity (λ_q − η_p)·E_q[t] − A(λ_q) + A(η_p).

N × K buffers are reused across sweeps: a buffer is written only when nothing but the pool holds
it (its reference count), so the engine, the convergence monitor and SQUAREM, which keep earlier
λ_z, never see an array change under them, and a long run does not page-fault on fresh memory.
E[z] and λ_z are written over the state's own while nothing else holds them, so a plain run holds
two λ_z (this sweep's and the last, which the monitor compares) and one E[z], and so does a SQUAREM
run: the sweep after z was refitted to extrapolated globals writes over that refit's λ_z. The ELBO and its terms
for any state (the initial one, a damped run's) are summed from E[z] in blocks of rows, so no
generic read caches an N-sized gather (docs/benchmarks.md, "Gaussian mixture: cost against N").
"""

from __future__ import annotations

import sys

import numpy as np
from scipy.special import digamma, gammaln

from ppl.families import Categorical, Dirichlet, NormalWishart
from ppl.families.categorical import xlogy0
from ppl.families.normal_wishart import LOG_2PI
from ppl.infer.factors.conjugate import ConjugateFactor
from ppl.infer.factors.joint import JointGaussian, JointPrior
from ppl.infer.rows import row_max
from ppl.infer.state import NumericalBreakdown
from ppl.infer.terms import elbo_terms

CLAMP = -700.0  # exp(−700) ≈ 1e-304: above the subnormal range (2.2e-308)
LOG_2 = np.log(2.0)
POOL = 6  # N × K buffers per pool at most; past that a sweep allocates
BLOCK = 32768  # entries of an N × K block of the E-step (256 KB: in cache)


def mixture_kernel(problem):
    """A `FusedMixture` when `problem` is the Gaussian mixture it covers, else None."""
    if problem.stochastic or problem.damped or problem.guarded or problem.steps or problem.inner != 1:
        return None
    if len(problem.latent) != 3 or len(problem.factors) != 4 or problem.dataset.masks:
        return None
    kinds = {type(problem.families[n]): n for n in problem.latent}
    z, pi, group = kinds.get(Categorical), kinds.get(Dirichlet), kinds.get(NormalWishart)
    if None in (z, pi, group) or problem.local != (z,) or problem.shapes[pi] != ():
        return None
    by_type = {}
    for f in problem.factors:
        if f.row_weights:
            return None
        by_type.setdefault(type(f), []).append(f)
    priors, likelihoods = by_type.get(JointPrior, []), by_type.get(JointGaussian, [])
    conjugate = by_type.get(ConjugateFactor, [])
    if len(priors) != 1 or len(likelihoods) != 1 or len(conjugate) != 2:
        return None
    like = likelihoods[0]
    pi_prior = next((f for f in conjugate if set(f.reads) == {pi}), None)
    selection = next((f for f in conjugate if set(f.reads) == {z, pi} and f.factor.target.name == z), None)
    if (pi_prior is None or selection is None or selection.dist != "Categorical" or like.selector is None
            or like.selector.name != z or set(like.reads) != {z, group} or np.ndim(like.scale) != 0
            or float(like.scale) != 1.0 or like.factor.target.name not in problem.dataset.arrays):
        return None
    return FusedMixture(problem, z, pi, group, (pi_prior, selection, priors[0], like))


class FusedMixture:
    """One sweep of the mixture (M-step of π and of the group, E-step of z) and its ELBO."""

    def __init__(self, problem, z, pi, group, factors):
        self.z, self.pi, self.group = z, pi, group
        self.pi_prior_factor, self.selection, group_prior, self.likelihood = factors
        self.factors, self.latent = problem.factors, problem.latent
        self.data = problem.dataset.arrays[self.likelihood.factor.target.name]
        self.k = problem.families[pi].size
        self.d = d = problem.families[group].dim
        self.eta_group = np.ascontiguousarray(np.broadcast_to(group_prior.eta, (self.k, group_prior.family.size)))
        self.a_group = np.broadcast_to(group_prior.log_partition, (self.k,)).sum()
        self.iu, self.ju = np.triu_indices(d)
        self.t = len(self.iu)
        self.off = np.where(self.iu == self.ju, 1.0, 2.0)  # x_i x_j twice in xᵀ A x when i ≠ j
        self.halves = 0.5 * np.arange(d)
        self.log_pi_term = 0.25 * d * (d - 1) * np.log(np.pi)  # of log Γ_D
        self.to_natural, self.to_coef = self._linear_maps()
        self.features = None  # F, built at the first sweep from the observed values
        self.eta_pi = self.a_pi = None
        self.release()  # the pools, `_elbo` and `_next`

    def _linear_maps(self) -> tuple[np.ndarray, np.ndarray]:
        """Two constant matrices: statistics (Σ r x_i x_j (i ≤ j), Σ r x, N_k) → the group's message
        (Σ r x, −½ N_k, −½ vec Σ r x xᵀ, ½ N_k), and the group's moments (Λμ, μᵀΛμ, vec Λ, log|Λ|)
        → the E-step's coefficients of the design (−½ Λ_ij, twice off the diagonal; Λμ;
        ½ log|Λ| − ½ μᵀΛμ). One small product each instead of a handful of indexed updates."""
        d, t = self.d, self.t
        size = d + 1 + d * d + 1
        to_natural, to_coef = np.zeros((t + d + 1, size)), np.zeros((size, t + d + 1))
        for j, (a, b) in enumerate(zip(self.iu, self.ju)):
            to_natural[j, d + 1 + a * d + b] = to_natural[j, d + 1 + b * d + a] = -0.5
            to_coef[d + 1 + a * d + b, j] = -0.5 * self.off[j]
        to_natural[t:t + d, :d] = np.eye(d)
        to_natural[-1, d], to_natural[-1, -1] = -0.5, 0.5
        to_coef[:d, t:t + d] = np.eye(d)
        to_coef[d, -1], to_coef[-1, -1] = -0.5, 0.5
        return to_natural, to_coef

    def _prepare(self, state) -> None:
        x = np.asarray(self.data, dtype=float).reshape(-1, self.d)  # as bound: a read would cache a copy
        n, d, t = x.shape[0], self.d, self.t
        self.features = np.empty((n, t + d + 1))
        np.multiply(x[:, self.iu], x[:, self.ju], out=self.features[:, :t])
        self.features[:, t:t + d] = x
        self.features[:, -1] = 1.0
        self.stats = np.empty((self.k, t + d + 1))
        self.coef = np.empty((self.k, t + d + 1))
        rows = min(n, max(256, BLOCK // self.k))  # the E-step's block: its row maxima and sums
        self.rowmax, self.rowsum, self.ones = np.empty(rows), np.empty(rows), np.ones(self.k)
        self.eta_pi = np.asarray(self.pi_prior_factor.message(state, self.pi), dtype=float).reshape(1, self.k)
        self.a_pi = float(state.families[self.pi].log_partition(self.eta_pi).sum())

    def sweep(self, state) -> None:
        if self.features is None:
            self._prepare(state)
        if self._next != (id(state), state.versions.get(self.z)):  # else summed by the last E-step
            np.dot(state.moments(self.z).T, self.features, out=self.stats)  # (Σ r x x | Σ r x | N_k)
        nk = self.stats[:, -1]
        pi_nat = self.eta_pi + nk
        alpha = pi_nat[0] + 1.0
        e_logpi = digamma(alpha) - digamma(alpha.sum())
        state.set(self.pi, pi_nat, moments=e_logpi[None, :])
        nat = np.dot(self.stats, self.to_natural)  # η + Σ_n r_nk (x_n, −½, −½ vec x_n x_nᵀ, ½)
        nat += self.eta_group
        moments, a_group = self._group_moments(nat)
        state.set(self.group, nat, moments=moments)
        log_z = self._local_step(state, e_logpi, moments)
        a_pi = gammaln(alpha).sum() - gammaln(alpha.sum())
        kl_pi = float(np.dot(pi_nat[0] - self.eta_pi[0], e_logpi)) - a_pi + self.a_pi
        kl_group = float(np.sum((nat - self.eta_group) * moments)) - a_group + self.a_group
        self._elbo = (id(state), self._versions(state), float(log_z - kl_pi - kl_group))

    def e_step(self, state, names) -> None:
        """q(z) from the current q(π) and q(group): the locals' E-step alone, which SQUAREM runs
        after moving the globals (ppl.infer.schedule.steps.locals_from_globals; `names`, the locals
        it refits, are z alone)."""
        if self.features is None:
            self._prepare(state)
        self._local_step(state, state.moments(self.pi).reshape(-1), state.moments(self.group))

    def _local_step(self, state, e_logpi, moments) -> float:
        """Set q(z) from E[log π] and the group's moments, into spare buffers; returns Σ_n log Σ_k exp λ_nk."""
        coef = np.dot(moments, self.to_coef, out=self.coef)  # λ_z[n, k] = F_n · G_k
        coef[:, -1] += e_logpi - 0.5 * self.d * LOG_2PI
        natural = self._spare("natural", replaced=dict.get(state.natural, self.z))  # not read: written over if free
        resp = self._spare("moments", replaced=state.moments(self.z))
        log_z = self._e_step(coef, natural, resp)
        state.set(self.z, natural, moments=resp)
        self._next = (id(state), state.versions[self.z])
        return log_z

    def _e_step(self, coef, natural, resp) -> float:
        """λ_z = F Gᵀ and E[z] = softmax(λ_z), clamped, in blocks of rows that stay in cache (one
        pass over N × K memory instead of seven), with the next sweep's statistics E[z]ᵀ F summed
        from the same blocks; returns Σ_n log Σ_k exp λ_nk."""
        rows = self.rowmax.shape[0]
        self.stats[:] = 0.0
        log_z = 0.0
        for lo in range(0, natural.shape[0], rows):
            nat, r = natural[lo:lo + rows], resp[lo:lo + rows]
            top, total = self.rowmax[:nat.shape[0]], self.rowsum[:nat.shape[0]]
            np.dot(self.features[lo:lo + rows], coef.T, out=nat)
            row_max(nat, top)
            np.subtract(nat, top[:, None], out=r)
            np.maximum(r, CLAMP, out=r)
            np.exp(r, out=r)
            np.dot(r, self.ones, out=total)  # BLAS: a row of K is too short for a fast np.sum
            r /= total[:, None]
            self.stats += r.T @ self.features[lo:lo + rows]
            log_z += float(top.sum() + np.log(total, out=total).sum())
        return log_z

    def _group_moments(self, nat) -> tuple[np.ndarray, float]:
        """E[t] of the Normal–Wishart group, (Λμ, μᵀΛμ, vec Λ, log|Λ|) per component, and Σ_k A(λ_k)."""
        d, k = self.d, self.k
        beta = -2.0 * nat[:, d]
        mean = nat[:, :d] / beta[:, None]
        inv_scale = -2.0 * nat[:, d + 1:-1].reshape(k, d, d)
        inv_scale -= (beta[:, None] * mean)[:, :, None] * mean[:, None, :]
        dof = 2.0 * nat[:, -1] + d
        sign, logdet_inv = np.linalg.slogdet(inv_scale)
        if not np.all(sign > 0):
            raise NumericalBreakdown(self.group, "the scale matrix of q is not positive definite")
        logdet_scale = -logdet_inv
        scale = np.linalg.inv(inv_scale)
        wm = np.matmul(scale, mean[:, :, None])[:, :, 0]
        moments = np.empty((k, nat.shape[1]))
        moments[:, :d] = dof[:, None] * wm
        moments[:, d] = d / beta + dof * (mean * wm).sum(1)
        moments[:, d + 1:-1] = dof[:, None] * scale.reshape(k, d * d)
        half_dof = 0.5 * dof[:, None] - self.halves
        moments[:, -1] = digamma(half_dof).sum(1) + d * LOG_2 + logdet_scale
        a = -0.5 * d * np.log(beta) + 0.5 * dof * (logdet_scale + d * LOG_2) + gammaln(half_dof).sum(1)
        return moments, float(a.sum()) + k * self.log_pi_term

    def _spare(self, pool: str, replaced=None) -> np.ndarray:
        """An N × K buffer that nothing outside the pool holds, or `replaced` (the state's λ_z or E[z],
        which the sweep replaces; the E-step reads neither) when only the pool and the state do; a
        new one when all are in use."""
        buffers = self.pools[pool]
        for buffer in buffers:
            # the pool's list, the loop variable, the call's argument (+ the state's cache and `replaced`)
            if sys.getrefcount(buffer) <= (5 if buffer is replaced else 3):
                return buffer
        shape = (self.features.shape[0], self.k)
        if (replaced is not None and sys.getrefcount(replaced) <= 3 and replaced.shape == shape  # the state's
                and replaced.dtype == float and replaced.flags.c_contiguous and replaced.flags.writeable):
            buffers.append(replaced)  # first E[z], from its λ: adopted (the state, `replaced`, the argument)
            return replaced
        buffer = np.empty(shape)
        if len(buffers) < POOL:
            buffers.append(buffer)
        return buffer

    def release(self) -> None:
        """Drop the pools and what the last sweep left: a new run (a restart, a benchmark's repeat)
        allocates its own buffers while it initialises, and free ones of the last run would sit
        beside its N × K start; its state may reuse the id of the last run's."""
        self.pools = {"natural": [], "moments": []}  # N × K buffers by kind, reused across sweeps
        self._elbo = None  # (id(state), versions after the sweep, ELBO)
        self._next = None  # (id(state), version of z) whose E[z]ᵀ F `stats` holds

    def _versions(self, state) -> tuple:
        versions = state.versions
        return versions.get(self.pi, 0), versions.get(self.group, 0), versions.get(self.z, 0)

    def elbo(self, state) -> float:
        """The ELBO of the last fused sweep while `state` has not changed since, else the sum of
        the terms with `own_terms` (the initial state, a copy replayed by the engine)."""
        if self._elbo is None or self._elbo[0] != id(state) or self._elbo[1] != self._versions(state):
            return sum(elbo_terms(self.factors, self.latent, state, self.own_terms(state)).values())
        return self._elbo[2]

    def own_terms(self, state) -> dict:
        """The three ELBO terms that sum over rows, for any q(z) (not only at its optimum), keyed for
        `ppl.infer.terms.elbo_terms`: the likelihood's Σ r_nk F_n·G_k, z's own Σ_k N_k E[log π_k] and
        H[q(z)]. Summed in blocks of rows: no N × K temporary, and no generic read that would cache
        N-sized gathers for the rest of the run."""
        if self.features is None:
            self._prepare(state)
        r = state.moments(self.z)
        e_logpi = state.moments(self.pi).reshape(-1)
        coef = np.dot(state.moments(self.group), self.to_coef)
        coef[:, -1] -= 0.5 * self.d * LOG_2PI
        fit = entropy = 0.0
        rows = max(256, BLOCK // self.k)
        for lo in range(0, r.shape[0], rows):
            block = r[lo:lo + rows]
            fit += float(np.sum(block * np.dot(self.features[lo:lo + rows], coef.T)))
            with np.errstate(divide="ignore"):
                entropy -= float(np.sum(xlogy0(block, np.log(block))))
        return {self.likelihood: fit, self.selection: float(np.dot(np.sum(r, axis=0), e_logpi)), self.z: entropy}
