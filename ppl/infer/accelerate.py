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

No step is proposed when −1 − `NEAR_PLAIN` < α < −0.999 (above: the plain point to rounding): on a
linear mode of rate ρ, α = −1/(1 − ρ), so that is a run contracting steadily at ρ < 1/21, where a plain sweep
gains nearly all the step could, while the sweep from λ' costs a fresh evaluation of the messages
at λ' (NC-VMP's quadrature over every row) that a plain sweep takes from the last ELBO's
(covtype-shaped logistic regression: one quadrature pass in eight saved, the same 7 sweeps; no
model in models/ takes more). An oscillating mode (α > −1) keeps its step: kalman_bernoulli under
NC-VMP took 33 sweeps instead of 31 without its α = −0.96.

Under VMP, Varadhan & Roland's floor α ≤ −1. Under the other rules a step −1 < α < 0 is proposed
too: it is an oscillating sweep (‖v‖ > ‖r‖, a linear mode with rate ρ < 0), for which
α = −1/(1 − ρ) lands on the mode's fixed point, where the floor would leave the plain step (NC-VMP
on logistic_regression: 71 → 19 sweeps). The safeguard judges it as any other. (Under VMP, without
the floor, gmm took 39 → 43 sweeps and plain-VMP lda ended at another local optimum.)
"""

from __future__ import annotations

import numpy as np

from ppl.infer.low_rank import KernelGaussian

CHUNK = 65536  # entries of a λ formed at a time by the extrapolation
NEAR_PLAIN = 0.05  # −1 − NEAR_PLAIN < α < −0.999: no step, the plain sweep (module docstring)
HALVINGS = 8  # α → (α − 1)/2 at most this many times to bring λ' back into the parameter space


class Squarem:
    """The accelerator as two hooks around the engine's sweep: `before_sweep` may move the state
    to an extrapolated point, `after_sweep` keeps or rejects the sweep that followed it."""

    def __init__(self, problem, residual: bool = False, requested: bool = True):
        self.problem, self.residual, self.requested = problem, residual, requested
        self.proposal = None  # λ' and ‖λ2 − λ1‖ during an extrapolated sweep (the residual merit)
        self.history: list = []  # naturals of the plain sweeps of the current cycle
        self.fallback = None  # (naturals of λ2, L(λ2), λ2 as solved GaussianSums) during an extrapolated sweep
        self.step_max = 1.0
        self.accepted = self.rejected = 0
        self.extrapolated = False  # the last sweep started from an extrapolated point
        self.floor = 1.0 if problem.pure_vmp else 0.0  # |α| ≥ floor (module docstring)
        self._elbo = -np.inf

    def before_sweep(self, state) -> None:
        if skips_woodbury(self, state):
            self.history = []
            return
        if len(self.history) < 3:
            return
        x0, x1, x2 = self.history
        self.history = []
        proposal = self._extrapolate(x0, x1, x2)
        if proposal is None:
            self.history = [x2]
            return
        move_to(self, state, proposal, x2, _distance([(x2[n], x1[n]) for n in proposal]))

    def after_sweep(self, state, elbo: float) -> tuple[float, bool]:
        """(ELBO to record, whether the sweep is a new point); reverts a step that lowered L."""
        fallback = self.fallback
        if reverted(self, state, elbo):
            self.step_max = 1.0
            self.history = [fallback[0]]
            return self._elbo, False
        raw = dict(state.natural)  # a q held in data space as it is (reverted to, never extrapolated)
        self.history.append({n: raw[n] for n in self.problem.latent})  # not a block's members
        self._elbo = elbo
        return elbo, True

    def _extrapolate(self, x0: dict, x1: dict, x2: dict) -> dict | None:
        names = [n for n in x2 if n in x0 and n in x1  # extrapolating a data-space q would form its D × D λ
                 and not any(isinstance(x[n], KernelGaussian) for x in (x0, x1, x2))]
        norm_r, norm_v = _step_norms([(x0[n], x1[n], x2[n]) for n in names])
        if not (norm_v > 0 and np.isfinite(norm_v)):
            return None
        alpha = -min(max(norm_r / norm_v, self.floor), self.step_max)
        if alpha == -self.step_max:
            self.step_max *= 4
        for _ in range(HALVINGS):
            if -NEAR_PLAIN < alpha + 1.0 < 1e-3:
                return None
            proposal = {n: _proposal(x0[n], x1[n], x2[n], alpha) for n in names}
            if valid(self.problem, proposal):
                return proposal
            alpha = (alpha - 1) / 2
        return None


def skips_woodbury(accel, state) -> bool:
    """Whether a Gaussian is solved in data space (Woodbury) and extrapolation was not asked for:
    λ' would be its dense D × D natural parameters, slower per sweep than the sweeps saved
    (logistic_wide)."""
    return not accel.requested and any(f is not None for f in state.factored.values())


def valid(problem, naturals: dict) -> bool:
    """Whether every proposed λ lies in its family's parameter space."""
    return all(np.all(problem.families[n].valid(nat)) for n, nat in naturals.items())


