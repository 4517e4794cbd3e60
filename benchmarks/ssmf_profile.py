"""Where a step of `svi`, `ssmf_a` and `ssmf` spends its time on LDA (Reuters, K = 20, V = 4,258,
batch 32, η = 0.1, the mean-field E-step): cProfile over 2 passes, one BLAS thread, the
cumulative CPU time of each part of `SVI.step` divided by the steps.

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


def profile(train, step: str, eta: float) -> dict:
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
        _, post = base.fit_ppl(train, f"{step}(batch=32, passes=2, tau=1, ramp=1, init=data)", eta)
    finally:
        SVI.step = original
    stats = pstats.Stats(profiler).stats
    return {part: 1000 * sum(v[3] for (file, _, function), v in stats.items()
                             if file.endswith(path) and function == name) / post.iterations
            for part, (path, name) in PARTS.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eta", type=float, default=0.1)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    train, _ = base.corpus()
    rows = {step: profile(train, step, args.eta) for step in ("svi", "ssmf_a", "ssmf")}
    lines = [f"{TITLE}\n",
             f"`python3 benchmarks/ssmf_profile.py` (cProfile, one BLAS thread; {machine()}; load average "
             f"{os.getloadavg()[0]:.1f} at the end: other agents were running, times are noisy). LDA on the Reuters "
             f"training documents, K = {base.K}, η = {args.eta:g}, batch 32, 2 passes, the mean-field E-step; CPU "
             "milliseconds per step of each part (cProfile's overhead included; the profiler runs inside the steps only).\n",
             "| M-step | " + " | ".join(PARTS) + " | relative to svi |", "|---|" + "---:|" * (len(PARTS) + 1)]
    for step, parts in rows.items():
        lines.append(f"| {step} | " + " | ".join(f"{parts[p]:.1f}" if parts[p] else "–" for p in PARTS) +
                     f" | {parts['whole step'] / rows['svi']['whole step']:.2f}× |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(text, TITLE, base.ROOT / "docs" / "benchmarks.md")


if __name__ == "__main__":
    main()
