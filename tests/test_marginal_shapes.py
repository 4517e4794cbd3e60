"""What a family's q answers without recomputing: the shape of its draws from λ alone
(`FamilyMarginal.shape`, what the posterior's dims are built from), the shape its draws really
have (Normal, Gamma, MvNormal, Dirichlet, Categorical, a discrete chain and a q held in data space
among models/); its mean and sd once per λ."""

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


def test_a_mean_and_sd_are_computed_once_per_lambda_and_read_only():
    """A report asks for a mean several times; an MvNormal's solves its D × D system each time.
    The marginal keeps it (read-only: a caller cannot change what the next one reads), and a new
    λ is computed afresh."""
    from ppl.families import MvNormal

    class Counted(MvNormal):
        calls = 0

        def mean(self, nat):
            Counted.calls += 1
            return super().mean(nat)

    family = Counted(3)
    marginal = FamilyMarginal(family, family.natural(mean=np.arange(3.0), precision=2 * np.eye(3))[None])
    first = marginal.mean
    assert marginal.mean is first and Counted.calls == 1
    np.testing.assert_allclose(first, [[0.0, 1.0, 2.0]])
    np.testing.assert_allclose(marginal.sd, np.sqrt(0.5))
    with pytest.raises(ValueError):
        first[0, 0] = 5.0
    marginal.natural = family.natural(mean=np.ones(3), precision=np.eye(3))[None]
    np.testing.assert_allclose(marginal.mean, [[1.0, 1.0, 1.0]])
    assert Counted.calls == 2


@pytest.mark.parametrize("family", ["Normal", "MvNormal"])
def test_gaussian_quantiles_from_the_kept_statistics_are_the_familys(family):
    """A Gaussian family's quantiles come from the kept mean and sd: the family's own numbers to
    the bit, NaN at observed cells."""
    from ppl.families import MvNormal, Normal
    rng = np.random.default_rng(3)
    if family == "Normal":
        fam_, nat = Normal(), Normal().natural(mean=rng.normal(size=4), precision=rng.uniform(0.5, 2, 4))
        mask = np.array([False, True, False, False])
    else:
        a = rng.normal(size=(3, 3))
        fam_, nat = MvNormal(3), MvNormal(3).natural(mean=rng.normal(size=3), precision=a @ a.T + np.eye(3))[None]
        mask = None
    qs = [0.025, 0.5, 0.975]
    got = FamilyMarginal(fam_, nat, mask).quantiles(qs)
    expected = FamilyMarginal(fam_, nat, mask)._unobserved(fam_.quantiles(nat, np.asarray(qs)), lead=1)
    np.testing.assert_array_equal(got, expected)
    if mask is not None:
        assert np.isnan(got[:, 1]).all() and not np.isnan(got[:, 0]).any()
