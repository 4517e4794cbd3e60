"""When a run stops: at the fixed point for deterministic rules, on the smoothed trace for
stochastic ones.

Deterministic rules (vmp, ncvmp, the bounds, laplace, delta) stop when both hold:

1. **the ELBO is within `tol` nats of its fixed point**, estimated from the last increments
   d_t = L_t − L_{t−1}: near a fixed point coordinate ascent converges linearly, d_{t+1} ≈ ρ d_t,
   so the bound still to gain is Σ_{k>t} d_k ≈ d_t ρ/(1 − ρ) and the test is d_t/(1 − ρ) ≤ tol
   (ρ the largest of the last three ratios d_t/d_{t−1}, capped below 1; under SQUAREM a ratio
   above 1 is the jump of an extrapolated sweep, not a rate, and is left out). d_t is taken at
   least ρ d_{t−1}, what the rate predicts: under SQUAREM an accepted extrapolated sweep can gain
   far less than the sweeps around it (a mean-field crawl at ρ ≈ 0.997 gained 3.4e-7, 3.4e-7, then
   2.7e-9 nats, and the last increment alone stopped it 1.2e-4 nats short). After the second
   sweep there is one increment and no rate: ρ is then the cap itself, so |d| ≤ tol (1 − cap)
   with no mean moving proves the fixed point on its own and a run that arrived in one sweep
   stops after two, with no sweeps spent confirming a rate. The tolerance is in
   nats, not relative to |L| and not per data point: an ELBO difference is a log evidence ratio
   whatever the size of the data, and a user comparing models needs it to a fixed number of nats.
   No floor for round-off: at a fixed point L jitters by at most 2e-15 |L| (measured on models/,
   docs/rules/vmp.md#convergence), far below 1e-6 nats up to |L| ≈ 10⁸; a smaller `tol` (the
   `tol=1e-300` idiom) runs to `max_iter` unless the ELBO stops changing exactly.
2. **no posterior mean moves**: the largest |Δ E[x]| / sd[x] over every element of every latent
   variable in the last sweep is below `mean_tol` (a mean can still creep along a flat ridge of
   the ELBO after the bound has stopped moving).

A batch run whose E-step restarts the locals from the prior every sweep (LDA's default
`batch(inner=30, init=random)`) is not coordinate ascent: the ELBO need not rise each sweep, a
document's fit can land on another local optimum, SQUAREM is off, and the globals move in
plateaus and jumps (topics reorganising: increments that grow for ten sweeps, then collapse), so
the last three ratios of rule 1 can read a rate off noise. It stops (`_restarted`) when both hold:

- **the ELBO is within `tol` nats of its fixed point** by rule 1's test |d|/(1 − ρ) ≤ tol, with ρ
  the largest ratio |d_t/d_{t−1}| over the last `SMOOTHING` sweeps among the increments that
  shrink without changing sign (a growing increment is a reorganisation, not a rate; a sign
  change is the bound crossing its optimum), and d the larger of the last two increments (a
  single sweep whose increment dips, a document refitted onto another optimum, does not stop
  the run). Near the end the restarted E-step can leave the ELBO falling by a few 1e-8 a sweep
  towards its fixed point, ratios ~0.9: |d| is measured, up or down;
- **the globals have settled** over the window: a Dirichlet or Beta global (pseudo-counts) moved
  at most `RESTARTED_MASS` × `mean_tol` of its mass, ½ Σ|Δλ| / Σλ from the first to the last
  sweep of the window (1e-4 by default: a token in 10,000 changed topic). Mass, not sd: a word
  of a few tokens switching topics is 8–10 sd of one small entry but a negligible part of the
  topics, and what a held-out document sees; any other global moved at most `RESTARTED_MEAN` ×
  `mean_tol` sd (1e-2 sd by default).

Stochastic rules (Monte Carlo gradients, minibatches) compare the means of the last two windows
of `SMOOTHING` sweeps and stop when their difference is below `tol` relative to |L| (an absolute
`tol` in nats would sit far below the Monte Carlo noise, and the noise grows with the data); the
report gives that difference and the standard error of the recent window's mean, so the reader
sees how far from a fixed point the noise leaves the run. A trace of precise Monte Carlo estimates
(CVI on many rows with narrow margins: every entry an estimate with a standard error, the last
`RATIOS` + 1 increments positive, shrinking and each above 3 standard errors of itself) is
climbing, not jittering: it stops by the fixed-point test of rule 1 with `tol` × |L|, which sees
the end of the climb about ten sweeps before the windows can (docs/rules/cvi.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ppl.families import LogNormal, Normal
from ppl.infer.held_gaussian import HeldGaussian, shift_in_sds

SMOOTHING = 10  # sweeps per window of the smoothed trace
RATIO_CAP = 0.999  # a contraction ratio above this is treated as this (gap ≤ 1000 increments)
RATIOS = 3  # increments whose ratios bound the contraction rate
BLOCK = 65536  # entries of λ compared at a time by `mean_change`
RESTARTED_MEAN = 1000  # a restarted batch E-step stops at RESTARTED_MEAN × mean_tol sd of global change
RESTARTED_MASS = 10  # ... and at RESTARTED_MASS × mean_tol of a pseudo-count global's mass moved
PSEUDO_COUNTS = ("Dirichlet", "Beta")  # families whose natural parameters + 1 are pseudo-counts


@dataclass
class Convergence:
    """How close a run ended to its fixed point; what `ppl infer` prints and the JSON holds."""

    rule: str  # "fixed point" or "smoothed trace"
    elbo_change: float = np.nan  # last ELBO change per sweep (or between windows), nats
    elbo_gap: float = np.nan  # estimated ELBO still to gain (fixed point), nats
    mean_change: float = np.nan  # largest |Δ mean| / sd in the last sweep
    mean_variable: str = ""  # the variable that moved most
    se: float = np.nan  # standard error of the smoothed ELBO (stochastic rules)
    mass_moved: float = np.nan  # largest fraction of a pseudo-count global's mass moved (restarted batch)
    mass_variable: str = ""
    stopped_by: str = ""  # "time limit" when --time-limit ended the run before it converged
    crawl: bool = False  # the measured rate hit RATIO_CAP: the gap is a lower estimate (fixed point)

    def to_json(self) -> dict:
        return {k: (None if isinstance(v, float) and not np.isfinite(v) else v) for k, v in vars(self).items()}

    def describe(self) -> str:
        if self.stopped_by and np.isnan(self.elbo_change):  # an SVI run: no rule measured before the limit
            return f"the {self.stopped_by}, before the stopping rule was met"
        if self.rule == "precise estimates":
            return (f"ELBO change {self.elbo_change:.2g} (standard error {self.se:.2g}), est. {self.elbo_gap:.2g} "
                    f"nats from the fixed point")
        if self.rule == "globals settled" and np.isnan(self.elbo_change):
            return (f"fewer than {SMOOTHING + 1} sweeps, the window the ELBO change and the globals' moves are "
                    "measured over")
        if self.rule == "globals settled":
            moved = f"; {self.mass_moved:.2g} of `{self.mass_variable}`'s mass moved" if self.mass_variable else ""
            other = (f"; largest change of another global mean {self.mean_change:.2g} sd (`{self.mean_variable}`)"
                     if self.mean_variable else "")
            return (f"ELBO change {self.elbo_change:.2g}, est. {self.elbo_gap:.2g} nats from the fixed point (rate "
                    f"over the last {SMOOTHING} sweeps){moved}{other}")
        if self.rule == "smoothed trace":
            return (f"change of the {SMOOTHING}-sweep mean ELBO {self.elbo_change:.2g}; standard error of "
                    f"that mean {self.se:.2g}")
        if np.isnan(self.elbo_change) and np.isnan(self.mean_change):  # `done` saw a single sweep
            return "one sweep, no ELBO change or mean change to measure"
        moved = f" (`{self.mean_variable}`)" if self.mean_variable else ""
        gap = (f"est. {self.elbo_gap:.2g} nats from the fixed point" if np.isfinite(self.elbo_gap)
               else "the objective fell in the last sweep")
        if self.crawl and np.isfinite(self.elbo_gap):
            gap = (f"est. at least {self.elbo_gap:.2g} nats from the fixed point (its increments shrink by "
                   f"{RATIO_CAP} a sweep or slower: a crawl, whose gap can be far larger)")
        return f"ELBO change {self.elbo_change:.2g}, {gap}; largest mean change {self.mean_change:.2g} sd{moved}"


class Monitor:
    """Watches a run sweep by sweep and says when to stop (`done`), keeping a `Convergence`."""

    def __init__(self, problem, tol: float, mean_tol: float, accelerated: bool = False):
        self.problem, self.tol, self.mean_tol = problem, tol, mean_tol
        self.largest_ratio = 1.0 if accelerated else np.inf
        self.stochastic = problem.stochastic
        # locals refitted from the prior each sweep (a batch schedule's inner loop): `_restarted`
        self.restarted = not self.stochastic and bool(getattr(problem, "local", ())) and problem.schedule.restarted
        self.report = Convergence("smoothed trace" if self.stochastic else
                                  "globals settled" if self.restarted else "fixed point")
        self.window: list = []  # the globals' naturals after each of the last SMOOTHING + 1 sweeps
        self.previous: dict = {}  # the naturals after the last sweep (the state's own arrays: no copy)
        self.local = lambda: (0.0, "")  # mean change of variables measured elsewhere (`done`)
        self.moments: tuple = ({}, {})  # the moments of the same two states that `location` reads
        self.means: dict = {}  # the means `mean_change` last computed, by variable (`mean_change`)
        self.vectors = tuple(n for n, f in problem.families.items()
                             if _located_by_moments(f, not (self.stochastic or self.restarted)))

    def finish(self, state=None) -> Convergence:
        """The report, with the mean change of the last sweep measured even when the ELBO test
        never passed: by `done(last=True)` for a run stopped by max_iter or time_limit, here for
        a run interrupted after a sweep that `done` did not see (`state` the state it left)."""
        if state is not None:
            self._measure_unmeasured(self.previous, state.natural, (self.moments[1], {}))
        return self.report

    def _measure_unmeasured(self, before: dict, after: dict, moments: tuple) -> None:
        """Report the mean change from `before` to `after` if the fixed-point test never measured it."""
        if not self.stochastic and not self.restarted and np.isnan(self.report.mean_change) and before:
            self.report.mean_change, self.report.mean_variable = max(
                mean_change(self.problem, before, after, moments, self.means), self.local())

    def done(self, trace: list, state, informative: bool = True, trace_se=None, local=None, last=False) -> bool:
        """True when the run is at its fixed point (or its trace is flat within noise).
        `informative=False` for a sweep whose ELBO repeats the last (a rejected extrapolation);
        `trace_se`: the standard error of each entry (0 where exact). `local()`: (largest mean
        change, variable) of the variables `state` does not hold (the locals of a cluster's
        partitions, measured there), asked for when the ELBO test passes. `last`: the run stops
        after this sweep whatever the answer (max_iter, time_limit), so the mean change is measured
        now if it never was: the monitor keeps no λ of the sweep before (a local's is N-sized)."""
        self.local = local or (lambda: (0.0, ""))
        previous, self.previous = self.previous, dict(state.natural)
        # the moments `location` reads, of the last sweep and this one (a HeldGaussian knows its sds)
        self.moments = (self.moments[1], {name: state.moments(name) for name in self.vectors if name in state.natural
                                          and not isinstance(dict.get(state.natural, name), HeldGaussian)})
        if self.stochastic:
            return self._settled(trace, trace_se) or self._smoothed(trace)
        if self.restarted:
            return self._restarted(trace, state)
        if last:
            self._measure_unmeasured(previous, state.natural, self.moments)
        if not informative or len(trace) < 2 or not previous:
            return False
        tail = trace[-RATIOS - 2:]
        increments = [b - a for a, b in zip(tail[:-1], tail[1:])]  # five floats: no array
        d = increments[-1]
        ratios = [b / a for a, b in zip(increments[:-1], increments[1:])
                  if a > 0 and 0 <= b < a * self.largest_ratio]
        # one increment (the second sweep): no rate to estimate, so the slowest rate allowed
        rho = min(max(ratios, default=0.0), RATIO_CAP) if len(increments) > 1 else RATIO_CAP
        self.report.crawl = max(ratios, default=0.0) >= RATIO_CAP  # measured, not the cap assumed at sweep 2
        self.report.elbo_change = float(d)
        if len(increments) > 1 and abs(d) < rho * abs(increments[-2]):  # a dip: the rate's prediction
            d = rho * increments[-2]
        self.report.elbo_gap = float(abs(d) * rho / (1 - rho)) if d >= -self.tol else np.nan  # fell
        if not abs(d) / (1 - rho) <= self.tol:
            return False
        change, variable = max(mean_change(self.problem, previous, state.natural, self.moments, self.means),
                               self.local())
        self.report.mean_change, self.report.mean_variable = change, variable
        return change <= self.mean_tol

    def _settled(self, trace: list, trace_se) -> bool:
        """The fixed-point test, in tol × |L|, on a trace of precise estimates that climbs: its
        increments beyond 3 standard errors, positive and shrinking, the last of them possibly
        within its noise (the climb has reached it: then the rate's prediction counts for it)."""
        if trace_se is None or len(trace) < RATIOS + 2:
            return False
        se = np.asarray(trace_se[-RATIOS - 2:])
        d = np.diff(trace[-RATIOS - 2:])
        noise = 3 * np.hypot(se[1:], se[:-1])
        ended = abs(d[-1]) <= noise[-1]
        climb = d[:-1] if ended else d
        if not (np.all(se > 0) and np.all(climb > noise[:len(climb)]) and np.all(np.diff(climb) < 0)):
            return False
        rho = min(float(np.max(climb[1:] / climb[:-1])), RATIO_CAP)
        last = max(rho * climb[-1], abs(d[-1])) if ended else d[-1]
        if last / (1 - rho) > self.tol * abs(trace[-1]):
            return False
        self.report = Convergence("precise estimates", elbo_change=float(d[-1]), elbo_gap=float(last * rho / (1 - rho)),
                                  se=float(se[-1]))
        return True

    def _restarted(self, trace: list, state) -> bool:
        """The ELBO within `tol` nats of its fixed point by the largest shrinking ratio of the last
        `SMOOTHING` increments, and over those sweeps the pseudo-count globals moved by at most
        `RESTARTED_MASS` × `mean_tol` of their mass, the others by at most `RESTARTED_MEAN` ×
        `mean_tol` sd."""
        self.window = (self.window + [{n: v for n, v in state.natural.items() if n not in self.problem.local}])
        self.window = self.window[-SMOOTHING - 1:]
        if len(trace) <= SMOOTHING or len(self.window) <= SMOOTHING:
            return False
        increments = np.diff(trace[-SMOOTHING - 1:])
        d = float(max(increments[-2:], key=abs))
        before, after = increments[:-1], increments[1:]
        shrinking = (before * after > 0) & (np.abs(after) < np.abs(before))
        rho = min(float(np.max(np.abs(after[shrinking] / before[shrinking]), initial=0.0)), RATIO_CAP)
        first, last = self.window[0], self.window[-1]
        counts = {n for n in last if getattr(self.problem.families.get(n), "name", "") in PSEUDO_COUNTS}
        mass, heavy = mass_moved(first, {n: last[n] for n in counts})
        moved, variable = mean_change(self.problem, first, {n: v for n, v in last.items() if n not in counts})
        self.report.elbo_change, self.report.elbo_gap = d, abs(d) * rho / (1 - rho)
        self.report.mass_moved, self.report.mass_variable = mass, heavy
        self.report.mean_change, self.report.mean_variable = moved, variable
        return (abs(d) / (1 - rho) <= self.tol and mass <= RESTARTED_MASS * self.mean_tol
                and moved <= RESTARTED_MEAN * self.mean_tol)

    def _smoothed(self, trace: list) -> bool:
        if len(trace) < 2 * SMOOTHING:
            return False
        recent, before = np.asarray(trace[-SMOOTHING:]), np.asarray(trace[-2 * SMOOTHING:-SMOOTHING])
        change = float(recent.mean() - before.mean())
        self.report.elbo_change, self.report.se = change, float(np.sqrt(recent.var(ddof=1) / SMOOTHING))
        return abs(change) < self.tol * max(abs(recent.mean()), 1e-12)


def mass_moved(before: dict, after: dict) -> tuple[float, str]:
    """max over the pseudo-count globals in `after` (natural parameters λ − 1) of the fraction of
    their mass that moved, ½ Σ|Δλ| / Σλ, and the variable where it is reached."""
    worst, where = 0.0, ""
    for name, nat in after.items():
        old = before.get(name)
        if old is None:
            continue
        value = float(0.5 * np.abs(nat - old).sum() / (nat + 1.0).sum())
        if value >= worst:
            worst, where = value, name
    return worst, where


def mean_change(problem, before: dict, after: dict, moments: tuple = ({}, {}), means: dict | None = None
                ) -> tuple[float, str]:
    """max over variables and elements of |E_after[x] − E_before[x]| / sd_after[x], and the
    variable where it is reached. sd is floored at 1e-6 (1 + |mean|) so that a probability near
    0 or 1 (sd → 0) does not dominate. `moments`: the moments of the two states that `location`
    reads (an MvNormal's give mean and sd in O(D) where the naturals would need a D × D inverse; a
    chain's, its marginals without a forward–backward). `means`: {variable:
    (λ, its means)} of the last call, updated here: a λ met again as `before` (the state's arrays
    are replaced, never written) is not located twice (a stopping rule that tests sweep after sweep).
    A Gaussian block is measured on its members, which hold their marginals under it: the same
    means and sds, named as the model names them (measuring the block too left the name to
    round-off). A LogNormal member, Gaussian in u = log τ, is measured in u as the block's
    coordinates are, and in τ."""
    worst, where = 0.0, ""
    for name, nat in after.items():
        old, family = before.get(name), problem.families[name]
        if old is None or old is nat or hasattr(family, "distribute"):
            continue
        new_moments, old_moments = moments[1].get(name), moments[0].get(name)
        if isinstance(nat, HeldGaussian):  # its sds bounded first, the exact ones of a few elements
            value = nat.largest_shift(location(family, old, old_moments, sd=False)[0][0])
        else:
            known = means.get(name, (None, None)) if means is not None else (None, None)
            value, located = _largest_change(family, (nat, new_moments), (old, old_moments),
                                             known[1] if known[0] is old else None)
            if isinstance(family, LogNormal):
                value = max(value, _largest_change(Normal(), (nat, None), (old, None))[0])
            if means is not None:
                means[name] = (nat, located)
        if value > worst:
            worst, where = value, name
    return worst, where


def _largest_change(family, after: tuple, before: tuple, known=None) -> tuple:
    """(max |m1 − m0| / sd1 over the elements of one variable, m1), from (λ, moments) after and
    before; `known`: m0, when already located. m1 is kept (returned) for a λ of one block only:
    a local's N × K means are not held between sweeps."""
    value, m1 = 0.0, None
    blocks = _blocks(family, after[0], before[0])
    for rows in blocks:
        m1, s1 = location(family, *_part(after, rows))
        m0 = known if known is not None and len(blocks) == 1 else location(family, *_part(before, rows), sd=False)[0]
        value = max(value, shift_in_sds(m1, m0, s1))
    return value, (m1 if len(blocks) == 1 else None)


def _blocks(family, nat, old) -> list:
    """Slices of the elements of λ in blocks of about `BLOCK` entries, so that a local's N × K λ
    is compared without N-sized temporaries (a mixture's mean change at 10⁷ rows took 7 of them);
    [None] (the whole) when λ is not a plain (elements, size) array or its rows are one q (a chain)."""
    plain = isinstance(nat, np.ndarray) and isinstance(old, np.ndarray) and nat.ndim == 2 and old.shape == nat.shape
    if not (plain and getattr(family, "rowwise", True)):
        return [None]
    rows = max(1, BLOCK // max(1, nat.shape[1]))
    return [slice(lo, lo + rows) for lo in range(0, nat.shape[0], rows)]


def _part(arrays: tuple, rows) -> list:
    return [a if rows is None or a is None else a[rows] for a in arrays]


def _located_by_moments(family, exact: bool) -> bool:
    """Whether `location` reads q's mean and sd off its moments: an MvNormal's (unless held in
    data space, checked each sweep: that one knows its sds); in a deterministic run a chain's,
    which the sweep's ELBO has computed (from λ each would be a forward–backward)."""
    return getattr(family, "name", "") == "MvNormal" or (exact and hasattr(family, "location_of_moments"))


def location(family, nat, moments=None, sd=True) -> tuple[np.ndarray, np.ndarray | None]:
    """(mean, sd) of the Gaussian or scalar part of q: the family's own (from an MvNormal's
    moments (E[x], E[x xᵀ]) or a chain's marginals when given), or for a Normal–Wishart group the mean of μ with sd
    (β E[Λ]_ii)^−½. A q held in a structured form (`HeldGaussian`) gives them directly, its sd (O(N²D))
    only when `sd`, as a family with its own `sd` (a second softmax for a Categorical)."""
    if isinstance(nat, HeldGaussian):
        return nat.mean[None], nat.sd[None] if sd else None
    if moments is not None and hasattr(family, "location_of_moments"):
        return family.location_of_moments(moments)
    if moments is not None:
        d = family.dim
        mean = moments[..., :d]
        second = np.diagonal(moments[..., d:].reshape(moments.shape[:-1] + (d, d)), axis1=-2, axis2=-1)
        return mean, np.sqrt(np.maximum(second - mean * mean, 0.0))
    if hasattr(family, "sd"):
        return np.asarray(family.mean(nat), dtype=float), np.asarray(family.sd(nat), dtype=float) if sd else None
    p = family.params(nat)
    diagonal = np.diagonal(p["scale"], axis1=-2, axis2=-1) * p["dof"][..., None]
    return p["mean"], 1 / np.sqrt(p["beta"][..., None] * diagonal)
