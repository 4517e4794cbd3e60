"""Categorical and mixed-data factor analysis (thesis ch. 5–6): softmax and stick-breaking items
whose logits `lam[j] @ z[n] + b[j]` share the row's factors z[n], with missing cells imputed.

Against independent computations: Monte Carlo averages of the softmax and stick probabilities,
the Gaussian expectation of log softmax under correlated margins, and the marginal-frequency
imputation on data with strong factors."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_softmax, softmax

import ppl
from ppl.infer import softmax as rules

ROOT = Path(__file__).resolve().parents[1]

CATEGORICAL_FA = """
data y: cat(C)[N, J] from y1..yJ
for n in 1..N {
  z[n] ~ MvNormal(zeros(1), eye(1))
}
for j in 1..J {
  for c in 1..C {
    lam[j, c] ~ MvNormal(zeros(1), eye(1))
    b[j, c] ~ Normal(0, 1)
  }
}
for n in 1..N {
  for j in 1..J {
    y[n, j] ~ Categorical(softmax(lam[j] @ z[n] + b[j]))
  }
}
"""


def draw(n: int, items: int, seed: int, scale: float = 3.0, hidden: int = 0):
    """Categorical FA data (one factor, 3 categories, loadings of sd `scale`) as a DataFrame of
    codes 1..3 with `hidden` cells emptied, and the hidden cells [(row, item, 0-based code)]."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=n)
    lam = rng.normal(0, scale, (items, 3))
    eta = z[:, None, None] * lam + rng.normal(0, 0.5, (items, 3))
    p = softmax(eta, -1)
    y = 1 + (p.cumsum(-1) < rng.random((n, items, 1))).sum(-1)
    frame = pd.DataFrame(y, columns=[f"y{j + 1}" for j in range(items)]).astype(object)
    cells = rng.choice(n * items, hidden, replace=False)
    held = [(int(c // items), int(c % items), int(y[c // items, c % items]) - 1) for c in cells]
    for r, j, _ in held:
        frame.iat[r, j] = None
    return frame, held


def test_softmax_predictive_is_the_average_softmax():
    rng = np.random.default_rng(0)
    m, v = rng.normal(0, 2, (5, 3)), rng.uniform(0.1, 2.0, (5, 3))
    eta = m + np.sqrt(v) * rng.standard_normal((400_000, 5, 3))
    np.testing.assert_allclose(rules.predictive(m, v), softmax(eta, -1).mean(0), atol=3e-3)


def test_stick_predictive_is_the_average_stick_probability():
    """P(k) = E[σ(η_k) Π_{j<k} (1 − σ(η_j))] over independent margins; the K classes sum to 1."""
    rng = np.random.default_rng(1)
    m, v = rng.normal(0, 2, (5, 3)), rng.uniform(0.1, 2.0, (5, 3))
    s = expit(m + np.sqrt(v) * rng.standard_normal((400_000, 5, 3)))
    left = np.cumprod(np.concatenate([np.ones(s.shape[:-1] + (1,)), 1 - s], -1), -1)
    mc = (np.concatenate([s, np.ones(s.shape[:-1] + (1,))], -1) * left).mean(0)
    probs = rules.stick_predictive(m, v)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-12)
    np.testing.assert_allclose(probs, mc, atol=3e-3)


def test_diagonal_bohning_bounds_correlated_margins_where_the_diagonal_of_a_does_not():
    """η = (x, −x), x ~ N(0, 1.5): the margins are perfectly anti-correlated, as a factor shared by
    two classes with opposite loadings makes them. E[log softmax_1] = −E[llp(−2x)] ≈ −1.208. The term
    with A's diagonal, (K − 1)/(2K) = ¼, is −log 2 − 0.375 ≈ −1.068, above it (not a bound); with
    ½·I it is −log 2 − 0.75 ≈ −1.443, below it."""
    x = np.sqrt(1.5) * np.random.default_rng(2).standard_normal(2_000_000)
    exact = np.mean(log_softmax(np.stack([x, -x], -1), -1)[:, 0])
    m, v, y = np.zeros((1, 2)), np.full((1, 2), 1.5), np.zeros(1, dtype=int)
    assert rules.bohning(y, m, v)[0][0] > exact + 0.1
    assert rules.bohning(y, m, v, curvature=0.5)[0][0] < exact - 0.1


@pytest.fixture(scope="module")
def small():
    return draw(60, 4, seed=3, hidden=6)[0]


@pytest.mark.parametrize("rule, monotone", [("bound:bohning", True), ("bound:stick", True), ("cvi", False)])
def test_each_rule_runs_to_a_finite_elbo(small, rule, monotone):
    """A finite objective under every rule; the bounds never fall from one sweep to the next."""
    post = ppl.compile(CATEGORICAL_FA).infer(small, seed=0, methods={"y": rule}, max_iter=30)
    trace = np.asarray(post.trace)
    assert np.all(np.isfinite(trace))
    if monotone:
        assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[1:]))
    probs = post["y"].mean
    np.testing.assert_allclose(probs[~post["y"].observed_mask].sum(-1), 1.0, atol=1e-9)
    assert np.isnan(probs[post["y"].observed_mask]).all()  # observed cells are data, not in q


