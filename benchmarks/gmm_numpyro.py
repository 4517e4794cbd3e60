"""NumPyro as a peer of the VBEM mixture benchmark (`benchmarks/gmm.py`): the same Bayesian
Gaussian mixture with z summed out, fitted by SVI with a mean-field Gaussian guide (what its
ELBO is: `benchmarks/gmm_peers.py`).

The priors are ppl's, in NumPyro's own distributions: π ~ Dirichlet(α₀ 1); the Cholesky factor
L_k of Λ_k ~ `WishartCholesky(D, I)` (Wishart(D, I) on Λ_k = L_k L_kᵀ, with the Jacobian of
Λ → L); μ_k | Λ_k ~ `MultivariateNormal(0, precision β₀ Λ_k)`. The likelihood
Σ_n log Σ_k π_k N(x_n | μ_k, Λ_k⁻¹) is a `numpyro.factor`, by `jax.nn.logsumexp` (stable
value and gradient). The guide is `AutoNormal`: a mean-field Gaussian over the unconstrained
(stick-breaking π, L_k with its diagonal's log, μ_k), from NumPyro's default start (uniform in
(−2, 2) unconstrained, scale 0.1), one draw per step, Adam with step 0.01 as PyMC. What differs
from PyMC's peer: q is over L_k instead of the Bartlett factor and μ_k instead of the whitened
ε_k, and the start. Float64 (`jax_enable_x64`), one XLA thread.

`steps(m)` runs m SVI updates in one jitted `fori_loop` (m a traced argument: compiled once);
`compile_seconds` is the guide's initialisation and that compilation, wall time.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._report import one_xla_thread
from benchmarks.gmm_peers import ELBO_BATCHES, ELBO_DRAWS, LEARNING_RATE, GradientPeer


class NumpyroMixture(GradientPeer):
    """The model, guide and SVI for one data set."""

    name, step_name = "NumPyro", "SVI"

    def __init__(self, x: np.ndarray, k: int, alpha0: float, beta0: float, seed: int = 0):
        one_xla_thread()
        import jax
        import jax.numpy as jnp
        import numpyro
        import numpyro.distributions as dist
        from numpyro.infer import SVI, Trace_ELBO
        from numpyro.infer.autoguide import AutoNormal
        jax.config.update("jax_enable_x64", True)
        start = time.perf_counter()
        n, d = x.shape
        data = jnp.asarray(x)

        def model(x):
            pi = numpyro.sample("pi", dist.Dirichlet(alpha0 * jnp.ones(k)))
            with numpyro.plate("k", k):
                chol = numpyro.sample("L", dist.WishartCholesky(d, jnp.eye(d)))  # Λ_k = L_k L_kᵀ
                mu = numpyro.sample("mu", dist.MultivariateNormal(
                    jnp.zeros(d), precision_matrix=beta0 * chol @ jnp.swapaxes(chol, -1, -2)))
            white = jnp.einsum("knd,kde->kne", x[None, :, :] - mu[:, None, :], chol)  # (x − μ_k)ᵀ L_k
            logdet = jnp.log(jnp.diagonal(chol, axis1=1, axis2=2)).sum(1)  # ½ log|Λ_k|
            log_lik = (jnp.log(pi)[:, None] + logdet[:, None] - 0.5 * d * jnp.log(2 * jnp.pi)
                       - 0.5 * (white**2).sum(2))
            numpyro.factor("x", jax.nn.logsumexp(log_lik, axis=0).sum())

        guide = AutoNormal(model)
        svi = SVI(model, guide, numpyro.optim.Adam(LEARNING_RATE), Trace_ELBO())
        self._start = svi.init(jax.random.PRNGKey(seed), data)
        run = jax.jit(lambda state, m: jax.lax.fori_loop(0, m, lambda i, s: svi.update(s, data)[0], state))
        self._run = lambda state, m: jax.block_until_ready(run(state, m))
        self._run(self._start, 1)  # compile (the result is discarded)
        loss = Trace_ELBO(num_particles=ELBO_DRAWS // ELBO_BATCHES, vectorize_particles=False)
        self._loss = jax.jit(lambda key, state: loss.loss(key, svi.get_params(state), model, guide, data))
        self._key = jax.random.PRNGKey(seed + 1)
        self._split, self._params, self._leaves = jax.random.split, svi.get_params, jax.tree_util.tree_leaves
        self.compile_seconds = time.perf_counter() - start
        self._state = self._start

    def reset(self) -> None:
        """Back to SVI's start (the guide's initial parameters, Adam's state and the draws' key)."""
        self._state = self._start

    def steps(self, m: int) -> None:
        """`m` SVI steps from where q is."""
        self._state = self._run(self._state, m)

    def state(self):
        return self._state  # immutable: a checkpoint needs no copy

    def load(self, state) -> None:
        self._state = state

    def batch_elbo(self) -> float:
        self._key, key = self._split(self._key)
        return -float(self._loss(key, self._state))

    def has_nan(self, state) -> bool:
        return any(np.isnan(np.asarray(v)).any() for v in self._leaves(self._params(state)))
