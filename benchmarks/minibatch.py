"""The cost of one stochastic step does not grow with the data: steps of a logistic regression
(D = 10, minibatches of 1,000 rows) at N = 1e5, 1e6 and 1e7 rows, under SVI (rows are the
groups; NC-VMP, or CVI under `schedule cvi`) and under `@cvi(minibatch=1000)` in both forms.

An SVI step binds the model to its rows (a gather of |B| rows from the indexed data), computes
the NC-VMP message of those rows and moves the weights. A CVI step (one engine sweep) takes the
margins, Monte Carlo gradients and message of its B rows alone, and its ELBO estimate on B
more; the site form keeps N sites but decays them by a running scale and keeps the sum of their
messages up to date. Nothing in a step touches the other N − |B| rows. Set-up (binding and
indexing all N rows once) is timed apart. One BLAS thread. Writes the section "## Minibatch
steps against N" of docs/benchmarks.md.

    python3 benchmarks/minibatch.py [--rows 1e5,1e6,1e7] [--steps 30] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, write_section  # noqa: E402  (sets one BLAS thread)

import numpy as np  # noqa: E402

MODEL = """
data X: real[N, D] from x1..xD
data y: bool[N]
w ~ MvNormal(zeros(D), eye(D))
y ~ Bernoulli(logistic(X @ w))
"""
D, BATCH = 10, 1000


def data(rows: int, rng) -> dict:
    x = rng.normal(size=(rows, D))
    w = rng.normal(size=D)
    return {"X": x, "y": (rng.random(rows) < 1 / (1 + np.exp(-x @ w))).astype(np.int64)}


CONTENDERS = {  # the row label -> (the annotation of the likelihood, the schedule or None)
    f"SVI (`schedule svi(batch={BATCH})`)": ("", f"svi(batch={BATCH})"),
    f"`@cvi` with `schedule cvi(minibatch={BATCH})`": ("@cvi", f"cvi(minibatch={BATCH})"),
    f"`@cvi(minibatch={BATCH})`": (f"@cvi(minibatch={BATCH})", None),
    f"`@cvi(minibatch={BATCH}, form=site)`": (f"@cvi(minibatch={BATCH}, form=site)", None),
}


def time_steps(rows: int, steps: int, annotation: str, schedule: str | None, table: dict) -> tuple:
    """(set-up seconds, median and fastest seconds per step) on the data `table` of `rows` rows: steps of the
    schedule when one is given, else engine sweeps of the model with the annotated likelihood."""
    import ppl
    from ppl.infer.build import build_problem
    from ppl.lang.schedule import parse_schedule
    model = ppl.compile(MODEL.rstrip() + " " + annotation)
    start = time.perf_counter()
    dataset = model.bind(table)
    spec = parse_schedule(schedule) if schedule else None
    problem = build_problem(model.checked, dataset, model.analyze(dataset), spec)
    step = svi_stepper(problem) if schedule else cvi_stepper(problem)
    setup = time.perf_counter() - start
    times = []
    for t in range(1, steps + 1):
        begin = time.perf_counter()
        step(t)
        times.append(time.perf_counter() - begin)
    return setup, float(np.median(times)), min(times)


def svi_stepper(problem):
    from ppl.infer.schedule.svi import SVI
    svi = SVI(problem, np.random.default_rng(1))
    svi.start(sweeps=1)
    return svi.step


def cvi_stepper(problem):
    """One sweep of the engine's loop (`engine._run_once`): the damped updates, then the ELBO
    estimate on a minibatch."""
    from ppl.infer.engine import ESTIMATE_NOISE
    from ppl.infer.initialise import initialise
    from ppl.infer.schedule.steps import batch_sweep
    rng = np.random.default_rng(1)
    state = initialise(problem, rng)
    state.rng, state.noise = rng, ESTIMATE_NOISE * 1e-6

    def step(t):
        batch_sweep(problem, state, lambda name: problem.step(name, t))
        return problem.elbo_estimate(state)
    return step


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e5,1e6,1e7")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    lines = ["## Minibatch steps against N\n",
             f"`python3 benchmarks/minibatch.py`, one BLAS thread; {machine()}; a shared machine (load "
             f"average {load:.1f} at the start), so the timings are noisy: compare the rows of one run.\n",
             f"A logistic regression with D = {D}. SVI (`schedule svi(batch={BATCH})`): the rows are the "
             f"groups, each step binds {BATCH} of them and sends their NC-VMP message to the weights; "
             f"with `@cvi` on the likelihood and `schedule cvi(minibatch={BATCH})` the same step sends "
             "their CVI message (Monte Carlo, 16 draws) with the step t^-0.6 (the form that streams with "
             "`--stream`). "
             f"`@cvi(minibatch={BATCH})` on the likelihood: a step is one engine sweep, Monte Carlo "
             f"gradients (16 draws) on {BATCH} rows and the ELBO estimate on {BATCH} more; the site form "
             "(`form=site`) stores N sites but decays them by a running scale and updates the sum of "
             f"their messages by the batch's part. Median and fastest of {args.steps} steps (the fastest is "
             "the one least disturbed by other processes); set-up is binding and indexing all N rows once.\n",
             "| step of | N rows | set-up (s) | ms per step (median) | fastest step (ms) |",
             "|---|---|---|---|---|"]
    for rows in (int(float(r)) for r in args.rows.split(",")):
        table = data(rows, np.random.default_rng(0))
        for label, (annotation, schedule) in CONTENDERS.items():
            setup, step, fastest = time_steps(rows, args.steps, annotation, schedule, table)
            print(f"{label:<44} N = {rows:>10,d}  set-up {setup:7.2f} s  step {1000 * step:7.2f} ms "
                  f"(fastest {1000 * fastest:.2f} ms)", flush=True)
            lines.append(f"| {label} | {rows:,d} | {setup:.2f} | {1000 * step:.2f} | {1000 * fastest:.2f} |")
        del table
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(text, "## Minibatch steps against N", ROOT / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
