"""The scheduler: one update equation for every latent variable,

    λ_v ← (1 − β) λ_v + β · Σ_{f ∋ v} m_{f→v}      (β = 1 for VMP),

swept in a fixed order (global variables in dependency order, then local ones), with the exact
ELBO after every sweep, convergence on its relative change, restarts keeping the best bound,
and a replay that names the update behind any decrease (the VI chapter's debugging check).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ppl.infer.build import Problem, build_problem
from ppl.infer.factors.gamma_cvi import shrink_until_valid
from ppl.infer.initialise import initialise
from ppl.infer.low_rank import GaussianSum


class ElboDecreaseWarning(UserWarning):
    """The ELBO went down under updates that must not decrease it: a bug or bad numerics."""


class DampingWarning(UserWarning):
    """A non-ascent rule (NC-VMP, a piecewise bound, Laplace, delta) lowered the objective; its
    step was halved, and the run says so."""


SMALLEST_STEP = 1 / 64


@dataclass(frozen=True)
class Options:
    """Settings of one inference run (immutable; validated in `validate`)."""

    max_iter: int = 500
    tol: float = 1e-6
    seed: int | None = None
    restarts: int = 1
    time_limit: float | None = None
    damping: float = 1.0

    def validate(self) -> "Options":
        from ppl.diagnostics import OptionError
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 1):
            raise OptionError("E310", f"max_iter must be a positive integer, got {self.max_iter!r}")
        if not (self.tol > 0):
            raise OptionError("E311", f"tol must be positive, got {self.tol!r}")
        if not (isinstance(self.restarts, (int, np.integer)) and self.restarts >= 1):
            raise OptionError("E312", f"restarts must be a positive integer, got {self.restarts!r}")
        if not (0 < self.damping <= 1):
            raise OptionError("E313", f"damping must be in (0, 1], got {self.damping!r}")
        return self


@dataclass
class Run:
    """The result of one run: final state, ELBO trace, per-factor terms, convergence."""

    state: object
    trace: list
    elbo_terms: dict
    converged: bool
    iterations: int
    seconds: float
    restart: int = 0
    warnings: list = field(default_factory=list)
    elbo: float = np.nan  # exact at the end of the run (the trace may hold minibatch estimates)
    trace_se: list = field(default_factory=list)  # standard error of each trace entry (0: exact)
    interrupted: bool = False  # stopped by KeyboardInterrupt from `progress`, at the end of a sweep


def run(problem: Problem, options: Options, progress=None) -> Run:
    """Run VMP `options.restarts` times from different initialisations; keep the best ELBO."""
    options = options.validate()
    seeds = np.random.SeedSequence(options.seed).spawn(options.restarts)
    best = None
    start = time.perf_counter()
    for restart, seed in enumerate(seeds):
        result = _run_once(problem, options, np.random.default_rng(seed), progress, start)
        result.restart = restart
        if best is None or result.elbo > best.elbo or result.interrupted:
            best = result
        if result.interrupted:
            break
    best.seconds = time.perf_counter() - start
    return best


SMOOTHING = 10  # sweeps averaged for the convergence test when gradients are stochastic


def _run_once(problem: Problem, options: Options, rng, progress, start) -> Run:
    state = initialise(problem, rng)
    state.rng = rng
    trace, trace_se, converged, notes, shrink, interrupted = [], [], False, list(problem.notes), {}, False
    elbo = problem.elbo(state)
    iteration = 0
    for iteration in range(1, options.max_iter + 1):
        snapshot = state.copy() if problem.pure_vmp else None
        for name in problem.order:
            _update(problem, state, name, options.damping * problem.step(name, iteration) * shrink.get(name, 1.0))
        new, se = problem.elbo_estimate(state)
        if not np.isfinite(new):
            raise problem.not_finite(state)
        fell = se == 0.0 and new < elbo - 1e-9 * max(1.0, abs(elbo))
        if fell and problem.pure_vmp and options.damping == 1.0:
            _explain_decrease(problem, snapshot, elbo, options.damping)
        elif fell and problem.damped:
            notes.extend(_damp(problem, shrink, iteration))
        trace.append(new)
        trace_se.append(se)
        if progress is not None:
            try:
                progress(iteration, new)
            except KeyboardInterrupt:  # raised at a sweep's end: the state is a whole sweep's q
                interrupted = True
                notes.append(f"interrupted after sweep {iteration}, not converged")
                break
        if problem.stochastic:  # compare averages of the last sweeps: single ELBOs are noisy
            change = _smoothed_change(trace)
        else:
            change = abs(new - elbo) / max(abs(new), 1e-12)
        elbo = new
        if iteration > 1 and change < options.tol:
            converged = True
            break
        if options.time_limit is not None and time.perf_counter() - start > options.time_limit:
            break
    exact = trace[-1] if not any(trace_se) else problem.elbo(state)
    if any(trace_se):
        notes.append(f"the trace holds estimates of the ELBO, with standard errors (the last {trace[-1]:.6g} ± "
                     f"{trace_se[-1]:.2g}); the ELBO reported is computed once more at the end, on all the data")
    return Run(state, trace, problem.elbo_terms(state), converged, iteration, time.perf_counter() - start,
               warnings=notes, elbo=exact, trace_se=trace_se, interrupted=interrupted)


def _damp(problem: Problem, shrink: dict, iteration: int) -> list[str]:
    """Halve the step of the variables updated by non-ascent rules after a sweep that lowered the
    objective — the step shrinking of the CVI paper, recorded rather than silent."""
    damped = [n for n in problem.damped if shrink.get(n, 1.0) > SMALLEST_STEP]
    for name in damped:
        shrink[name] = shrink.get(name, 1.0) / 2
    if not damped:
        return []
    note = (f"sweep {iteration}: the objective fell; the step of {', '.join(f'`{n}`' for n in damped)} "
            f"is now {shrink[damped[0]]:g}")
    warnings.warn(note, DampingWarning, stacklevel=3)
    return [note]


def _smoothed_change(trace: list) -> float:
    if len(trace) < 2 * SMOOTHING:
        return np.inf
    recent = np.mean(trace[-SMOOTHING:])
    before = np.mean(trace[-2 * SMOOTHING:-SMOOTHING])
    return abs(recent - before) / max(abs(recent), 1e-12)


def _update(problem: Problem, state, name: str, damping: float) -> None:
    if name in problem.low_rank:
        total = sum(f.message(state, name, factored=True) for f in problem.neighbours[name])
    else:
        total = sum(f.message(state, name) for f in problem.neighbours[name])
    if isinstance(total, GaussianSum):  # a vector read through fewer rows than its dimension
        previous = state.factored.get(name)
        if damping < 1.0 and previous is not None:
            total = previous.scaled(1 - damping) + total.scaled(damping)
        solved = total.solve(state.families[name]) if damping == 1.0 or previous is not None else None
        if solved is not None:
            state.set(name, *solved)
            return
        total = total.dense()
    if name in problem.guarded or name in problem.damped:  # no step may leave the parameter space
        total = shrink_until_valid(state.families[name], state.natural[name], total, damping)
    elif damping < 1.0:
        total = (1 - damping) * state.natural[name] + damping * total
    state.set(name, total)


def _explain_decrease(problem: Problem, snapshot, before: float, damping: float) -> None:
    """Replay the sweep one update at a time and name the first update that lowered the ELBO."""
    state = snapshot
    previous = before
    for name in problem.order:
        _update(problem, state, name, damping)
        value = problem.elbo(state)
        if value < previous - 1e-9 * max(1.0, abs(previous)):
            warnings.warn(f"ELBO decreased by {previous - value:.3g} after updating `{name}` "
                          f"(factors: {', '.join(f.name for f in problem.neighbours[name])})",
                          ElboDecreaseWarning, stacklevel=3)
            return
        previous = value


__all__ = ["run", "Options", "Run", "ElboDecreaseWarning", "DampingWarning", "build_problem"]
