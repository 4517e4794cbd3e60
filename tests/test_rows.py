"""Products over data rows (ppl.infer.rows): rows with one nonzero entry each (a coordinate read
`f[n]`, a GP's identity) are taken by their columns, and give the dense products' numbers."""

from pathlib import Path

import numpy as np

import ppl
from ppl.infer import build_problem
from ppl.infer.rows import dot_rows, one_hot, quadratic_rows, weighted_gram

MODELS = Path(__file__).resolve().parents[1] / "models"


def unit_rows(n=12, d=9, seed=0):
    """Scaled one-hot rows (n, 1, d): repeated columns, a negative value and a row of zeros."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((n, d))
    rows[np.arange(n), rng.integers(0, d, n)] = rng.normal(size=n)
    rows[3] = 0.0
    return rows[:, None, :]


def test_one_hot_rows_give_the_dense_products():
    c = unit_rows()
    rng = np.random.default_rng(1)
    a = rng.normal(size=(9, 9))
    m, v, tau = (a @ a.T)[None, None], rng.normal(size=(1, 1, 9)), rng.uniform(-1, 2, 12)
    rows = c.reshape(12, 9)
    assert one_hot(c) is not None
    np.testing.assert_allclose(dot_rows(c, v), (rows @ v.reshape(-1))[:, None], rtol=1e-15, atol=1e-300)
    np.testing.assert_allclose(quadratic_rows(c, m), np.einsum("ni,ij,nj->n", rows, m[0, 0], rows)[:, None],
                               rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(weighted_gram(rows, tau), (rows.T * tau) @ rows, rtol=1e-14, atol=1e-300)


def test_a_row_with_two_entries_is_not_one_hot_and_the_answer_is_kept_per_array():
    c = unit_rows()
    assert one_hot(c) is one_hot(c)  # found once for this array
    dense = c.copy()
    dense[5, 0, :2] = 1.0  # one row with two entries, after a one-hot first row
    assert one_hot(dense) is None
    assert one_hot(np.ones((4, 1, 3))) is None


def test_a_gp_reads_its_coordinates_as_one_hot_rows():
    """`f[n]` in models/gp_classification.vim is a contraction with the identity's rows: the
    margins and messages take their columns."""
    model = ppl.load(MODELS / "gp_classification.vim")
    data = model.bind(MODELS / "gp_classification.csv")
    problem = build_problem(model.checked, data, model.analyze(data))
    term = next(f for f in problem.factors if f.name == "y[n]").margin.terms[0]
    columns, values = one_hot(term.coef)
    np.testing.assert_array_equal(columns, np.arange(40))
    np.testing.assert_array_equal(values, np.ones(40))
