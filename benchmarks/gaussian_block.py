"""Gaussian block benchmark: the arrow solve against a dense one as the number of groups grows,
and a whole `ppl infer` of the hierarchical logistic model with and without the block.

1. The solve of one update (mean, the covariance blocks factors read, log-determinant) of a
   block with a corner of c = 2 globals and G groups of l = 2 effects, by block elimination
   (ppl.infer.arrow.solve) and by a dense Cholesky inverse of the (c + G·l)-square precision
   (skipped past G = 2,000: 32 MB and minutes). Best of --repeat.
2. `ppl infer` on models/hierarchical_logistic.vim with G sites and 30 rows per site
   (synthetic, the generator of models/make_data.py at other sizes): mean field, the block of
   the Gaussians alone (`--gaussian-block mu_a,mu_b,a,b`, Gamma q(τ) apart) and
   `--gaussian-block all` (log τ_a, log τ_b in the block, searched Newton steps): sweeps,
   wall seconds, ELBO.

One BLAS thread; timings are noisy on a shared machine (other jobs ran beside this one).
`--no-write` prints the section without writing docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: benchmarks/ and ppl/ from this checkout
    sys.path.insert(0, str(ROOT))
from benchmarks._report import machine, write_section  # noqa: E402  (before numpy: one BLAS thread)
import numpy as np  # noqa: E402
from ppl.infer.arrow import ArrowLayout, solve  # noqa: E402

SECTION = "## Gaussian blocks: the arrow solve"
DOC = ROOT / "docs" / "benchmarks.md"
DENSE_LIMIT = 2000
VARIANTS = (("mean field", None), ("Gaussian block", "mu_a,mu_b,a,b"), ("block + log τ", "all"))


def arrow_problem(groups: int, rng):
    """A positive definite arrow precision (c = 2, l = 2) as the flat natural parameter."""
    layout = ArrowLayout(2, groups, 2)
    b = rng.normal(size=(groups, 2, 2)) * 0.3
    d = np.eye(2) * 3.0 + np.einsum("gij,gkj->gik", b, b)
    a = np.eye(2) * (1.0 + groups)
    return layout, layout.pack(rng.normal(size=2), rng.normal(size=(groups, 2)), a, d, b)


def best_of(repeat: int, call) -> float:
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def dense_solve(layout, eta):
    h, j = layout.dense(eta)
    chol = np.linalg.cholesky(j)
    inv = np.linalg.inv(chol)
    return inv.T @ (inv @ h), inv.T @ inv


def solve_rows(sizes, repeat):
    rng = np.random.default_rng(0)
    rows = []
    for groups in sizes:
        layout, eta = arrow_problem(groups, rng)
        arrow = best_of(repeat, lambda: solve(layout, eta))
        dense = best_of(repeat, lambda: dense_solve(layout, eta)) if layout.dim <= 2 * DENSE_LIMIT else np.nan
        rows.append((groups, layout.dim, arrow, dense))
        print(f"G = {groups}: arrow {arrow * 1e3:.2f} ms, dense {dense * 1e3:.2f} ms", flush=True)
    return rows


def synthetic(groups: int, per_group: int = 30, seed: int = 4):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(-0.5, 1.0, groups), rng.normal(1.0, 0.5, groups)
    g = np.repeat(np.arange(groups), per_group)
    x = rng.normal(size=g.size)
    y = rng.random(g.size) < 1 / (1 + np.exp(-(a[g] + b[g] * x)))
    return {"site": np.array([f"s{k:05d}" for k in g]), "x": x, "y": y}


def infer_rows(sizes, repeat):
    import ppl
    model = ppl.load(ROOT / "models" / "hierarchical_logistic.vim")
    rows = []
    for groups in sizes:
        data = synthetic(groups)
        for label, switch in VARIANTS:
            post, seconds = None, np.inf
            for _ in range(repeat):
                start = time.perf_counter()
                post = model.infer(data, seed=0, gaussian_block=switch)
                seconds = min(seconds, time.perf_counter() - start)
            rows.append((groups, label, post.iterations, seconds, post.elbo))
            print(f"G = {groups} {label}: {post.iterations} sweeps, {seconds:.2f} s, ELBO {post.elbo:.2f}", flush=True)
    return rows


def render(solves, infers, command) -> str:
    lines = [SECTION, "", f"`{command}` on {machine()}; one BLAS thread, best of the repeats. Timings are "
             "noisy: other jobs shared the machine.", "",
             "One solve of a block with 2 globals and G groups of 2 effects (mean, covariance blocks, "
             "log-determinant): block elimination (`ppl.infer.arrow`) against a dense Cholesky inverse.", "",
             "| G | dimension | arrow (ms) | dense (ms) |", "|---:|---:|---:|---:|"]
    for groups, dim, arrow, dense in solves:
        lines.append(f"| {groups} | {dim} | {arrow * 1e3:.2f} | {'-' if np.isnan(dense) else f'{dense * 1e3:.1f}'} |")
    lines += ["", "`ppl infer` of models/hierarchical_logistic.vim on G synthetic sites of 30 rows: mean field, "
              "the block of the Gaussians (`--gaussian-block mu_a,mu_b,a,b`, Gamma q(τ) apart) and "
              "`--gaussian-block all` (log τ in the block, searched Newton steps):", "",
              "| G | q | sweeps | seconds | ELBO |", "|---:|---|---:|---:|---:|"]
    for groups, label, sweeps, seconds, elbo in infers:
        lines.append(f"| {groups} | {label} | {sweeps} | {seconds:.2f} | {elbo:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    solves = solve_rows((10, 100, 1000, 2000, 10000, 100000), args.repeat)
    infers = infer_rows((10, 100, 1000), args.repeat)
    command = "python3 benchmarks/gaussian_block.py" + (f" --repeat {args.repeat}" if args.repeat != 3 else "")
    text = render(solves, infers, command)
    print(text)
    if not args.no_write:
        write_section(text, SECTION, DOC)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