def test_missing_cells_add_nothing_to_the_elbo():
    """Hiding a cell that the factors already predict certainly changes the bound by about
    log p(cell) ≈ 0; a marginalised cell contributes exactly zero, so the ELBO with the cell hidden
    is at least the ELBO with it observed (its log-likelihood term is ≤ 0)."""
    frame, held = draw(60, 4, seed=4, hidden=1)
    full = frame.copy()
    r, j, code = held[0]
    full.iat[r, j] = code + 1
    model = ppl.compile(CATEGORICAL_FA)
    hidden = model.infer(frame, seed=0, methods={"y": "bound:bohning"}, tol=1e-10)
    seen = model.infer(full, seed=0, methods={"y": "bound:bohning"}, tol=1e-10)
    assert hidden.elbo > seen.elbo
    assert hidden.elbo - seen.elbo < 5.0  # one cell's worth, not a broken term


@pytest.mark.parametrize("rule", ["bound:bohning", "bound:stick"])
def test_imputation_beats_the_marginal_frequencies(rule):
    """Strong factors: the imputed q(y) of hidden cells has a lower cross-entropy than each item's
    category frequencies among its observed cells."""
    frame, held = draw(150, 6, seed=5, hidden=40)
    post = ppl.compile(CATEGORICAL_FA).infer(frame, seed=0, methods={"y": rule})
    probs = post["y"].mean
    model_loss = np.mean([-np.log(probs[r, j, c]) for r, j, c in held])
    freq = [np.bincount(frame.iloc[:, j].dropna().astype(int) - 1, minlength=3) for j in range(6)]
    base_loss = np.mean([-np.log(freq[j][c] / freq[j].sum()) for r, j, c in held])
    assert model_loss < base_loss - 0.2


def test_mixed_data_fa_runs_every_item_type_under_the_bounds():
    """Binary (Böhning), categorical (Böhning) and ordinal (piecewise) items share z[n]: a finite
    bound, and a missing categorical cell imputed."""
    data = pd.read_csv(ROOT / "models" / "mixed_fa.csv", dtype=object).iloc[:80]
    data = data.where(data.notna(), None)
    post = ppl.load(ROOT / "models" / "mixed_fa.vim").infer(
        data, seed=0, max_iter=40, methods={"x": "bound:bohning", "y": "bound:bohning", "r": "bound:piecewise"})
    assert np.isfinite(post.elbo)
    missing = data[["c1", "c2", "c3"]].isna().to_numpy()
    assert missing.any()
    imputed = post["y"].mean[missing]
    np.testing.assert_allclose(imputed.sum(-1), 1.0, atol=1e-9)
    assert np.all((imputed > 0) & (imputed < 1))
