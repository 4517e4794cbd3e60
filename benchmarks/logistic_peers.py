"""The peers of the logistic-regression benchmark, each timed on the same data as ppl.

- scikit-learn's LogisticRegression (lbfgs, L2 with C = 1, no separate intercept: column 0 is
  ones): the MAP under w ~ N(0, I), a point estimate;
- NumPyro SVI (AutoMultivariateNormal, Adam(0.01), full batch) and PyMC full-rank ADVI (Adam 0.01):
  stepped in chunks of `CHUNK` steps; after each chunk the exact ELBO of their Gaussian q is
  computed off the clock, and the run stops once it reaches `target` (the time of that chunk's
  end is reported) or after `budget` seconds of running. Compile time is reported apart.

A missing package gives None (the table says "not installed").
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks._report import one_xla_thread

CHUNK = 200


def run_sklearn(train):
    from sklearn.linear_model import LogisticRegression

    x, y = train
    wall, cpu = time.perf_counter(), time.process_time()
    fit = LogisticRegression(C=1.0, fit_intercept=False, tol=1e-8, max_iter=10_000).fit(x, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    d = x.shape[1]
    return {"wall": wall, "cpu": cpu, "mean": fit.coef_[0], "cov": np.zeros((d, d)), "point": True,
            "iterations": int(fit.n_iter_[0])}


def compiled_svi(svi, *data):
    """(svi, its first state, `step`, compile seconds): `step` runs CHUNK updates of `svi` in one
    jitted loop, compiled here (its first result discarded) so that no run times the compiler."""
    import jax

    start = time.perf_counter()
    state = svi.init(jax.random.PRNGKey(0), *data)
    chunk = jax.jit(lambda s: jax.lax.fori_loop(0, CHUNK, lambda i, s: svi.update(s, *data)[0], s))
    jax.block_until_ready(chunk(state))
    compile_seconds = time.perf_counter() - start

    def step(state):
        state = chunk(state)
        jax.block_until_ready(state)
        return state
    return svi, state, step, compile_seconds


def run_numpyro(train, target, budget, score):
    """NumPyro SVI with a full-rank Gaussian guide; None when NumPyro is not installed."""
    one_xla_thread()
    try:
        import jax
        import jax.numpy as jnp
        import numpyro
        import numpyro.distributions as dist
        from numpyro.infer import SVI, Trace_ELBO
        from numpyro.infer.autoguide import AutoMultivariateNormal
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    x, y = jnp.asarray(train[0]), jnp.asarray(train[1])

    def model(x, y):
        w = numpyro.sample("w", dist.Normal(jnp.zeros(x.shape[1]), 1.0).to_event(1))
        numpyro.sample("y", dist.Bernoulli(logits=x @ w), obs=y)

    svi, state, step, compile_seconds = compiled_svi(SVI(model, AutoMultivariateNormal(model),
                                                         numpyro.optim.Adam(0.01), Trace_ELBO()), x, y)

    def posterior(state):
        params = svi.get_params(state)
        tril = np.asarray(params["auto_scale_tril"])
        return np.asarray(params["auto_loc"]), tril @ tril.T

    return _chunked(step, state, posterior, target, budget, score) | {"compile": compile_seconds}


def run_pymc(train, target, budget, score):
    """PyMC full-rank ADVI; None when PyMC is not installed."""
    try:
        import pymc as pm
    except ImportError:
        return None
    x, y = train
    with pm.Model():
        w = pm.Normal("w", 0.0, 1.0, shape=x.shape[1])
        pm.Bernoulli("y", logit_p=pm.math.dot(x, w), observed=y)
        inference = pm.FullRankADVI(random_seed=0)
        start = time.perf_counter()
        inference.fit(n=1, obj_optimizer=pm.adam(learning_rate=0.01), progressbar=False)
        compile_seconds = time.perf_counter() - start

        def step(state):
            inference.refine(CHUNK, progressbar=False)
            return state

        def posterior(state):
            return inference.approx.mean.eval(), inference.approx.cov.eval()

        return _chunked(step, None, posterior, target, budget, score) | {"compile": compile_seconds}


def _chunked(step, state, posterior, target, budget, score):
    """Run `step` (CHUNK optimiser steps) on the clock and `score` off it, until the ELBO of the
    posterior reaches `target` or the clock passes `budget` seconds."""
    wall = cpu = 0.0
    steps, reached = 0, None
    while wall < budget:
        w0, c0 = time.perf_counter(), time.process_time()
        state = step(state)
        wall, cpu = wall + time.perf_counter() - w0, cpu + time.process_time() - c0
        steps += CHUNK
        if score(*posterior(state)) >= target:
            reached = wall
            break
    mean, cov = posterior(state)
    return {"wall": wall, "cpu": cpu, "mean": mean, "cov": cov, "iterations": steps, "reached": reached}
