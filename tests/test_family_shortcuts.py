"""Families' shortcuts give the general path's numbers to the bit: a Cholesky factor kept from
`valid` for the moments of the same λ, NormalWishart's 1 × 1 factor and inverse without LAPACK,
and moments with entropy from one call; and one matrix's inverse (by halves) a stack's to round-off."""

import numpy as np
import pytest

from ppl.families import Gamma, MvNormal, Normal
from ppl.families.lognormal import LogNormal


def test_mvnormal_moments_reuse_the_factor_valid_found_for_the_same_array():
    """An update checks its new λ (`valid`) and the state's moments then factor the same Λ: the
    factor `valid` kept gives the moments and entropy of a fresh factorisation to the bit, serves
    that very array only, and is dropped with it."""
    from ppl.families import mvnormal
    fam = MvNormal(3)
    rng = np.random.default_rng(4)
    a = rng.normal(size=(3, 3))
    nat = fam.natural(mean=rng.normal(size=3), precision=a @ a.T + 3 * np.eye(3))[None]
    moments, entropy = fam.moments_and_entropy(nat.copy())
    assert fam.valid(nat).all()
    assert mvnormal._factor_of(nat) is not None and mvnormal._factor_of(nat.copy()) is None
    kept_moments, kept_entropy = fam.moments_and_entropy(nat)
    np.testing.assert_array_equal(kept_moments, moments)
    np.testing.assert_array_equal(kept_entropy, entropy)
    other = fam.natural(mean=np.zeros(3), precision=2 * np.eye(3) + 0.5)[None]  # not the kept array
    np.testing.assert_allclose(fam.moments_and_entropy(other)[0][0, 3:].reshape(3, 3),
                               np.linalg.inv(2 * np.eye(3) + 0.5), rtol=1e-12)
    del nat
    assert mvnormal._factored is mvnormal._NOTHING


def test_normal_gamma_factor_and_inverse_are_the_general_ones_bit_for_bit():
    """NormalWishart(1) factors and inverts its 1 × 1 scales as √m and (1/√m)², the operations
    LAPACK makes there: the same bits as np.linalg.cholesky and chol_inverse over 300 orders of
    magnitude, and the same LinAlgError where an m ≤ 0. Its moments and entropy taken together
    are those taken apart."""
    from ppl.families import NormalWishart, normal_wishart
    from ppl.families.base import chol_inverse
    for d in (1, 2):
        family = NormalWishart(d)
        nat = family.natural(mean=np.arange(d) + 1.0, beta=np.array([2.0, 30.0]), dof=np.array([d + 3.0, 50.0]),
                             scale=np.eye(d) * 0.4)
        mean, entropy = family.moments_and_entropy(nat)
        np.testing.assert_array_equal(mean, family.to_mean(nat))
        np.testing.assert_array_equal(entropy, family.entropy(nat))
        # one log|W| for both: the general formula A(λ) − λ·E[t] − E[log h] from the parts, to the bit
        general = family.log_partition(nat) - np.sum(nat * family.to_mean(nat), -1) - family.expected_log_base(nat)
        np.testing.assert_array_equal(entropy, general)
    m = np.exp(np.random.default_rng(14).uniform(-300, 300, size=(10000, 1, 1)))
    np.testing.assert_array_equal(normal_wishart._factor(m), np.linalg.cholesky(m))
    np.testing.assert_array_equal(normal_wishart._inverse(m), chol_inverse(m))
    for bad in ([[[0.0]]], [[[2.0]], [[-1.0]]]):
        for factor in (normal_wishart._factor, np.linalg.cholesky):
            with pytest.raises(np.linalg.LinAlgError):
                factor(np.array(bad))


@pytest.mark.parametrize("d", [2, 40, 65, 150])
def test_one_matrix_is_inverted_from_its_factor_as_a_stack_is(d):
    """One matrix's inverse from its Cholesky factor (above 64, its triangle inverted by halves)
    is the batched path's (a stack of two) to round-off, symmetric, and M⁻¹: M M⁻¹ = I."""
    from ppl.families.base import inverse_of_factor
    a = np.random.default_rng(d).normal(size=(d, d))
    m = a @ a.T + d * np.eye(d)
    chol = np.linalg.cholesky(m)
    single, stacked = inverse_of_factor(chol), inverse_of_factor(np.stack([chol, chol]))
    np.testing.assert_allclose(single, stacked[1], rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(single, single.T)
    np.testing.assert_allclose(m @ single, np.eye(d), atol=1e-12)
    np.testing.assert_allclose(inverse_of_factor(chol[None])[0], single, rtol=0, atol=0)
    singular = chol.copy()
    singular[d - 1, d - 1] = 0.0
    with pytest.raises(np.linalg.LinAlgError):
        inverse_of_factor(singular)


@pytest.mark.parametrize("family, nat", [
    (Normal(), np.array([[0.3, -0.5], [-12.0, -3.0], [1e-8, -1e6]])),
    (LogNormal(), np.array([[0.3, -0.5], [-12.0, -3.0]])),
    (Gamma(), np.array([[0.0, -1.0], [4.5, -0.02], [1e4, -3e3], [-0.999, -1e-6]])),
])
def test_moments_and_entropy_are_to_mean_and_entropy_bit_for_bit(family, nat):
    """A state takes a q's moments and entropy from one `moments_and_entropy` (shared ψ(a), log b,
    params): the very numbers `to_mean` and `entropy` give apart, entropy of a LogNormal included."""
    moments, entropy = family.moments_and_entropy(nat)
    np.testing.assert_array_equal(moments, family.to_mean(nat))
    np.testing.assert_array_equal(entropy, family.entropy(nat))
