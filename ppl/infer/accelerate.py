"""SQUAREM on the natural parameters (Varadhan & Roland 2008, scheme S3), with a monotonicity
safeguard: coordinate ascent that crawls (a hierarchy's zig-zag, a mixture's late moves) becomes
an extrapolated step along the direction of its last two sweeps.

Every cycle takes two plain sweeps, λ0 → λ1 = F(λ0) → λ2 = F(λ1), and proposes

    r = λ1 − λ0,   v = λ2 − 2λ1 + λ0,   α = −‖r‖/‖v‖ (|α| ≤ the current step bound),
    λ' = λ0 − 2α r + α² v                 (α = −1 gives λ2 itself).

The next sweep starts from λ' and gives F(λ'). The step is kept only when L(F(λ')) ≥ L(λ2);
otherwise the state goes back to λ2 and the sweep is reported as a repeat of L(λ2), so the trace
never decreases. A local variable whose λ has more than `SMALL_LOCAL` entries (a mixture's N × K
responsibilities) is not extrapolated: the cycle keeps the globals' λ only, and after moving them
the locals are refitted to them by one E-step (ppl.infer.schedule.steps.locals_from_globals), so
the sweep from λ' is the sweep map of the globals alone. That keeps no N-sized snapshot (a
mixture at 1e7 rows: peak memory in docs/benchmarks.md, "Gaussian mixture: cost against N");
a mixture of 1e5 rows (benchmarks/gmm.py's data, K = 5) took 155 sweeps so, against 208 with z
extrapolated. Smaller locals are extrapolated with the globals, which took fewer sweeps than
refitting them on models/ (casino 37 against 51, hierarchical_logistic 11 against 15).
A Gaussian vector held in data space (ppl.infer.low_rank, Woodbury) or by its coordinate sites
(ppl.infer.coordinate_gaussian, a GP's) is extrapolated on its sites:
λ = c λ₀ + (Rᵀh, −½ Rᵀ diag(τ) R) is linear in (c, h, τ) on the same rows R, so the step on the
N + N + 1 site values is the step on λ without forming its D × D array (logistic_wide: 43 → 23
sweeps), and a λ' with some τ < 0 (not solvable in data space) or a Λ with no Cholesky factor
counts as invalid. When the sites do not line up (a prior that moved between the sweeps: ctm's
μ) no step is proposed: stepping the others alone took ctm under `delta` to another fixed point.
A λ' outside a family's parameter space (a negative Gamma rate, a precision that is not positive
definite) halves α towards −1 until every variable is valid. The bound on |α| grows ×4 when a step at the
bound is accepted and falls back to 1 after a rejection.

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

from ppl.infer.held_gaussian import HeldGaussian
from ppl.infer.low_rank import GaussianSum, same_array
from ppl.infer.schedule.steps import locals_from_globals

CHUNK = 65536  # entries of a λ formed at a time by the extrapolation
SMALL_LOCAL = 65536  # entries: a local λ up to this size is extrapolated, a larger one refitted (module docstring)
NEAR_PLAIN = 0.05  # −1 − NEAR_PLAIN < α < −0.999: no step, the plain sweep (module docstring)
HALVINGS = 8  # α → (α − 1)/2 at most this many times to bring λ' back into the parameter space


class Squarem:
    """The accelerator as two hooks around the engine's sweep: `before_sweep` may move the state
    to an extrapolated point, `after_sweep` keeps or rejects the sweep that followed it."""

    def __init__(self, problem, residual: bool = False, names=None, refit: bool = True):
        self.problem, self.residual = problem, residual
        self.proposal = None  # λ' and ‖λ2 − λ1‖ during an extrapolated sweep (the residual merit)
        self.names = names  # the variables extrapolated: the globals and the small locals (module docstring)
        self.refit = refit  # False: the locals are not in this process (a cluster refits them: ppl.cluster.batch)
        self.history: list = []  # their naturals after the plain sweeps of the current cycle
        self.fallback = None  # (globals of λ2, L(λ2), q of λ2 as `State.keep` holds it) during an extrapolated sweep
        self.step_max = 1.0
        self.accepted = self.rejected = 0
        self.extrapolated = False  # the last sweep started from an extrapolated point
        self.floor = 1.0 if problem.pure_vmp else 0.0  # |α| ≥ floor (module docstring)
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
        last = _distance([(x2[n], x1[n]) for n in proposal]) if self.residual else None  # only `worse` reads it
        move_to(self, state, proposal, x2, last)

    def after_sweep(self, state, elbo: float) -> tuple[float, bool]:
        """(ELBO to record, whether the sweep is a new point); reverts a step that lowered L."""
        fallback = self.fallback
        if reverted(self, state, elbo):
            self.step_max = 1.0
            self.history = [fallback[0]]
            return self._elbo, False
        raw = dict(state.natural)  # a q held in data space as it is (stepped on its sites: `_vector`)
        if self.names is None:
            self.names = [n for n in self.problem.latent  # not a block's members
                          if n not in self.problem.local or np.size(raw[n]) <= SMALL_LOCAL]
        self.history.append({n: raw[n] for n in self.names})
        self._elbo = elbo
        return elbo, True

    def _extrapolate(self, x0: dict, x1: dict, x2: dict) -> dict | None:
        names = [n for n in x2 if n in x0 and n in x1]
        if not all(_alike(x0[n], x1[n], x2[n]) for n in names):
            return None  # a q in data space whose sites do not line up (its prior moved): no step
        triples = {n: tuple(_vector(x[n]) for x in (x0, x1, x2)) for n in names}
        norm_r, norm_v = _step_norms(list(triples.values()))
        if not (norm_v > 0 and np.isfinite(norm_v)):
            return None
        alpha = -min(max(norm_r / norm_v, self.floor), self.step_max)
        if alpha == -self.step_max:
            self.step_max *= 4
        for _ in range(HALVINGS):
            if -NEAR_PLAIN < alpha + 1.0 < 1e-3:
                return None
            proposal = {n: _proposal(*triples[n], alpha) for n in names}
            proposal.update({n: _solved(self.problem.families[n], x2[n], proposal[n])
                             for n in names if isinstance(x2[n], HeldGaussian)})
            if valid(self.problem, proposal):
                return proposal
            alpha = (alpha - 1) / 2
        return None


def valid(problem, naturals: dict) -> bool:
    """Whether every proposed λ lies in its family's parameter space (a q held in data space was
    solved, so it does; None: it could not be)."""
    return all(nat is not None and (isinstance(nat, HeldGaussian) or np.all(problem.families[n].valid(nat)))
               for n, nat in naturals.items())


def _alike(*values) -> bool:
    """Whether λ's can be extrapolated (or compared) together: arrays, or q's held in data space on the same
    rows and prior (their sites then line up)."""
    kernels = [isinstance(v, HeldGaussian) for v in values]
    if not any(kernels):
        return True
    first = values[0]
    return all(kernels) and all(same_array(v.rows, first.rows) and v.factored.base is first.factored.base
                                and len(v.factored.parts) == 1 for v in values)


def _vector(value) -> np.ndarray:
    """λ as the step sees it: an array as it is, a q held in data space as its sites (c, h, τ)."""
    if not isinstance(value, HeldGaussian):
        return value
    _, h, tau = value.factored.parts[0]
    return np.concatenate([[value.factored.scale], h, tau])


def _solved(family, like: HeldGaussian, sites: np.ndarray) -> HeldGaussian | None:
    """The q held as `like` with the sites (c, h, τ) on its rows and prior; None where it
    has none (some τ < 0, c ≤ 0)."""
    n = len(like.tau)
    total = GaussianSum(like.factored.base, [(like.rows, sites[1:n + 1], sites[n + 1:])], sites[0])
    return total.solve(family, like.factored)


def move_to(accel, state, proposal: dict, saved: dict, residual: float) -> None:
    """Put the state at the extrapolated `proposal`, the locals it leaves out refitted to it
    (`locals_from_globals`; a small local keeps its extrapolated λ; a cluster's partitions refit
    theirs in the round that follows, `ppl.cluster.batch`), keeping the plain point
    (`saved`: its extrapolated naturals; its objective; every q as it is) to fall back to and the
    last plain residual to judge it by."""
    problem = accel.problem
    refitted = [n for n in problem.local if n not in proposal]
    accel.fallback = (saved, accel._elbo, state.keep(problem.latent, bare=refitted))
    accel.proposal = (proposal, residual)
    state.extrapolated = True
    for name, nat in proposal.items():
        state.set(name, nat, factored=nat.factored if isinstance(nat, HeldGaussian) else None)
    if refitted and getattr(accel, "refit", True):
        locals_from_globals(problem, state, refitted)


def reverted(accel, state, elbo: float) -> bool:
    """After a sweep, for either accelerator: whether it started from an extrapolated point and is
    rejected (`worse`), the state then put back at the plain point saved in `accel.fallback`
    (`State.restore`: the caches of that point hold again). Counts kept and rejected steps."""
    accel.extrapolated = accel.fallback is not None
    state.extrapolated = False
    if accel.fallback is None:
        return False
    _, before, kept = accel.fallback
    accel.fallback = None
    judged, accel.proposal = accel.proposal, None  # λ' is the state's no more: not kept
    if not worse(accel.residual, judged, state, elbo, before):
        accel.accepted += 1
        return False
    state.restore(kept)
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
    pairs = [(dict.get(state.natural, n), point[n]) for n in point]
    return not all(_alike(*pair) for pair in pairs) or _distance(pairs) > last  # unlike: no residual to compare


# The step's arrays are formed a chunk at a time: a local's N × K λ (a mixture's z) would
# otherwise take four N × K temporaries (r, v and the terms of λ') beside the three it keeps.

def _chunks(*arrays):
    """Aligned 1-D chunks of `CHUNK` entries of equally shaped arrays (views where contiguous); arrays
    of one chunk are that chunk, without a generator (the globals of most models: every sweep)."""
    flat = [np.asarray(a).reshape(-1) for a in arrays]
    if flat[0].size <= CHUNK:
        return (flat,)
    return ([f[lo:lo + CHUNK] for f in flat] for lo in range(0, flat[0].size, CHUNK))


def _step_norms(triples: list) -> tuple[float, float]:
    """‖r‖ and ‖v‖ over all (λ0, λ1, λ2), with r = λ1 − λ0 and v = λ2 − 2λ1 + λ0."""
    rr = vv = 0.0
    for triple in triples:
        for x0, x1, x2 in _chunks(*triple):
            r, v = x1 - x0, x2 - 2 * x1 + x0
            rr, vv = rr + float((r * r).sum()), vv + float((v * v).sum())
    return float(np.sqrt(rr)), float(np.sqrt(vv))


def _proposal(x0, x1, x2, alpha: float) -> np.ndarray:
    """λ' = λ0 − 2α r + α² v, entry for entry the same arithmetic as on whole arrays."""
    out = np.empty(np.shape(x0))
    for o, a, b, c in _chunks(out, x0, x1, x2):
        o[...] = a - 2 * alpha * (b - a) + alpha * alpha * (c - 2 * b + a)
    return out


