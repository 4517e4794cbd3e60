"""The arrow solver (ppl.infer.arrow) against a dense solve of the same precision."""

import numpy as np
import pytest

from ppl.infer.arrow import ArrowLayout, entropy, solve


def random_arrow(layout: ArrowLayout, rng) -> np.ndarray:
    """A positive definite arrow precision with a random shift, as the flat natural parameter."""
    c, g, l = layout.corner, layout.groups, layout.local
    m = rng.normal(size=(layout.dim, layout.dim))
    j = m @ m.T + layout.dim * np.eye(layout.dim)
    for k in range(g):  # no coupling between different groups
        for k2 in range(g):
            if k != k2:
                j[c + k * l: c + (k + 1) * l, c + k2 * l: c + (k2 + 1) * l] = 0.0
    d = np.stack([j[c + k * l: c + (k + 1) * l, c + k * l: c + (k + 1) * l] for k in range(g)]) if g else \
        np.zeros((0, l, l))
    b = np.stack([j[c + k * l: c + (k + 1) * l, :c] for k in range(g)]) if g else np.zeros((0, l, c))
    h = rng.normal(size=layout.dim)
    return layout.pack(h[:c], h[c:].reshape(g, l), j[:c, :c], d, b)


@pytest.mark.parametrize("corner, groups, local", [(2, 6, 2), (3, 1, 1), (0, 4, 3), (4, 0, 2), (1, 25, 2)])
def test_arrow_solve_matches_a_dense_solve(corner, groups, local):
    layout = ArrowLayout(corner, groups, local)
    eta = random_arrow(layout, np.random.default_rng(corner * 100 + groups))
    h, j = layout.dense(eta)
    sigma = np.linalg.inv(j)
    mean = sigma @ h
    sol = solve(layout, eta)
    c, l = corner, local
    np.testing.assert_allclose(sol.mean_c, mean[:c], atol=1e-10)
    np.testing.assert_allclose(sol.mean_l.ravel(), mean[c:], atol=1e-10)
    np.testing.assert_allclose(sol.cov_cc, sigma[:c, :c], atol=1e-10)
    for k in range(groups):
        s = slice(c + k * l, c + (k + 1) * l)
        np.testing.assert_allclose(sol.cov_ll[k], sigma[s, s], atol=1e-10)
        np.testing.assert_allclose(sol.cov_lc[k], sigma[s, :c], atol=1e-10)
    assert sol.logdet == pytest.approx(np.linalg.slogdet(j)[1], abs=1e-9)
    dense_entropy = 0.5 * (layout.dim * (1 + np.log(2 * np.pi)) - np.linalg.slogdet(j)[1])
    assert entropy(layout, sol) == pytest.approx(dense_entropy, abs=1e-9)


def test_pack_and_unpack_are_inverse():
    layout = ArrowLayout(2, 3, 2)
    eta = random_arrow(layout, np.random.default_rng(1))
    assert eta.shape == (layout.size,)
    np.testing.assert_array_equal(layout.pack(*layout.unpack(eta)), eta)


def test_a_precision_that_is_not_positive_definite_is_refused():
    layout = ArrowLayout(1, 2, 1)
    eta = layout.pack(np.zeros(1), np.zeros((2, 1)), -np.eye(1), np.ones((2, 1, 1)), np.zeros((2, 1, 1)))
    with pytest.raises(np.linalg.LinAlgError):
        solve(layout, eta)
