"""Softmax regression under a Gaussian block: what the classes' joint q changes.

scikit-learn's wine and iris data, raw and standardised covariates, an intercept column, w[k] ~
MvNormal(0, I): two thirds of the rows (a seeded permutation) fitted, the rest scored by
`Posterior.score`. Four q's: NC-VMP and Böhning's bound, each under mean field (NC-VMP's is the
default) and with the classes' weights in one block (`--gaussian-block all`).
Reports the ELBO (of the bound for Böhning), the held-out log p per row and one weight's sd.
`--no-write` prints the section without writing docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
from benchmarks._report import machine, write_section  # noqa: E402  (before numpy: one BLAS thread)
import numpy as np  # noqa: E402

import ppl  # noqa: E402

SECTION = "## Softmax under a Gaussian block"
DOC = ROOT / "docs" / "benchmarks.md"
VARIANTS = (("ncvmp, mean field", {}), ("ncvmp, block", {"gaussian_block": "all"}),
            ("bohning, mean field", {"methods": {"y": "bound:bohning"}}),
            ("bohning, block", {"methods": {"y": "bound:bohning"}, "gaussian_block": "all"}))
MODEL = """
data x: real[N, D] from (intercept, {columns})
data y: cat(K)[N] from cls
for k in 1..K {{
  w[k] ~ MvNormal(zeros(D), eye(D))
}}
for n in 1..N {{
  y[n] ~ Categorical(softmax(w @ x[n]))
}}
"""


def data(name: str, standardise: bool):
    """(frame, covariate columns) of scikit-learn's data set `name`, labels as text."""
    from sklearn import datasets
    frame = getattr(datasets, f"load_{name}")(as_frame=True).frame
    frame.columns = [c.replace("/", "_").replace(" (cm)", "").replace(" ", "_") for c in frame.columns]
    columns = [c for c in frame.columns if c != "target"]
    if standardise:
        frame[columns] = (frame[columns] - frame[columns].mean()) / frame[columns].std()
    return frame.assign(intercept=1.0, cls=frame["target"].map({0: "a", 1: "b", 2: "c"})).drop(columns="target"), \
        columns


def rows() -> list:
    out = []
    for name in ("wine", "iris"):
        for standardise in (False, True):
            frame, columns = data(name, standardise)
            model = ppl.compile(MODEL.format(columns=", ".join(columns)))
            order = np.random.default_rng(0).permutation(len(frame))
            cut = len(frame) * 2 // 3
            train, test = frame.iloc[order[:cut]], frame.iloc[order[cut:]]
            for label, options in VARIANTS:
                post = model.infer(train, seed=0, max_iter=3000, **options)
                score = post.score(test).total / len(test)
                out.append((f"{name}, {'standardised' if standardise else 'raw'}", label, post.iterations,
                            post.elbo, score, float(post["w"].sd[0, 1])))
    return out


def section(table: list) -> str:
    lines = [SECTION, "",
             "What one joint q over a softmax's class weights changes (docs/rules/block.md#a-softmaxs-class-weights-"
             "bohnings-bound): two thirds of each data set fitted, the rest scored; w[k] ~ MvNormal(0, I) with an "
             "intercept column. The ELBO of a Böhning run is its bound's.", "",
             f"- Machine: {machine()}", "- Command: `python3 benchmarks/softmax_block.py`", "",
             "| data | q | sweeps | ELBO | held-out log p / row | sd of w[a, 2] |", "|---|---|---|---|---|---|"]
    lines += [f"| {d} | {q} | {n} | {e:.2f} | {s:.4f} | {sd:.3f} |" for d, q, n, e, s, sd in table]
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    text = section(rows())
    print(text)
    if not args.no_write:
        write_section(text, SECTION, DOC)


if __name__ == "__main__":
    main()
