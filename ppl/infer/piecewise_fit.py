"""Fit the piecewise bounds on llp(x) = log(1 + e^x) offline: `python -m ppl.infer.piecewise_fit`.

Rewrites piecewise_tables.json (read by ppl.infer.piecewise) and prints ε_max per (kind, R).
Minimax as in the thesis (Eqs 4.39–4.40): a finite piece is the best uniform polynomial
approximation of llp on its interval (Remez exchange), lifted by c = −min(a x² + b x − llp) so it
bounds llp; its error is the max − min of that gap, found at the gap's critical points. The end
pieces are llp(t_1) on (−∞, t_1] and x + llp(−t_{R−1}) on [t_{R−1}, ∞), the only shapes with a
finite error. For a target ε, llp(t_1) = ε fixes t_1 and each next piece is made as long as ε
allows; a piece's error grows with its interval, so this greedy cover needs the fewest pieces,
and bisection on ε finds the smallest ε that R pieces reach. The cover of the left half mirrors
to the right through llp(−x) = llp(x) − x: (a, b, c) on [l, h] becomes (a, 1 − b, c) on [−h, −l].
"""

from __future__ import annotations

import json
import time
from itertools import pairwise
from pathlib import Path

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, logit

from ppl.infer.piecewise import TABLES, Table, bound_value, make_table

DEGREE = {"linear": 1, "quadratic": 2}
PIECES = (3, 4, 5, 6, 8, 10, 20)
MARGIN = 1e-12  # added to every c, so that rounding when evaluating a piece cannot cross llp
GRID = np.linspace(-1.0, 1.0, 2049)  # the Remez grid on an interval mapped to [−1, 1]


def llp(x):
    return np.logaddexp(0.0, x)


def _alternant(err, ref, k):
    """The next Remez reference: k grid indices where err alternates in sign, its largest kept."""
    slope = np.diff(err)
    turns = np.flatnonzero(slope[:-1] * slope[1:] <= 0) + 1
    keep = []
    for i in np.unique(np.concatenate([[0, err.size - 1], turns, ref])):
        if keep and (err[i] > 0) == (err[keep[-1]] > 0):
            if abs(err[i]) > abs(err[keep[-1]]):
                keep[-1] = i
        else:
            keep.append(i)
    while len(keep) > k:
        keep.pop(0 if abs(err[keep[0]]) < abs(err[keep[-1]]) else -1)
    return np.array(keep) if len(keep) == k else ref


