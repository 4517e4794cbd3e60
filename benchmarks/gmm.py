"""VBEM Gaussian mixture: time per sweep of ppl against the floor and the peers, in one interleaved run.

Four sizes: iris (150 × 4) and wine (178 × 13) from scikit-learn's bundled copies, standardised,
with K = 10; and the BayesPy paper's synthetic sizes, K = 10, N = 200, D = 2 and K = 40, N = 2000,
D = 10 (fixed seed). Every contender runs the same algorithm, VBEM with a Dirichlet on the weights,
a Normal–Wishart per component and the bound every sweep:

- floor: `benchmarks/gmm_floor.py`, the best hand-written numpy VBEM we know (its docstring lists
  the tricks), started from ppl's responsibilities; it also checks that ppl's bound is the
  textbook bound;
- ppl: the model below (`@joint` Normal–Wishart), `ppl.infer.run` with SQUAREM off (plain VBEM,
  the floor's algorithm);
- scikit-learn `BayesianGaussianMixture` (Dirichlet distribution prior, full covariances), started
  from the same responsibilities;
- BayesPy, if installed (`Dirichlet`, `Categorical`, `Gaussian`, `Wishart`, `Mixture`; its q(μ)
  and q(Λ) are separate factors, so its bound is lower and its sweeps are not the same updates);
- PyMC and NumPyro, if installed: the same priors with z summed out, fitted by ADVI
  (`benchmarks/gmm_pymc.py`) and by SVI with a mean-field guide (`benchmarks/gmm_numpyro.py`);
  `benchmarks/gmm_peers.py` says what their ELBO is and why it bounds the same evidence; per
  gradient step, compile time apart, and their time to reach ppl's ELBO within a CPU budget
  (--peer-budget seconds per size and peer).

Time per sweep is (T(M2) − T(M1)) / (M2 − M1) for runs of M1 and M2 sweeps, so set-up and
initialisation cancel; M2 stays below the sweep where ppl's bound stops changing. CPU time
(`time.process_time`) and wall time are both taken; the contenders take turns, --repeat rounds,
and T(M1), T(M2) are each the contender's minimum over the rounds. Then the time to reach ppl's
ELBO: ppl's default run (SQUAREM, default tolerance) against the floor and scikit-learn, both
plain VBEM from ppl's start.

Also measured, in the section "## `ppl infer` start to exit": the wall time of `ppl infer` on
the smallest model, process start to exit, next to the import floor `import numpy,
scipy.special` (median of --runs runs each, interleaved).

    python3 benchmarks/gmm.py [--repeat 7] [--runs 15] [--peer-budget 20] [--only vbem|cli] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import USER_ENVIRON, machine, publish  # noqa: E402  (before numpy: one BLAS thread)

import numpy as np  # noqa: E402

import ppl  # noqa: E402
from benchmarks.gmm_floor import FloorVBEM  # noqa: E402
from benchmarks.gmm_numpyro import NumpyroMixture  # noqa: E402
from benchmarks.gmm_peers import reach, reach_table  # noqa: E402
from benchmarks.gmm_pymc import PymcMixture  # noqa: E402
from ppl.infer import Options, build_problem, run  # noqa: E402
from ppl.infer.initialise import initialise  # noqa: E402

SECTION = "## Gaussian mixture (VBEM)"
CLI_SECTION = "## `ppl infer` start to exit"
INFER = ["-m", "ppl.cli", "infer", "models/beta_bernoulli.vim", "models/beta_bernoulli.csv", "--quiet"]
FLOOR = ["-c", "import numpy, scipy.special"]
DOC = ROOT / "docs" / "benchmarks.md"
SIZES = {"iris": (10, 150, 4), "wine": (10, 178, 13), "small": (10, 200, 2), "large": (40, 2000, 10)}
SWEEPS = (5, 40)  # M1, M2 (M2 lowered below the sweep where ppl's bound stops changing)
ALPHA0, BETA0 = 1e-3, 1.0
REACH = 0.01  # nats: "reached ppl's ELBO"
MAX_SWEEPS = 3000  # plain VBEM sweeps tried to reach it
EXACT = dict(tol=1e-300, mean_tol=1e-300, accelerate=False)  # plain VBEM for exactly max_iter sweeps
PEERS = (PymcMixture, NumpyroMixture)  # the gradient peers
GRADIENT = {peer.name: peer.step_name for peer in PEERS}  # their step's name, for the table

MODEL = """
const K = 10
const alpha0 = 0.001
const beta0 = 1.0
data x: real[N, D]
pi ~ Dirichlet(alpha0 * ones(K))
for k in 1..K {
  Lambda[k] ~ Wishart(D, eye(D))
  mu[k] ~ MvNormal(zeros(D), beta0 * Lambda[k]) @joint
}
for n in 1..N {
  z[n] ~ Categorical(pi)
  x[n] ~ MvNormal(mu[z[n]], Lambda[z[n]])
}
"""


def make_data(k: int, n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, size=(k, d))
    labels = rng.integers(k, size=n)
    return centres[labels] + rng.normal(size=(n, d))


def dataset(name: str) -> np.ndarray:
    """The rows of a size: a standardised scikit-learn data set, or synthetic clusters."""
    if name in ("iris", "wine"):
        from sklearn.datasets import load_iris, load_wine
        x = (load_iris if name == "iris" else load_wine)().data
        return (x - x.mean(0)) / x.std(0)
    return make_data(*SIZES[name])


# ---- contenders: each runs `m` sweeps ---------------------------------------------------------

def ppl_problem(x: np.ndarray, k: int):
    model = ppl.compile(MODEL, set={"K": k})
    data = model.bind({"x": x})
    return build_problem(model.checked, data, model.analyze(data))


def start_of(problem) -> np.ndarray:
    """ppl's initial responsibilities for seed 1 (what `run` starts from)."""
    return initialise(problem, np.random.default_rng(np.random.SeedSequence(1).spawn(1)[0])).moments("z")


