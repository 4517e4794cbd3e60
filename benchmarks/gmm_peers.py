"""What the gradient peers of the mixture benchmark (`benchmarks/gmm.py`) share: their interface,
the Monte Carlo ELBO of a checkpoint, the run to ppl's ELBO within a CPU budget, and its table.

A peer (`gmm_pymc.PymcMixture`, `gmm_numpyro.NumpyroMixture`) fits the same Bayesian mixture with
z summed out, Σ_n log Σ_k π_k N(x_n | μ_k, Λ_k⁻¹), by stochastic gradient steps on a Gaussian q
over the unconstrained globals. Its ELBO bounds the same log evidence log p(x) as ppl's, of
another q: no q(z), and a Gaussian over (π, Λ, μ) transformed instead of ppl's Dirichlet ×
Normal–Wishart. For one q(π, μ, Λ), summing z out gives a bound at least as high as ppl's with
the best q(z) (Jensen), so a peer reaching ppl's ELBO L* means a q(π, μ, Λ) as good as ppl's.
"""

from __future__ import annotations

import abc
import time

import numpy as np

ELBO_DRAWS, ELBO_BATCHES = 1000, 10  # draws of q for the ELBO estimate at a checkpoint
LEARNING_RATE = 0.01  # Adam's step, every peer (gmm_pymc's docstring: how it was chosen)


class GradientPeer(abc.ABC):
    """A peer's fit; subclasses set `compile_seconds` and define the abstract methods."""

    name, step_name, compile_seconds = "", "", 0.0

    @abc.abstractmethod
    def reset(self) -> None:
        """Start q afresh, at the peer's own initialisation."""

    @abc.abstractmethod
    def steps(self, m: int) -> None:
        """Take `m` optimiser steps."""

    @abc.abstractmethod
    def state(self):
        """A copy of q's parameters and the optimiser's state."""

    @abc.abstractmethod
    def load(self, state) -> None:
        """Put q back at a `state`."""

    @abc.abstractmethod
    def batch_elbo(self) -> float:
        """One ELBO estimate from ELBO_DRAWS / ELBO_BATCHES draws of q."""

    @abc.abstractmethod
    def has_nan(self, state) -> bool:
        """Whether `state` holds a NaN parameter."""

    def elbo(self, state) -> tuple[float, float]:
        """(ELBO estimate, its standard error) of q at `state` from ELBO_DRAWS draws in
        ELBO_BATCHES batches; leaves q at `state`."""
        self.load(state)
        batches = np.array([self.batch_elbo() for _ in range(ELBO_BATCHES)])
        return float(batches.mean()), float(batches.std(ddof=1) / np.sqrt(ELBO_BATCHES))


def reach(peer: GradientPeer, target: float, budget: float, chunk: int = 25) -> dict:
    """The peer from its start, `chunk` steps at a time, until `budget` CPU seconds, with a
    checkpoint (CPU s, wall s, steps, q) at the first chunk past each of the times
    budget·2^(−j/2), j = 0..17; then the ELBO estimate of each checkpoint's q (not timed). The
    first checkpoint whose estimate is ≥ `target` is where the peer reached it (`None`: not
    within the budget), known to within a factor √2 of time; `best` is the highest estimate and
    its standard error; `nan` the steps by which q's parameters were NaN (None: never)."""
    peer.reset()
    times = list(budget * 2.0 ** (-np.arange(17, -1, -1) / 2))
    marks, states, cpu, wall = [], [], time.process_time(), time.perf_counter()
    steps = 0
    while times:
        peer.steps(chunk)
        steps += chunk
        used = time.process_time() - cpu
        if used >= times[0]:
            marks.append((used, time.perf_counter() - wall, steps))
            states.append(peer.state())
            times = [t for t in times if t > used]
    elbos = [peer.elbo(state) for state in states]
    hit = next((i for i, (value, _) in enumerate(elbos) if value >= target), None)
    best = max(range(len(elbos)), key=lambda i: np.nan_to_num(elbos[i][0], nan=-np.inf))
    broken = next((m[2] for m, state in zip(marks, states) if peer.has_nan(state)), None)
    return {"reached": None if hit is None else marks[hit], "best": elbos[best], "best at": marks[best],
            "used": marks[-1], "compile": peer.compile_seconds, "nan": broken}


def reach_table(rows: list[dict], budget: float, gap: float) -> list[str]:
    """The lines of the section's table of the peers' runs to ppl's ELBO (none without peers):
    rows[i]["peers reach"] maps a peer's name to `reach`'s result."""
    if not any(r.get("peers reach") for r in rows):
        return []
    lines = ["PyMC (ADVI) and NumPyro (SVI, `AutoNormal`): a mean-field Gaussian q over the unconstrained",
             f"globals with z summed out, Adam with step {LEARNING_RATE}, one draw per step, from each peer's own",
             f"start, up to {budget:g} CPU seconds per size and peer, one run each, checkpoints at times a factor √2",
             "apart; compile time (model and step function, wall) apart. Their ELBO bounds the same log p(x)",
             "as ppl's, of another q: z summed out and a Gaussian over transformed (π, Λ, μ) instead of ppl's",
             "Dirichlet × Normal–Wishart; for one q(π, μ, Λ) summing z out gives the higher bound, so it is the",
             f"ELBO comparable with ppl's. It is a Monte Carlo estimate ({ELBO_DRAWS} draws of q at each checkpoint,",
             "standard error beside it). PyMC's q is over Λ's Bartlett factor and a whitened μ, NumPyro's over",
             "Λ's Cholesky factor (`WishartCholesky`) and μ (`benchmarks/gmm_pymc.py`, `gmm_numpyro.py`).",
             "PyMC's log Σ_k exp is written with its maximum subtracted: with `pt.logsumexp` its gradient is NaN",
             "at the large size (`gmm_pymc.py` says why). PyTensor, installed by pip here, warns that it could",
             "not link to a BLAS: its compiled code runs without one. The per-step times are in the first table.", "",
             f"| size | ppl's ELBO L* | peer | compile s | to L* − {gap}: steps, CPU / wall s | "
             "best ELBO ± se (steps, CPU s) | steps in the budget |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        for name, p in r.get("peers reach", {}).items():
            hit = p["reached"]
            reached = f"{hit[2]}, {hit[0]:.2f} / {hit[1]:.2f}" if hit else f"not within {budget:g} s"
            best = f"{p['best'][0]:.2f} ± {p['best'][1]:.2f} ({p['best at'][2]}, {p['best at'][0]:.1f})"
            if p["nan"] is not None and np.isnan(p["best"][0]):
                best = f"none: q's parameters are NaN by step {p['nan']}"
            lines.append(f"| {r['size']} | {r['reach']['elbo']:.4f} | {name} | {p['compile']:.1f} | {reached} | "
                         f"{best} | {p['used'][2]} |")
    return lines + [""]
