"""Held-out imputation error of categorical factor analysis under each rule for the softmax
likelihood, as in Khan's thesis (§5.7, digest E9): hide entries, fit, score the hidden ones.

models/categorical_fa.vim on models/categorical_fa.csv (200 rows, 6 items with 3 categories,
5% of the cells already missing). Per split (seed s): 20% of the rows are test rows, and one
randomly chosen observed entry of each test row is hidden (thesis E4/E9: one held-out entry per
case); the model is fitted to everything else, and each hidden cell is scored by the
cross-entropy −log q(y = true class), in nats, where q(y) is the cell's imputation (the class
probabilities averaged over q, softmax or stick-breaking as the rule's likelihood). The baseline
predicts each item's category frequencies among its observed training cells.

Rules: `bound:bohning` (the multinomial Böhning bound, diagonal ½·I since z[n] is shared by the
classes), `bound:stick` (stick-breaking under the 10-piece quadratic bound), `cvi` (16 draws per
cell and sweep) and `ncvmp` (deterministic quadrature). Timings are on a shared, loaded machine.

Writes the section "## Categorical factor analysis: imputation by rule" of docs/benchmarks.md.

    python3 benchmarks/categorical_imputation.py [--splits 3] [--no-write]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, write_section  # noqa: E402  (before numpy: one BLAS thread)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import ppl  # noqa: E402

SECTION = "## Categorical factor analysis: imputation by rule"
DOC = ROOT / "docs" / "benchmarks.md"
MODEL = ROOT / "models" / "categorical_fa.vim"
DATA = ROOT / "models" / "categorical_fa.csv"
RULES = ("bound:bohning", "bound:stick", "cvi", "ncvmp")
SOFTMAX, BOUNDS = ["cvi", "ncvmp"], ["bound:bohning", "bound:stick"]


def hide(frame: pd.DataFrame, seed: int, test_share: float = 0.2):
    """(frame with one observed entry of each test row emptied, [(row, column, code)])."""
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(frame), int(round(test_share * len(frame))), replace=False)
    out, held = frame.copy(), []
    for r in np.sort(rows):
        observed = np.flatnonzero(frame.iloc[r].notna().to_numpy())
        c = int(rng.choice(observed))
        held.append((int(r), c, int(frame.iat[r, c]) - 1))
        out.iat[r, c] = None
    return out, held


def baseline(frame: pd.DataFrame, held, classes: int) -> float:
    """Cross-entropy of each item's category frequencies in its observed cells."""
    loss = []
    for r, c, code in held:
        counts = np.bincount(frame.iloc[:, c].dropna().astype(int) - 1, minlength=classes)
        loss.append(-np.log(counts[code] / counts.sum()))
    return float(np.mean(loss))


def imputation_error(post, held) -> float:
    probs = post["y"].mean  # (N, J, C): one-hot where observed, the imputation where missing
    return float(np.mean([-np.log(probs[r, c, code]) for r, c, code in held]))


def run(splits: int, done=None):
    """Fit every rule on every split; `done(table, held)` after each split (the table so far)."""
    data = pd.read_csv(DATA, dtype="Int64")
    classes = int(data.max().max())
    model = ppl.load(MODEL)
    rows = []
    for split in range(splits):
        frame, held = hide(data, seed=split)
        frame = frame.astype(object).where(frame.notna(), None)
        row = {"split": split, "baseline": baseline(frame, held, classes)}
        for rule in RULES:
            start = time.perf_counter()
            post = model.infer(frame, seed=split, methods={"y": rule})
            row[rule] = imputation_error(post, held)
            row[rule + " s"] = time.perf_counter() - start
            row[rule + " sweeps"] = post.iterations
            print(f"split {split} {rule}: {row[rule]:.4f} nats, {post.iterations} sweeps, "
                  f"{row[rule + ' s']:.1f} s", flush=True)
        rows.append(row)
        if done is not None:
            done(pd.DataFrame(rows), len(held))
    return pd.DataFrame(rows), len(held)


