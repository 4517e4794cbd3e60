"""Zero internal errors (issue 14): inputs that used to end in a traceback, each pinned here with the
exit code, the error code and its location, or with the run that now completes."""

from __future__ import annotations

import numpy as np
import pytest

import ppl

GP_CLASSIFICATION = """\
const ell = 1.5
data x: real[N]
data y: bool[N]
f ~ MvNormal(zeros(N), cov=rbf(x, ell, 1.0) + 0.0001 * eye(N))
y ~ Bernoulli(logistic(f)) {note}
"""


@pytest.fixture
def gp_data(tmp_path):
    path = tmp_path / "gp.csv"
    path.write_text("x,y\n0,1\n1,1\n2,0\n3,0\n")
    return path


@pytest.mark.parametrize("note", ["@cvi(form=site)", "@cvi(minibatch=2)"])
def test_gp_classification_cvi_forms_run_and_agree_with_ncvmp(note, gp_data):
    """A whole-vector read `logistic(f)` in a vectorised statement reads coordinate n at row n,
    under every CVI form: the posterior means agree with the exact-gradient (ncvmp) fixed point
    in sign and to within Monte Carlo noise."""
    exact = ppl.compile(GP_CLASSIFICATION.format(note="")).infer(gp_data, seed=0)
    noisy = ppl.compile(GP_CLASSIFICATION.format(note=note)).infer(gp_data, seed=0, max_iter=300)
    assert np.all(np.sign(noisy["f"].mean) == np.sign(exact["f"].mean))
    np.testing.assert_allclose(noisy["f"].mean, exact["f"].mean, atol=0.1)
