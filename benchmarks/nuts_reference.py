"""NUTS reference posterior for the breast-cancer logistic regression (run once, by hand).

The model is the one of models/logistic_regression.vim, written again in NumPyro:

    w ~ Normal(0, 1) for each of the D = 31 columns x1..x31 of models/logistic_regression.csv
        (x1 is the intercept column of ones, x2..x31 the standardised features)
    y[n] ~ Bernoulli(logistic(X[n] · w))

NUTS (NumPyro, float64) runs 4 chains × 2000 warm-up + 4000 kept draws from a fixed seed;
split R-hat and the effective sample size of every coefficient are computed over the 4 chains.
The result goes to tests/fixtures/breast_cancer_nuts.json:

    {"mean": [...], "sd": [...], "rhat_max", "ess_min", "draws", "command",
     "numpyro_version", "jax_version", ...}

where mean and sd are the posterior mean and standard deviation of w[1..31] over all kept
draws. tests/test_nonconjugate.py compares ppl's NC-VMP posterior means with these (the test
is skipped when the file is missing; CI does not need NumPyro or JAX).

    python3 benchmarks/nuts_reference.py [--seed 0] [--warmup 2000] [--samples 4000] [--chains 4]
                                         [--out tests/fixtures/breast_cancer_nuts.json]

Needs `pip install numpyro` (with jax). About two minutes on 2 CPUs.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "models" / "logistic_regression.csv"
DEFAULT_OUT = ROOT / "tests" / "fixtures" / "breast_cancer_nuts.json"


def load_data():
    table = pd.read_csv(CSV)
    columns = [c for c in table.columns if c != "y"]
    if columns != [f"x{i}" for i in range(1, len(columns) + 1)]:
        raise SystemExit(f"unexpected columns in {CSV}: {columns}")
    x = table[columns].to_numpy(dtype=float)
    y = table["y"].to_numpy(dtype=float)
    return x, y, columns


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    import numpyro  # imported here so that --help works without it

    numpyro.set_host_device_count(args.chains)  # one (virtual) XLA device per chain: run them in parallel
    numpyro.enable_x64()
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
    from numpyro.infer import MCMC, NUTS

    x, y, columns = load_data()
    n, d = x.shape
    print(f"data: {CSV.relative_to(ROOT)}: N = {n} rows, D = {d} columns ({columns[0]} = intercept, "
          f"{int(y.sum())} of y = 1)")

    def model(x, y):
        w = numpyro.sample("w", dist.Normal(jnp.zeros(d), 1.0).to_event(1))
        numpyro.sample("y", dist.Bernoulli(logits=x @ w), obs=y)

    chain_method = "parallel" if jax.local_device_count() >= args.chains else "sequential"
    print(f"NUTS: {args.chains} chains ({chain_method}, {jax.local_device_count()} devices) x "
          f"{args.warmup} warm-up + {args.samples} draws, seed {args.seed}, float64; "
          f"numpyro {numpyro.__version__}, jax {jax.__version__}")
    mcmc = MCMC(NUTS(model, target_accept_prob=0.8), num_warmup=args.warmup, num_samples=args.samples,
                num_chains=args.chains, chain_method=chain_method, progress_bar=False)
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(args.seed), jnp.asarray(x), jnp.asarray(y))
    seconds = time.perf_counter() - start

    draws = np.asarray(mcmc.get_samples(group_by_chain=True)["w"])  # (chains, samples, D)
    rhat = np.asarray(split_gelman_rubin(draws))
    ess = np.asarray(effective_sample_size(draws))
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    flat = draws.reshape(-1, d)
    mean, sd = flat.mean(axis=0), flat.std(axis=0, ddof=1)
    print(f"ran in {seconds:.1f} s; divergences: {divergences}")
    print(f"split R-hat max {rhat.max():.4f} (w[{rhat.argmax() + 1}]); "
          f"ESS min {ess.min():.0f} (w[{ess.argmin() + 1}]) of {flat.shape[0]} draws")
    print(f"{'':>6} {'mean':>9} {'sd':>7} {'R-hat':>7} {'ESS':>7}")
    for j in range(d):
        print(f"w[{j + 1:>2}] {mean[j]:9.4f} {sd[j]:7.4f} {rhat[j]:7.4f} {ess[j]:7.0f}")
    if rhat.max() >= 1.01 or ess.min() <= 1000:
        print("WARNING: R-hat >= 1.01 or ESS <= 1000: run longer (--samples) before using this reference",
              file=sys.stderr)

    result = {
        "mean": mean.tolist(),
        "sd": sd.tolist(),
        "rhat_max": float(rhat.max()),
        "ess_min": float(ess.min()),
        "draws": int(flat.shape[0]),
        "rhat": rhat.tolist(),
        "ess": ess.tolist(),
        "divergences": divergences,
        "chains": args.chains,
        "warmup": args.warmup,
        "samples_per_chain": args.samples,
        "seed": args.seed,
        "columns": columns,
        "model": "w ~ Normal(0, 1) on every column incl. the intercept x1; y ~ Bernoulli(logistic(X @ w))",
        "data": str(CSV.relative_to(ROOT)),
        "seconds": round(seconds, 1),
        "command": "python3 benchmarks/nuts_reference.py " + " ".join(
            shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv)),
        "numpyro_version": numpyro.__version__,
        "jax_version": jax.__version__,
    }
    result["command"] = result["command"].rstrip()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
