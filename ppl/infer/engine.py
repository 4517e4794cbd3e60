"""The scheduler: one update equation for every latent variable,

    λ_v ← (1 − β) λ_v + β · Σ_{f ∋ v} m_{f→v}      (β = 1 for VMP),

swept in a fixed order (global variables in dependency order, then local ones), with the exact
ELBO after every sweep, a stop at the fixed point (ppl.infer.convergence), SQUAREM steps where
coordinate ascent crawls (ppl.infer.accelerate), restarts keeping the best bound, and a replay
that names the update behind any decrease (the VI chapter's debugging check). One loop serves
every batch run: where its sweeps take place is a choice (`InProcess`, or a cluster's partitions,
ppl.cluster.batch.OnPartitions), not another engine.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np

from ppl.infer.accelerate import accelerator
from ppl.infer.build import Problem, build_problem
from ppl.infer.convergence import Convergence, Monitor
from ppl.infer.initialise import initialise
from ppl.infer.schedule.steps import batch_sweep, random_start
from ppl.infer.update import update as _update


class ElboDecreaseWarning(UserWarning):
    """The ELBO went down under updates that must not decrease it: a bug or bad numerics."""


class DampingWarning(UserWarning):
    """A non-ascent rule (NC-VMP, a piecewise bound, Laplace, delta) lowered the objective; its
    step was halved, and the run says so."""


SMALLEST_STEP = 1 / 64
ACCELERATORS = (None, True, False, "squarem", "anderson")  # `Options.accelerate`
# a Monte Carlo ELBO term enters the trace when its standard error is at most this × tol × |term|:
# the difference of two 10-sweep means then carries noise ≤ 0.1 × the stopping rule's tol × |L|
ESTIMATE_NOISE = 0.2


def check_seed(seed) -> None:
    """A seed is None or an integer ≥ 0 (E325, as `--seed`): numpy's own errors name no option."""
    from ppl.diagnostics import OptionError
    if seed is not None and not (isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0):
        raise OptionError("E325", f"seed must be a non-negative integer or None, got {seed!r}")


@dataclass(frozen=True)
class Options:
    """Settings of one inference run (immutable; validated in `validate`)."""

    max_iter: int = 500
    tol: float = 1e-6  # nats from the fixed point (ppl.infer.convergence)
    mean_tol: float = 1e-5  # largest change of a posterior mean per sweep, in posterior sds
    seed: int | None = None
    restarts: int = 1
    time_limit: float | None = None
    damping: float = 1.0
    record_terms: bool = False  # keep every factor's ELBO term after every sweep (for plots)
    accelerate: bool | str | None = None  # SQUAREM; None: on for deterministic rules but cvi (`accelerator`);
    # "anderson": Anderson acceleration instead (ppl.infer.anderson)

    def validate(self) -> "Options":
        from ppl.diagnostics import OptionError
        if not (isinstance(self.max_iter, (int, np.integer)) and self.max_iter >= 1):
            raise OptionError("E310", f"max_iter (--max-iter) must be a positive integer, got {self.max_iter!r}")
        check_seed(self.seed)
        if self.time_limit is not None and not (isinstance(self.time_limit, (int, float, np.number))
                                                and self.time_limit > 0):
            raise OptionError("E327", f"time_limit (--time-limit) must be a positive number of seconds, "
                                      f"got {self.time_limit!r}")
        if not (self.tol > 0):
            raise OptionError("E311", f"tol (--tol) must be positive, got {self.tol!r}")
        if not (self.mean_tol > 0):
            raise OptionError("E314", f"mean_tol (--mean-tol) must be positive, got {self.mean_tol!r}")
        if not (isinstance(self.restarts, (int, np.integer)) and self.restarts >= 1):
            raise OptionError("E312", f"restarts (--restarts) must be a positive integer, got {self.restarts!r}")
        if not (0 < self.damping <= 1):
            raise OptionError("E313", f"damping must be in (0, 1], got {self.damping!r}")
        if not any(self.accelerate is v for v in ACCELERATORS) and self.accelerate not in ACCELERATORS[3:]:
            raise OptionError("E710", f"accelerate must be True, False, None, 'squarem' or 'anderson', "
                                      f"got {self.accelerate!r}")
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
    term_trace: list = field(default_factory=list)  # {term: value} after each sweep, when recorded
    convergence: Convergence | None = None  # how close to the fixed point the run stopped
    interrupted: bool = False  # stopped by KeyboardInterrupt from `progress`, at the end of a sweep
    sampled: bool = False  # the problem binds a sample of the data (a cluster's client): no diagnostic reads its rows