def run_ppl(problem, m: int):
    result = run(problem, Options(max_iter=m, seed=1, **EXACT))
    if result.iterations != m:
        raise RuntimeError(f"ppl stopped after {result.iterations} of {m} sweeps: lower M2")
    return result


def run_floor(x, r0, m: int) -> list:
    floor = FloorVBEM(x, r0, ALPHA0, BETA0, float(x.shape[1]), np.eye(x.shape[1]))
    return [floor.sweep() for _ in range(m)]


def sklearn_model(x, r0, m: int):
    """scikit-learn's VBEM from ppl's start, without the 1e-6 its default adds to every covariance:
    after m iterations it has the floor's responsibilities after m + 1 sweeps (`sklearn_agrees`)."""
    from sklearn.mixture import BayesianGaussianMixture
    d = x.shape[1]
    model = BayesianGaussianMixture(
        n_components=r0.shape[1], covariance_type="full", weight_concentration_prior_type="dirichlet_distribution",
        weight_concentration_prior=ALPHA0, mean_precision_prior=BETA0, mean_prior=np.zeros(d),
        degrees_of_freedom_prior=float(d), covariance_prior=np.eye(d), tol=0.0, max_iter=m, n_init=1,
        reg_covar=0.0)
    model._initialize_parameters = lambda X, random_state, xp=None: model._initialize(X, r0)  # ppl's start
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(x)
    return model


def sklearn_agrees(x, r0, m: int) -> float:
    """The largest difference of a responsibility between scikit-learn after m − 1 iterations
    (m M-steps, counting its start, and m E-steps, counting the one ending `fit`) and the floor
    after m sweeps."""
    floor = FloorVBEM(x, r0, ALPHA0, BETA0, float(x.shape[1]), np.eye(x.shape[1]))
    for _ in range(m):
        floor.sweep()
    return float(np.max(np.abs(sklearn_model(x, r0, m - 1).predict_proba(x) - floor.resp)))


def run_bayespy(x, k: int, m: int):
    from bayespy.inference import VB
    from bayespy.nodes import Categorical, Dirichlet, Gaussian, Mixture, Wishart
    n, d = x.shape
    alpha = Dirichlet(ALPHA0 * np.ones(k))
    z = Categorical(alpha, plates=(n,))
    mu = Gaussian(np.zeros(d), BETA0 * np.identity(d), plates=(k,))
    lam = Wishart(d, np.identity(d), plates=(k,))
    y = Mixture(z, Gaussian, mu, lam)
    y.observe(x)
    z.initialize_from_random()
    VB(y, mu, lam, z, alpha).update(repeat=m, tol=0.0, verbose=False)


