"""Multinomial logistic regression, y[n] ~ Categorical(softmax(w @ x[n])), w[k] ~ MvNormal(0, I):
ppl's default rule (`ncvmp`) against a numpy floor of the same algorithm and the peers, CPU time
beside wall time, the contenders interleaved, one BLAS thread.

Problems: iris (models/multinomial_logistic.vim and .csv, 150 rows, D = 5, K = 3; scored on its
own rows) and two synthetic ones with a fixed seed (N = 20,000 rows of which 20% are held out,
D = 20 with an intercept, x ~ N(0, 1) otherwise, true weights N(0, 1/D): overlapping classes),
K = 3 (product Gauss–Hermite rule over the two differences) and K = 6 (2048 Sobol points).

- ppl: the default run (whole fit), and per sweep with set-up cancelled: (T(M2) − T(M1)) / (M2 − M1)
  for runs of exactly M1 and M2 plain sweeps (SQUAREM off, tolerances that never stop it);
- the floor (benchmarks/softmax_floor.py, no ppl inside): the same sweeps, the same nodes and the
  same step halving; its plain ELBO trace is checked against ppl's;
- peers: scikit-learn's LogisticRegression (lbfgs, multinomial, L2 with C = 1 and no separate
  intercept: its objective C·Σ_n −log p(y_n) + ½|W|² is −log p(W, y) under w ~ N(0, I), so the fit
  is the MAP, a point estimate) and NumPyro SVI with a Gaussian guide of ppl's family (a full-rank
  N(μ_k, Σ_k) per class), Adam(0.01), stepped until its ELBO (scored off the clock by the floor's
  rule) is within 0.1 nats of ppl's, or for `--budget` seconds (logistic_peers' machinery).

    python3 benchmarks/softmax.py [--no-write] [--no-peers] [--repeat 3] [--budget 30] [--cap 100]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, one_xla_thread, reach_text, rotated, write_section  # noqa: E402  (before numpy)

import numpy as np  # noqa: E402

import ppl  # noqa: E402
from benchmarks import softmax_floor as floor  # noqa: E402
from benchmarks.logistic_peers import CHUNK, compiled_svi  # noqa: E402
from benchmarks.logistic_sweeps import cpu  # noqa: E402

SECTION = "## Multinomial logistic regression (softmax)"
DOC = ROOT / "docs" / "benchmarks.md"
IRIS = ROOT / "models" / "multinomial_logistic"
MODEL = """
data x: real[N, D]
data y: cat(K)[N]
for k in 1..K {
  w[k] ~ MvNormal(zeros(D), eye(D))
}
for n in 1..N {
  y[n] ~ Categorical(softmax(w @ x[n]))
}
"""
SYNTHETIC = {"synthetic K = 3": (20_000, 20, 3), "synthetic K = 6": (20_000, 20, 6)}
EXACT = dict(tol=1e-300, mean_tol=1e-300, accelerate=False)  # plain sweeps, exactly max_iter of them
M1, M2 = 2, 10
CAP = 100  # sweeps of a whole fit at most: on the synthetic problems NC-VMP creeps for hundreds of sweeps
REACH = 0.1  # nats below ppl's ELBO that count as reaching it


def synthetic(n: int, d: int, k: int, seed: int = 0):
    """((x, y) train, (x, y) held out): y 0-based, the last 20% of rows held out."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[:, 0] = 1.0
    eta = x @ (rng.normal(size=(k, d)) / np.sqrt(d)).T
    p = np.exp(eta - eta.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    y = (rng.random(n)[:, None] > np.cumsum(p, 1)).sum(1)
    cut = n - n // 5
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def iris():
    """(x, y) of the iris model's CSV, y 0-based in the order of ppl's levels (sorted names)."""
    rows = np.genfromtxt(IRIS.with_suffix(".csv"), delimiter=",", dtype=str, skip_header=1)
    names = sorted(set(rows[:, -1]))
    return rows[:, :-1].astype(float), np.array([names.index(s) for s in rows[:, -1]])


class Problem:
    """A problem's data and how ppl fits it: through the iris model and its CSV, or a dict."""

    def __init__(self, name, train, test, source=None):
        self.name, self.train, self.test = name, train, test
        self.k = int(train[1].max()) + 1
        self.model = ppl.compile(IRIS.with_suffix(".vim").read_text() if source else MODEL)
        self.data = source or {"x": train[0], "y": train[1] + 1}

    def ppl(self, **options):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the DampingWarning of NC-VMP's first step
            return self.model.infer(self.data, seed=0, **options)


def clocked(fn):
    """(fn(), wall s, CPU s) of the call with the least CPU time among the calls that fill 50 ms."""
    best, spent = None, 0.0
    while spent < 0.05:
        wall, used = time.perf_counter(), time.process_time()
        out = fn()
        wall, used = time.perf_counter() - wall, time.process_time() - used
        best, spent = best if best is not None and best[2] <= used else (out, wall, used), spent + used
    return best


def posterior(post):
    w = post["w"]
    return w.family.mean_cov(w.natural)


def measure(problem: Problem, repeat: int, budget: float, with_peers: bool, cap: int):
    """(whole-fit rows, per-sweep row) of one problem: `repeat` interleaved rounds of the plain sweeps, the
    whole fits (at most `cap` sweeps) in the first round only (on K = 6 one takes about a minute)."""
    x, y = problem.train
    plain = np.array(problem.ppl(max_iter=M2, **EXACT).trace)
    ours = np.array(floor.run(x, y, problem.k, tol=-1.0, max_sweeps=M2)[0])
    agreement = float(np.max(np.abs(plain - ours) / np.abs(plain)))
    fits = {"ppl ncvmp (default)": lambda: problem.ppl(max_iter=cap),
            "numpy NC-VMP (floor)": lambda: floor.run(x, y, problem.k, tol=1e-6, max_sweeps=cap)}
    sweeps = {("ppl", m): (lambda m=m: problem.ppl(max_iter=m, **EXACT)) for m in (M1, M2)}
    sweeps |= {("floor", m): (lambda m=m: floor.run(x, y, problem.k, tol=-1.0, max_sweeps=m)) for m in (M1, M2)}
    best, times = {}, {key: np.inf for key in sweeps}
    for round_ in range(repeat):
        jobs = [("fit", label) for label in fits if round_ == 0] + [("sweep", key) for key in sweeps]
        jobs = rotated(jobs, round_)
        for kind, key in jobs:
            if kind == "sweep":
                times[key] = min(times[key], cpu(sweeps[key]))
                continue
            out, wall, used = clocked(fits[key])
            if key not in best or used < best[key]["cpu"]:
                best[key] = {"out": out, "wall": wall, "cpu": used}
        print(f"  {problem.name}: round {round_ + 1} of {repeat} done", flush=True)
    rows = _fit_rows(problem, best, cap)
    target = rows[0]["elbo"]
    rows.append(sklearn_map(problem))
    if with_peers:
        rows.append(numpyro_svi(problem, target - REACH, budget))
    per = {who: (times[(who, M2)] - times[(who, M1)]) / (M2 - M1) for who in ("ppl", "floor")}
    setup = {who: times[(who, M1)] - M1 * per[who] for who in per}
    return rows, {"name": problem.name, "per": per, "setup": setup, "agreement": agreement}


def _fit_rows(problem, best, cap):
    post, fit = best["ppl ncvmp (default)"], best["numpy NC-VMP (floor)"]
    mean, cov = posterior(post["out"])
    trace, q = fit["out"]
    rows = []
    for label, r, sweeps, (mu, sigma) in (("ppl ncvmp (default)", post, post["out"].iterations, (mean, cov)),
                                          ("numpy NC-VMP (floor)", fit, len(trace), (q.mean, q.cov))):
        elbo = floor.score(*problem.train, mu, sigma)[0]
        rows.append({"method": label, "steps": str(sweeps) + ("" if sweeps < cap else " (cap)"), "cpu": r["cpu"], "wall": r["wall"], "elbo": elbo,
                     "loss": -floor.score(*problem.test, mu, sigma)[1]})
    rows[0]["reported"], rows[0]["converged"] = post["out"].elbo, post["out"].converged
    return rows


def sklearn_map(problem):
    from sklearn.linear_model import LogisticRegression
    x, y = problem.train
    wall, used = time.perf_counter(), time.process_time()
    fit = LogisticRegression(C=1.0, fit_intercept=False, tol=1e-8, max_iter=10_000).fit(x, y)
    wall, used = time.perf_counter() - wall, time.process_time() - used
    xt, yt = problem.test
    eta = xt @ fit.coef_.T
    logp = eta - eta.max(1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(1, keepdims=True))
    return {"method": "scikit-learn LogisticRegression (MAP)", "steps": str(int(np.max(fit.n_iter_))), "cpu": used,
            "wall": wall, "elbo": None, "loss": float(-np.mean(logp[np.arange(len(yt)), yt]))}


def numpyro_svi(problem, target, budget):
    """NumPyro SVI with a full-rank Gaussian per class; None when NumPyro is not installed."""
    one_xla_thread()
    try:
        import jax
        import jax.numpy as jnp
        import numpyro
        import numpyro.distributions as dist
        from numpyro.infer import SVI, Trace_ELBO
    except ImportError:
        return {"method": "NumPyro SVI (full-rank per class)", "missing": True}
    jax.config.update("jax_enable_x64", True)
    (x, y), k = problem.train, problem.k
    d = x.shape[1]
    xj, yj = jnp.asarray(x), jnp.asarray(y)

    def model(x, y):
        w = numpyro.sample("w", dist.Normal(jnp.zeros((k, d)), 1.0).to_event(2))
        numpyro.sample("y", dist.Categorical(logits=x @ w.T), obs=y)

    def guide(x, y):
        loc = numpyro.param("loc", jnp.zeros((k, d)))
        tril = numpyro.param("tril", jnp.broadcast_to(0.1 * jnp.eye(d), (k, d, d)),
                             constraint=dist.constraints.lower_cholesky)
        numpyro.sample("w", dist.MultivariateNormal(loc, scale_tril=tril).to_event(1))

    svi, state, step, compile_seconds = compiled_svi(SVI(model, guide, numpyro.optim.Adam(0.01), Trace_ELBO()), xj, yj)

    def moments(state):
        params = svi.get_params(state)
        tril = np.asarray(params["tril"])
        return np.asarray(params["loc"]), tril @ tril.transpose(0, 2, 1)

    r = _doubling(step, state, moments, target, budget, lambda m, c: floor.score(x, y, m, c)[0])
    return {"method": "NumPyro SVI (full-rank per class)", "steps": str(r["iterations"]), "cpu": r["cpu"],
            "wall": r["wall"], "compile": compile_seconds, "reached": r["reached"],
            "elbo": floor.score(x, y, r["mean"], r["cov"])[0], "loss": -floor.score(*problem.test, r["mean"], r["cov"])[1]}


def _doubling(step, state, moments, target, budget, score):
    """Run `step` (CHUNK steps) on the clock, 1, 1, 2, 4, … times between scorings off the clock (an ELBO by
    the floor's rule costs about as much as a sweep), until the ELBO reaches `target` or `budget` seconds pass."""
    wall = used = 0.0
    steps, reached, calls = 0, None, 1
    while wall < budget:
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            state = step(state)
        wall, used = wall + time.perf_counter() - w0, used + time.process_time() - c0
        steps, calls = steps + calls * CHUNK, calls * 2 if steps else 1
        if score(*moments(state)) >= target:
            reached = wall
            break
    mean, cov = moments(state)
    return {"wall": wall, "cpu": used, "mean": mean, "cov": cov, "iterations": steps, "reached": reached}


def fit_table(name, rows):
    lines = []
    for r in rows:
        if r.get("missing"):
            lines.append(f"| {name} | {r['method']} | not installed | | | | | |")
            continue
        ratio = f"{r['cpu'] / rows[1]['cpu']:.2f}× floor" if r["method"].startswith("ppl") else ""
        extra = f" (+{r['compile']:.1f} compile)" if "compile" in r else ""
        elbo = "point estimate" if r["elbo"] is None else f"{r['elbo']:.4f}"
        lines.append(f"| {name} | {r['method']} | {r['steps']} | {r['cpu']:.3f} | {r['wall']:.3f}{extra} | {elbo} | "
                     f"{r['loss']:.4f} | {ratio} |")
    return lines


def verdicts(name, rows, sweep):
    ratio = sweep["per"]["ppl"] / sweep["per"]["floor"]
    lines = [f"{'PASS' if ratio <= 1.3 else 'FAIL'}: {name}: ppl takes {ratio:.2f}× the floor's CPU time per sweep, "
             f"set-up cancelled (target ≤ 1.3×); their plain ELBO traces over {M2} sweeps agree to "
             f"{sweep['agreement']:.1e} relative"]
    ppl_row = rows[0]
    lines.append(f"INFO: {name}: ppl's default run reports ELBO {ppl_row['reported']:.6f} (rescored by the floor's "
                 f"rule: {ppl_row['elbo']:.6f}) after {ppl_row['steps']} sweeps "
                 f"({'converged' if ppl_row['converged'] else 'not converged'}); the floor stops after "
                 f"{rows[1]['steps']} sweeps at {rows[1]['elbo']:.6f}")
    for r in rows:
        if r["method"].startswith("NumPyro") and not r.get("missing"):
            ends = f" (it ends at {r['elbo']:.4f})" if r["reached"] is None else ""
            lines.append(f"INFO: {name}: {r['method']} {reach_text(r, 'ppl', ppl_row['wall'], REACH)}{ends}")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-write", action="store_true")
    p.add_argument("--no-peers", action="store_true", help="skip NumPyro")
    p.add_argument("--repeat", type=int, default=3, help="interleaved rounds; the least CPU time is kept")
    p.add_argument("--budget", type=float, default=30.0, help="seconds of running for each NumPyro fit")
    p.add_argument("--cap", type=int, default=CAP, help="sweeps of a whole fit at most (ppl's max_iter)")
    args = p.parse_args(argv)
    x, y = iris()
    problems = [Problem("iris: N=150, D=5, K=3", (x, y), (x, y), str(IRIS.with_suffix(".csv")))]
    for name, (n, d, k) in SYNTHETIC.items():
        problems.append(Problem(f"{name}: N={n - n // 5}+{n // 5}, D={d}", *synthetic(n, d, k)))
    fits, sweep_rows, lines, load = [], [], [], [os.getloadavg()[0]]
    for problem in problems:
        rows, sweep = measure(problem, args.repeat, args.budget, not args.no_peers, args.cap)
        fits += fit_table(problem.name, rows)
        ratio = sweep["per"]["ppl"] / sweep["per"]["floor"]
        sweep_rows.append(f"| {problem.name} | {M1}→{M2} | {1e3 * sweep['per']['ppl']:.2f} | "
                          f"{1e3 * sweep['per']['floor']:.2f} | {ratio:.2f}× | {'PASS' if ratio <= 1.3 else 'FAIL'} | "
                          f"{1e3 * sweep['setup']['ppl']:.1f} | {1e3 * sweep['setup']['floor']:.1f} | "
                          f"{sweep['agreement']:.1e} |")
        lines += verdicts(problem.name, rows, sweep)
        load.append(os.getloadavg()[0])
    fit_text = "\n".join(["| problem | method | sweeps / steps | CPU s | wall s | ELBO | held-out log-loss | CPU ratio |",
                          "|" + "---|" * 8] + fits)
    sweep_text = "\n".join(["| problem | sweeps M1→M2 | ppl ms / sweep | floor ms / sweep | ratio | ≤ 1.3× | "
                            "ppl set-up ms | floor set-up ms | traces agree to |", "|" + "---|" * 9] + sweep_rows)
    verdict_text = "\n".join(f"- {v}" for v in lines)
    print(fit_text + "\n\n" + sweep_text + "\n\n" + verdict_text)
    if not args.no_write:
        command = "python3 benchmarks/softmax.py" + (f" --repeat {args.repeat}" if args.repeat != 3 else "") + \
            (f" --budget {args.budget:g}" if args.budget != 30 else "") + (" --no-peers" if args.no_peers else "") + \
            (f" --cap {args.cap}" if args.cap != CAP else "")
        write_section("\n".join([
            SECTION, "",
            "y[n] ~ Categorical(softmax(w @ x[n])), w[k] ~ MvNormal(0, I), ppl's default rule `ncvmp` (the softmax's",
            "averages by the product Gauss–Hermite rule over the K − 1 logit differences for K ≤ 4, 2048 scrambled",
            "Sobol points for K ≥ 5). The floor (`benchmarks/softmax_floor.py`) is the same algorithm in numpy without",
            "ppl: the same nodes, sites, damped step and step halving, the same shift step of the class means",
            "(docs/rules/softmax.md#the-shift-step), the product rule for K = 3 as two matrix-vector products per row",
            "of 1/total and 1/total² (one log, one reciprocal and one square per node), blocked buffers made once per",
            "problem. It stops when a sweep moves its ELBO by at most 1e-6 nats; ppl's default",
            "run also waits for the means to settle. Every ELBO in the first table is the floor's rule applied to",
            "the q the method returned; held-out log-loss is −mean log E_q[softmax(η)][y] on the held-out 20% (iris:",
            "on its own 150 rows). scikit-learn fits the MAP of the same prior (C = 1, no separate intercept), a",
            f"point estimate. NumPyro SVI (a full-rank Gaussian per class, ppl's family) runs until its ELBO, scored",
            f"off the clock after {CHUNK}, {CHUNK}, {2 * CHUNK}, {4 * CHUNK}, … more steps, is within {REACH} nats of ppl's, or for the budget. Per sweep:",
            f"(T({M2}) − T({M1})) / ({M2} − {M1}) for runs of exactly that many plain sweeps (ppl: SQUAREM off,",
            "tolerances that never stop it), each T the least CPU time over the interleaved rounds, so set-up cancels;",
            "the last column compares the two plain ELBO traces. One BLAS thread; CPU time is the measure (the machine",
            f"is shared: load average {', '.join(f'{v:.1f}' for v in load)} at the start and after each problem, 2 cores).",
            "", f"- Machine: {machine()}", f"- Command: `{command}`", "", fit_text, "", sweep_text, "",
            verdict_text, ""]), SECTION, DOC)
    return 0


if __name__ == "__main__":
    sys.exit(main())
