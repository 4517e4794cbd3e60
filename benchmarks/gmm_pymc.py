"""PyMC as a peer of the VBEM mixture benchmark (`benchmarks/gmm.py`): the same Bayesian Gaussian
mixture with z summed out, fitted by ADVI (what its ELBO is: `benchmarks/gmm_peers.py`).

The priors are ppl's: π ~ Dirichlet(α₀ 1), Λ_k ~ Wishart(D, I) and μ_k | Λ_k ~ N(0, (β₀Λ_k)⁻¹).
PyMC has no Wishart with a transform that ADVI can use, so Λ_k = A_k A_kᵀ is written through its
Bartlett factor (A_k lower triangular, A_k,ii² ~ χ²_{D − i + 1}, A_k,ij ~ N(0, 1) below the
diagonal: exactly Wishart(D, I)) and μ_k = A_k⁻ᵀ ε_k / √β₀ with ε_k ~ N(0, I). The likelihood
Σ_n log Σ_k π_k N(x_n | μ_k, Λ_k⁻¹) is a `pm.Potential`. ADVI fits a mean-field Gaussian q in
the unconstrained space of (π, A, ε).

The log Σ exp over k is written out with its row maximum subtracted. PyTensor's
`pt.logsumexp` is the bare log Σ exp(l), made stable by graph rewrites: one shifts the value by
the maximum, another turns the gradient exp(l) / Σ exp(l) into a stable softmax. In ADVI's step
function the second did not apply (in FAST_COMPILE mode neither runs, and the step is NaN too):
the gradient is 0 / 0 = NaN on a row whose every component is below e^−745. At 2000 × 10, K = 40
q's first draws put some rows that far from every component (`NanGuardMode`: the first NaN is
the product of −1 / Σ exp(l), −inf on 7 of the 2000 rows, and exp(l)), and q's parameters were
NaN after the first ADVI step, with `pm.fit` and PyMC's defaults too, while the model's own
`dlogp` was finite at the draws we tried around q's start.

The optimiser is Adam with step 0.01, PyMC's best of four we tried on the small size (ELBO every
2,000 steps, 30,000 steps): its default `adagrad_window` at 1e-3 was still at −1160.6 (ppl: −1102.9),
at 1e-2 it reached −1101.9 and then drifted down to −1180.8; Adam at 1e-2 climbed steadily to
−1087.0, at 1e-1 faster but noisier.
"""

from __future__ import annotations

import logging
import time
from functools import partial

import numpy as np

from benchmarks.gmm_peers import ELBO_BATCHES, ELBO_DRAWS, LEARNING_RATE, GradientPeer


class PymcMixture(GradientPeer):
    """The model and ADVI for one data set; `compile_seconds` is what building them cost."""

    name, step_name = "PyMC", "ADVI"

    def __init__(self, x: np.ndarray, k: int, alpha0: float, beta0: float, seed: int = 0):
        import pymc as pm
        import pytensor.tensor as pt
        # PyTensor 2.38's elemwise fusion rewrite fails on this graph (KeyError) and is skipped; it
        # logs a traceback for each compile
        logging.getLogger("pytensor.graph.rewriting.basic").setLevel(logging.CRITICAL)
        start = time.perf_counter()
        n, d = x.shape
        rows, cols = np.tril_indices(d, -1)
        with pm.Model() as self.model:
            pi = pm.Dirichlet("pi", a=alpha0 * np.ones(k))
            chi2 = pm.ChiSquared("chi2", nu=d - np.arange(d), shape=(k, d))  # A_k,ii², Bartlett
            below = pm.Normal("below", 0.0, 1.0, shape=(k, len(rows)))
            eps = pm.Normal("eps", 0.0, 1.0, shape=(k, d))
            a = pt.zeros((k, d, d))
            a = pt.set_subtensor(a[:, np.arange(d), np.arange(d)], pt.sqrt(chi2))
            a = pt.set_subtensor(a[:, rows, cols], below)
            mu = pt.stack([pt.slinalg.solve_triangular(a[j].T, eps[j], lower=False) for j in range(k)]) / np.sqrt(beta0)
            white = pt.batched_dot(pt.as_tensor(x)[None, :, :] - mu[:, None, :], a)  # (K, N, D): (x − μ_k)ᵀ A_k
            logdet = pt.sum(pt.log(pt.diagonal(a, axis1=1, axis2=2)), axis=1)  # ½ log|Λ_k|
            log_lik = (pt.log(pi)[:, None] + logdet[:, None] - 0.5 * d * np.log(2 * np.pi)
                       - 0.5 * pt.sum(white**2, axis=2))
            top = pt.max(log_lik, axis=0)  # the shift pt.logsumexp's gradient lacks (docstring)
            pm.Potential("x", pt.sum(top + pt.log(pt.sum(pt.exp(log_lik - top[None, :]), axis=0))))
            self.advi = pm.ADVI(random_seed=seed)
        # with score=False the step function does not advance its random draws: q fits one draw and diverges
        self._step = self.advi.objective.step_function(
            score=True, obj_optimizer=partial(pm.adam, learning_rate=LEARNING_RATE))
        self._loss = self.advi.objective.score_function(sc_n_mc=ELBO_DRAWS // ELBO_BATCHES)
        self._params = self.advi.approx.params
        self._start = [p.get_value() for p in self._params]
        self.compile_seconds = time.perf_counter() - start

    def reset(self) -> None:
        """Back to ADVI's start (q at its initial point)."""
        self.load(self._start)

    def steps(self, m: int) -> None:
        """`m` ADVI steps from where q is."""
        for _ in range(m):
            self._step()

    def state(self) -> list:
        return [p.get_value().copy() for p in self._params]

    def load(self, state) -> None:
        for p, value in zip(self._params, state):
            p.set_value(value.copy())

    def batch_elbo(self) -> float:
        return -float(self._loss())

    def has_nan(self, state) -> bool:
        return any(np.isnan(value).any() for value in state)
