"""Where a step of `svi`, `ssmf_a` and `ssmf` spends its time on LDA (Reuters, K = 20, V = 4,258,
η = 0.1, the mean-field E-step, minibatches of 32 and of all 316 training documents): cProfile
on the CPU clock, one BLAS thread, the cumulative time of each part of `SVI.step` divided by
the steps.

Parts: the draw of β̃ and its Jacobian (`pin_draws`, with eq. 15's shape derivative under
`ssmf`), the E-step, the minibatch's ELBO estimate, the M-step (with eq. 35's Jacobian and
eq. 38's Fisher solve under `ssmf`), and binding the minibatch's rows.

    python3 benchmarks/ssmf_profile.py [--eta 0.1] [--no-write]
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
# a minibatch as in the η table; all the training documents; and those with the same E-step work
# under every M-step (50 sweeps each, no document stopping early)
BATCHES = ((32, 2, ""), (316, 10, ""), (316, 10, ", inner=50, local_tol=1e-12"))


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
    stats = pstats.Stats(profiler).stats
    return {part: 1000 * sum(v[3] for (file, _, function), v in stats.items()
                             if file.endswith(path) and function == name) / post.iterations
            for part, (path, name) in PARTS.items()}


def table(rows: dict, batch: int, passes: int, extra: str) -> list:
    same = " and the same E-step work (`inner=50, local_tol=1e-12`: 50 sweeps a step)" if extra else ""
    lines = [f"Minibatches of {batch} documents, {passes} passes{same}:\n",
             "| M-step | " + " | ".join(PARTS) + " | relative to svi |", "|---|" + "---:|" * (len(PARTS) + 1)]
    for step, parts in rows.items():
        lines.append(f"| {step} | " + " | ".join(f"{parts[p]:.1f}" if parts[p] else "–" for p in PARTS) +
                     f" | {parts['whole step'] / rows['svi']['whole step']:.2f}× |")
    return lines + [""]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eta", type=float, default=0.1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    train, _ = base.corpus()
    lines = [f"{TITLE}\n",
             f"`python3 benchmarks/ssmf_profile.py` (cProfile on the CPU clock, one BLAS thread; {machine()}; other "
             "agents were running, times are noisy). LDA on the Reuters training documents, K = "
             f"{base.K}, V = {train.shape[1]}, η = {args.eta:g}, the mean-field E-step; CPU milliseconds per step of "
             "each part (the profiler runs inside the steps only, its overhead included). The draw and eqs. 15, 35 "
             "and 38 cost O(K·V) a step, the E-step O(tokens of the minibatch × K × sweeps): the larger the "
             "minibatch, the smaller SSMF's share.\n"]
    for batch, passes, extra in BATCHES:
        rows = {step: profile(train, step, args.eta, batch, passes, extra) for step in ("svi", "ssmf_a", "ssmf")}
        lines += table(rows, batch, passes, extra)
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        write_section(text, TITLE, base.ROOT / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
