"""When a stochastic rule's run stops, and how its step decays: the fixed-point test on a trace
of precise estimates (`Monitor._settled`), which a climb passes when it has reached its noise,
and the Robbins–Monro clock that holds while the estimates climb beyond their noise
(`engine._climbs`)."""

from __future__ import annotations

import numpy as np
import pytest

import ppl
from ppl import families as fam
from ppl.infer.convergence import Monitor

from test_convergence import _State


class _Stochastic:
    pure_vmp, stochastic, families = False, True, {"x": fam.Normal()}


def test_a_precise_climbing_trace_stops_by_the_fixed_point_test():
    """Estimates with standard errors far below the increments: the geometric climb L_t = −c ρ^t
    stops once d/(1 − ρ) ≤ tol·|L| (long before two 10-sweep windows could agree), while the same
    trace with exact entries (se 0: the Monte Carlo estimate was too noisy to use) or with
    increments inside their noise waits for the windows."""
    def run(se, tol=1e-3, level=-100.0, scale=5.0):
        monitor, trace, ses = Monitor(_Stochastic(), tol=tol, mean_tol=1e-5), [], []
        for t in range(1, 400):
            trace.append(level - scale * 0.6 ** t)
            ses.append(se)
            if monitor.done(trace, _State(0.0), trace_se=ses):
                return t, monitor.report, trace
        return None, monitor.report, trace

    t, report, trace = run(1e-6)
    assert report.rule == "precise estimates" and t < 2 * 10
    d = trace[-1] - trace[-2]
    assert d / (1 - 0.6) <= 1e-3 * abs(trace[-1]) < (trace[-2] - trace[-3]) / (1 - 0.6)  # the first sweep that passes
    assert run(0.0)[1].rule == "smoothed trace"  # exact entries: the windows
    assert run(1e-3, scale=1e-4)[1].rule == "smoothed trace"  # increments within 3 se: the windows



def _climb(rate, tol, se=3e-3, level=-100.0, scale=5.0):
    """(sweep, report) where a monitor stops the geometric climb L_t = level − scale·rate^t whose
    entries are estimates of standard error `se` (None: it never stops)."""
    monitor, trace, ses = Monitor(_Stochastic(), tol=tol, mean_tol=1e-5), [], []
    for t in range(1, 60):
        trace.append(level - scale * rate ** t)
        ses.append(se)
        if monitor.done(trace, _State(0.0), trace_se=ses):
            return t, monitor.report
    return None, monitor.report


def test_a_precise_climb_that_reaches_its_noise_stops_by_the_rates_prediction():
    """Increments 1.05, 0.315, 0.0945, 0.028, then 0.0085 inside its noise (3√2 × 0.003 = 0.013):
    the climb has reached the noise. The larger of that increment and the rate's prediction for
    it (0.3 × 0.028), over 1 − 0.3, is 0.012 nats, within tol·|L| = 0.03, so it stops there, at
    sweep 6; before, such a run waited for two 10-sweep windows to agree (20 sweeps). A slow
    climb (rate 0.9) that reaches its noise is 9 increments from its fixed point and waits."""
    t, report = _climb(0.3, tol=3e-4)
    assert (t, report.rule) == (6, "precise estimates")
    assert report.elbo_gap == pytest.approx(0.3 * max(0.3 * 0.028, 5 * 0.3 ** 5 * 0.7) / 0.7, rel=0.02)
    slow, report = _climb(0.9, tol=3e-4, se=0.01)
    assert slow is None or slow >= 20 and report.rule == "smoothed trace"


def test_cvi_steps_whole_while_its_estimates_climb_beyond_their_noise(monkeypatch):
    """On 20,000 rows the ELBO estimates from cvi's draws are precise, so each sweep that climbs by
    more than 3 standard errors holds the Robbins–Monro clock: every step is ρ = 1 (NC-VMP's, with
    Monte Carlo gradients), and the run stops after a handful of sweeps within 1e-4 nats of
    ncvmp's fixed point (1.2e-5; the decaying step took 44 sweeps and ended 1.3e-4 short). On 200 rows
    every entry is exact (the estimate too noisy to judge by) and the clock runs: ρ_t = t^−0.6."""
    from ppl.infer.build import Problem
    clock, step = [], Problem.step
    monkeypatch.setattr(Problem, "step", lambda self, name, t: clock.append(t) or step(self, name, t))
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(20_000), rng.normal(size=(20_000, 19)) / np.sqrt(20)])
    y = (rng.random(20_000) < 1 / (1 + np.exp(-x @ rng.normal(size=20) * 2))).astype(int)
    model = ppl.compile("data X: real[N, D]\ndata y: bool[N]\nw ~ MvNormal(zeros(D), eye(D))\n"
                        "y ~ Bernoulli(logistic(X @ w))\n")
    exact = model.infer({"X": x, "y": y}, seed=0)
    clock.clear()
    drawn = model.infer({"X": x, "y": y}, seed=0, methods={"y": "cvi"})
    assert drawn.converged and drawn.iterations <= 8 and set(clock) == {1}
    assert exact.elbo - 1e-4 <= drawn.elbo <= exact.elbo + 1e-9
    clock.clear()
    small = model.infer({"X": x[:200], "y": y[:200]}, seed=0, methods={"y": "cvi"})
    assert small.trace_se is not None and not any(small.trace_se)
    assert sorted(set(clock)) == list(range(1, small.iterations + 1))


def test_the_clock_holds_only_for_a_shrinking_climb_beyond_the_noise():
    """`_climbs`: a rise of more than 3 standard errors that is smaller than the rise before holds
    the clock; a rise after a fall (a noise ball), a rise within the noise, a rise larger than the
    one before, and any exact entry (se 0) do not. The first sweep compares with the exact first
    ELBO."""
    from ppl.infer.engine import _climbs
    se = [1e-3, 1e-3, 1e-3]
    assert _climbs([-100.0, -10.0, -9.0], se)
    assert _climbs([-100.0, -10.0], [0.0, 1e-3])  # the first sweep, from the exact first ELBO
    assert not _climbs([-10.0, -10.5, -10.0], se)  # a rise after a fall
    assert not _climbs([-10.0, -9.0, -8.999], se)  # within 3 se
    assert not _climbs([-10.0, -9.0, -7.0], se)  # growing, not contracting
    assert not _climbs([-100.0, -10.0, -9.0], [0.0, 0.0, 0.0])  # exact entries
