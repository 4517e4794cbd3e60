"""PyMC as a peer of the VBEM mixture benchmark (`benchmarks/gmm.py`): the same Bayesian Gaussian
mixture, fitted by ADVI.

The priors are ppl's: π ~ Dirichlet(α₀ 1), Λ_k ~ Wishart(D, I) and μ_k | Λ_k ~ N(0, (β₀Λ_k)⁻¹).
PyMC has no Wishart with a transform that ADVI can use, so Λ_k = A_k A_kᵀ is written through its
Bartlett factor (A_k lower triangular, A_k,ii² ~ χ²_{D − i + 1}, A_k,ij ~ N(0, 1) below the
diagonal: exactly Wishart(D, I)) and μ_k = A_k⁻ᵀ ε_k / √β₀ with ε_k ~ N(0, I). The labels z are
summed out: the likelihood is Σ_n log Σ_k π_k N(x_n | μ_k, Λ_k⁻¹), a `pm.Potential`. ADVI fits a
mean-field Gaussian q in the unconstrained space of (π, A, ε).

Its ELBO bounds the same log evidence log p(x) as ppl's, but of another q: no q(z) (z summed
out), and a Gaussian over (π, A, ε) instead of ppl's Dirichlet × Normal–Wishart. For one
q(π, μ, Λ), summing z out gives a bound at least as high as ppl's with the best q(z) (Jensen), so
ADVI reaching ppl's ELBO L* would mean a q(π, μ, Λ) as good as ppl's. Its ELBO is a Monte Carlo
estimate: `elbo` averages `ELBO_DRAWS` draws (standard error reported).

The optimiser is Adam with step 0.01, PyMC's best of four we tried on the small size (ELBO every
2,000 steps, 30,000 steps): its default `adagrad_window` at 1e-3 was still at −1160.6 (ppl: −1102.9),
at 1e-2 it reached −1101.9 and then drifted down to −1180.8; Adam at 1e-2 climbed steadily to
−1087.0, at 1e-1 faster but noisier. At 2000 × 10, K = 40 q's parameters are NaN after the first
step, with `pm.fit` and PyMC's defaults too, though the model's gradient is finite at the start and
around it (also with α₀ = 0.1): not diagnosed further.
"""

from __future__ import annotations

import logging
import time
from functools import partial

import numpy as np

ELBO_DRAWS, ELBO_BATCHES = 1000, 10  # draws of q for the ELBO estimate at a checkpoint
LEARNING_RATE = 0.01  # Adam's step (see the module docstring)