def render(table: pd.DataFrame, held: int) -> str:
    lines = [SECTION, "",
             "Khan's thesis (§5.7, digest E9) fits categorical latent Gaussian models with the multinomial",
             "logit under the log and Böhning bounds and with the stick-breaking likelihood under piecewise",
             "bounds, and scores the imputation of held-out entries by cross-entropy; stick-PW beats the",
             "logit bounds on every split. Here: `models/categorical_fa.vim` on its data (200 rows, 6 items,",
             f"3 categories), {len(table)} splits, {held} hidden cells per split (one in each of 40 test rows),",
             "mean −log q(true class) in nats (lower is better; the baseline predicts each item's",
             "category frequencies). `python3 benchmarks/categorical_imputation.py` "
             f"({machine()}; one BLAS thread; other jobs were running, so the times are noisy).", "",
             "| split | baseline | " + " | ".join(f"`{r}`" for r in RULES) + " |",
             "|---|---|" + "---|" * len(RULES)]
    for _, row in table.iterrows():
        lines.append(f"| {int(row['split'])} | {row['baseline']:.4f} | "
                     + " | ".join(f"{row[r]:.4f}" for r in RULES) + " |")
    lines.append("| mean | " + f"{table['baseline'].mean():.4f} | "
                 + " | ".join(f"**{table[r].mean():.4f}**" for r in RULES) + " |")
    lines.append("| sweeps (mean) | – | " + " | ".join(f"{table[r + ' sweeps'].mean():.0f}" for r in RULES) + " |")
    lines.append("| seconds (mean) | – | " + " | ".join(f"{table[r + ' s'].mean():.1f}" for r in RULES) + " |")
    best = table[list(RULES)].idxmin(axis=1).value_counts()
    stick = int((table["bound:stick"] < table["bound:bohning"]).sum())
    softmax = int((table[SOFTMAX].min(axis=1) < table[BOUNDS].min(axis=1)).sum())
    slower = table[[r + " s" for r in SOFTMAX]].mean().mean() / table[[r + " s" for r in BOUNDS]].mean().mean()
    diff = table["bound:stick"] - table["bound:bohning"]
    se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
    lines += ["", "Best rule per split: " + ", ".join(f"`{r}` {n}" for r, n in best.items()) + ".", "",
              "**The thesis's ordering.** Stick-breaking under the piecewise bound imputes better than the",
              f"multinomial Böhning bound on {stick} of {len(table)} splits (stick − Böhning {diff.mean():+.4f} nats on",
              f"average, standard error over the splits {se:.4f}); the thesis finds stick-PW ahead of its logit",
              "bounds (Böhning, and the log bound, which ppl does not have) on all 20 splits. Here every rule is",
              "far ahead of the baseline, but where the difference of the two bounds is within about its",
              "standard error, these splits do not resolve their order. Böhning is",
              "the loosest bound: its fixed curvature (here ½·I, since z[n] is shared by the categories)",
              "penalises every logit's variance, and loose bounds bias the fit (thesis §7). `ncvmp` (the",
              "default) and `cvi` are not in the thesis's comparison: they fit the softmax likelihood itself,",
              "with no bound slack (E[lse] over the logits' margins, their cross-category covariance dropped;",
              "`ncvmp` to its fixed point, `cvi` by noisy steps), and the data were drawn from the softmax",
              "model, for which stick-breaking is misspecified. The better of the two imputes best on",
              f"{softmax} of {len(table)} splits, at {slower:.1f} times the time of the bounds.", ""]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    # the section is rewritten after every split, so a long run leaves its finished splits behind
    table, held = run(args.splits, None if args.no_write else
                      lambda table, held: write_section(render(table, held), SECTION, DOC))
    print(render(table, held))


if __name__ == "__main__":
    main()
