"""SQUAREM on the natural parameters (Varadhan & Roland 2008, scheme S3), with a monotonicity
safeguard: coordinate ascent that crawls (a hierarchy's zig-zag, a mixture's late moves) becomes
an extrapolated step along the direction of its last two sweeps.

Every cycle takes two plain sweeps, λ0 → λ1 = F(λ0) → λ2 = F(λ1), and proposes

    r = λ1 − λ0,   v = λ2 − 2λ1 + λ0,   α = −‖r‖/‖v‖ (|α| ≤ the current step bound),
    λ' = λ0 − 2α r + α² v                 (α = −1 gives λ2 itself).

The next sweep starts from λ' and gives F(λ'). The step is kept only when L(F(λ')) ≥ L(λ2);
otherwise the state goes back to λ2 and the sweep is reported as a repeat of L(λ2), so the trace
never decreases. A Gaussian vector held in data space (ppl.infer.low_rank) is not extrapolated:
its λ would be D × D. A λ' outside a family's parameter space (a negative Gamma rate, a precision
that is not positive definite) halves α towards −1 until every variable is valid. The bound on
|α| grows ×4 when a step at the bound is accepted and falls back to 1 after a rejection.
"""

from __future__ import annotations

import numpy as np

from ppl.infer.low_rank import KernelGaussian

HALVINGS = 8  # α → (α − 1)/2 at most this many times to bring λ' back into the parameter space


class Squarem:
    """The accelerator as two hooks around the engine's sweep: `before_sweep` may move the state
    to an extrapolated point, `after_sweep` keeps or rejects the sweep that followed it."""

    def __init__(self, problem):
        self.problem = problem
        self.history: list = []  # naturals of the plain sweeps of the current cycle
        self.fallback = None  # (naturals of λ2, L(λ2), λ2 as solved GaussianSums) during an extrapolated sweep
        self.step_max = 1.0
        self.accepted = self.rejected = 0
        self._elbo = -np.inf

    def before_sweep(self, state) -> None:
        if len(self.history) < 3:
            return
        x0, x1, x2 = self.history
        self.history = []
        proposal = self._extrapolate(x0, x1, x2)
        if proposal is None:
            self.history = [x2]
            return
        self.fallback = (x2, self._elbo, dict(state.factored))
        for name, nat in proposal.items():
            state.set(name, nat)

    def after_sweep(self, state, elbo: float) -> tuple[float, bool]:
        """(ELBO to record, whether the sweep is a new point); reverts a step that lowered L."""
        if self.fallback is not None:
            saved, before, factored = self.fallback
            self.fallback = None
            if elbo < before:
                for name, nat in saved.items():
                    state.set(name, nat, factored=factored.get(name))
                self.rejected += 1
                self.step_max = 1.0
                self.history = [saved]
                self._elbo = before
                return before, False
            self.accepted += 1
        raw = dict(state.natural)  # a q held in data space as it is (reverted to, never extrapolated)
        self.history.append({n: raw[n] for n in self.problem.latent})  # not a block's members
        self._elbo = elbo
        return elbo, True

    def _extrapolate(self, x0: dict, x1: dict, x2: dict) -> dict | None:
        names = [n for n in x2 if n in x0 and n in x1  # extrapolating a data-space q would form its D × D λ
                 and not any(isinstance(x[n], KernelGaussian) for x in (x0, x1, x2))]
        r = {n: x1[n] - x0[n] for n in names}
        v = {n: x2[n] - 2 * x1[n] + x0[n] for n in names}
        norm_r = np.sqrt(sum(float(np.sum(a * a)) for a in r.values()))
        norm_v = np.sqrt(sum(float(np.sum(a * a)) for a in v.values()))
        if not (norm_v > 0 and np.isfinite(norm_v)):
            return None
        alpha = -min(max(norm_r / norm_v, 1.0), self.step_max)
        if alpha == -self.step_max:
            self.step_max *= 4
        for _ in range(HALVINGS):
            if alpha > -1.0 - 1e-3:
                return None
            proposal = {n: x0[n] - 2 * alpha * r[n] + alpha * alpha * v[n] for n in names}
            if all(np.all(self.problem.families[n].valid(proposal[n])) for n in names):
                return proposal
            alpha = (alpha - 1) / 2
        return None


def accelerator(problem, requested: bool | None):
    """The accelerator for this run: SQUAREM by default when every rule is closed-form VMP (the
    safeguard then rests on an ascent guarantee), on request for other deterministic rules (it
    keeps a step only if the objective rose), never for stochastic rules (their ELBO
    differences are noise)."""
    if problem.stochastic or requested is False or (requested is None and not problem.pure_vmp):
        return None
    return Squarem(problem)
