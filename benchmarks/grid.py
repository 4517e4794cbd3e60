"""Grid benchmark: what a grid over τ_b costs on the hierarchical logistic model, and what the
warm start from the neighbouring node saves.

`ppl infer` of models/hierarchical_logistic.vim (its 6 sites, and G synthetic sites of 30 rows
from the generator of benchmarks/gaussian_block.py) with `--gaussian-block all`, without and
with `--grid tau_b`: nodes kept, sweeps (the ordinary run's and every node's), wall seconds,
ELBO; and the grid with every node started cold (the usual initialisation) instead of from its
neighbour's q. Best of --repeat.

A second section (`--part predict`) times what comes after the fit, without and with the grid:
`predict` of every row with its response empty (the first 30 rows moved to a new site),
`score` of every row, `save` and `Posterior.load` of the JSON file, and the file's size. A grid
posterior folds the new rows in once per node.

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
PREDICT = "## Grids: predicting, scoring, saving"
DOC = ROOT / "docs" / "benchmarks.md"


def best(repeat: int, run) -> tuple:
    """(result of `run()`, its best seconds over `repeat` calls)."""
    out, seconds = None, np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        out = run()
        seconds = min(seconds, time.perf_counter() - start)
    return out, seconds


def timed(model, data, repeat: int, grid: str | None, warm: bool = True):
    """(posterior, best seconds) of `--gaussian-block all`, with a grid over `grid` if given."""
    from ppl.infer import Options
    from ppl.infer.grid import infer_grid, parse_option
    if grid is None:
        return best(repeat, lambda: model.infer(data, seed=0, gaussian_block="all"))
    # what Model.infer runs with grid=..., with the warm start switched as asked
    return best(repeat, lambda: infer_grid(model, data, parse_option(grid), None, Options(seed=0),
                                           gaussian_block="all", warm=warm))


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


def predict_rows(sizes, repeat, folder: Path):
    import pandas as pd
    import ppl
    model = ppl.load(ROOT / "models" / "hierarchical_logistic.vim")
    out = []
    for groups in sizes:
        data = pd.read_csv(ROOT / "models" / "hierarchical_logistic.csv") if groups is None else \
            pd.DataFrame(synthetic(groups))
        new = data.assign(y=np.nan, site=np.where(np.arange(len(data)) < 30, "new", data["site"]))
        label = "6 (the tutorial's)" if groups is None else str(groups)
        for name, grid in (("block", None), ("block + grid over τ_b", "tau_b")):
            post = model.infer(data, seed=0, gaussian_block="all", grid=grid)
            path = folder / f"post_{groups}_{grid}.json"
            _, predict = best(repeat, lambda: post.predict(new))
            _, score = best(repeat, lambda: post.score(data))
            _, save = best(repeat, lambda: post.save(path))
            _, load = best(repeat, lambda: ppl.Posterior.load(path))
            parts = len(post.parts)
            out.append((label, len(data), name, parts, predict, score, save, load, path.stat().st_size / 1024))
            print(f"G = {label} {name}: {parts} parts, predict {predict:.2f} s, score {score:.2f} s, "
                  f"save {save:.2f} s, load {load:.2f} s, {out[-1][-1]:.0f} KB", flush=True)
    return out


def _section(title, command, about, columns, table) -> str:
    """A section: its title, how it was run, what it measures, and its table, `columns` being
    (heading, alignment, format of its cells) and `table` the rows' values."""
    lines = [title, "", f"`{command}` on {machine()}; one BLAS thread, best of the repeats. Timings are "
             "noisy: other jobs shared the machine.", "", about, "",
             "| " + " | ".join(c[0] for c in columns) + " |", "|" + "|".join(c[1] for c in columns) + "|"]
    lines += ["| " + " | ".join(format(v, c[2]) for v, c in zip(row, columns)) + " |" for row in table]
    return "\n".join(lines) + "\n"


SECONDS = ("---:", ".2f")
PREDICT_COLUMNS = (("G", "---", ""), ("rows", "---:", ""), ("q", "---", ""), ("parts", "---:", ""),
                   ("predict s", *SECONDS), ("score s", *SECONDS), ("save s", *SECONDS), ("load s", *SECONDS),
                   ("file KB", "---:", ".0f"))
FIT_COLUMNS = (("G", "---", ""), ("q", "---", ""), ("nodes", "---:", ""), ("sweeps", "---:", ""),
               ("seconds", *SECONDS), ("ELBO", "---:", ".3f"))


def render_predict(table, command) -> str:
    return _section(PREDICT, command,
                    "After the fits of the section above: `predict` of every row with its response empty (the first "
                    "30 rows at a new site), `score` of every row, `save` and `Posterior.load` of the JSON file. A "
                    "grid posterior has one part per node, each folded in with the model given its τ_b; its file "
                    "holds every node's q ([rules/grid.md](rules/grid.md#saving-predicting-plotting)).",
                    PREDICT_COLUMNS, table)


def render(table, command) -> str:
    return _section(SECTION, command,
                    "`ppl infer` of models/hierarchical_logistic.vim with `--gaussian-block all`, without and with "
                    "`--grid tau_b` ([rules/grid.md](rules/grid.md)); sweeps count the ordinary run's and every "
                    "node's. The last row of each size starts every node from the usual initialisation instead "
                    "of its neighbour's q.", FIT_COLUMNS, table)


def main(argv=None) -> int:
    import tempfile
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--part", choices=("all", "fit", "predict"), default="all")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    command = "python3 benchmarks/grid.py" + (f" --repeat {args.repeat}" if args.repeat != 3 else "")
    sections = []
    if args.part in ("all", "fit"):
        sections.append((render(rows((None, 50, 200), args.repeat), command), SECTION))
    if args.part in ("all", "predict"):
        with tempfile.TemporaryDirectory() as folder:
            table = predict_rows((None, 50), args.repeat, Path(folder))
        sections.append((render_predict(table, command + (" --part predict" if args.part == "predict" else "")),
                         PREDICT))
    publish(sections, DOC, write=not args.no_write)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
