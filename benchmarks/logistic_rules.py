"""Bayesian logistic regression on the breast-cancer data by every rule ppl has for it, side by
side: held-out accuracy and log predictive density, the rule's own objective, the exact ELBO of
the q it returns, sweeps and time.

Five-fold cross-validation (folds fixed by a seed) of models/logistic_regression.vim, with the
rule chosen by an annotation on the likelihood. The "exact ELBO of q" column evaluates every returned Gaussian q(w)
under the same exact ELBO (Gauss–Hermite for the likelihood, closed-form KL), so the rules
compare on one scale; the "objective" column is what each rule maximises (the exact ELBO for
ncvmp, a lower bound for the bounds, Wang & Blei's approximation for laplace and delta).
The log predictive density integrates σ(x·w) over q exactly (Gauss–Hermite). For NC-VMP and the
Jaakkola bound the floor is the hand-written numpy loop of benchmarks/logistic_floor.py on the same
fold, stopped when a sweep moves its objective by at most the same tolerance (one BLAS thread);
"ppl / floor" compares CPU time per sweep, ppl's fixed cost per run (reading the table, building
the factor graph) included. Per run the counts differ: the plain loops take 104 (NC-VMP, which
oscillates undamped on this data) and 364 (Jaakkola) sweeps on fold 1, where ppl halves NC-VMP's
step when the ELBO falls and accelerates the bound with SQUAREM.

Writes the section "## The rules side by side" of docs/tutorials/logistic_rules.md.

    python3 benchmarks/logistic_rules.py [--no-write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, write_section  # noqa: E402  (before numpy: one BLAS thread)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from scipy.special import log_expit  # noqa: E402

import ppl  # noqa: E402
from benchmarks import logistic_floor  # noqa: E402

SECTION = "## The rules side by side"
DOC = ROOT / "docs" / "tutorials" / "logistic_rules.md"
MODEL = ROOT / "models" / "logistic_regression.vim"
DATA = ROOT / "models" / "logistic_regression.csv"
LIKELIHOOD = "y ~ Bernoulli(logistic(X @ w))"
RULES = {  # label -> annotation of the likelihood
    "ncvmp (exact ELBO)": "@ncvmp",
    "laplace": "@laplace",
    "delta": "@delta",
    "bound:jaakkola": "@jaakkola",
    "bound:bohning": "@bohning",
    "bound:piecewise Q10": "@piecewise(pieces=10, kind=quadratic)",
    "bound:piecewise L10": "@piecewise(pieces=10, kind=linear)",
}
FOLDS = 5
FLOORS = {"ncvmp (exact ELBO)": "ncvmp", "bound:jaakkola": "jaakkola"}  # rows with a hand-written floor
TOL = 1e-9
NODES, WEIGHTS = np.polynomial.hermite.hermgauss(64)


def expected(fn, m, v):
    """E[fn(η)] under N(m, v), elementwise, by Gauss–Hermite."""
    eta = m[:, None] + np.sqrt(2 * v)[:, None] * NODES
    return np.sum(WEIGHTS / np.sqrt(np.pi) * fn(eta), axis=1)


def margins(x, mean, cov):
    return x @ mean, np.einsum("ij,jk,ik->i", x, cov, x)


def exact_elbo(x, y, mean, cov):
    """Σ E_q[log p(y_n | w)] − KL(q ‖ N(0, I)) for q(w) = N(mean, cov)."""
    m, v = margins(x, mean, cov)
    fit = np.sum(expected(lambda e: y[:, None] * e + log_expit(-e), m, v))
    kl = 0.5 * (np.trace(cov) + mean @ mean - len(mean) - np.linalg.slogdet(cov)[1])
    return fit - kl


def held_out(x, y, mean, cov):
    """(accuracy, mean log predictive density) with p(y = 1 | x) = E_q[σ(x·w)]."""
    m, v = margins(x, mean, cov)
    p = expected(lambda e: np.exp(log_expit(e)), m, v)
    accuracy = np.mean((p > 0.5) == (y == 1))
    return accuracy, np.mean(np.where(y == 1, np.log(p), np.log1p(-p)))


def fit(model, table):
    """(posterior, seconds, CPU seconds): one run to convergence."""
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # damping notes are kept on the posterior
        post = model.infer(table, seed=0, tol=TOL, max_iter=5000)
    return post, time.perf_counter() - start, time.process_time() - cpu


def floor_cpu(rule, x, y) -> float:
    """CPU seconds per sweep of the hand-written loop of `rule` on one fold."""
    cpu = time.process_time()
    trace, _ = logistic_floor.run(x, y, rule, tol=TOL, max_sweeps=5000)
    return (time.process_time() - cpu) / len(trace)


def compare():
    table = pd.read_csv(DATA)
    x, y = table.drop(columns="y").to_numpy(), table["y"].to_numpy(dtype=float)
    folds = np.random.default_rng(0).permutation(len(table)) % FOLDS
    text = MODEL.read_text(encoding="utf-8")
    rows = []
    for label, annotation in RULES.items():
        model = ppl.compile(text.replace(LIKELIHOOD, f"{LIKELIHOOD} {annotation}"), MODEL.name)
        scores = []
        for k in range(FOLDS):
            train, test = folds != k, folds == k
            post, seconds, cpu = fit(model, table[train])
            mean, cov = post["w"].family.mean_cov(post["w"].natural)
            accuracy, lpd = held_out(x[test], y[test], mean, cov)
            floor = floor_cpu(FLOORS[label], x[train], y[train]) if label in FLOORS else float("nan")
            scores.append((accuracy, lpd, post.elbo, exact_elbo(x[train], y[train], mean, cov),
                           post.iterations, seconds, cpu / post.iterations / floor))
        columns = list(zip(*scores))
        rows.append([label] + [statistics.mean(c) for c in columns[:4]]
                    + [statistics.median(c) for c in columns[4:]])
        print(f"{label:22s} " + "  ".join(f"{value:.4g}" for value in rows[-1][1:]), flush=True)
    return rows


def markdown(rows) -> str:
    lines = [SECTION, "",
             f"Five-fold cross-validation on the 569 tumours (`python3 benchmarks/logistic_rules.py`; "
             f"{machine()}). Means over folds; sweeps and time are medians of one fit per fold.", "",
             "| rule | held-out accuracy | held-out log predictive | objective | exact ELBO of q | sweeps | time (s) "
             "| ppl / floor (CPU per sweep) |",
             "|------|------------------:|------------------------:|----------:|----------------:|-------:|---------:"
             "|----------------------------:|"]
    for label, accuracy, lpd, objective, elbo, sweeps, seconds, ratio in rows:
        lines.append(f"| {label} | {accuracy:.4f} | {lpd:.4f} | {objective:.2f} | {elbo:.2f} | "
                     f"{sweeps:.0f} | {seconds:.3f} | {'' if ratio != ratio else f'{ratio:.1f}×'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print only; leave the tutorial alone")
    args = parser.parse_args()
    text = markdown(compare())
    print(text)
    if not args.no_write:
        write_section(text, SECTION, DOC)


if __name__ == "__main__":
    main()
