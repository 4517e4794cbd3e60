"""The cost of one stochastic step does not grow with the data: SVI steps of a logistic regression
(rows are the groups, D = 10, minibatches of 1,000 rows) at N = 1e5, 1e6 and 1e7 rows.

A step binds the model to its rows (a gather of |B| rows from the indexed data), computes the
NC-VMP message of those rows and moves the weights; nothing in it touches the other N − |B|
rows. Set-up (binding and indexing all N rows once) is timed apart. One BLAS thread. Writes the
section "## Minibatch steps against N" of docs/benchmarks.md.

    python3 benchmarks/minibatch.py [--rows 1e5,1e6,1e7] [--steps 30] [--no-write]
"""

from __future__ import annotations

import argparse
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


def time_steps(rows: int, steps: int) -> tuple:
    """(set-up seconds, median seconds per step) of SVI on `rows` rows."""
    import ppl
    from ppl.infer.build import build_problem
    from ppl.infer.schedule.svi import SVI
    from ppl.lang.schedule import parse_schedule
    model = ppl.compile(MODEL)
    start = time.perf_counter()
    dataset = model.bind(data(rows, np.random.default_rng(0)))
    problem = build_problem(model.checked, dataset, model.analyze(dataset), parse_schedule(f"svi(batch={BATCH})"))
    svi = SVI(problem, np.random.default_rng(1))
    svi.start(sweeps=1)
    setup = time.perf_counter() - start
    times = []
    for t in range(1, steps + 1):
        begin = time.perf_counter()
        svi.step(t)
        times.append(time.perf_counter() - begin)
    return setup, float(np.median(times))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="1e5,1e6,1e7")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    lines = ["## Minibatch steps against N\n",
             f"`python3 benchmarks/minibatch.py`, one BLAS thread; {machine()}; a shared machine, so the "
             "timings are noisy.\n",
             f"SVI (`schedule svi(batch={BATCH})`) on a logistic regression with D = {D}: the rows are the "
             f"groups, each step binds {BATCH} of them and sends their NC-VMP message to the weights. "
             f"Median of {args.steps} steps; set-up is binding and indexing all N rows once.\n",
             "| N rows | set-up (s) | ms per step |", "|---|---|---|"]
    for rows in (int(float(r)) for r in args.rows.split(",")):
        setup, step = time_steps(rows, args.steps)
        print(f"N = {rows:>10,d}  set-up {setup:7.2f} s  step {1000 * step:7.2f} ms", flush=True)
        lines.append(f"| {rows:,d} | {setup:.2f} | {1000 * step:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(text, "## Minibatch steps against N", ROOT / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