def clock(fn) -> np.ndarray:
    """(CPU, wall) seconds of fn()."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return np.array([time.process_time() - cpu, time.perf_counter() - wall])


def contenders(name: str):
    """{contender: fn(m)}, the sweeps (M1, M2), the problem, x, ppl's start and the gradient
    peers' compiled fits (those installed) for one size."""
    k, _, _ = SIZES[name]
    x = dataset(name)
    problem = ppl_problem(x, k)
    r0 = start_of(problem)
    exact = run(problem, Options(max_iter=500, seed=1, **EXACT)).iterations
    low, high = SWEEPS[0], min(SWEEPS[1], exact - 5)
    fns = {"floor": lambda m: run_floor(x, r0, m), "ppl": lambda m: run_ppl(problem, m),
           "scikit-learn": lambda m: sklearn_model(x, r0, m)}
    try:
        import bayespy  # noqa: F401
        fns["BayesPy"] = lambda m: run_bayespy(x, k, m)
    except ImportError:
        pass
    peers = []
    for peer in PEERS:
        try:
            peers.append(peer(x, k, ALPHA0, BETA0))
        except ImportError:
            continue
        fns[peers[-1].name] = lambda m, fit=peers[-1]: (fit.reset(), fit.steps(m))
    return fns, (low, high), problem, x, r0, peers


def measure(name: str, repeat: int, budget: float) -> dict:
    """Per-sweep (CPU, wall) ms of every contender (per step for the gradient peers), minimum over
    `repeat` interleaved rounds; then the times to reach ppl's ELBO."""
    fns, (low, high), problem, x, r0, peers = contenders(name)
    trace = run_ppl(problem, high).trace
    bounds = run_floor(x, r0, high)
    row = {"size": name, "agree": float(np.max(np.abs(np.array(trace) - bounds) / np.abs(bounds))),
           "sweeps": (low, high), "scikit-learn agrees": sklearn_agrees(x, r0, high)}
    samples = {c: ([], []) for c in fns}
    for _ in range(repeat):
        for c, fn in fns.items():
            samples[c][0].append(clock(lambda: fn(low)))
            samples[c][1].append(clock(lambda: fn(high)))
    for c, (lows, highs) in samples.items():  # minimum of each run length over the rounds, CPU and wall
        row[c] = (np.min(highs, axis=0) - np.min(lows, axis=0)) / (high - low) * 1e3
    row["reach"] = time_to_reach(problem, x, r0, repeat)
    row["peers reach"] = {peer.name: reach(peer, row["reach"]["elbo"] - REACH, budget) for peer in peers}
    return row


def time_to_reach(problem, x, r0, repeat: int) -> dict:
    """ppl's default run (SQUAREM, default tolerance): its ELBO L*, sweeps and times to converge and
    to come within REACH nats of L*; and the sweeps and times the floor and scikit-learn (plain VBEM
    from ppl's start) take to come within REACH nats of L*."""
    result = run(problem, Options(seed=1))
    target = result.elbo - REACH
    bounds = run_floor(x, r0, MAX_SWEEPS)
    out = {"elbo": result.elbo, "converged": result.iterations,
           "ppl sweeps": next(i + 1 for i, b in enumerate(result.trace) if b >= target),
           "floor sweeps": next((i + 1 for i, b in enumerate(bounds) if b >= target), None)}
    fns = {"ppl converged": lambda: run(problem, Options(seed=1)),
           "ppl": lambda: run(problem, Options(seed=1, max_iter=out["ppl sweeps"]))}
    if out["floor sweeps"] is not None:
        fns["floor"] = lambda: run_floor(x, r0, out["floor sweeps"])
        fns["scikit-learn"] = lambda: sklearn_model(x, r0, max(out["floor sweeps"] - 1, 1))
    times = {c: [] for c in fns}
    for _ in range(repeat):
        for c, fn in fns.items():
            times[c].append(clock(fn))
    out.update({c: np.min(np.array(t), axis=0) for c, t in times.items()})
    return out


