"""LDA's batch sweep fused: the M-step of the topics, the restarted E-step of every document
(`blocks.DirichletCategorical` on (document, word) pairs) and the ELBO from the E-step's own
normalisers, equal to the generic sweep (tests/test_lda_blocks.py) at the cost of the numpy floor.

It applies to θ_d ~ Dirichlet(α), β_k ~ Dirichlet(η) with constant α and η, z_t ~
Categorical(θ[d_t]) and an observed y_t ~ Categorical(β[z_t]), under the restarted batch
schedule with the mean-field E-step (`batch(inner=...)`, LDA's default). One sweep is

- M-step: λ_β = η − 1 + Σ_p c_p r_p e_{y_p}ᵀ, one sparse product over the pairs p (rows that
  share a document and a word, c_p their weight) from the last E-step's responsibilities
  (`DirichletCategorical.topic_counts`);
- E-step: the documents refitted from the prior (E[log θ] from α, no per-token restart);
- ELBO: Σ_p c_p log Σ_k exp(E log θ_{d_p k} + E log β_{k y_p}) + Σ_dk n_dk (E' log θ − E log θ)_dk
  (z at its optimum given the θ it was fitted to, read at the new θ'), minus KL(q(θ) ‖ p) and
  KL(q(β) ‖ p) by the exponential-family identity (λ_q − η)·E_q[t] − A(λ_q) + A(η).
"""

from __future__ import annotations

import numpy as np

from ppl.infer.schedule.blocks import dirichlet_categorical


def lda_kernel(problem):
    """A `FusedLDA` when `problem` is the LDA it covers under a restarted batch schedule, else None."""
    spec = problem.schedule
    if (spec.stochastic or not spec.restarted or spec.estep != "vmp" or not problem.pure_vmp or problem.damped
            or problem.guarded or problem.steps or problem.inner <= 1 or problem.dataset.masks):
        return None
    block = dirichlet_categorical(problem, list(problem.local))
    if block is None or block.code is None:
        return None
    read = block.data.params["probs"][1]
    beta, theta = read.name, block.theta
    if [n for n in problem.latent if n not in problem.local] != [beta]:
        return None
    size = int(np.prod(problem.shapes[beta], dtype=np.int64))
    beta_priors = [f for f in problem.neighbours[beta] if f is not block.data]
    theta_priors = [f for f in problem.neighbours[theta] if f is not block.own]
    if (not np.array_equal(read.components, np.arange(size)) or len(beta_priors) != 1 or len(theta_priors) != 1
            or any(set(f.reads) != {n} for f, n in ((beta_priors[0], beta), (theta_priors[0], theta)))
            or not _same(block.own.count(theta), block.data.count(beta))):
        return None
    return FusedLDA(problem, block, beta, beta_priors[0], theta_priors[0])


def _same(a, b) -> bool:
    """The z statement and the data statement weigh their rows alike (no weights, or the same)."""
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


class FusedLDA:
    """One batch sweep of LDA (M-step of β, E-step of every document) and its ELBO."""

    def __init__(self, problem, block, beta, beta_prior, theta_prior):
        self.block, self.beta = block, beta
        self.inner, self.tol = problem.inner, problem.schedule.local_tol  # not the problem: no cycle through its kernel
        self.theta, self.z = block.theta, block.z
        self.beta_prior, self.theta_prior = beta_prior, theta_prior
        self.eta_beta = self.eta_theta = None  # the priors' natural parameters, at the first sweep
        self._elbo = None  # (the state's version key after the sweep, ELBO)
        self.unwritten = False  # z's q not yet written from the last sweep's responsibilities (`settle`)

    def _prepare(self, state) -> None:
        beta, theta = self.beta, self.theta
        shape = state.natural[beta].shape
        self.eta_beta = np.broadcast_to(self.beta_prior.message(state, beta), shape).copy()
        self.a_beta = float(state.families[beta].log_partition(self.eta_beta).sum())
        groups = state.natural[theta].shape
        self.eta_theta = np.broadcast_to(self.theta_prior.message(state, theta), groups).copy()
        self.a_theta = float(state.families[theta].log_partition(self.eta_theta).sum())
        self.elog_prior = state.families[theta].to_mean(self.eta_theta)

    def sweep(self, state) -> None:
        if self.eta_beta is None:
            self._prepare(state)
        beta, theta, block = self.beta, self.theta, self.block
        counts = block.topic_counts(state)
        if counts is None:  # z written by someone else (the random start): its message, as the generic sweep
            counts = block.data.message(state, beta)
        nat = self.eta_beta + counts
        family = state.families[beta]
        elog_beta = family.to_mean(nat)
        state.set(beta, nat, moments=elog_beta)
        block.fit(state, self.inner, self.tol, alpha=self.eta_theta + 1.0, elog=self.elog_prior, write_z=False)
        self.unwritten = True
        kl_beta = float(np.sum((nat - self.eta_beta) * elog_beta)) - float(family.log_partition(nat).sum()) + \
            self.a_beta
        theta_nat, theta_family = state.natural[theta], state.families[theta]
        kl_theta = float(np.sum((theta_nat - self.eta_theta) * state.moments(theta))) - \
            float(theta_family.log_partition(theta_nat).sum()) + self.a_theta
        self._elbo = (self._key(state), block.local_bound(state) - kl_theta - kl_beta)

    def settle(self, state) -> None:
        """Write z's q from the last sweep's responsibilities, for a reader of the whole state
        (the run's end, per-sweep ELBO terms): a sweep itself reads only the block's
        responsibilities and its ELBO the E-step's normalisers, so z's logarithms and their
        copies to the tokens (8% of a sweep on Reuters) are written once, not every sweep."""
        if self.unwritten:
            current = self._elbo is not None and self._elbo[0] == self._key(state)
            self.block.write_z(state)
            self.unwritten = False
            if current:  # the ELBO of the sweep is that of the q just written
                self._elbo = (self._key(state), self._elbo[1])

    def _key(self, state) -> tuple:
        return self.block.data.version_key(state, (self.beta, self.theta, self.z))

    def elbo(self, state) -> float | None:
        """The ELBO of the last fused sweep while `state` has not changed since, else None."""
        if self._elbo is None or self._elbo[0] != self._key(state):
            return None
        return self._elbo[1]
