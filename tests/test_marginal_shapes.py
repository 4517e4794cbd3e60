"""A family's q tells the shape of its draws from λ alone (`FamilyMarginal.shape`, what the
posterior's dims are built from), the shape its draws really have: Normal, Gamma, MvNormal,
Dirichlet, Categorical, a discrete chain and a q held in data space among models/."""

from pathlib import Path

import numpy as np
import pytest

import ppl
from ppl.infer.marginals import FamilyMarginal

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.mark.parametrize("name", ["gmm", "hmm", "lda", "linear_regression", "hierarchical_logistic",
                                  "gp_classification", "logistic_wide"])
def test_the_shape_of_a_familys_q_is_the_shape_of_its_draws(name):
    post = ppl.load(MODELS / f"{name}.vim").infer(str(MODELS / f"{name}.csv"), seed=0, max_iter=3)
    marginals = {n: m for n, m in post.marginals.items() if isinstance(m, FamilyMarginal)}
    assert marginals
    rng = np.random.default_rng(0)
    for variable, marginal in marginals.items():
        assert marginal.shape == marginal.draws(2, rng).shape[1:], variable
