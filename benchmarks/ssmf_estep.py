"""Why the E-step at a draw β̃ ~ q(β) (SSMF-A, SSMF) takes more inner sweeps than the E-step at q's
mean (SVI), and whether a restart or a stopping rule could cut them: LDA in the seed's regime of
benchmarks/ssmf_profile.py (K = 100, V = 8,000, minibatches of 1000 documents of 150 tokens,
η = 0.1), with q(β) thin (3,000 documents, N/|B| = 3) and holding tokens (20,000, N/|B| = 20),
each after 10 svi steps from random topics.

On one minibatch, each document's mean-field iteration (the E-step of
`blocks.DirichletCategorical`: γ_d = α + θ'_d ⊙ Σ_t c_t b_t/(θ'_d·b_t), b_t ∝ exp E[log β_{·,y_t}]
under svi, β̃_{·,y_t} at a draw) runs SWEEPS sweeps from the prior with no document frozen, and
the table gives the mean over documents of

- the sweeps until the E-step's stop (the largest relative change of E[log θ_d] below 1e-3)
  and until 1e-6 (how fast the iteration contracts);
- the sweeps until the same stop counted over the topics that hold 0.01 tokens or more (does the
  stop wait on topics that hold nothing?);
- the topics holding half a token or more at the end;
- started from the documents' fit at q's mean instead of the prior: the sweeps until the stop,
  and, among the documents that both starts bring to 1e-6 within SWEEPS sweeps, those whose
  fixed point moves by more than half a token against the start from the prior (another local
  optimum).

    python3 benchmarks/ssmf_estep.py [--no-write]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import ssmf_profile as profile  # noqa: E402
from benchmarks._report import machine, write_section  # noqa: E402  (before numpy: one BLAS thread)

import numpy as np  # noqa: E402
from scipy.special import digamma  # noqa: E402

TITLE = "## LDA: the E-step at a draw of q(β)"
ETA, SWEEPS, STOP, FINE, HOLDS = 0.1, 300, 1e-3, 1e-6, 0.01
REGIMES = ((3_000, "thin"), (profile.DOCS, "holding tokens"))


def blocks(runner, globals_):
    """{label: (rows, b, α, E[log θ] from the prior)} of one minibatch at q's mean and at a draw."""
    from ppl.infer.schedule.blocks import dirichlet_categorical
    from ppl.infer.schedule.sampled import pin_draws
    svi = runner("svi", profile.base.SEED + 1)
    svi.globals = globals_
    groups = svi.batches.next()
    out = {}
    for label in ("mean", "draw"):
        problem, state = svi.bind(groups)
        if label == "draw":
            pin_draws(state, svi.plan.globals, np.random.default_rng(profile.base.SEED))
        block = dirichlet_categorical(problem, svi.local_order)
        b, _ = block._topic_weights(state)
        alpha = sum(f.message(state, block.theta) for f in problem.neighbours[block.theta] if f is not block.own)
        out[label] = (block.rows, b, alpha + 1.0, state.moments(block.theta).copy())
    return out


def iterate(rows, b, alpha, elog) -> dict:
    """SWEEPS sweeps of every document; the sweep at which each met each criterion, and the end."""
    rows = rows.copy()
    weights, lengths = rows.data.copy(), np.diff(rows.indptr)
    met = {name: np.full(len(elog), SWEEPS) for name in ("stop", "fine", "holding")}
    for sweep in range(1, SWEEPS + 1):
        theta = np.exp(elog - elog.max(axis=1, keepdims=True))
        np.divide(weights, np.einsum("tk,tk->t", np.repeat(theta, lengths, axis=0), b), out=rows.data)
        gamma = alpha + theta * (rows @ b)
        new = digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))
        change = np.abs(new - elog) / (1.0 + np.abs(elog))
        for name, value in (("stop", change.max(axis=1) < STOP), ("fine", change.max(axis=1) < FINE),
                            ("holding", np.where(gamma - alpha >= HOLDS, change, 0.0).max(axis=1) < STOP)):
            met[name][value & (met[name] == SWEEPS)] = sweep
        elog = new
    return {**met, "elog": elog, "gamma": gamma, "topics": (gamma - alpha >= 0.5).sum(axis=1)}


def measure(docs: int) -> dict:
    runner, globals_, facts = profile.warmed(ETA, docs)
    fits = {label: iterate(*block) for label, block in blocks(runner, globals_).items()}
    rows, b, alpha, _ = blocks(runner, globals_)["draw"]
    warm = iterate(rows, b, alpha, fits["mean"]["elog"].copy())
    settled = (warm["fine"] < SWEEPS) & (fits["draw"]["fine"] < SWEEPS)  # both at a fixed point to 1e-6
    moved = np.abs(warm["gamma"] - fits["draw"]["gamma"]).max(axis=1) > 0.5
    return {"fits": fits, "warm": warm, "moved": float(np.mean(moved[settled])), "settled": float(np.mean(settled)),
            "held": facts["held"]}


def table(results: dict) -> str:
    lines = ["| q(β) | E-step at | sweeps to the stop (1e-3) | to 1e-6 | to the stop, topics ≥ 0.01 tokens | "
             "topics ≥ 0.5 tokens | from the fit at q's mean: sweeps to the stop | fixed point moved |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for (docs, name), r in results.items():
        for label, fit in r["fits"].items():
            warm = (f"{r['warm']['stop'].mean():.1f} | {r['moved']:.0%} of the {r['settled']:.0%} settled both ways"
                    if label == "draw"
                    else "– | –")
            lines.append(f"| {name}: {docs:,} documents, {r['held']:.0%} of entries hold a token | "
                         f"{'q' + chr(39) + 's mean (svi)' if label == 'mean' else 'a draw (ssmf_a, ssmf)'} | "
                         f"{fit['stop'].mean():.1f} | {fit['fine'].mean():.1f} | {fit['holding'].mean():.1f} | "
                         f"{fit['topics'].mean():.1f} | {warm} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    results = {(docs, name): measure(docs) for docs, name in REGIMES}
    text = "\n".join([
        f"{TITLE}\n",
        f"`python3 benchmarks/ssmf_estep.py` (one BLAS thread; {machine()}; load average "
        f"{os.getloadavg()[0]:.1f} at the end). LDA in the regime of the section above (K = {profile.TOPICS}, "
        f"V = {profile.WORDS:,}, documents of {profile.LENGTH} tokens, η = {ETA:g}, minibatches of "
        f"{profile.BATCH}), q(β) after {profile.WARM} `svi` steps from random topics with N/|B| = 3 (thin) and "
        f"20; one minibatch, each document's mean-field iteration run {SWEEPS} sweeps from the prior, none "
        "frozen; means over its documents (a sweep count of the stop is where the E-step would freeze the "
        "document).\n",
        table(results), ""])
    print(text)
    if not args.no_write:
        write_section(text, TITLE, ROOT / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
