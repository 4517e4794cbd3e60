"""The shipped piecewise bounds on llp(x) = log(1 + e^x) (Khan's thesis §4.5, A.5): they are bounds,
their errors match the reference table, and their Gaussian expectation and its derivatives agree
with brute-force integrals and finite differences, which the printed A.41 and A.44 do not."""

import subprocess
import sys

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ndtr

from ppl.infer.piecewise import bound_value, expected_llp, table, truncated_moments

KINDS = ("linear", "quadratic")
PIECES = (3, 4, 5, 6, 8, 10, 20)
ALL = [(kind, r) for kind in KINDS for r in PIECES]
# ε_max from the digest of the thesis (grid-LP Chebyshev fit, greedy bisected breakpoints).
# Ours, an exact Remez fit with the same greedy cover, is within 2.5% of every entry, on either side.
DIGEST = {("linear", 3): np.log(1.25), ("linear", 4): 0.109, ("linear", 5): 0.0648,
          ("linear", 6): 0.0429, ("linear", 8): 0.0227, ("linear", 10): 0.0141, ("linear", 20): 0.0033,
          ("quadratic", 3): 0.051, ("quadratic", 4): 0.033, ("quadratic", 5): 0.0095,
          ("quadratic", 6): 0.0074, ("quadratic", 8): 0.0028, ("quadratic", 10): 0.0013,
          ("quadratic", 20): 1.4e-4}
GRID = np.linspace(-40, 40, 200_001)
CASES = [(0.3, 1.0), (-1.2, 1e-6), (2.0, 100.0), (20.0, 2.0), (-20.0, 2.0), (20.0, 100.0), (-20.0, 1e-6)]


def llp(x):
    return np.logaddexp(0.0, x)


def gauss_integral(f, m, v, cuts=()):
    """∫ f N(x | m, v) dx over m ± 40 s, split at the cuts so that every stretch is smooth."""
    s = np.sqrt(v)
    ends = [m - 40 * s] + [t for t in cuts if abs(t - m) < 40 * s] + [m + 40 * s]
    density = lambda x: f(x) * np.exp(-0.5 * ((x - m) / s) ** 2) / np.sqrt(2 * np.pi * v)
    return sum(quad(density, lo, hi, epsabs=1e-14, epsrel=1e-13, limit=200)[0] for lo, hi in zip(ends, ends[1:]))


