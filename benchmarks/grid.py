"""Grid benchmark: what a grid over τ_b costs on the hierarchical logistic model, and what the
warm start from the neighbouring node saves.

`ppl infer` of models/hierarchical_logistic.vim (its 6 sites, and G synthetic sites of 30 rows
from the generator of benchmarks/gaussian_block.py) with `--gaussian-block all`, without and
with `--grid tau_b`: nodes kept, sweeps (the ordinary run's and every node's), wall seconds,
ELBO; and the grid with every node started cold (the usual initialisation) instead of from its
neighbour's q. Best of --repeat.

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
from benchmarks._report import machine, publish  # noqa: E402  (before numpy: one BLAS thread)
import numpy as np  # noqa: E402
from benchmarks.gaussian_block import synthetic  # noqa: E402

SECTION = "## Grids over a hyperparameter"
DOC = ROOT / "docs" / "benchmarks.md"


def timed(model, data, repeat: int, grid: str | None, warm: bool = True):
    """(posterior, best seconds) of `--gaussian-block all`, with a grid over `grid` if given."""
    from ppl.infer import Options
    from ppl.infer.grid import infer_grid, parse_option
    post, seconds = None, np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        if grid is None:
            post = model.infer(data, seed=0, gaussian_block="all")
        else:  # what Model.infer runs with grid=..., with the warm start switched as asked
            post = infer_grid(model, data, parse_option(grid), None, Options(seed=0), gaussian_block="all", warm=warm)
        seconds = min(seconds, time.perf_counter() - start)
    return post, seconds


def rows(sizes, repeat):
    import ppl
    model = ppl.load(ROOT / "models" / "hierarchical_logistic.vim")
    out = []
    for groups in sizes:
        data = ROOT / "models" / "hierarchical_logistic.csv" if groups is None else synthetic(groups)
        label = "6 (the tutorial's)" if groups is None else str(groups)
        for name, grid, warm in (("block", None, True), ("block + grid over τ_b", "tau_b", True),
                                 ("the same, nodes started cold", "tau_b", False)):
            post, seconds = timed(model, data, repeat, grid, warm)
            nodes = len(post.grid["nodes"]) if grid else "-"
            out.append((label, name, nodes, post.iterations, seconds, post.elbo))
            print(f"G = {label} {name}: {nodes} nodes, {post.iterations} sweeps, {seconds:.2f} s, "
                  f"ELBO {post.elbo:.3f}", flush=True)
    return out


def render(table, command) -> str:
    lines = [SECTION, "", f"`{command}` on {machine()}; one BLAS thread, best of the repeats. Timings are "
             "noisy: other jobs shared the machine.", "",
             "`ppl infer` of models/hierarchical_logistic.vim with `--gaussian-block all`, without and with "
             "`--grid tau_b` ([rules/grid.md](rules/grid.md)); sweeps count the ordinary run's and every "
             "node's. The last row of each size starts every node from the usual initialisation instead "
             "of its neighbour's q.", "",
             "| G | q | nodes | sweeps | seconds | ELBO |", "|---|---|---:|---:|---:|---:|"]
    for label, name, nodes, sweeps, seconds, elbo in table:
        lines.append(f"| {label} | {name} | {nodes} | {sweeps} | {seconds:.2f} | {elbo:.3f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    table = rows((None, 50, 200), args.repeat)
    command = "python3 benchmarks/grid.py" + (f" --repeat {args.repeat}" if args.repeat != 3 else "")
    publish([(render(table, command), SECTION)], DOC, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
