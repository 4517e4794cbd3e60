"""Gaussian mixture at scale: cost per sweep per row from 1e4 to 1e7 rows, and what `--output`
adds to a mixture run.

1. "## Gaussian mixture: cost against N": synthetic data (K = 5 clusters, D = 2, fixed seed),
   ppl (SQUAREM off) and the floor (`benchmarks/gmm_floor.py`) each in a fresh process per size,
   one BLAS thread. Each sweep is timed on its own (CPU and wall), with the kernel (system) CPU
   time and the minor page faults of the sweep beside it, and the process's peak resident
   memory; ppl's defaults (SQUAREM on) run too, for their peak memory. Few sweeps at 1e7 rows
   (the machine is shared).
2. "## `--output` of a mixture": `ppl infer` start to exit without `--output`, with a `.json`
   and with a `.csv`, on models/gmm and on the two synthetic sizes of benchmarks/gmm.py; CPU,
   wall and peak memory of the child process (`os.wait4`), the variants taking turns, minimum
   of --runs runs each.

    python3 benchmarks/gmm_scale.py [--sizes 1e4,1e5,1e6,1e7] [--runs 5] [--only scale|output] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, publish  # noqa: E402  (before numpy: one BLAS thread)

import numpy as np  # noqa: E402

SCALE = "## Gaussian mixture: cost against N"
OUTPUT = "## `--output` of a mixture"
DOC = ROOT / "docs" / "benchmarks.md"
K, D = 5, 2


def sweeps(n: int) -> int:
    """Sweeps per run: enough steady ones, few at 1e7 rows."""
    return 3 + max(3, min(40, int(4e6 // n)))


def child(n: int, which: str, repeat: int) -> dict:
    """In this process: CPU, wall, system CPU and minor faults of one sweep of `which` at n rows,
    timed sweep by sweep (ppl through its progress callback, so the engine's bookkeeping is in),
    minimum over the steady sweeps (the third on) of `repeat` runs."""
    import resource

    from benchmarks.gmm import ALPHA0, BETA0, EXACT, make_data, ppl_problem
    from benchmarks.gmm_floor import FloorVBEM
    from ppl.infer import Options, run
    x = make_data(K, n, D)
    if which in ("ppl", "defaults"):
        problem = ppl_problem(x, K)
        del x
    else:  # the floor from random responsibilities: its own process holds no ppl state
        r0 = np.random.default_rng(0).dirichlet(np.ones(K), n)
    m = sweeps(n)
    best = None
    for _ in range(repeat):
        marks = []

        def mark(*_):
            usage = resource.getrusage(resource.RUSAGE_SELF)
            marks.append([time.process_time(), time.perf_counter(), usage.ru_stime, usage.ru_minflt])

        if which in ("ppl", "defaults"):  # defaults: SQUAREM on, still exactly m sweeps
            options = EXACT if which == "ppl" else {k: v for k, v in EXACT.items() if k != "accelerate"}
            assert run(problem, Options(max_iter=m, seed=1, **options), progress=mark).iterations == m
        else:
            floor = FloorVBEM(x, r0, ALPHA0, BETA0, float(D), np.eye(D))
            for _ in range(m):
                floor.sweep()
                mark()
        steps = np.diff(np.array(marks), axis=0)[1:]  # sweeps 3..m
        value = steps.min(axis=0)
        best = value if best is None else np.minimum(best, value)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"cpu": best[0], "wall": best[1], "sys": best[2], "faults": best[3], "peak": peak, "sweeps": m}


def scale_rows(sizes: list[int], repeat: int) -> list[dict]:
    rows = []
    for n in sizes:
        row = {"n": n}
        for which in ("floor", "ppl", "defaults"):
            out = subprocess.run([sys.executable, __file__, "--child", str(n), which, str(repeat if n < 10**7 else 1)],
                                 cwd=ROOT, check=True, capture_output=True, text=True).stdout
            row[which] = json.loads(out.strip().splitlines()[-1])
        rows.append(row)
        print(f"{n:.0e}: ppl {row['ppl']['cpu'] / n * 1e9:.1f} ns/row, floor {row['floor']['cpu'] / n * 1e9:.1f} ns/row",
              file=sys.stderr)
    return rows


def scale_section(sizes: list[int], repeat: int) -> str:
    load = os.getloadavg()[0]
    rows = scale_rows(sizes, repeat)
    load = max(load, os.getloadavg()[0])
    lines = ["| N | sweeps per run | ppl ns/row/sweep (CPU / wall) | floor ns/row/sweep (CPU / wall) | ppl / floor (CPU) | "
             "ppl system CPU share | ppl minor faults per sweep | ppl peak RSS MB | floor peak RSS MB | "
             "ppl defaults (SQUAREM) peak RSS MB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p, f, n = r["ppl"], r["floor"], r["n"]
        lines.append(f"| {n:.0e} | {p['sweeps']} | {p['cpu'] / n * 1e9:.1f} / {p['wall'] / n * 1e9:.1f} | "
                     f"{f['cpu'] / n * 1e9:.1f} / {f['wall'] / n * 1e9:.1f} | {p['cpu'] / f['cpu']:.2f}× | "
                     f"{max(p['sys'], 0.0) / max(p['cpu'], 1e-12):.0%} | {p['faults']:.0f} | {p['peak']:.0f} | {f['peak']:.0f} | "
                     f"{r['defaults']['peak']:.0f} |")
    per_row = [r["ppl"]["cpu"] / r["n"] for r in rows]
    spread = max(per_row) / min(per_row)
    verdict = f"ppl's CPU time per sweep per row within 1.5× across {sizes[0]:.0e}–{sizes[-1]:.0e} rows ({spread:.2f}×)"
    return "\n".join([
        SCALE, "",
        f"Synthetic mixture data (K = {K}, D = {D}, fixed seed). ppl runs SQUAREM off, the floor is",
        "`benchmarks/gmm_floor.py`; each runs in its own process per size (so the peak memory is its",
        "own), one BLAS thread. Each sweep is timed on its own (ppl's through its progress callback, so",
        "the engine's per-sweep bookkeeping counts), and the table keeps the fastest of the steady",
        "sweeps (the third on) over the repeats (one run at 1e7 rows). System CPU share and minor page",
        "faults are those of ppl's sweep:",
        "the fused sweep writes into reused buffers, so a sweep faults no fresh N × K memory.",
        "Peak memory: the floor holds the data, the design F (N × 6 here), E[z] and its starting",
        "responsibilities; ppl holds the data and its statistics (N × 6), F, two λ_z (the monitor",
        "compares this sweep's with the last) and one E[z], written in place. The initial ELBO, the",
        "final ELBO terms, k-means and the last sweep's mean change run in blocks of rows, and",
        "reads that do not vary along the rows keep no N × K index (issue 17). What each change",
        "saved, peak at 1e6 rows (`python3 benchmarks/gmm_scale.py --child 1000000 ppl 1` at each",
        "commit): 907 MB before; 755 with k-means and the mean change in blocks; 495 with the ELBO",
        "terms in blocks (no cached N-sized gathers); 427 with plate-free indices as views; 389 with",
        "the monitor keeping one λ; 343 with E[z] in place. At 1e7 rows: 7,925 MB before.",
        "The last column runs ppl's defaults (SQUAREM on, the same sweeps): for a local this large",
        "SQUAREM keeps the globals' λ only and refits z after each step (ppl.infer.accelerate), and",
        "the sweep from there writes over that refit's λ_z, so it holds what the plain run holds.",
        "When every λ was extrapolated (three snapshots of λ_z and the step's own), that run peaked",
        "at 453 MB at 1e6 rows and 3,898 MB at 1e7 (`--child N defaults 1`).",
        f"Load average {load:.1f} on 2 cores during the run (other agents' jobs): wall times are noisy.",
        "", f"- Machine: {machine()}", f"- Command: `python3 benchmarks/gmm_scale.py --only scale`", "",
        *lines, "", f"- {'PASS' if spread <= 1.5 else 'FAIL'}: {verdict}", ""])


# ---- --output overhead ---------------------------------------------------------------------------

def _cases(folder: Path) -> dict:
    """name → (model path, data path): models/gmm and the two synthetic sizes of gmm.py."""
    from benchmarks.gmm import MODEL, SIZES, make_data
    cases = {"models/gmm (272 × 2, K = 6)": (ROOT / "models" / "gmm.vim", ROOT / "models" / "gmm.csv")}
    for name in ("small", "large"):
        k, n, d = SIZES[name]
        columns = [f"x{i + 1}" for i in range(d)]
        data = folder / f"{name}.csv"
        np.savetxt(data, make_data(k, n, d), delimiter=",", header=",".join(columns), comments="", fmt="%.10g")
        model = folder / f"{name}.vim"
        model.write_text(MODEL.replace("const K = 10", f"const K = {k}").replace(
            "data x: real[N, D]", f"data x: real[N, D] from ({', '.join(columns)})"))
        cases[f"synthetic {name} ({n} × {d}, K = {k})"] = (model, data)
    return cases


def _infer(model: Path, data: Path, extra: list) -> tuple[float, float, float]:
    """(CPU s, wall s, peak RSS MB) of one `ppl infer` process."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "ppl.cli", "infer", str(model), str(data), "--seed", "0", "--quiet",
                             *extra], cwd=ROOT, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"ppl infer {model} failed ({status})")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def output_section(runs: int) -> str:
    load = os.getloadavg()[0]
    lines = ["| mixture | no output: CPU / wall s, MB | `.json`: CPU / wall s, MB | `.csv`: CPU / wall s, MB | "
             "`.json` adds (CPU / wall / memory) | `.csv` adds (CPU / wall / memory) |", "|---|---|---|---|---|---|"]
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, (model, data) in _cases(folder).items():
            variants = {"none": [], "json": ["--output", str(folder / "post.json")],
                        "csv": ["--output", str(folder / "post.csv")]}
            times = {v: [] for v in variants}
            for _ in range(runs):
                for v, extra in variants.items():
                    times[v].append(_infer(model, data, extra))
            best = {v: np.min(np.array(t), axis=0) for v, t in times.items()}
            cell = lambda b: f"{b[0]:.2f} / {b[1]:.2f}, {b[2]:.0f}"  # noqa: E731
            adds = []
            for v in ("json", "csv"):
                extra = best[v] / best["none"] - 1
                worst = max(worst, extra[0], extra[2])
                adds.append(f"{extra[0]:+.0%} / {extra[1]:+.0%} / {extra[2]:+.0%}")
            lines.append(f"| {name} | {cell(best['none'])} | {cell(best['json'])} | {cell(best['csv'])} | "
                         f"{adds[0]} | {adds[1]} |")
    load = max(load, os.getloadavg()[0])
    return "\n".join([
        OUTPUT, "",
        "`ppl infer MODEL DATA --seed 0 --quiet`, process start to exit, without `--output` and with a `.json`",
        "(the whole posterior: summary and q) or a `.csv` (the stansummary-style table); CPU (user + system)",
        f"and peak resident memory of the child process, minimum of {runs} runs, the three variants taking",
        "turns; one BLAS thread. Wishart quantiles are exact (off the diagonal by quadrature, no draws); a",
        "Categorical (the mixture's z) is written once, as its probabilities; the JSON is written by the C",
        f"encoder. CPU time is the reliable column: load average {load:.1f} on 2 cores during the run.",
        "", f"- Machine: {machine()}", f"- Command: `python3 benchmarks/gmm_scale.py --only output`", "",
        *lines, "", f"- {'PASS' if worst < 0.2 else 'FAIL'}: `--output` adds under 20% CPU time and memory "
        f"(worst {worst:+.0%})", ""])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1e4,1e5,1e6,1e7")
    p.add_argument("--repeat", type=int, default=3, help="repeats per size below 1e7 rows (default 3)")
    p.add_argument("--runs", type=int, default=5, help="runs of each `ppl infer` variant (default 5)")
    p.add_argument("--only", choices=("scale", "output"))
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(int(args.child[0]), args.child[1], int(args.child[2]))))
        return 0
    sections = []
    if args.only != "output":
        sections.append((scale_section([int(float(s)) for s in args.sizes.split(",")], args.repeat), SCALE))
    if args.only != "scale":
        sections.append((output_section(args.runs), OUTPUT))
    publish(sections, DOC, not args.no_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
