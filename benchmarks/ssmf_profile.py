"""Where a step of `svi`, `ssmf_a` and `ssmf` spends its time on LDA, the mean-field E-step, η = 0.1:
cProfile on the CPU clock, one BLAS thread, the cumulative time of each part of `SVI.step`
divided by the steps.

- Reuters (K = 20, V = 4,258): minibatches of 32 and of all 316 training documents, each
  M-step a fit of its own;
- `--corpus synthetic`, the seed's regime (Hoffman 2014, Sec. 4: K = 100, minibatches of 1000
  documents): a corpus drawn from LDA (benchmarks/lda_stream.py's generator: DOCS documents of
  LENGTH tokens over V = WORDS words), `svi` steps from random topics until q(β) holds tokens
  (WARM steps, N/|B| = 20), then from those globals the three M-steps step in turn on the same
  minibatches (ROUNDS rounds), so the machine's load falls on all three alike; again with the same
  E-step work under every M-step (SAME_WORK).

Parts: the draw of β̃ and its Jacobian (`pin_draws`, with eq. 15's shape derivative under
`ssmf`), the E-step, the minibatch's ELBO estimate, the M-step (with eq. 35's Jacobian and
eq. 38's Fisher solve under `ssmf`), and binding the minibatch's rows.

    python3 benchmarks/ssmf_profile.py [--eta 0.1] [--corpus reuters|synthetic] [--no-write]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import lda as base  # noqa: E402  (keeps this folder off the path: `import lda` is the corpus)
from benchmarks._report import machine, write_section  # noqa: E402

PARTS = {  # (file, function) of the profile -> the column
    "bind": ("schedule/svi.py", "bind"),
    "draw (pin_draws)": ("schedule/sampled.py", "pin_draws"),
    "eq. 15 derivative": ("gamma_shape.py", "log_shape_derivative"),
    "E-step": ("schedule/svi.py", "e_step"),
    "estimate": ("schedule/svi.py", "estimate"),
    "M-step": ("schedule/svi.py", "m_step"),
    "eqs. 35, 38": ("schedule/sampled.py", "ssmf_message"),
    "whole step": ("schedule/svi.py", "step"),
}
TITLE = "## LDA: where an SSMF step's time goes"
SAME_WORK = ", inner=50, local_tol=1e-12"  # every document 50 sweeps under every M-step, none stopping early
# a minibatch as in the η table; all the training documents; and those with the same E-step work
BATCHES = ((32, 2, ""), (316, 10, ""), (316, 10, SAME_WORK))


def profile(train, step: str, eta: float, batch: int, passes: int, extra: str) -> dict:
    """Milliseconds per step of each part: the profiler runs inside `SVI.step` only (not the
    start or the final ELBO), so each part's cumulative time divided by the steps."""
    from ppl.infer.schedule.svi import SVI
    profiler, original = cProfile.Profile(time.process_time), SVI.step

    def profiled(self, t):
        profiler.enable()
        try:
            return original(self, t)
        finally:
            profiler.disable()
    SVI.step = profiled
    try:
        _, post = base.fit_ppl(train, f"{step}(batch={batch}, passes={passes}, tau=1, ramp=1, init=data{extra})", eta)
    finally:
        SVI.step = original
    return parts(profiler, post.iterations)


def parts(profiler, steps: int) -> dict:
    """CPU milliseconds per step of each of `PARTS` in what `profiler` saw of `steps` steps."""
    stats = pstats.Stats(profiler).stats
    return {part: 1000 * sum(v[3] for (file, _, function), v in stats.items()
                             if file.endswith(path) and function == name) / steps
            for part, (path, name) in PARTS.items()}


STEPS = ("svi", "ssmf_a", "ssmf")
SEED_TITLE = "## LDA: SSMF's cost per step in the seed's regime"
# the seed's regime (K = 100, minibatches of 1000 documents), sized to run in minutes: 3M tokens,
# N/|B| = 20 so that q(β) holds tokens after the warm-up
TOPICS, WORDS, DOCS, LENGTH, BATCH, WARM, ROUNDS = 100, 8_000, 20_000, 150, 1000, 10, 8


def warmed(eta: float, docs: int = DOCS, warm: int = WARM) -> tuple:
    """(runner, globals, facts) on `docs` documents of the seed's regime: runner(step, seed, extra)
    an `SVI` of that M-step (`extra`: more schedule options), the globals after `warm` svi steps
    from random topics."""
    import numpy as np
    import ppl
    from benchmarks.lda_stream import MODEL, draw_corpus
    from ppl.infer import build_problem
    from ppl.infer.schedule.svi import SVI
    from ppl.lang.schedule import parse_schedule
    blocks = list(draw_corpus(docs * LENGTH, base.SEED, TOPICS, WORDS, LENGTH))
    data = {name: np.concatenate([b[i] for b in blocks]) + (i < 2) for i, name in enumerate(("doc", "word", "count"))}
    model = ppl.compile(MODEL.replace("const eta = 0.01", f"const eta = {eta}\nconst V = {WORDS}"))
    dataset = model.bind(data)
    analysis = model.analyze(dataset)

    def runner(step: str, seed: int, extra: str = "") -> SVI:
        spec = parse_schedule(f"{step}(batch={BATCH}, tau=1, ramp=0, init=random{extra})")
        return SVI(build_problem(model.checked, dataset, analysis, spec), np.random.default_rng(seed))
    svi = runner("svi", base.SEED)
    svi.start()
    for t in range(1, warm + 1):
        svi.step(t)
    held = svi.globals["beta"] + 1.0 - eta  # λ − η: the tokens of evidence of each topic-word entry
    facts = {"rows": len(data["doc"]), "tokens": int(data["count"].sum()), "held": float(np.mean(held >= 1.0))}
    return runner, svi.globals, facts


