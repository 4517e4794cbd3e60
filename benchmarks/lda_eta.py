"""LDA's sensitivity to the topic prior η under the matrix of E-steps and M-steps of Hoffman
(2014, Sec. 4): M-steps svi (mean field), ssmf_a and ssmf, each with the E-steps vmp (mean
field), cvb0 and gibbs, over η ∈ {0.01, 0.03, 0.1, 0.3, 1} at α = 0.1; the corpus, split and
held-out score of benchmarks/lda.py. Every run takes the same steps from the same start.

Also measured, to explain where Reuters differs from the seed's Wikipedia setting:
- CPU time per step (the median interval between two steps' ends, from `progress`) relative
  to svi's with the same E-step and η;
- how often SSMF's eq-26 target leaves the Dirichlet's parameter space (some α ≤ 0) so that
  the step is shrunk, and the share of ρ kept;
- how concentrated q(β) is: the share of topic-word entries with less than one token of
  evidence (λ − η < 1) at the end.

    python3 benchmarks/lda.py --eta-grid [--passes 5] [--no-write]

`--corpus synthetic` runs the same grid (E-step vmp only) on a corpus drawn from LDA's generative
process in the seed's regime instead: tens of training tokens per topic-word entry, minibatches
of 100 documents, so that q(β) concentrates; it writes its own section, after Reuters'.

    python3 benchmarks/lda.py --eta-grid --corpus synthetic [--passes 3] [--no-write]
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import lda as base
from benchmarks._report import machine

ETAS = (0.01, 0.03, 0.1, 0.3, 1.0)
M_STEPS = ("svi", "ssmf_a", "ssmf")
E_STEPS = ("vmp", "cvb0", "gibbs")
LONG_E_STEPS, LONG_PASSES = ("vmp", "cvb0"), 20  # rerun longer: Gibbs would take hours
TITLE = "## LDA: sensitivity to the topic prior η"
SYNTHETIC_TITLE = "## LDA: sensitivity to η on a synthetic corpus"
# the synthetic corpus: documents × tokens, words, held-out documents, minibatch (benchmarks/lda_memory.py draws it)
DOCS, LENGTH, WORDS, HELD, BATCH = 4000, 100, 1000, 500, 100


class Shrinks:
    """Counts the global steps that `shrink_until_valid` shrank, and the share of ρ they kept."""

    def __init__(self):
        from ppl.infer.schedule import steps
        self.steps, self.original, self.kept = steps, steps.shrink_until_valid, []

    def __enter__(self):
        def counted(family, current, total, rho):
            new = self.original(family, current, total, rho)
            moved = np.abs(new - current).sum(axis=-1) / np.maximum(np.abs(total - current).sum(axis=-1), 1e-300)
            if not np.all(family.valid(total)):
                self.kept.append(float(np.mean(moved)) / rho)
            return new
        self.steps.shrink_until_valid = counted
        return self

    def __exit__(self, *exc):
        self.steps.shrink_until_valid = self.original


def synthetic():
    """(train counts, test counts): DOCS + HELD documents of LENGTH tokens drawn from LDA
    (K = 20, α = 0.1, η = 0.01 over WORDS words, seed 0), the last HELD held out."""
    from benchmarks.lda_memory import synthetic as draw
    counts = draw((DOCS + HELD) * LENGTH, WORDS, DOCS + HELD)
    return counts[:DOCS], counts[DOCS:]


def fit(train, step: str, estep: str, eta: float, passes: int, batch: int = 32, seed: int = base.SEED) -> dict:
    """One run: its topics, CPU seconds per step, shrunk steps and q(β)'s concentration."""
    ends = []
    schedule = f"{step}(batch={batch}, passes={passes}, tau=1, ramp=1, init=data, estep={estep})"
    with Shrinks() as shrinks:
        topics, post = base.fit_ppl(train, schedule, eta, seed, progress=lambda t, value: ends.append(time.process_time()))
    lam = post["beta"].natural + 1.0
    return {"topics": topics, "step": float(np.median(np.diff(ends))), "steps": post.iterations,
            "shrunk": len(shrinks.kept), "kept": float(np.mean(shrinks.kept)) if shrinks.kept else 1.0,
            "thin": float(np.mean(lam - eta < 1.0))}


