"""Missing cells of a variable that another statement reads, and whole-array statements whose
batch shape is set by a constant argument: two defects found in review (an imputed `x` read in
`b * x` got no message and the reader took the empty cells as 0; `mu ~ Normal(zeros(2), 10)`
raised an internal error)."""

import numpy as np
import pytest

import ppl
from test_binding import csv_file

READERS = {
    "a GLM predictor": ("data x: real[N]\ndata y: int[N]\nb ~ Normal(0, 1)\nx ~ Normal(0, 1)\n"
                        "y ~ Bernoulli(logistic(b * x))\n", "x,y\n0.5,1\n,0\n-1.0,0\n", "x", 2, "y"),
    "a Gaussian mean": ("data x: real[N]\ndata y: real[N]\nb ~ Normal(0, 1)\nx ~ Normal(0, 1)\n"
                        "y ~ Normal(b * x, 1)\n", "x,y\n0.5,1.2\n1.5,0.3\n,2.0\n", "x", 3, "y"),
    "a mixture index": ("data z: cat(2)[N]\ndata y: real[N]\npi ~ Dirichlet(ones(2))\n"
                        "for k in 1..2 {\n  mu[k] ~ Normal(0, 10)\n}\nfor n in 1..N {\n  z[n] ~ Categorical(pi)\n"
                        "  y[n] ~ Normal(mu[z[n]], 1)\n}\n", "z,y\n,1.7\n1,-3.1\n2,2.9\n", "z", 1, "y[n]"),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_read_variable_with_an_empty_cell_is_refused(tmp_path, reader):
    text, csv, name, row, by = READERS[reader]
    with pytest.raises(ppl.DataError) as caught:
        ppl.compile(text).infer(csv_file(tmp_path, csv))
    assert (caught.value.code, caught.value.column, caught.value.row) == ("E418", name, row)
    assert f"read by `{by}`" in str(caught.value)


def test_a_response_that_nothing_reads_is_still_imputed(tmp_path):
    posterior = ppl.compile("data x: real[N]\ndata y: real[N]\nw ~ Normal(0, 1)\ny ~ Normal(w * x, 1)\n").infer(
        csv_file(tmp_path, "x,y\n1,2\n2,\n3,5\n"))
    assert posterior.converged


def test_a_constant_argument_sets_a_whole_array_statements_batch_shape():
    """`mu ~ Normal(zeros(2), 10)` is two scalar Normals; with y[n] ~ Normal(mu[g[n]], 1) their
    posterior is conjugate: precision 10 + n_k, mean Σ_{g=k} y / (10 + n_k)."""
    g = np.array([1, 2, 1, 2, 2, 1, 1])
    y = np.array([-2.9, 3.2, -3.1, 2.7, 3.0, -2.5, -3.4])
    text = "data g: cat(2)[N]\ndata y: real[N]\nmu ~ Normal(zeros(2), 10)\ny ~ Normal(mu[g], 1)\n"
    posterior = ppl.compile(text).infer({"g": g, "y": y})
    counts = np.bincount(g - 1)
    sums = np.bincount(g - 1, weights=y)
    np.testing.assert_allclose(posterior["mu"].mean, sums / (10 + counts), rtol=1e-12)
    np.testing.assert_allclose(posterior["mu"].sd, 1 / np.sqrt(10 + counts), rtol=1e-12)
