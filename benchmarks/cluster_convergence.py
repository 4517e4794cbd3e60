"""Sweeps to convergence of batch VMP on a Dask cluster, with and without SQUAREM, beside one
process: the cluster's SQUAREM steps on the globals and refits the partitions' locals after a move
(ppl.cluster.batch), so it should take the sweeps one process takes where the start is the same.

Two problems: a logistic regression whose covariate sits far from 0 (`x + 20`, the rows of
models/hierarchical_logistic.csv in two CSV files), where coordinate ascent zig-zags between the
intercept and the slope, under mean field and under `block (b0, b)`; and models/gmm.vim over four
files (a mixture: locals on the partitions), its cluster start fitted to a sample of 40 groups
(`SAMPLE`, as tests/test_cluster.py: the whole file would start it at the optimum). A local cluster of two worker processes, one thread
each. Writes the section "## Dask cluster: sweeps to converge" of docs/benchmarks.md.

    python3 benchmarks/cluster_convergence.py [--max-iter 1000] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, write_section  # noqa: E402  (sets one BLAS thread)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

TITLE = "## Dask cluster: sweeps to converge"
SAMPLE = 40  # groups of the mixture's starting fit on the cluster
LOGISTIC = ("data x: real[N]\ndata y: bool[N]\nb0 ~ Normal(0, 1)\nb ~ Normal(0, 1)\n"
            "y ~ Bernoulli(logistic(b0 + b * (x + 20)))\n")


def problems(folder: Path) -> list:
    """(label, model text, the rows, the files' pattern) of each problem, its files written."""
    logistic = pd.read_csv(ROOT / "models" / "hierarchical_logistic.csv")
    gmm = pd.read_csv(ROOT / "models" / "gmm.csv")
    for name, frame, parts in (("logistic", logistic, 2), ("gmm", gmm, 4)):
        for i, rows in enumerate(np.array_split(np.arange(len(frame)), parts)):
            frame.iloc[rows].to_csv(folder / f"{name}{i}.csv", index=False)
    return [("logistic on x + 20, mean field", LOGISTIC, logistic, str(folder / "logistic*.csv")),
            ("logistic on x + 20, block (b0, b)", LOGISTIC + "block (b0, b)\n", logistic, str(folder / "logistic*.csv")),
            ("gmm (K = 3, `@joint`)", (ROOT / "models" / "gmm.vim").read_text(), gmm, str(folder / "gmm*.csv"))]


def fit(model, data, max_iter: int, **options) -> tuple:
    """(posterior, wall seconds) of one default fit."""
    start = time.perf_counter()
    post = model.infer(data, seed=0, max_iter=max_iter, **options)
    return post, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-iter", type=int, default=1000)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    import logging
    import warnings
    import ppl
    import ppl.cluster.batch as batch
    from distributed import Client
    from ppl.cluster.connect import local_cluster
    logging.disable(logging.INFO)
    batch.START_GROUPS = SAMPLE  # the logistic regression has no locals: its start is `initialise`'s
    warnings.simplefilter("ignore")
    rows = []
    with tempfile.TemporaryDirectory() as scratch, local_cluster(2) as cluster, Client(cluster) as client:
        for label, text, frame, pattern in problems(Path(scratch)):
            model = ppl.compile(text)
            for squarem in (True, False):
                for where, data, extra in (("one process", frame, {}), ("cluster, 2 workers", pattern, {"client": client})):
                    post, seconds = fit(model, data, args.max_iter, accelerate=None if squarem else False, **extra)
                    rows.append((label, where, squarem, post.iterations, post.status, post.elbo, seconds))
                    print(f"{label}: {where}, SQUAREM {'on' if squarem else 'off'}: {post.iterations} sweeps, "
                          f"ELBO {post.elbo:.6f}, {seconds:.2f} s", flush=True)
    text = report(args, rows)
    print(text)
    if not args.no_write:
        write_section(text, TITLE, ROOT / "docs" / "benchmarks.md")


def report(args, rows: list) -> str:
    lines = [TITLE, "",
             f"`python3 benchmarks/cluster_convergence.py`, one BLAS thread; {machine()}; a local cluster of two worker "
             "processes (one thread each) on this machine, so the wall times show the cost of the rounds, not a "
             f"speed-up. Default fits at seed 0, at most {args.max_iter} sweeps. The logistic regression's rows are "
             "models/hierarchical_logistic.csv's in two files: with no locals, a cluster run starts where one process "
             "starts and takes its sweeps. The mixture's four files hold its locals: a cluster starts from a fit of "
             f"a sample of {SAMPLE} groups (one process: k-means++ over all the rows), and after a SQUAREM move the partitions "
             "refit their locals, where one process extrapolates a local this small with the globals. Before the cluster "
             "ran SQUAREM every cluster run was its `off` row, and the logistic regression started from the sample's "
             "undamped fit (an ELBO of -1.5e7): 437 sweeps under the block, 1000 unconverged under mean field.", "",
             "| problem | where | SQUAREM | sweeps | status | ELBO | wall s |", "|---|---|---|---|---|---|---|"]
    for label, where, squarem, sweeps, status, elbo, seconds in rows:
        lines.append(f"| {label} | {where} | {'on' if squarem else 'off'} | {sweeps} | {status} | {elbo:.6f} | "
                     f"{seconds:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