def eta_grid(passes: int, long_passes: int = LONG_PASSES) -> str:
    """The matrix at `passes`, and its cheap E-steps again at `long_passes`."""
    train, test = base.corpus()
    seen, held = base.halves(test)
    runs = {}
    for length, esteps in ((passes, E_STEPS), (long_passes, LONG_E_STEPS)):
        for estep in esteps:
            for step in M_STEPS:
                for eta in ETAS:
                    run = runs[length, estep, step, eta] = fit(train, step, estep, eta, length)
                    run["score"] = base.completion(run.pop("topics"), seen, held)
                    print(f"{length:3d} passes {estep:5s} {step:6s} η {eta:4g}  held-out {run['score']:.4f}  "
                          f"{1000 * run['step']:6.1f} ms/step  shrunk {run['shrunk']}/{run['steps']} "
                          f"(ρ kept {run['kept']:.2f})  thin {run['thin']:.3f}", flush=True)
    return table(runs, train, passes, long_passes)


def scores(runs: dict, length: int, esteps, timed: bool) -> list:
    """Rows of held-out scores over η, their range and best η, and the time per step relative
    to svi's with the same E-step (median over η) when `timed`."""
    lines = ["| E-step | M-step | " + " | ".join(f"η = {e:g}" for e in ETAS) + " | range | best η |" +
             (" time per step |" if timed else ""),
             "|---|---|" + "---|" * (len(ETAS) + 2 + timed)]
    for estep in esteps:
        for step in M_STEPS:
            row = [runs[length, estep, step, e]["score"] for e in ETAS]
            line = f"| {estep} | {step} | " + " | ".join(f"{v:.4f}" for v in row) + \
                f" | {max(row) - min(row):.4f} | {ETAS[int(np.argmax(row))]:g} |"
            if timed:
                cost = np.median([runs[length, estep, step, e]["step"] / runs[length, estep, "svi", e]["step"]
                                  for e in ETAS])
                line += f" {cost:.2f}× |"
            lines.append(line)
    return lines


def table(runs: dict, train, passes: int, long_passes: int) -> str:
    tokens, entries = int(train.sum()), base.K * train.shape[1]
    lines = [f"{TITLE}\n",
             f"`python3 benchmarks/lda.py --eta-grid` (benchmarks/lda_eta.py), one BLAS thread; {machine()}. Other "
             "agents were running on the machine: times are noisy, their ratios less so. The corpus and score of the "
             f"table above (K = {base.K}, α = {base.ALPHA}); minibatches of 32 of the {len(train)} training documents, "
             "and for every cell the same steps and start (τ = 1, κ = 0.7, the N ramp, a minibatch warm start; "
             "`svi`'s LDA defaults would give it other settings than SSMF's). Rows: E-step × M-step, as in the seed's "
             "Fig. 3 (`gibbs`: 100 sweeps, the second half averaged). Held-out nats/word (higher is better), the "
             "range over η and the best η.\n",
             f"{passes} passes ({runs[passes, 'vmp', 'svi', ETAS[0]]['steps']} steps), with the CPU time of a step "
             "relative to `svi`'s with the same E-step (median over η):\n"]
    lines += scores(runs, passes, E_STEPS, True)
    ms = {(e, s): 1000 * np.median([runs[passes, e, s, x]["step"] for x in ETAS]) for e in E_STEPS for s in M_STEPS}
    lines += ["", "CPU milliseconds per step (median over η): " + "; ".join(
        f"{e}: " + ", ".join(f"{s} {ms[e, s]:.1f}" for s in M_STEPS) for e in E_STEPS) + ".", "",
        f"{long_passes} passes ({runs[long_passes, 'vmp', 'svi', ETAS[0]]['steps']} steps), the E-steps that "
        "cost less than Gibbs:\n"]
    lines += scores(runs, long_passes, LONG_E_STEPS, False)
    lines += ["", f"Where the eq-26 target leaves the parameter space (some α ≤ 0): the steps of `ssmf` shrunk and "
              "the mean share of ρ they kept; and how concentrated q(β) is at the end: the share of the K·V "
              f"topic-word entries with less than one token of evidence (λ − η < 1; {tokens} training tokens over "
              f"{entries} entries, {tokens / entries:.2f} an entry), E-step vmp:\n",
              "| passes | M-step | " + " | ".join(f"η = {e:g}" for e in ETAS) + " |",
              "|---|---|" + "---|" * len(ETAS)]
    for length in (passes, long_passes):
        for step in M_STEPS:
            cells = [runs[length, "vmp", step, e] for e in ETAS]
            lines.append(f"| {length} | {step} | " + " | ".join(
                (f"{c['shrunk']}/{c['steps']} shrunk, ρ × {c['kept']:.2f}; " if step == "ssmf" else "") +
                f"thin {c['thin']:.2f}" for c in cells) + " |")
    return "\n".join(lines) + "\n"