def wall_times(runs: int) -> dict:
    """Median seconds, process start to exit, of `ppl infer` on the smallest model (as the user's
    environment runs it, and with a warm bytecode cache as after `pip install`) and of the
    import floor. The commands take turns, so a change of load on the machine hits all three."""
    with tempfile.TemporaryDirectory() as cache:
        cached = {k: v for k, v in USER_ENVIRON.items() if k != "PYTHONDONTWRITEBYTECODE"}
        cached["PYTHONPYCACHEPREFIX"] = cache  # the cache stays out of the source tree
        commands = {"ppl infer": (INFER, USER_ENVIRON), "ppl infer, bytecode cached": (INFER, cached),
                    "import floor: numpy, scipy.special": (FLOOR, USER_ENVIRON)}
        subprocess.run([sys.executable, *INFER], cwd=ROOT, env=cached, check=True)  # fills the cache
        times = {key: [] for key in commands}
        for _ in range(runs):
            for key, (args, env) in commands.items():
                start = time.perf_counter()
                subprocess.run([sys.executable, *args], cwd=ROOT, env=env, check=True)
                times[key].append(time.perf_counter() - start)
    return {key: statistics.median(t) for key, t in times.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7, help="interleaved rounds of VBEM timings (default 7)")
    p.add_argument("--runs", type=int, default=15, help="runs of `ppl infer` and of the floor (default 15)")
    p.add_argument("--peer-budget", type=float, default=20.0,
                   help="CPU seconds of each gradient peer per size (default 20)")
    p.add_argument("--only", choices=("vbem", "cli"), help="measure one part only")
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args(argv)
    sections = []
    if args.only != "cli":
        sections.append((vbem_section(args.repeat, args.peer_budget), SECTION))
    if args.only != "vbem":
        sections.append((cli_section(args.runs), CLI_SECTION))
    publish(sections, DOC, not args.no_write)
    return 0


def table(rows: list[dict]) -> str:
    peers = [p for p in ("scikit-learn", "BayesPy", *GRADIENT) if any(p in r for r in rows)]
    head = ("| size | sweeps | floor ms (CPU / wall) | ppl ms (CPU / wall) | ppl / floor (CPU / wall) | "
            + "".join(f"{p} ms per {GRADIENT[p]} step (CPU / wall) | " if p in GRADIENT else f"{p} ms (CPU / wall) | "
                      for p in peers) + "bound vs floor |")
    lines = [head, "|" + "---|" * (6 + len(peers))]
    for r in rows:
        k, n, d = SIZES[r["size"]]
        pair = lambda v: f"{v[0]:.3f} / {v[1]:.3f}"  # noqa: E731
        ratio = r["ppl"] / r["floor"]
        cells = [f"{r['size']}: N={n}, D={d}, K={k}", f"{r['sweeps'][0]}→{r['sweeps'][1]}", pair(r["floor"]),
                 pair(r["ppl"]), f"{ratio[0]:.2f}× / {ratio[1]:.2f}×"]
        cells += [pair(r[p]) if p in r else "not installed" for p in peers]
        lines.append("| " + " | ".join(cells + [f"{r['agree']:.1e}"]) + " |")
    return "\n".join(lines)