def _distance(pairs: list) -> float:
    """‖a − b‖ over all pairs (a q held in data space by its sites)."""
    return float(np.sqrt(sum(float(np.sum((a - b) ** 2)) for pair in pairs
                             for a, b in _chunks(*map(_vector, pair)))))


def accelerator(problem, requested: bool | None, names=None, refit: bool = True):
    """The accelerator for this run: SQUAREM by default for every deterministic rule, never for
    stochastic rules (their ELBO differences are noise). Under VMP and the monotone bounds the
    safeguard rests on an ascent guarantee; under NC-VMP and the damped bounds the plain sweep is
    not ascent either, and a step is kept only if the objective rose; under Laplace and delta (an
    objective that is not a bound, falling near its fixed point) only if the fixed-point residual
    did not grow. Evidence on models/: docs/rules/vmp.md#acceleration-squarem. Not by default
    under `cvi` with exact gradients (its site form keeps per-row sites that an extrapolation
    neither moves nor restores). `anderson` extrapolates no step while a Gaussian is solved in data
    space (Woodbury: its λ' would be dense); SQUAREM steps on that Gaussian's sites. `names` and
    `refit`: SQUAREM's (`Squarem`), for a run whose locals are elsewhere (ppl.cluster.batch)."""
    if problem.stochastic or requested is False:
        return None
    if requested is None and any(getattr(f, "rule", "") == "cvi" for f in problem.factors):
        return None
    if requested == "anderson":
        from ppl.infer.anderson import Anderson
        return Anderson(problem, residual=problem.approximate)
    return Squarem(problem, residual=problem.approximate, names=names, refit=refit)
