"""The engine's fixed cost per sweep and per run, on problems whose arithmetic takes microseconds:
what ppl spends beyond the algorithm (Python calls, dispatch, constants recomputed).

For each case, runs of exactly M1 = 2 and M2 plain sweeps (`Model.infer`, SQUAREM off and
tolerances that never stop it, M2 below the sweep where the ELBO stops changing, as in
benchmarks/logistic_sweeps.py): per sweep (T(M2) − T(M1)) / (M2 − M1), set-up T(M1) − M1 × per
sweep (binding, building the factor graph, the first ELBO, the posterior), each T the least CPU
time over the rounds, and Python function calls per sweep (cProfile's count, deterministic).

`--before TREE` measures a second checkout of ppl (e.g. `git archive <commit> | tar -x -C TREE`)
in the same run: each round runs one process per tree, alternating their order, so that both see
the same machine load. One BLAS thread. Writes "## Engine overhead" of docs/benchmarks.md.

    python3 benchmarks/engine_overhead.py [--before TREE [--before-name TEXT]] [--rounds 5] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SECTION = "## Engine overhead"
DOC = ROOT / "docs" / "benchmarks.md"
SMALL = ("eight_schools", "linear_regression_ard", "gmm")  # models/ with their data
WIDE = (("ncvmp", "ncvmp"), ("jaakkola", "bound:jaakkola"))  # D > N logistic regression: (label, rule)
M1, M2_MAX, REPEAT = 2, 12, 10


def _cases():
    """name -> run(m): `Model.infer` with exactly m plain sweeps."""
    import numpy as np
    import pandas as pd

    import ppl
    from benchmarks.logistic import MODEL, make_data
    exact = dict(tol=1e-300, mean_tol=1e-300, accelerate=False)
    (x, y), _ = make_data(31, 2000)
    wide, data = ppl.compile(MODEL), {"X": x, "y": y.astype(np.int64)}
    cases = {f"D > N logistic (N=31, D=2000), {label}":
             (lambda m, rule=rule: wide.infer(data, seed=0, methods={"y": rule}, max_iter=m, **exact))
             for label, rule in WIDE}
    for name in SMALL:
        model, frame = ppl.load(ROOT / "models" / f"{name}.vim"), pd.read_csv(ROOT / "models" / f"{name}.csv")
        cases[name] = lambda m, model=model, frame=frame: model.infer(frame, seed=1, max_iter=m, **exact)
    return cases


def _below_flat(run) -> int:
    """M2: the last sweep before the plain ELBO repeats itself exactly (at most M2_MAX)."""
    trace = run(M2_MAX + 2).trace
    flat = next((i for i in range(1, len(trace)) if trace[i] == trace[i - 1]), len(trace))
    return max(min(M2_MAX, flat - 1), M1 + 1)


def measure_round() -> dict:
    """One round in this process: {case: {m: least CPU seconds of REPEAT runs}, calls, m2}."""
    import cProfile
    import pstats
    import time
    import warnings
    warnings.simplefilter("ignore")
    out = {}
    for name, run in _cases().items():
        m2 = _below_flat(run)
        seconds = {}
        for m in (M1, m2):
            best = float("inf")
            for _ in range(REPEAT):
                start = time.process_time()
                run(m)
                best = min(best, time.process_time() - start)
            seconds[m] = best
        calls = {}
        for m in (M1, m2):
            profile = cProfile.Profile()
            profile.runcall(run, m)
            calls[m] = pstats.Stats(profile).total_calls
        out[name] = {"m2": m2, "t1": seconds[M1], "t2": seconds[m2], "calls": (calls[m2] - calls[M1]) / (m2 - M1)}
    return out


def _round_in(tree: Path) -> dict:
    """One round measured by a fresh process importing ppl from `tree`."""
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker", str(tree)], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def collect(trees: dict, rounds: int) -> dict:
    """{label: {case: (per sweep s, set-up s, calls per sweep, m2)}}, least times over the rounds."""
    best: dict = {label: {} for label in trees}
    for round_ in range(rounds):
        order = list(trees) if round_ % 2 == 0 else list(trees)[::-1]
        for label in order:
            for case, r in _round_in(trees[label]).items():
                old = best[label].get(case)
                best[label][case] = r if old is None else \
                    {**r, "t1": min(old["t1"], r["t1"]), "t2": min(old["t2"], r["t2"])}
        print(f"round {round_ + 1} of {rounds} done", flush=True)
    return {label: {case: ((r["t2"] - r["t1"]) / (r["m2"] - M1), r["t1"] - M1 * (r["t2"] - r["t1"]) / (r["m2"] - M1),
                           r["calls"], r["m2"]) for case, r in cases.items()} for label, cases in best.items()}


def render(results: dict, rounds: int, load: tuple, command: str, before: str = "") -> str:
    from benchmarks._report import machine
    labels = list(results)
    head = "| case | sweeps M1→M2 | " + " | ".join(
        f"{what} ({label})" for what in ("ms / sweep", "set-up ms", "calls / sweep") for label in labels) + " |"
    lines = [head, "|" + "---|" * (2 + 3 * len(labels))]
    for case in results[labels[0]]:
        cells = [case, f"{M1}→{results[labels[0]][case][3]}"]
        cells += [f"{1e3 * results[label][case][0]:.3f}" for label in labels]
        cells += [f"{1e3 * results[label][case][1]:.2f}" for label in labels]
        cells += [f"{results[label][case][2]:.0f}" for label in labels]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join([
        SECTION, "",
        "What the engine costs beyond the arithmetic, on problems small enough that the arithmetic takes",
        "microseconds (`benchmarks/engine_overhead.py`): per sweep (T(M2) − T(M1)) / (M2 − M1) from runs of",
        "exactly M1 and M2 plain sweeps (SQUAREM off), set-up T(M1) − M1 × per sweep (binding, factor graph, first",
        f"ELBO, posterior), each T the least CPU time of {REPEAT} runs per round over the rounds, and Python function calls",
        "per sweep (cProfile's count). With two trees, each round runs one process per tree, alternating their",
        f"order. {rounds} rounds, one BLAS thread. The machine was shared with other jobs (load average "
        f"{load[0]:.1f} at the start, {load[1]:.1f} at the end, on 2 cores): times are noisy, the calls are not.",
        *([f"\"before\" is {before}; \"now\" this checkout."] if before else []), "",
        f"- Machine: {machine()}", f"- Command: `{command}`", "", *lines, ""])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout of ppl, measured in the same run")
    parser.add_argument("--before-name", default="", help="what the --before checkout is, for the page")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:  # a round in this process, with ppl (and the logistic data) from that tree
        sys.path.insert(0, str(args.worker))
        sys.modules.pop("benchmarks", None)
        print(json.dumps(measure_round()))
        return 0
    from benchmarks._report import publish
    trees = {"before": args.before.resolve(), "now": ROOT} if args.before else {"now": ROOT}
    start = os.getloadavg()[0]
    results = collect(trees, args.rounds)
    command = "python3 benchmarks/engine_overhead.py" + (" --before TREE" if args.before else "") + \
        (f' --before-name "{args.before_name}"' if args.before_name else "") + \
        (f" --rounds {args.rounds}" if args.rounds != 5 else "")
    text = render(results, args.rounds, (start, os.getloadavg()[0]), command, args.before_name or str(args.before or ""))
    publish([(text, SECTION)], DOC, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