def vbem_reach_table(rows: list[dict]) -> str:
    lines = ["| size | ppl's ELBO L* | ppl converged: sweeps, CPU / wall s | ppl to L* − 0.01: sweeps, CPU / wall s | "
             "floor to L* − 0.01: sweeps, CPU / wall s | scikit-learn to L* − 0.01: CPU / wall s |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        t = r["reach"]
        s = lambda v: f"{v[0]:.4f} / {v[1]:.4f}"  # noqa: E731
        floor = f"{t['floor sweeps']}, {s(t['floor'])}" if t["floor sweeps"] else f"not within {MAX_SWEEPS} sweeps"
        sk = s(t["scikit-learn"]) if "scikit-learn" in t else "-"
        lines.append(f"| {r['size']} | {t['elbo']:.4f} | {t['converged']}, {s(t['ppl converged'])} | "
                     f"{t['ppl sweeps']}, {s(t['ppl'])} | {floor} | {sk} |")
    return "\n".join(lines)


def vbem_section(repeat: int, budget: float) -> str:
    load = os.getloadavg()[0]
    rows = [measure(name, repeat, budget) for name in SIZES]
    load = max(load, os.getloadavg()[0])
    worst = max(r["ppl"][0] / r["floor"][0] for r in rows)
    sk = max(r["scikit-learn agrees"] for r in rows)
    verdicts = [(f"ppl ≤ 1.3× the floor (CPU) at every size (worst {worst:.2f}×)", worst <= 1.3)]
    for peer in ("scikit-learn", "BayesPy"):
        if all(peer in r for r in rows):
            verdicts.append((f"ppl faster per sweep than {peer} at every size",
                             all(r["ppl"][0] < r[peer][0] for r in rows)))
    command = "python3 benchmarks/gmm.py --only vbem" + (f" --repeat {repeat}" if repeat != 7 else "") + \
        (f" --peer-budget {budget:g}" if budget != 20 else "")
    return "\n".join([
        SECTION, "",
        "Time per VBEM sweep (bound included) as (T(M2) − T(M1)) / (M2 − M1) for runs of M1 and M2 sweeps, so",
        "set-up and initialisation cancel. The floor (`benchmarks/gmm_floor.py`) is a hand-written numpy",
        "VBEM with the tricks of issue 17: one design matrix so that the statistics and the",
        "log-responsibilities are one matrix product each, log-responsibilities clamped at −700 below",
        "the row maximum before `exp` (no subnormals), no scipy `logsumexp`, the bound as Σ log Z − KL of",
        "the globals, the E-step in cache-sized blocks that also sum the next sweep's statistics, and",
        "every N-sized buffer reused. ppl runs SQUAREM off (the floor's algorithm). scikit-learn starts",
        "from the same responsibilities with `reg_covar` 0 (its default adds 1e-6 to every covariance) and",
        "runs the floor's updates: after M2 − 1 iterations its responsibilities are the floor's after M2",
        f"sweeps to {sk:.0e} at every size; its `lower_bound_` leaves out constant terms, so the floor's bound",
        "stands for its. BayesPy's prior has μ_k ~ N(0, I/β₀) independent of Λ_k and its q keeps μ and Λ",
        "as separate factors: another model, whose bound is not compared with ppl's. 'bound vs floor' is",
        "the largest relative difference of ppl's and the floor's bound traces. The",
        f"contenders take turns ({repeat} rounds); T(M1) and T(M2) are each a contender's minimum over the",
        "rounds (CPU and wall separately); one BLAS thread. The machine is shared by other agents' jobs: load average "
        f"{load:.1f} on 2 cores during the run, so wall times are noisier than CPU times.",
        "", f"- Machine: {machine()}", f"- Command: `{command}`", "",
        table(rows), "",
        "Time to ppl's ELBO L*: ppl's default run (SQUAREM, `tol` 1e-6 nats, k-means start included) to",
        f"convergence and to its first sweep within {REACH} nats of L*, against the floor and scikit-learn",
        f"running plain VBEM from ppl's start to their first sweep within {REACH} nats of L* (the floor's",
        "count of sweeps; scikit-learn runs the same updates, one iteration fewer as above). Minimum over",
        "the rounds. BayesPy fits another model (above): its bound is not comparable.", "",
        vbem_reach_table(rows), "", *reach_table(rows, budget, REACH), _verdicts(verdicts)])


def cli_section(runs: int) -> str:
    times = wall_times(runs)
    command = "python3 benchmarks/gmm.py --only cli" + (f" --runs {runs}" if runs != 15 else "")
    note = ("PYTHONDONTWRITEBYTECODE is set here, so the first row compiles ppl's sources at every start;\n"
            if USER_ENVIRON.get("PYTHONDONTWRITEBYTECODE") else "")
    return "\n".join([
        CLI_SECTION, "",
        "Wall time of `ppl infer models/beta_bernoulli.vim models/beta_bernoulli.csv --quiet`, process",
        f"start to exit, median of {runs} runs, next to the floor any run pays: starting Python and importing",
        "numpy and scipy.special. The three commands take turns, so a busy machine slows them alike, and",
        "run in the environment the script was started in (BLAS threads as the user has them).",
        f"{note}the bytecode-cached row keeps a warm cache (in a temporary folder), as after `pip install`.",
        "", f"- Machine: {machine()}", f"- Command: `{command}`", "",
        "| command | median s |", "|---|---|",
        *(f"| {what} | {seconds:.2f} |" for what, seconds in times.items()), "",
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end of the run.", "",
        _verdicts([("`ppl infer` of a small model ≤ 1 s", times["ppl infer"] <= 1.0),
                   ("cold start as after `pip install` (bytecode cached) ≤ 0.5 s (issue 10)",
                    times["ppl infer, bytecode cached"] <= 0.5)])])


def _verdicts(verdicts: list) -> str:
    return "\n".join(f"- {'PASS' if ok else 'FAIL'}: {what}" for what, ok in verdicts) + "\n"


if __name__ == "__main__":
    sys.exit(main())