def central(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("kind,r", ALL)
def test_shipped_table_is_a_bound_with_its_stored_error(kind, r):
    tab = table(kind, r)
    gap = bound_value(tab, GRID) - llp(GRID)
    assert gap.min() >= 0
    assert gap.max() == pytest.approx(tab.max_error, rel=1e-6)
    assert np.all(tab.a >= 0) and (kind == "quadratic" or np.all(tab.a == 0))
    # the end pieces: llp(t_1) on the left, x + llp(−t_{R−1}) on the right
    assert (tab.a[0], tab.b[0], tab.a[-1], tab.b[-1]) == (0, 0, 0, 1)
    assert tab.c[0] == pytest.approx(llp(tab.thresholds[0])) == pytest.approx(llp(-tab.thresholds[-1]))


@pytest.mark.parametrize("kind,r", ALL)
def test_errors_match_the_reference_table(kind, r):
    assert abs(table(kind, r).max_error / DIGEST[kind, r] - 1) <= 0.05


def test_linear_three_pieces_is_log_five_quarters():
    tab = table("linear", 3)
    assert tab.max_error == pytest.approx(np.log(1.25), rel=1e-9)
    assert tab.thresholds == pytest.approx([-np.log(4), np.log(4)], rel=1e-9)


@pytest.mark.parametrize("kind", KINDS)
def test_error_decreases_with_pieces(kind):
    errors = [table(kind, r).max_error for r in PIECES]
    assert all(later < earlier for earlier, later in zip(errors, errors[1:]))


@pytest.mark.parametrize("r", PIECES)
def test_quadratic_beats_linear(r):
    assert table("quadratic", r).max_error < table("linear", r).max_error


def test_unshipped_pairs_are_refused_with_the_choice():
    with pytest.raises(ValueError, match="available: 3, 4, 5, 6, 8, 10, 20"):
        table("quadratic", 7)
    with pytest.raises(ValueError, match="kinds: linear, quadratic"):
        table("cubic", 10)


@pytest.mark.parametrize("low,high", [(-1.0, 2.0), (-np.inf, 0.5), (1.5, np.inf), (-np.inf, np.inf)])
def test_truncated_moments_against_quadrature_and_finite_differences(low, high):
    m, v = 0.7, 0.5
    e, de_dm, de_dv = truncated_moments(low, high, m, v)
    cuts = [t for t in (low, high) if np.isfinite(t)]
    for k in range(3):
        inside = lambda x: x**k * ((x >= low) & (x <= high))
        assert e[k] == pytest.approx(gauss_integral(inside, m, v, cuts), abs=1e-12)
    moments = lambda m, v: truncated_moments(low, high, m, v)[0]
    assert de_dm == pytest.approx(central(lambda m: moments(m, v), m, 1e-5), rel=1e-7, abs=1e-9)
    assert de_dv == pytest.approx(central(lambda v: moments(m, v), v, 1e-5), rel=1e-7, abs=1e-9)


def test_printed_a41_and_a44_fail_where_the_corrected_ones_pass():
    """Erratum regression: A.41 drops 2μs(φ(l̃) − φ(h̃)) from E2; A.44 divides by s² for s."""
    low, high, m, v = -1.0, 2.0, 0.7, 0.5
    s = np.sqrt(v)
    zl, zh = (low - m) / s, (high - m) / s
    phi = lambda z: np.exp(-z * z / 2) / np.sqrt(2 * np.pi)
    e0 = ndtr(zh) - ndtr(zl)
    printed_e2 = v * (zl * phi(zl) - zh * phi(zh)) + (v + m * m) * e0  # A.41 as printed
    printed_de0_dm = (phi(zl) - phi(zh)) / v  # A.44 as printed
    true_e2 = gauss_integral(lambda x: x * x * ((x >= low) & (x <= high)), m, v, [low, high])
    true_de0_dm = central(lambda m: ndtr((high - m) / s) - ndtr((low - m) / s), m, 1e-5)
    e, de_dm, _ = truncated_moments(low, high, m, v)
    assert e[2] == pytest.approx(true_e2, abs=1e-12)
    assert de_dm[0] == pytest.approx(true_de0_dm, rel=1e-8)
    assert abs(printed_e2 - true_e2) > 0.01  # 0.05 here: 2μs(φ(l̃) − φ(h̃)), missing
    assert abs(printed_de0_dm - true_de0_dm) > 0.01  # off by the factor 1/s = √2


@pytest.mark.parametrize("kind,r", [("linear", 3), ("linear", 10), ("quadratic", 10), ("quadratic", 20)])
@pytest.mark.parametrize("m,v", CASES)
def test_expected_bound_is_its_gaussian_integral(kind, r, m, v):
    tab = table(kind, r)
    e, _, _ = expected_llp(tab, m, v)
    brute = gauss_integral(lambda x: bound_value(tab, x), m, v, tab.thresholds)
    assert abs(e - brute) <= 1e-8 * max(1.0, abs(brute))


@pytest.mark.parametrize("kind,r", [("linear", 10), ("quadratic", 10), ("quadratic", 4)])
@pytest.mark.parametrize("m,v", CASES + [(0.0, 1e-6), ("at threshold", 1e-6)])
def test_derivatives_match_finite_differences(kind, r, m, v):
    tab = table(kind, r)
    if m == "at threshold":  # the quadratic bound jumps there: a large but exact derivative
        m = tab.thresholds[1] + 3e-4
    _, de_dm, de_dv = expected_llp(tab, m, v)
    s = np.sqrt(v)
    fd_m = central(lambda x: expected_llp(tab, x, v)[0], m, 1e-4 * s)
    fd_v = central(lambda x: expected_llp(tab, m, x)[0], v, 1e-4 * v)
    assert de_dm == pytest.approx(fd_m, rel=1e-6, abs=1e-6)
    assert de_dv == pytest.approx(fd_v, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("kind,r", [("linear", 3), ("linear", 10), ("quadratic", 3), ("quadratic", 10)])
@pytest.mark.parametrize("m,v", CASES)
def test_expected_bound_is_above_expected_llp_by_at_most_max_error(kind, r, m, v):
    tab = table(kind, r)
    gap = expected_llp(tab, m, v)[0] - gauss_integral(llp, m, v)
    assert -1e-10 <= gap <= tab.max_error


def test_broadcasts_and_stays_finite_at_extremes():
    """v = 1e-12 is past finite differences; there q is a point mass on one piece a x² + b x + c,
    where E = a(m² + v) + b m + c, ∂E/∂m = 2a m + b and ∂E/∂v = a."""
    tab = table("quadratic", 10)
    m = np.array([[-50.0, -3.0, 0.1], [1.0, 7.0, 50.0]])
    v = np.array([1e-12, 1.0, 1e4])[:, None, None]
    e, de_dm, de_dv = expected_llp(tab, m, v)
    assert e.shape == de_dm.shape == de_dv.shape == (3, 2, 3)
    assert np.all(np.isfinite(e) & np.isfinite(de_dm) & np.isfinite(de_dv))
    r = np.searchsorted(tab.thresholds, m)
    assert e[0] == pytest.approx(tab.a[r] * (m * m + 1e-12) + tab.b[r] * m + tab.c[r], rel=1e-13)
    assert de_dm[0] == pytest.approx(2 * tab.a[r] * m + tab.b[r], rel=1e-12, abs=1e-14)
    assert de_dv[0] == pytest.approx(tab.a[r], rel=1e-12, abs=1e-14)


def test_importing_the_engine_leaves_the_tables_alone():
    code = "import sys, ppl.infer; assert 'ppl.infer.piecewise' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