def run(problem: Problem, options: Options, progress=None, source=None, initial=None, cluster=None) -> Run:
    """Run VMP `options.restarts` times from different initialisations; keep the best ELBO.
    `source`: the groups of a stochastic schedule streamed from disk (a `GroupedSource`);
    `initial(problem, rng)`: the starting state (default `initialise`); `cluster`: the partitions
    of the data on a Dask cluster (`ppl.cluster.source.ClusterSource`), where the E-steps run."""
    from functools import partial
    options = options.validate()
    seeds = np.random.SeedSequence(options.seed).spawn(options.restarts)
    best = None
    start = time.perf_counter()
    once = partial(_run_once, where=partial(InProcess, initial=initial))
    if problem.schedule.stochastic:
        from ppl.infer.schedule.svi import run_svi
        once = partial(run_svi, source=cluster or source)
    elif cluster is not None:
        from ppl.cluster.batch import OnPartitions
        once = partial(_run_once, where=partial(OnPartitions, cluster=cluster))
    for restart, seed in enumerate(seeds):
        result = once(problem, options, np.random.default_rng(seed), progress, start)
        result.restart = restart
        if best is None or result.elbo > best.elbo or result.interrupted:
            best = result
        if result.interrupted:
            break
    best.seconds = time.perf_counter() - start
    return best


class InProcess:
    """Where a batch run's sweeps take place: this process, on all the data. `_run_once`'s loop
    asks it for the start, each sweep and its ELBO, and to follow an accelerator's move or
    rejection; a cluster's partitions answer the same questions (ppl.cluster.batch.OnPartitions),
    so that both runs share one loop: damping, the decrease check, SQUAREM, the stopping rule."""

    whole = True  # the state holds every variable on all the data: a decrease can be replayed
    local_change = None  # the monitor's mean change of variables held elsewhere: none

    def __init__(self, problem: Problem, initial=None):
        self.problem, self.initial = problem, initial

    def start(self, options: Options, rng) -> tuple:
        """(the starting state, its ELBO)."""
        problem = self.problem
        if hasattr(problem.kernel, "release"):  # a fused sweep's buffers of an earlier run (ppl.infer.fused_mixture)
            problem.kernel.release()
        state = (self.initial or initialise)(problem, rng)
        state.rng = rng
        state.noise = ESTIMATE_NOISE * options.tol
        if problem.schedule.init == "random":
            random_start(problem, state, rng)
        return state, _initial_elbo(problem, state)

    def accelerator(self, options: Options):
        return accelerator(self.problem, options.accelerate)

    def sweep(self, state, step) -> tuple:
        """One sweep; (its ELBO or estimate, that estimate's standard error)."""
        batch_sweep(self.problem, state, step)
        return self.problem.elbo_estimate(state)

    def moved(self, state) -> None:
        """The accelerator put the state at an extrapolated point (its locals refitted here)."""

    def rejected(self, state) -> None:
        """The accelerator put the state back at the plain point."""

    def not_finite(self, state) -> Exception:
        return self.problem.not_finite(state)

    def finish(self, state, trace: list, trace_se: list, notes: list) -> tuple:
        """(the exact ELBO, its terms by factor) at the end of the run."""
        problem = self.problem
        _settle(problem, state)
        exact = trace[-1] if not any(trace_se) else problem.exact_elbo(state)  # where estimates stayed finite
        if any(trace_se):
            notes.append(f"the trace holds estimates of the ELBO, with standard errors (the last {trace[-1]:.6g} ± "
                         f"{trace_se[-1]:.2g}); the ELBO reported is computed once more at the end, on all the data")
        return exact, problem.elbo_terms(state)

    def close(self) -> None:
        """Release what the run holds (a cluster's partition states)."""


def _run_once(problem: Problem, options: Options, rng, progress, start, where=InProcess) -> Run:
    place = where(problem)
    try:
        return _sweeps(problem, options, rng, progress, start, place)
    finally:
        place.close()


