"""Piecewise linear/quadratic upper bounds on llp(x) = log(1 + e^x) and their Gaussian expectations.

The fixed tables (Marlin, Khan & Murphy 2011; Khan's thesis §4.5) are fitted offline by
`python -m ppl.infer.piecewise_fit` into piecewise_tables.json, next to this module. The bound's
expectation under N(m, v) comes from truncated-Gaussian moments (thesis A.5) with two printed
formulas corrected: E2 (A.41 drops 2μs(φ(l̃) − φ(h̃))) and ∂E0/∂μ (A.44 divides by s², not s).
Only numpy and scipy.special: this runs inside inference, where import cost matters.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
from scipy.special import ndtr

TABLES = "piecewise_tables.json"
_INV_SQRT_2PI = 1.0 / np.sqrt(2.0 * np.pi)


@dataclass(frozen=True, eq=False)
class Table:
    """Piece r is a_r x² + b_r x + c_r on [t_{r−1}, t_r] (t_0 = −∞, t_R = +∞); never below llp."""

    kind: str
    pieces: int
    thresholds: np.ndarray  # (R − 1,) finite, increasing
    a: np.ndarray  # (R,) ≥ 0
    b: np.ndarray
    c: np.ndarray
    max_error: float  # sup over x of bound − llp

    @property
    def lows(self) -> np.ndarray:
        return np.concatenate([[-np.inf], self.thresholds])

    @property
    def highs(self) -> np.ndarray:
        return np.concatenate([self.thresholds, [np.inf]])


def make_table(kind, pieces, thresholds, a, b, c, max_error) -> Table:
    """A Table with read-only float arrays, so a shared table cannot be changed in place."""
    arrays = []
    for values in (thresholds, a, b, c):
        array = np.array(values, dtype=float)
        array.flags.writeable = False
        arrays.append(array)
    return Table(kind, int(pieces), *arrays, float(max_error))


@cache
def _tables() -> dict[tuple[str, int], Table]:
    text = resources.files("ppl.infer").joinpath(TABLES).read_text(encoding="utf-8")
    return {(t["kind"], t["R"]): make_table(t["kind"], t["R"], t["thresholds"], t["a"], t["b"],
                                            t["c"], t["max_error"])
            for t in json.loads(text)["tables"]}


def table(kind: str, pieces: int) -> Table:
    """The shipped bound with `pieces` pieces of `kind` ("linear" or "quadratic")."""
    tables = _tables()
    if (kind, pieces) not in tables:
        shipped = sorted(r for k, r in tables if k == kind)
        if not shipped:
            kinds = sorted({k for k, _ in tables})
            raise ValueError(f"no piecewise bound of kind {kind!r}; kinds: {', '.join(kinds)}")
        raise ValueError(f"no {kind} piecewise bound with {pieces} pieces; "
                         f"available: {', '.join(map(str, shipped))}")
    return tables[kind, pieces]


def bound_value(tab: Table, x) -> np.ndarray:
    """The piecewise bound at the points x (any shape)."""
    x = np.asarray(x, dtype=float)
    r = np.searchsorted(tab.thresholds, x)
    return (tab.a[r] * x + tab.b[r]) * x + tab.c[r]


def truncated_moments(low, high, m, v):
    """∫_low^high x^k N(x | m, v) dx for k = 0, 1, 2, and their exact derivatives in m and v.

    Returns (E, dE/dm, dE/dv), each of shape (3,) + broadcast shape, k on the first axis.
    Written in the standardised end points z = (end − m)/s, where every term is z^j φ(z), so
    infinite ends contribute 0 and no inf·0 arises.
    """
    m, v = np.asarray(m, dtype=float), np.asarray(v, dtype=float)
    s = np.sqrt(v)
    zl, zh = (low - m) / s, (high - m) / s
    # Φ(zh) − Φ(zl), taken in the tail where both ends lie, so far tails keep their digits
    e0 = np.where(zl > 0, ndtr(-zl) - ndtr(-zh), ndtr(zh) - ndtr(zl))
    (zl0, pl), (zh0, ph) = ((np.where(np.isfinite(z), z, 0.0), _INV_SQRT_2PI * np.exp(-0.5 * z * z))
                            for z in (zl, zh))
    d0, d1, d2, d3 = (zl0**j * pl - zh0**j * ph for j in range(4))  # zl^j φ(zl) − zh^j φ(zh)
    m2 = m * m
    e1 = m * e0 + s * d0
    e2 = (v + m2) * e0 + 2 * m * s * d0 + v * d1  # corrected A.41
    de_dm = (d0 / s,  # corrected A.44
             e0 + m * d0 / s + d1,  # A.46
             2 * m * e0 + m2 * d0 / s + 2 * s * d0 + 2 * m * d1 + s * d2)  # A.48
    de_dv = (d1 / (2 * v),  # A.45
             m * d1 / (2 * v) + (d0 + d2) / (2 * s),  # A.47
             e0 + d1 + m2 * d1 / (2 * v) + m * (d0 + d2) / s + d3 / 2)  # A.49
    return np.stack([e0, e1, e2]), np.stack(de_dm), np.stack(de_dv)


def expected_llp(tab: Table, m, v):
    """E_{N(m, v)}[bound] ≥ E[llp(η)], with its exact derivatives: (E, ∂E/∂m, ∂E/∂v).

    m and v broadcast together (v > 0); the pieces run along a new trailing axis.
    """
    m, v = np.broadcast_arrays(np.asarray(m, dtype=float), np.asarray(v, dtype=float))
    coef = np.stack([tab.c, tab.b, tab.a]).reshape((3,) + (1,) * m.ndim + (tab.pieces,))  # by k
    moments = truncated_moments(tab.lows, tab.highs, m[..., None], v[..., None])
    return tuple((coef * part).sum(axis=(0, -1)) for part in moments)
