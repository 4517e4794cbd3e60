"""NUTS reference posteriors for models of `models/` (run once, by hand; CI does not need them).

Each model is written again in NumPyro, with the priors of its `.vim` file:

- `breast_cancer` (models/logistic_regression.vim): w ~ Normal(0, 1) on each of the D = 31
  columns x1..x31 (x1 the intercept column of ones), y[n] ~ Bernoulli(logistic(X[n] · w));
  writes tests/fixtures/breast_cancer_nuts.json (tests/test_nonconjugate.py);
- `hierarchical_logistic` (models/hierarchical_logistic.vim): mu_a, mu_b ~ Normal(0, 1),
  tau_a, tau_b ~ Gamma(1, 1) (precisions), a[g] ~ Normal(mu_a, sd 1/√tau_a), b[g] likewise,
  y[n] ~ Bernoulli(logistic(a[site[n]] + b[site[n]] x[n])); writes
  tests/fixtures/hierarchical_logistic_nuts.json (tests/test_block.py).

NUTS (NumPyro, float64) runs 4 chains × 2000 warm-up + 4000 kept draws from a fixed seed;
split R-hat and the effective sample size of every element are computed over the 4 chains.
The fixture holds, per element in `names` order, the posterior "mean" and "sd" over all kept
draws, with "rhat_max", "ess_min", "draws", "command", "numpyro_version", "jax_version", ...

    python3 benchmarks/nuts_reference.py [--model breast_cancer|hierarchical_logistic] [--seed 0]
                                         [--warmup 2000] [--samples 4000] [--chains 4] [--out PATH]
                                         [--conditional VAR:GIVEN]

Needs `pip install numpyro` (with jax). Under a minute each on 2 CPUs.
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
FIXTURES = ROOT / "tests" / "fixtures"


def breast_cancer(numpyro, dist, jnp):
    """(model, data, description) of models/logistic_regression.vim."""
    csv = ROOT / "models" / "logistic_regression.csv"
    table = pd.read_csv(csv)
    columns = [c for c in table.columns if c != "y"]
    if columns != [f"x{i}" for i in range(1, len(columns) + 1)]:
        raise SystemExit(f"unexpected columns in {csv}: {columns}")
    x = jnp.asarray(table[columns].to_numpy(dtype=float))
    y = jnp.asarray(table["y"].to_numpy(dtype=float))

    def model():
        w = numpyro.sample("w", dist.Normal(jnp.zeros(x.shape[1]), 1.0).to_event(1))
        numpyro.sample("y", dist.Bernoulli(logits=x @ w), obs=y)

    return model, csv, ["w"], {
        "columns": columns,
        "model": "w ~ Normal(0, 1) on every column incl. the intercept x1; y ~ Bernoulli(logistic(X @ w))"}


def hierarchical_logistic(numpyro, dist, jnp):
    """(model, data, description) of models/hierarchical_logistic.vim (levels: sorted labels)."""
    csv = ROOT / "models" / "hierarchical_logistic.csv"
    table = pd.read_csv(csv)
    levels = sorted(table["site"].unique())
    site = jnp.asarray(table["site"].map({s: i for i, s in enumerate(levels)}).to_numpy())
    x, y = jnp.asarray(table["x"].to_numpy(dtype=float)), jnp.asarray(table["y"].to_numpy(dtype=float))

    def model():
        mu_a = numpyro.sample("mu_a", dist.Normal(0.0, 1.0))
        tau_a = numpyro.sample("tau_a", dist.Gamma(1.0, 1.0))
        mu_b = numpyro.sample("mu_b", dist.Normal(0.0, 1.0))
        tau_b = numpyro.sample("tau_b", dist.Gamma(1.0, 1.0))
        a = numpyro.sample("a", dist.Normal(mu_a, 1 / jnp.sqrt(tau_a)).expand([len(levels)]).to_event(1))
        b = numpyro.sample("b", dist.Normal(mu_b, 1 / jnp.sqrt(tau_b)).expand([len(levels)]).to_event(1))
        numpyro.sample("y", dist.Bernoulli(logits=a[site] + b[site] * x), obs=y)

    return model, csv, ["mu_a", "tau_a", "mu_b", "tau_b", "a", "b"], {
        "levels": levels, "model": "models/hierarchical_logistic.vim (tau: precisions, Gamma(shape, rate))"}


MODELS = {"breast_cancer": breast_cancer, "hierarchical_logistic": hierarchical_logistic}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="breast_cancer")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--conditional", action="append", default=[], metavar="VAR:GIVEN",
                        help="also print the sd of VAR within each quartile of GIVEN's draws (e.g. mu_b:tau_b: "
                             "how the spread of a population mean follows its precision, the funnel)")
    args = parser.parse_args(argv)
    out = args.out or FIXTURES / f"{args.model}_nuts.json"

    import numpyro  # imported here so that --help works without it

    numpyro.set_host_device_count(args.chains)  # one (virtual) XLA device per chain: run them in parallel
    numpyro.enable_x64()
    import jax
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin
    from numpyro.infer import MCMC, NUTS

    model, csv, variables, extra = MODELS[args.model](numpyro, dist, jnp)
    print(f"model {args.model}, data {csv.relative_to(ROOT)}")
    chain_method = "parallel" if jax.local_device_count() >= args.chains else "sequential"
    print(f"NUTS: {args.chains} chains ({chain_method}, {jax.local_device_count()} devices) x "
          f"{args.warmup} warm-up + {args.samples} draws, seed {args.seed}, float64; "
          f"numpyro {numpyro.__version__}, jax {jax.__version__}")
    mcmc = MCMC(NUTS(model, target_accept_prob=0.8), num_warmup=args.warmup, num_samples=args.samples,
                num_chains=args.chains, chain_method=chain_method, progress_bar=False)
    start = time.perf_counter()
    mcmc.run(jax.random.PRNGKey(args.seed))
    seconds = time.perf_counter() - start

    samples = mcmc.get_samples(group_by_chain=True)
    names, columns = [], []
    for v in variables:  # every element, in the order of the posterior table: (chains, samples) each
        draws = np.asarray(samples[v]).reshape(args.chains, args.samples, -1)
        scalar = np.ndim(samples[v]) == 2
        labels = extra.get("levels") or range(1, draws.shape[-1] + 1)  # a group's level label, as ppl's tables
        names += [v] if scalar else [f"{v}[{label}]" for label in labels]
        columns.append(draws)
    draws = np.concatenate(columns, axis=-1)
    rhat = np.asarray(split_gelman_rubin(draws))
    ess = np.asarray(effective_sample_size(draws))
    divergences = int(np.asarray(mcmc.get_extra_fields()["diverging"]).sum())
    flat = draws.reshape(-1, draws.shape[-1])
    mean, sd = flat.mean(axis=0), flat.std(axis=0, ddof=1)
    print(f"ran in {seconds:.1f} s; divergences: {divergences}")
    print(f"split R-hat max {rhat.max():.4f} ({names[rhat.argmax()]}); "
          f"ESS min {ess.min():.0f} ({names[ess.argmin()]}) of {flat.shape[0]} draws")
    print(f"{'':>8} {'mean':>9} {'sd':>7} {'R-hat':>7} {'ESS':>7}")
    for j, name in enumerate(names):
        print(f"{name:>8} {mean[j]:9.4f} {sd[j]:7.4f} {rhat[j]:7.4f} {ess[j]:7.0f}")
    for spec in args.conditional:
        print(conditional_spread(flat, names, *spec.split(":")))
    if rhat.max() >= 1.01 or ess.min() <= 1000:
        print("WARNING: R-hat >= 1.01 or ESS <= 1000: run longer (--samples) before using this reference",
              file=sys.stderr)

    result = {
        "names": names,
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
        **extra,
        "data": str(csv.relative_to(ROOT)),
        "seconds": round(seconds, 1),
        "command": ("python3 benchmarks/nuts_reference.py " + " ".join(
            shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))).rstrip(),
        "numpyro_version": numpyro.__version__,
        "jax_version": jax.__version__,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    tmp.replace(out)
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


def conditional_spread(flat, names, var: str, given: str) -> str:
    """The sd of `var` within each quartile of `given` and `var`'s excess kurtosis: a Gaussian q
    over (var, log given) has one conditional sd whatever `given` is."""
    x, z = flat[:, names.index(var)], flat[:, names.index(given)]
    edges = np.quantile(z, [0, 0.25, 0.5, 0.75, 1])
    sds = [x[(z >= lo) & (z <= hi)].std(ddof=1) for lo, hi in zip(edges[:-1], edges[1:])]
    kurtosis = np.mean((x - x.mean()) ** 4) / x.var() ** 2 - 3
    iqr = np.subtract(*np.quantile(x, [0.75, 0.25])) / 1.349  # the sd a Normal with this bulk would have
    return (f"sd of {var} within the quartiles of {given} (low to high): {', '.join(f'{s:.3f}' for s in sds)}; "
            f"sd {x.std(ddof=1):.3f}, interquartile range / 1.349 {iqr:.3f}, excess kurtosis {kurtosis:.2f}")


if __name__ == "__main__":
    raise SystemExit(main())