def interleaved(runner, globals_, extra: str, warm: int = WARM, rounds: int = ROUNDS) -> tuple:
    """({M-step: parts}, {M-step: CPU seconds of each round's step}): `rounds` rounds of one step of
    each M-step from `globals_` (reached after `warm` steps), the three on the same minibatches (a
    seed of their own: ssmf_a and ssmf also draw the same β̃ in the first round), each under its
    own profiler."""
    runners = {step: runner(step, base.SEED + 1, extra) for step in STEPS}
    profilers = {step: cProfile.Profile(time.process_time) for step in STEPS}
    seconds = {step: [] for step in STEPS}
    for svi in runners.values():
        svi.globals = {name: natural.copy() for name, natural in globals_.items()}
    for t in range(warm + 1, warm + rounds + 1):
        for step, svi in runners.items():
            before = time.process_time()
            profilers[step].runcall(svi.step, t)
            seconds[step].append(time.process_time() - before)
    return {step: parts(profilers[step], rounds) for step in STEPS}, seconds


def table(rows: dict, heading: str) -> list:
    lines = [heading, "", "| M-step | " + " | ".join(PARTS) + " | relative to svi |",
             "|---|" + "---:|" * (len(PARTS) + 1)]
    for step, parts_ in rows.items():
        lines.append(f"| {step} | " + " | ".join(f"{parts_[p]:.1f}" if parts_[p] else "–" for p in PARTS) +
                     f" | {parts_['whole step'] / rows['svi']['whole step']:.2f}× |")
    return lines + [""]


def reuters(eta: float) -> str:
    train, _ = base.corpus()
    lines = [f"{TITLE}\n",
             f"`python3 benchmarks/ssmf_profile.py` (cProfile on the CPU clock, one BLAS thread; {machine()}; other "
             "agents were running, times are noisy). LDA on the Reuters training documents, K = "
             f"{base.K}, V = {train.shape[1]}, η = {eta:g}, the mean-field E-step; CPU milliseconds per step of "
             "each part (the profiler runs inside the steps only, its overhead included). The draw and eqs. 15, 35 "
             "and 38 cost O(K·V) a step, the E-step O(tokens of the minibatch × K × sweeps): the larger the "
             "minibatch, the smaller SSMF's share. The seed's regime: the next section.\n"]
    for batch, passes, extra in BATCHES:
        rows = {step: profile(train, step, eta, batch, passes, extra) for step in STEPS}
        same = " and the same E-step work (`inner=50, local_tol=1e-12`: 50 sweeps a step)" if extra else ""
        lines += table(rows, f"Minibatches of {batch} documents, {passes} passes{same}:")
    return "\n".join(lines)


def synthetic(eta: float) -> str:
    import numpy as np
    runner, globals_, facts = warmed(eta, DOCS, WARM)
    lines = [f"{SEED_TITLE}\n",
             f"`python3 benchmarks/ssmf_profile.py --corpus synthetic` (cProfile on the CPU clock, one BLAS thread; "
             f"{machine()}; other agents were running, times are noisy). The seed's regime (Hoffman 2014, Sec. 4: "
             f"K = 100, minibatches of 1000 Wikipedia documents, V ≈ 8,000): {DOCS:,} documents of {LENGTH} tokens "
             f"drawn from LDA (K = {TOPICS}, α = 0.1, η = 0.01 over V = {WORDS:,} words; benchmarks/lda_stream.py's "
             f"generator), {facts['tokens']:,} tokens in {facts['rows']:,} (document, word) rows fitted "
             f"count-weighted, K = {TOPICS}, η = {eta:g}, the mean-field E-step, minibatches of {BATCH} (N/|B| = "
             f"{DOCS // BATCH}). {WARM} `svi` steps from random topics first (after them {facts['held']:.0%} of the "
             f"K·V entries hold a token of evidence, λ − η ≥ 1), then {ROUNDS} rounds of one step of each M-step from "
             "those globals on the same minibatches, in turn, so that the machine's load falls on the three alike. "
             "CPU milliseconds per step of each part (the profiler's overhead included); relative to svi: the "
             "ratio of the mean steps, then the median and range of the rounds' ratios.\n"]
    for extra, same in (("", ""), (SAME_WORK, " and the same E-step work (`inner=50, local_tol=1e-12`: 50 sweeps "
                                              "of every document)")):
        rows, seconds = interleaved(runner, globals_, extra)
        lines += table(rows, f"Minibatches of {BATCH} documents, {ROUNDS} interleaved steps each{same}:")
        ratios = {step: np.array(seconds[step]) / np.array(seconds["svi"]) for step in STEPS[1:]}
        lines += ["Rounds' ratios to svi: " + "; ".join(
            f"`{step}` median {np.median(r):.2f}×, {r.min():.2f}–{r.max():.2f}×" for step, r in ratios.items()) +
            f" (load average {os.getloadavg()[0]:.1f} at the end).", ""]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eta", type=float, default=0.1)
    parser.add_argument("--corpus", choices=("reuters", "synthetic"), default="reuters")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    text, title = (synthetic(args.eta), SEED_TITLE) if args.corpus == "synthetic" else (reuters(args.eta), TITLE)
    print(text)
    if not args.no_write:
        write_section(text, title, base.ROOT / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
