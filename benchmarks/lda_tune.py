"""How LDA's `svi` defaults were chosen: held-out document completion on a validation split of the
training documents (never the test documents of benchmarks/lda.py), over the step size
(τ, κ), the N ramp, the E-step's iterations and the number of passes, minibatches of 32.

The training documents of benchmarks/lda.py (316) are split again 80/20 with seed 1: 252 fit,
64 validate; the score is benchmarks/lda.py's `completion` (per-word log-likelihood of each
validation document's second half given its first). Each setting fits with seeds 0 … n − 1
(`--seeds n`), as does scikit-learn online (20 passes) once; each row gives the mean score and the
paired difference from scikit-learn online, seed by seed, ± its standard error (one seed's score
moves by ±0.05: two seeds could not tell 0.05 apart).

    python3 benchmarks/lda_tune.py [--seeds 10] [--passes 5,10] [--inner 100] [--local-tol 0.001] [--tau 1,10,64] [--kappa ...] [--ramp 0,1]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine  # noqa: E402  (sets one BLAS thread)
from benchmarks.lda import completion, corpus, fit_ppl, fit_sklearn, halves  # noqa: E402

import numpy as np  # noqa: E402

GRID = {"tau": (1, 10, 64), "kappa": (0.6, 0.7, 0.9), "ramp": (0, 1)}


def split():
    train, _ = corpus()
    order = np.random.default_rng(1).permutation(len(train))
    cut = int(0.8 * len(train))
    return train[order[:cut]], train[order[cut:]]


def score(fit, check, seeds: int, schedule=None):
    """(scores per seed, mean CPU s) of ppl under `schedule`, or of scikit-learn online when None."""
    seen, held = halves(check)
    scores, cpus = [], []
    for seed in range(seeds):
        start = time.process_time()
        topics = fit_sklearn(fit, "online", seed) if schedule is None else fit_ppl(fit, schedule, seed=seed)[0]
        cpus.append(time.process_time() - start)
        scores.append(completion(topics, seen, held))
    return np.asarray(scores), float(np.mean(cpus))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--passes", default="10")
    parser.add_argument("--inner", default="100")
    parser.add_argument("--local-tol", default="0.001")
    for name, values in GRID.items():
        parser.add_argument(f"--{name}", default=",".join(map(str, values)))
    args = parser.parse_args(argv)
    grid = [getattr(args, name).split(",") for name in GRID]
    fit, check = split()
    print(f"{machine()}; {len(fit)} fit and {len(check)} validation documents; seeds 0–{args.seeds - 1}", flush=True)
    peer, cpu = score(fit, check, args.seeds)
    print(f"scikit-learn online (20 passes): validation {peer.mean():.4f} nats/word, {cpu:.2f} CPU s", flush=True)
    print("| passes | inner | local_tol | τ | κ | ramp | validation nats/word | − scikit-learn online | CPU s |\n"
          "|---|---|---|---|---|---|---|---|---|", flush=True)
    for passes, inner, tol in itertools.product(args.passes.split(","), args.inner.split(","), args.local_tol.split(",")):
        for tau, kappa, ramp in itertools.product(*grid):
            schedule = (f"svi(batch=32, passes={passes}, tau={tau}, kappa={kappa}, ramp={ramp}, inner={inner}, "
                        f"local_tol={tol}, init=random)")
            value, cpu = score(fit, check, args.seeds, schedule)
            d = value - peer
            print(f"| {passes} | {inner} | {tol} | {tau} | {kappa} | {ramp} | {value.mean():.4f} | "
                  f"{d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f} | {cpu:.2f} |", flush=True)


if __name__ == "__main__":
    main()