class PymcMixture:
    """The model and ADVI for one data set; `compile_seconds` is what building them cost."""

    def __init__(self, x: np.ndarray, k: int, alpha0: float, beta0: float, seed: int = 0, optimizer=None):
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
            pm.Potential("x", pt.sum(pt.logsumexp(log_lik, axis=0)))
            self.advi = pm.ADVI(random_seed=seed)
        optimizer = optimizer or partial(pm.adam, learning_rate=LEARNING_RATE)
        # with score=False the step function does not advance its random draws: q fits one draw and diverges
        self._step = self.advi.objective.step_function(score=True, obj_optimizer=optimizer)
        self._loss = self.advi.objective.score_function(sc_n_mc=ELBO_DRAWS // ELBO_BATCHES)
        self._params = self.advi.approx.params
        self._start = [p.get_value() for p in self._params]
        self.compile_seconds = time.perf_counter() - start

    def reset(self) -> None:
        """Back to ADVI's start (q at its initial point)."""
        for p, value in zip(self._params, self._start):
            p.set_value(value.copy())

    def steps(self, m: int) -> None:
        """`m` ADVI steps from where q is."""
        for _ in range(m):
            self._step()

    def state(self) -> list:
        return [p.get_value().copy() for p in self._params]

    def elbo(self, state) -> tuple[float, float]:
        """(ELBO estimate, its standard error) of q at `state` from `ELBO_DRAWS` draws, in
        `ELBO_BATCHES` batches; leaves q at `state`."""
        for p, value in zip(self._params, state):
            p.set_value(value)
        batches = -np.array([float(self._loss()) for _ in range(ELBO_BATCHES)])
        return float(batches.mean()), float(batches.std(ddof=1) / np.sqrt(ELBO_BATCHES))


def pymc_reach(pmx: PymcMixture, target: float, budget: float, chunk: int = 25) -> dict:
    """ADVI from its start, `chunk` steps at a time, until `budget` CPU seconds, with a checkpoint
    (CPU s, wall s, steps, q) at the first chunk past each of the times budget·2^(−j/2), j = 0..17;
    then the ELBO estimate of each checkpoint's q (not timed). The first checkpoint whose estimate
    is ≥ `target` is where ADVI reached it (`None`: not within the budget), known to within a
    factor √2 of time; `best` is the highest estimate and its standard error."""
    pmx.reset()
    times = list(budget * 2.0 ** (-np.arange(17, -1, -1) / 2))
    marks, states, cpu, wall = [], [], time.process_time(), time.perf_counter()
    steps = 0
    while times:
        pmx.steps(chunk)
        steps += chunk
        used = time.process_time() - cpu
        if used >= times[0]:
            marks.append((used, time.perf_counter() - wall, steps))
            states.append(pmx.state())
            times = [t for t in times if t > used]
    elbos = [pmx.elbo(state) for state in states]
    hit = next((i for i, (value, _) in enumerate(elbos) if value >= target), None)
    best = max(range(len(elbos)), key=lambda i: np.nan_to_num(elbos[i][0], nan=-np.inf))
    broken = next((m[2] for m, state in zip(marks, states) if any(np.isnan(v).any() for v in state)), None)
    return {"reached": None if hit is None else marks[hit], "best": elbos[best], "best at": marks[best],
            "used": marks[-1], "compile": pmx.compile_seconds, "nan": broken}


def pymc_table(rows: list[dict], budget: float, reach: float) -> list[str]:
    """The lines of the section's PyMC table (none if PyMC was not installed)."""
    rows = [r for r in rows if "PyMC reach" in r]
    if not rows:
        return []
    lines = [f"PyMC: ADVI (mean-field, Adam with step {LEARNING_RATE}, one draw per step) from its",
             f"own start, up to {budget:g} CPU seconds per size, one run, checkpoints at times a factor √2",
             "apart; compile time (model and step function, wall) apart. Its ELBO bounds the same log p(x)",
             "as ppl's, of another q: z summed out and a Gaussian",
             "over (π, the Bartlett factors of Λ, whitened μ) instead of ppl's Dirichlet × Normal–Wishart; for one",
             "q(π, μ, Λ) summing z out gives the higher bound, so it is the ELBO comparable with ppl's. It is a",
             f"Monte Carlo estimate ({ELBO_DRAWS} draws of q at each checkpoint, standard error beside it).",
             "PyTensor, installed by pip here, warns that it could not link to a BLAS: its compiled code runs",
             "without one. The per-step times are in the first table.", "",
             f"| size | ppl's ELBO L* | PyMC compile s | PyMC to L* − {reach}: steps, CPU / wall s | "
             "PyMC's best ELBO ± se (steps, CPU s) | ADVI steps in the budget |", "|---|---|---|---|---|---|"]
    for r in rows:
        p = r["PyMC reach"]
        hit = p["reached"]
        reached = f"{hit[2]}, {hit[0]:.2f} / {hit[1]:.2f}" if hit else f"not within {budget:g} s"
        best = f"{p['best'][0]:.2f} ± {p['best'][1]:.2f} ({p['best at'][2]}, {p['best at'][0]:.1f})"
        if p["nan"] is not None and np.isnan(p["best"][0]):
            best = f"none: q's parameters are NaN by step {p['nan']}"
        lines.append(f"| {r['size']} | {r['reach']['elbo']:.4f} | {p['compile']:.1f} | {reached} | {best} | "
                     f"{p['used'][2]} |")
    return lines + [""]