def move_to(accel, state, proposal: dict, saved: dict, residual: float) -> None:
    """Put the state at the extrapolated `proposal`, keeping the plain point `saved` (with its
    objective and GaussianSums) to fall back to and the last plain residual to judge it by."""
    accel.fallback = (saved, accel._elbo, dict(state.factored))
    accel.proposal = (proposal, residual)
    for name, nat in proposal.items():
        state.set(name, nat)


def reverted(accel, state, elbo: float) -> bool:
    """After a sweep, for either accelerator: whether it started from an extrapolated point and is
    rejected (`worse`), the state then put back at the plain point saved in `accel.fallback`
    (naturals, objective, GaussianSums). Counts kept and rejected steps."""
    accel.extrapolated = accel.fallback is not None
    if accel.fallback is None:
        return False
    saved, before, factored = accel.fallback
    accel.fallback = None
    judged, accel.proposal = accel.proposal, None  # λ' is the state's no more: not kept
    if not worse(accel.residual, judged, state, elbo, before):
        accel.accepted += 1
        return False
    for name, nat in saved.items():
        state.set(name, nat, factored=factored.get(name))
    accel.rejected += 1
    return True


def worse(residual: bool, proposal: tuple, state, elbo: float, before: float) -> bool:
    """Whether the sweep from an extrapolated point λ' is to be rejected: the objective fell below
    `before` (an ascent rule), or, for an objective that is not a bound (Laplace, delta,
    `residual`), the fixed-point residual ‖F(λ') − λ'‖ grew beyond the last plain sweep's (or the
    objective is not finite). `proposal`: (λ', that plain residual)."""
    if not residual or not np.isfinite(elbo):
        return elbo < before
    point, last = proposal
    return _distance([(state.natural[n], point[n]) for n in point]) > last


# The step's arrays are formed a chunk at a time: a local's N × K λ (a mixture's z) would
# otherwise take four N × K temporaries (r, v and the terms of λ') beside the three it keeps.

def _chunks(*arrays):
    """Aligned 1-D chunks of `CHUNK` entries of equally shaped arrays (views where contiguous)."""
    flat = [np.asarray(a).reshape(-1) for a in arrays]
    for lo in range(0, flat[0].size, CHUNK):
        yield [f[lo:lo + CHUNK] for f in flat]


def _step_norms(triples: list) -> tuple[float, float]:
    """‖r‖ and ‖v‖ over all (λ0, λ1, λ2), with r = λ1 − λ0 and v = λ2 − 2λ1 + λ0."""
    rr = vv = 0.0
    for triple in triples:
        for x0, x1, x2 in _chunks(*triple):
            r, v = x1 - x0, x2 - 2 * x1 + x0
            rr, vv = rr + float(np.sum(r * r)), vv + float(np.sum(v * v))
    return float(np.sqrt(rr)), float(np.sqrt(vv))


def _proposal(x0, x1, x2, alpha: float) -> np.ndarray:
    """λ' = λ0 − 2α r + α² v, entry for entry the same arithmetic as on whole arrays."""
    out = np.empty(np.shape(x0))
    for o, a, b, c in _chunks(out, x0, x1, x2):
        o[...] = a - 2 * alpha * (b - a) + alpha * alpha * (c - 2 * b + a)
    return out


def _distance(pairs: list) -> float:
    """‖a − b‖ over all pairs."""
    return float(np.sqrt(sum(float(np.sum((a - b) ** 2)) for pair in pairs for a, b in _chunks(*pair))))


def accelerator(problem, requested: bool | None):
    """The accelerator for this run: SQUAREM by default for every deterministic rule, never for
    stochastic rules (their ELBO differences are noise). Under VMP and the monotone bounds the
    safeguard rests on an ascent guarantee; under NC-VMP and the damped bounds the plain sweep is
    not ascent either, and a step is kept only if the objective rose; under Laplace and delta (an
    objective that is not a bound, falling near its fixed point) only if the fixed-point residual
    did not grow. Evidence on models/: docs/rules/vmp.md#acceleration-squarem. Not by default
    under `cvi` with exact gradients (its site form keeps per-row sites that an extrapolation
    neither moves nor restores), and no step is extrapolated by default while a Gaussian is
    solved in data space (Woodbury: λ' would be dense)."""
    if problem.stochastic or requested is False:
        return None
    if requested is None and any(getattr(f, "rule", "") == "cvi" for f in problem.factors):
        return None
    if requested == "anderson":
        from ppl.infer.anderson import Anderson
        return Anderson(problem, residual=problem.approximate, requested=False)
    return Squarem(problem, residual=problem.approximate, requested=requested in (True, "squarem"))