def _sweeps(problem: Problem, options: Options, rng, progress, start, place) -> Run:
    state, elbo = place.start(options, rng)
    restarted = problem.schedule.restarted  # locals refitted from the prior: not coordinate ascent
    trace, trace_se, converged, notes, shrink, terms = [], [], False, list(problem.notes) + state.notes, {}, []
    interrupted = False
    accel = place.accelerator(options) if options.damping == 1.0 and not restarted else None
    monitor = Monitor(problem, options.tol, options.mean_tol, accelerated=accel is not None)
    iteration, residuals, clock = 0, _Residuals(problem), 0
    for iteration in range(1, options.max_iter + 1):
        clock += 1
        before = dict(state.natural) if problem.pure_vmp and place.whole else None  # λ arrays are replaced, never written
        if accel is not None:  # after `before`: a decrease is replayed from the last recorded point
            accel.before_sweep(state)
            if accel.fallback is not None:
                place.moved(state)
        new, se = place.sweep(state, lambda name: options.damping * problem.step(name, clock) * shrink.get(name, 1.0))
        if not math.isfinite(new):
            if accel is None or accel.fallback is None:
                raise place.not_finite(state)
            new = -np.inf  # an extrapolated step gone wrong: after_sweep reverts it
        informative = True
        if accel is not None:
            new, informative = accel.after_sweep(state, new)
            if not informative:
                place.rejected(state)
        fell = se == 0.0 and new < elbo and new < elbo - 1e-9 * max(1.0, abs(elbo))
        oscillates = residuals.grew(state, informative and not (accel is not None and accel.extrapolated))
        if fell and problem.pure_vmp and options.damping == 1.0 and not restarted and place.whole:
            _explain_decrease(problem, state.copy(before), elbo, options.damping)
        elif fell and problem.pure_vmp and options.damping == 1.0 and not restarted:  # no replay where the data are
            warnings.warn(f"ELBO decreased by {elbo - new:.3g} in sweep {iteration}", ElboDecreaseWarning, stacklevel=3)
        elif fell and problem.damped and oscillates:
            notes.extend(_damp(problem, shrink, iteration))
        entries, ses = (trace[-2:], trace_se[-2:]) if trace else ([elbo], [0.0])  # the first ELBO is exact
        if not problem.minibatched and _climbs(entries + [new], ses + [se]):
            clock -= 1  # the step's signal is far above its noise: no averaging needed yet
        trace.append(new)
        trace_se.append(se)
        if options.record_terms and place.whole:
            _settle(problem, state)
            terms.append(problem.elbo_terms(state))
        if progress is not None:
            try:
                progress(iteration, new)
            except KeyboardInterrupt:  # raised at a sweep's end: the state is a whole sweep's q
                interrupted = True
                notes.append(f"interrupted after sweep {iteration}, not converged")
                break
        elbo = new
        out_of_time = options.time_limit is not None and time.perf_counter() - start > options.time_limit
        if not state.natural:  # nothing in q (every variable observed): the first ELBO is exact
            monitor.report = Convergence("fixed point", elbo_change=0.0, elbo_gap=0.0, mean_change=0.0)
            converged = True
            break
        if monitor.done(trace, state, informative, trace_se, local=place.local_change,
                        last=out_of_time or iteration == options.max_iter):
            converged = True
            break
        if out_of_time:
            notes.append(timed_out(monitor.report, options, iteration))
            break
    exact, elbo_terms = place.finish(state, trace, trace_se, notes)
    return Run(state, trace, elbo_terms, converged, iteration, time.perf_counter() - start,
               warnings=notes, elbo=exact, trace_se=trace_se, term_trace=terms,
               convergence=monitor.finish(state if interrupted else None), interrupted=interrupted,
               sampled=not place.whole)


def _climbs(entries: list, se: list) -> bool:
    """The last of `entries` (ELBO estimates; `se` their standard errors, the last two) rose by
    more than 3 standard errors of the difference, and by less than the sweep before rose: a
    stochastic step still climbing like a contraction, its signal far above its noise, which a
    decaying step would only slow (the Robbins–Monro clock of `step_size` holds). At a noise ball
    the increments change sign, and a rise after a fall runs the clock. Exact entries (se 0:
    the estimate was too noisy to use) never hold it."""
    if len(se) < 2 or not se[-1] > 0:
        return False
    d = entries[-1] - entries[-2]
    return d > 3 * math.hypot(se[-1], se[-2]) and (len(entries) < 3 or 0 < d < entries[-2] - entries[-3])


def timed_out(report: Convergence, options: Options, iteration: int, unit: str = "sweep") -> str:
    """Mark `report` as a run stopped by `--time-limit` (the report's advice), and the note that says so."""
    report.stopped_by = "time limit"
    return f"the time limit ({options.time_limit:g} s) stopped the run after {unit} {iteration}, before --max-iter"


def _settle(problem: Problem, state) -> None:
    """Let a fused sweep write what it keeps back between sweeps (ppl.infer.schedule.fused_lda)
    before the whole state is read."""
    if hasattr(problem.kernel, "settle"):
        problem.kernel.settle(state)


def _initial_elbo(problem: Problem, state) -> float:
    """The ELBO before the first sweep: exact, except that a Monte Carlo run on whole plates takes
    its estimate (CVI's draws there are the first step's; no quadrature over every row). A
    minibatch run stays exact: its estimate would draw a batch and shift the run's random stream."""
    if problem.stochastic and not problem.minibatched:
        return problem.elbo_estimate(state)[0]
    return problem.elbo(state)


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
    warnings.warn(note, DampingWarning, stacklevel=4)
    return [note]


class _Residuals:
    """The fixed-point residual ‖λ_t − λ_{t−1}‖ of the damped variables. Under Laplace and delta
    the objective is not a bound and may fall as the run nears its fixed point (ctm: by 1e-5 to
    1e-7 nats a sweep), so a fall halves their step only if the residual grew too (an
    oscillation); under NC-VMP and the damped bounds every fall does (`grew` is then True)."""

    def __init__(self, problem):
        self.names = problem.damped if problem.approximate else ()
        self.last, self.size = {}, np.inf

    def grew(self, state, judged: bool = True) -> bool:
        """Whether this sweep's residual is at least the last one's; `judged=False` after a sweep
        that repeats the last point or follows an extrapolation (no plain residual to compare)."""
        if not self.names:
            return True
        now = {n: state.natural[n] for n in self.names}
        size = (np.sqrt(sum(float(np.sum((now[n] - self.last[n]) ** 2)) for n in self.names))
                if self.last else np.inf)
        grew = judged and size >= self.size
        self.last, self.size = now, (size if judged else np.inf)
        return grew


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
                          ElboDecreaseWarning, stacklevel=4)
            return
        previous = value


__all__ = ["run", "Options", "Run", "ElboDecreaseWarning", "DampingWarning", "build_problem"]