def remez(low, high, degree):
    """(a, b) of the best uniform approximation a x² + b x + · of llp on [low, high]."""
    mid, half = (low + high) / 2, (high - low) / 2
    f = llp(mid + half * GRID)
    k = degree + 2
    # Not symmetric: on a symmetric interval llp − x/2 is even, and a symmetric start levels at 0.
    ref = np.arange(k) * (GRID.size // k)
    powers, signs = np.vander(GRID, degree + 1), (-1.0) ** np.arange(k)
    for _ in range(100):
        *coef, level = np.linalg.solve(np.column_stack([powers[ref], signs]), f[ref])
        err = f - np.polyval(coef, GRID)
        new = _alternant(err, ref, k)
        if np.array_equal(new, ref):
            break
        ref = new
    assert np.abs(err).max() <= abs(level) * (1 + 1e-9) + 1e-15, (low, high, "Remez did not converge")
    alpha, beta = np.pad(coef, (3 - len(coef), 0))[:2]  # of u = (x − mid) / half
    return alpha / half**2, beta / half - 2 * alpha * mid / half**2


def gap_range(a, b, low, high):
    """(min, max) of a x² + b x − llp(x) on the finite [low, high], from its critical points.

    The derivative 2a x + b − σ(x) is monotone between the points where σ' = 2a (at most two),
    so each of those stretches holds at most one critical point.
    """
    def slope(x):
        return 2 * a * x + b - expit(x)

    splits = [low, high]
    if 0 < a < 1 / 8:
        u = logit((1 + np.sqrt(1 - 8 * a)) / 2)
        splits[1:1] = [x for x in (-u, u) if low < x < high]
    points = splits + [brentq(slope, lo, hi) for lo, hi in pairwise(splits) if slope(lo) * slope(hi) < 0]
    points = np.array(points)
    gap = (a * points + b) * points - llp(points)
    return gap.min(), gap.max()


def piece(low, high, degree):
    """(a, b, c, error) of the minimax bound on [low, high]."""
    a, b = remez(low, high, degree)
    assert a >= 0, (low, high, a)
    lowest, highest = gap_range(a, b, low, high)
    return a, b, MARGIN - lowest, highest - lowest + MARGIN


def _reach(low, end, eps, degree):
    """The farthest h ≤ end such that one piece on [low, h] is within eps."""
    def excess(high):
        return piece(low, high, degree)[3] - eps

    return end if excess(end) <= 0 else brentq(excess, low + 1e-3, end, xtol=1e-14)


def _left_half(eps, degree, pieces):
    """[t_1, q_1, …, q_k]: t_1 with llp(t_1) = eps, then up to k = (R − 2) // 2 greedy pieces,
    fewer if they get past the middle."""
    t1 = np.log(np.expm1(eps))
    points = [t1]
    while len(points) <= (pieces - 2) // 2 and points[-1] < 0:
        points.append(_reach(points[-1], -t1, eps, degree))
    return points


def _covers(eps, degree, pieces):
    """Whether R pieces keep every error within eps: the halves meet, or (odd R) one piece bridges them."""
    q = _left_half(eps, degree, pieces)[-1]
    return q >= 0 or (pieces % 2 == 1 and piece(q, -q, degree)[3] <= eps)


def fit(kind: str, pieces: int) -> Table:
    """The minimax bound of `kind` with R = `pieces` pieces, symmetric about the middle."""
    degree = DEGREE[kind]
    lo, hi = 1e-6, np.log(2.0)  # eps = log 2 puts t_1 at 0, so the halves meet
    while hi / lo > 1 + 1e-11:
        mid = np.sqrt(lo * hi)
        lo, hi = (lo, mid) if _covers(mid, degree, pieces) else (mid, hi)
    half = _left_half(hi, degree, pieces)
    assert len(half) == (pieces - 2) // 2 + 1, "fewer pieces would do"
    if pieces % 2 == 0:
        half[-1] = 0.0  # within reach, since the greedy cover got past 0
        middle, mirrored = [], half[:-1]
    else:
        assert half[-1] < 0, "R − 1 pieces would do"
        middle, mirrored = [piece(half[-1], -half[-1], degree)], half
    left = [piece(l, h, degree) for l, h in pairwise(half)]
    right = [(a, 1 - b, c, err) for a, b, c, err in reversed(left)]
    end = llp(half[0]) + MARGIN
    rows = [(0.0, 0.0, end, end)] + left + middle + right + [(0.0, 1.0, end, end)]
    a, b, c, errors = np.array(rows).T
    thresholds = half + [-t for t in reversed(mirrored)]
    return make_table(kind, pieces, thresholds, a, b, c, errors.max())


def check(tab: Table) -> float:
    """Assert the bound holds on [−40, 40] and on both sides of every threshold; return the
    largest gap seen."""
    x = np.concatenate([np.linspace(-40, 40, 200_001), tab.thresholds, np.nextafter(tab.thresholds, np.inf)])
    gap = bound_value(tab, x) - llp(x)
    assert gap.min() >= 0, (tab.kind, tab.pieces, gap.min())
    assert np.all(np.diff(tab.thresholds) > 0) and np.all(tab.a >= 0)
    return gap.max()


def markdown(tables) -> str:
    """ε_max per kind (rows) and R (columns), as a markdown table."""
    lines = ["| R | " + " | ".join(map(str, PIECES)) + " |", "|---" * (len(PIECES) + 1) + "|"]
    for kind in DEGREE:
        errors = [f"{tables[kind, r].max_error:#.3g}" for r in PIECES]
        lines.append(f"| {kind.capitalize()} ε_max | " + " | ".join(errors) + " |")
    return "\n".join(lines)


def main():
    start = time.perf_counter()
    tables = {}
    for kind in DEGREE:
        for r in PIECES:
            tab = tables[kind, r] = fit(kind, r)
            seen = check(tab)
            print(f"{kind:9} R={r:2}  ε_max {tab.max_error:.6g}  (largest gap on the grid {seen:.6g})")
    rows = [{"kind": t.kind, "R": t.pieces, "thresholds": t.thresholds.tolist(), "a": t.a.tolist(),
             "b": t.b.tolist(), "c": t.c.tolist(), "max_error": t.max_error} for t in tables.values()]
    path = Path(__file__).with_name(TABLES)
    path.write_text(json.dumps({"generated_by": "python -m ppl.infer.piecewise_fit", "tables": rows},
                               indent=1) + "\n", encoding="utf-8")
    print(f"\n{markdown(tables)}\n\nwrote {path} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