def synthetic_grid(passes: int, seed: int = base.SEED) -> str:
    """The M-steps over η with the cheap E-steps on the synthetic corpus (inference seed `seed`), and its table."""
    train, test = synthetic()
    seen, held = base.halves(test)
    runs = {}
    for estep, step, eta in ((e, s, x) for e in LONG_E_STEPS for s in M_STEPS for x in ETAS):
        run = runs[passes, estep, step, eta] = fit(train, step, estep, eta, passes, BATCH, seed)
        run["score"] = base.completion(run.pop("topics"), seen, held)
        print(f"{estep:5s} {step:6s} η {eta:4g}  held-out {run['score']:.4f}  shrunk {run['shrunk']}/{run['steps']} "
              f"(ρ kept {run['kept']:.2f})  thin {run['thin']:.3f}", flush=True)
    tokens, entries = int(train.sum()), base.K * train.shape[1]
    lines = [f"{SYNTHETIC_TITLE}\n",
             f"`python3 benchmarks/lda.py --eta-grid --corpus synthetic --passes {passes} --seed {seed}` "
             f"(benchmarks/lda_eta.py), one BLAS thread; {machine()}. The grid of the section above in the seed's "
             f"regime: {DOCS} training and {HELD} held-out documents of {LENGTH} tokens drawn from LDA (K = {base.K}, "
             f"α = {base.ALPHA}, η = 0.01 over V = {WORDS} words, corpus seed 0; benchmarks/lda_memory.py's "
             f"generator), {tokens} training tokens over {entries} topic-word entries ({tokens / entries:.0f} an "
             f"entry); minibatches of {BATCH} (N/|B| = {DOCS // BATCH}), {passes} passes "
             f"({runs[passes, 'vmp', 'svi', ETAS[0]]['steps']} steps), the same steps and start for every cell, the "
             "E-steps that cost less than Gibbs; the held-out score of the sections above (nats/word, higher is "
             "better), the range over η and the best η. One inference seed per cell; seeds 1 and 2 move a cell by "
             "up to 0.11, and their means are in [rules/ssmf.md](rules/ssmf.md).\n"]
    lines += scores(runs, passes, LONG_E_STEPS, False)
    lines += ["", "Steps of `ssmf` shrunk (the eq-26 target left the parameter space) and the share of K·V entries "
              "with less than one token of evidence at the end (λ − η < 1; the true topics, drawn at η = 0.01, "
              "put almost no mass on most words), E-step vmp:\n",
              "| M-step | " + " | ".join(f"η = {e:g}" for e in ETAS) + " |", "|---|" + "---|" * len(ETAS)]
    for step in M_STEPS:
        cells = [runs[passes, "vmp", step, e] for e in ETAS]
        lines.append(f"| {step} | " + " | ".join(
            (f"{c['shrunk']}/{c['steps']} shrunk; " if step == "ssmf" else "") + f"thin {c['thin']:.2f}"
            for c in cells) + " |")
    return "\n".join(lines) + "\n"
