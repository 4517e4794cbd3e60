"""The banded solves of forward–backward (`ppl.families.chain_band`), the first pass
`forward_backward` tries, against the scaled recursions they stand in for (`BANDED` off):

- the same marginals, pairwise marginals and log Z to 1e-14 on one chain (the recursions' blocked
  products) and on several of unequal length (step by step), with a shared transition or one per
  step, and on a long chain whose estimated normalisers drift by hundreds of nats (redone once);
- a drift beyond `FAR` leaves the chains to the scaled recursions; a normaliser the recursions
  round to 0 is held by the band (each step divided by its own estimate);
- the default fits of the models/ with a discrete chain take the same sweeps and ELBOs either way.
(Enumeration of every path checks both passes: tests/test_forward_backward.py.)
"""

from pathlib import Path

import numpy as np
import pytest

import ppl
from ppl.families import CategoricalChain
from ppl.families import chain_band
from ppl.families import forward_backward as fb

K = 3
MODELS = Path(__file__).resolve().parents[1] / "models"


def chain_natural(lengths, rng, scale=1.5, shared=True, k=K):
    family = CategoricalChain(k, tuple(lengths))
    total = sum(lengths)
    return family.natural(unary=scale * rng.normal(size=(total, k)),
                          pair=scale * rng.normal(size=(1 if shared else total, k, k)))


def both_passes(nat, lengths, monkeypatch, k=K):
    """(banded, scaled recursions) results of `forward_backward`, and the number of solves."""
    solves = []
    monkeypatch.setattr(chain_band, "_solve", lambda *a, run=chain_band._solve: solves.append(1) or run(*a))
    banded = fb.forward_backward(nat, k, fb.Chains.of(lengths))
    monkeypatch.setattr(fb, "BANDED", False)
    scaled = fb.forward_backward(nat, k, fb.Chains.of(lengths))
    monkeypatch.setattr(fb, "BANDED", True)
    return banded, scaled, len(solves)


@pytest.mark.parametrize("lengths", [(300,), (40, 7, 1, 25), (5000,)])
@pytest.mark.parametrize("shared", [True, False])
def test_banded_solves_equal_the_scaled_recursions(lengths, shared, monkeypatch):
    nat = chain_natural(lengths, np.random.default_rng(0), shared=shared)
    (mean, log_z), (want, want_z), solves = both_passes(nat, lengths, monkeypatch)
    assert solves in (1, 2)
    np.testing.assert_allclose(mean, want, rtol=0, atol=1e-14)
    np.testing.assert_allclose(log_z, want_z, rtol=1e-14, atol=0)


def test_a_drift_of_hundreds_of_nats_is_redone_with_the_measured_normalisers(monkeypatch):
    """A sticky chain whose evidence is flat every other step: the estimate (the filtered state
    as the normalised evidence) is off by about log 2 at those steps, and over 600 steps the first
    solve drifts by about 200 nats, past `DRIFT`; the second, at the normalisers it measured, is
    the answer of the scaled recursions."""
    rng = np.random.default_rng(1)
    steps = 600
    unary = np.where(np.arange(steps)[:, None] % 2 == 0, 4.0 * rng.normal(size=(steps, K)), 0.0)
    pair = np.log(np.full((K, K), 0.01) + 0.97 * np.eye(K))
    nat = CategoricalChain(K, (steps,)).natural(unary=unary, pair=pair[None])
    (mean, log_z), (want, want_z), solves = both_passes(nat, (steps,), monkeypatch)
    assert solves == 2
    np.testing.assert_allclose(mean, want, rtol=0, atol=1e-14)
    np.testing.assert_allclose(log_z, want_z, rtol=1e-14, atol=0)


def test_a_drift_beyond_far_is_left_to_the_scaled_recursions(monkeypatch):
    scaled = []
    monkeypatch.setattr(fb, "_scaled", lambda *a, run=fb._scaled: scaled.append(1) or run(*a))
    monkeypatch.setattr(chain_band, "FAR", 1.0)
    monkeypatch.setattr(chain_band, "LOW", 1.0)  # every drift is past DRIFT: a second solve is considered
    lengths = (300,)
    nat = chain_natural(lengths, np.random.default_rng(2), scale=3.0)
    mean, log_z = fb.forward_backward(nat, K, fb.Chains.of(lengths))
    assert scaled == [1]
    monkeypatch.setattr(fb, "BANDED", False)
    want, want_z = fb.forward_backward(nat, K, fb.Chains.of(lengths))
    np.testing.assert_array_equal(mean, want)
    np.testing.assert_array_equal(log_z, want_z)


def test_a_normaliser_below_the_floats_of_the_recursions_is_held_by_the_band(monkeypatch):
    """The chain of test_forward_backward's underflow within `SPREAD`: state 0 has no successor
    and the path 1, 1 carries e^-1400, so the scaled recursions' normaliser at step 3 rounds to 0
    and they fall back on log-sum-exp. The band divides that step by its estimate (e^-700 from
    the evidence of step 2), not by 1: its answer is log-sum-exp's, with no fallback."""
    calls = []
    real = fb._log_forward_backward
    monkeypatch.setattr(fb, "_log_forward_backward", lambda *a: calls.append(1) or real(*a))
    family = CategoricalChain(K, (5,))
    unary = np.full((5, K), -np.inf)
    unary[:, :2] = [0.0, -fb.SPREAD]
    unary[2] = [0.0, 0.0, -np.inf]
    unary[3:, :2] = np.random.default_rng(8).normal(size=(2, 2))
    with np.errstate(divide="ignore"):
        pair = np.log([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    nat = family.natural(unary=unary, pair=pair[None])
    mean, log_z = family._solve(nat)
    want, want_z = real(nat, K, family._chains)
    assert calls == []
    np.testing.assert_allclose(mean, want, rtol=0, atol=1e-14)
    assert abs(log_z[0] - want_z[0]) < 1e-14 * abs(want_z[0])
    monkeypatch.setattr(fb, "BANDED", False)
    family._solve(nat)
    assert calls == [1]


@pytest.mark.parametrize("k", [2, 12, 30])
def test_states_from_two_to_thirty(k, monkeypatch):
    lengths = (50, 20)
    nat = chain_natural(lengths, np.random.default_rng(3), k=k)
    (mean, log_z), (want, want_z), solves = both_passes(nat, lengths, monkeypatch, k=k)
    assert solves == 1
    np.testing.assert_allclose(mean, want, rtol=0, atol=1e-14)
    np.testing.assert_allclose(log_z, want_z, rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", ["hmm", "factorial_hmm", "casino"])
def test_default_fits_of_the_chain_models_are_those_of_the_scaled_recursions(name, monkeypatch):
    """Every models/*.vim with a discrete chain, fitted by default (seed 1) with the banded solves
    and with the scaled recursions alone: the same sweeps, ELBO traces within 1e-12 relative (the
    messages differ by rounding, about 1e-15 a solve), the same marginals to 1e-10."""
    model = ppl.load(MODELS / f"{name}.vim")
    banded = model.infer(MODELS / f"{name}.csv", seed=1)
    monkeypatch.setattr(fb, "BANDED", False)
    scaled = model.infer(MODELS / f"{name}.csv", seed=1)
    assert banded.iterations == scaled.iterations
    np.testing.assert_allclose(banded.trace, scaled.trace, rtol=1e-12, atol=0)
    for variable in banded.marginals:
        np.testing.assert_allclose(np.asarray(banded[variable].mean, float), np.asarray(scaled[variable].mean, float),
                                   rtol=0, atol=1e-10)
