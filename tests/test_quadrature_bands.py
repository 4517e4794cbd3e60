"""The quadrature takes as few Gauss–Hermite nodes as a margin's width needs (ppl.infer.margin_nodes.BANDS):
each band's count integrates every link's log f, f' and f'' to about 1e-14 up to the band's variance, and
a margin's integral depends on its own variance only, not on the margins it is integrated with."""

import numpy as np
import pytest

from ppl.infer.likelihoods import quadrature
from ppl.infer.links import LIKELIHOODS, ordered_logistic
from ppl.infer.margin_nodes import BANDS, WIDE, by_width

REFERENCE = np.polynomial.hermite.hermgauss(250)  # exact to rounding for v ≤ 2 (error ~ e^{-π√500/2})
MEANS = np.linspace(-6.0, 6.0, 61)[:, None]
LINKS = {  # name -> (likelihood, y, n, the largest error allowed relative to max(1, |E|))
    "bernoulli-logistic": (LIKELIHOODS[("Bernoulli", "logistic")], 1.0, 1.0, 1e-14),
    "binomial-logistic": (LIKELIHOODS[("Binomial", "logistic")], 2.0, 5.0, 5e-14),  # five trials: 5 × f
    "ordered-logistic": (ordered_logistic(), -0.4, 0.3, 2e-14),  # (y, n): the category's cutpoints
    # log Φ far in its tail: the values themselves carry ~1e-13 of rounding, whatever the nodes
    "bernoulli-probit": (LIKELIHOODS[("Bernoulli", "probit")], 0.0, 1.0, 1e-12),
}


def expectation(lik, y, n, v, nodes):
    x, w = (REFERENCE if nodes == "reference" else np.polynomial.hermite.hermgauss(nodes))
    eta = MEANS + np.sqrt(2.0 * v) * x
    return np.array([h @ (w / np.sqrt(np.pi)) for h in lik.values(y, n, eta)])


@pytest.mark.parametrize("link", sorted(LINKS))
@pytest.mark.parametrize("band", range(len(BANDS)))
def test_each_band_integrates_every_link_to_rounding(link, band):
    lik, y, n, allowed = LINKS[link]
    nodes, widest = BANDS[band]
    for v in np.geomspace(widest / 100, min(widest, 1.17), 6):  # 48 nodes: 1e-14 up to v = 1.17, 2e-11 at 2
        exact = expectation(lik, y, n, v, "reference")
        error = np.abs(expectation(lik, y, n, v, nodes) - exact) / np.maximum(1.0, np.abs(exact))
        assert error.max() <= allowed, (nodes, v, error.max())


def test_the_bands_grow_with_the_width_and_end_at_wide():
    nodes, limits = zip(*BANDS)
    assert list(nodes) == sorted(nodes) and list(limits) == sorted(limits) and limits[-1] == WIDE


def test_a_margin_is_integrated_as_if_alone():
    """Margins of every band, and wide ones, in one call: each result is that margin's on its own
    (the rule follows its variance, not its companions), and as 48 nodes give it (to 1e-14)."""
    rng = np.random.default_rng(3)
    v = np.concatenate([rng.uniform(1e-4, 0.04, 5), rng.uniform(0.05, 1.1, 20), [3.0, 40.0]])
    m, y = rng.normal(0.0, 2.0, v.size), (rng.random(v.size) < 0.5).astype(float)
    lik = LIKELIHOODS[("Bernoulli", "logistic")]
    assert len(by_width(v)) == len(BANDS) + 1
    together = np.array(quadrature(lik, y, 1.0, m, v))
    for i in range(v.size):
        alone = np.array(quadrature(lik, y[i:i + 1], 1.0, m[i:i + 1], v[i:i + 1]))
        np.testing.assert_allclose(together[:, i], alone[:, 0], rtol=1e-15, atol=1e-300)
    narrow = v <= 1.1
    x, w = np.polynomial.hermite.hermgauss(48)
    eta = m[narrow, None] + np.sqrt(2.0 * v[narrow, None]) * x
    old = np.array([h @ (w / np.sqrt(np.pi)) for h in lik.values(y[narrow, None], 1.0, eta)])
    np.testing.assert_allclose(together[:, narrow], old, rtol=1e-14, atol=1e-15)


def test_many_margins_go_through_in_blocks_with_the_same_results():
    """More margins than a block holds, in one band: the blocks' results are the margins' own."""
    rng = np.random.default_rng(4)
    v = rng.uniform(1e-4, 0.04, 5000)
    m, y = rng.normal(size=v.size), (rng.random(v.size) < 0.5).astype(float)
    lik = LIKELIHOODS[("Bernoulli", "logistic")]
    ((rows, _, nodes),) = by_width(v)
    assert rows is None and nodes == BANDS[0][0]
    whole = np.array(quadrature(lik, y, 1.0, m, v))
    parts = np.concatenate([np.array(quadrature(lik, y[i:i + 7], 1.0, m[i:i + 7], v[i:i + 7]))
                            for i in range(0, v.size, 7)], axis=1)
    np.testing.assert_allclose(whole, parts, rtol=1e-15, atol=1e-300)


def test_cvi_draws_do_not_depend_on_the_blocks(monkeypatch):
    """monte_carlo draws each block's ε as it goes: one stream, so a margin's draws are its own
    whatever the block size, and the estimates agree to rounding (BLAS sums a block's rows in an
    order that depends on its shape)."""
    from ppl.infer import likelihoods
    rng = np.random.default_rng(6)
    v = np.concatenate([rng.uniform(1e-4, 2.0, 997), [5e3]])  # a margin past STEIN takes Stein's f''
    m, y = rng.normal(size=v.size), (rng.random(v.size) < 0.5).astype(float)
    lik = LIKELIHOODS[("Bernoulli", "logistic")]
    whole = likelihoods.monte_carlo(lik, y, 1.0, m, v, np.random.default_rng(1), 16)
    monkeypatch.setattr(likelihoods, "BLOCK", 16 * 7)  # blocks of 7 rows
    blocked = likelihoods.monte_carlo(lik, y, 1.0, m, v, np.random.default_rng(1), 16)
    for a, b in zip(whole, blocked):
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-16)
    eps = np.random.default_rng(1).standard_normal((v.size, 8))  # the draws as one array, row by row,
    eta = m[:, None] + np.sqrt(v)[:, None] * np.hstack([eps, -eps])  # in antithetic pairs
    np.testing.assert_allclose(whole[1][:-1], lik.d1(y[:-1, None], 1.0, eta[:-1]).mean(axis=1), rtol=1e-12, atol=1e-15)
