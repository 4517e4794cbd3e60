"""Observed categoricals stay integer codes: no factor, statistic or ELBO term of an LDA-shaped
model allocates an N × V array (V a vocabulary), and the one-hot statistics a dense factor asks
for are the codes' (observed rows) and q's (missing rows)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import ppl
from ppl.infer import Options, build_problem, run
from ppl.infer.state import State

from model_texts import LDA


def test_lda_with_a_large_vocabulary_never_allocates_tokens_by_words():
    n, v = 20_000, 10_000
    rng = np.random.default_rng(0)
    data = {"doc": rng.integers(1, 51, n), "word": np.concatenate([np.arange(1, v + 1), rng.integers(1, v + 1, n - v)])}
    model = ppl.compile(LDA)
    tracemalloc.start()
    try:
        dataset = model.bind(data)
        problem = build_problem(model.checked, dataset, model.analyze(dataset))
        result = run(problem, Options(max_iter=2, seed=0))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.isfinite(result.elbo)
    assert peak < 0.05 * n * v * 8, f"peak {peak / 1e6:.0f} MB: an N × V array is {n * v * 8 / 1e6:.0f} MB"


def test_the_one_hot_of_a_partially_observed_category_mixes_codes_and_q():
    from ppl.families import Categorical
    state = State({"c": Categorical(3)}, {"c": (4,)})
    state.observe_codes("c", np.array([2, 0, 0, 1]), np.array([True, False, True, True]))
    q = np.log(np.array([0.2, 0.5, 0.3]))
    state.set("c", np.tile(q, (4, 1)))
    expected = np.array([[0, 0, 1], [0.2, 0.5, 0.3], [1, 0, 0], [0, 1, 0]])
    np.testing.assert_allclose(state.moments("c"), expected)
    assert state.entropy("c") == pytest.approx(-np.sum(expected[1] * np.log(expected[1])))


def test_a_dense_read_of_a_huge_observed_category_is_refused_not_allocated():
    from ppl.families import Categorical
    from ppl.infer.access import Unsupported
    state = State({"w": Categorical(100_000)}, {"w": (2_000,)})
    state.observe_codes("w", np.zeros(2_000, dtype=np.int64), None)
    with pytest.raises(Unsupported) as info:
        state.moments("w")
    assert info.value.code == "E500" and "`w`" in str(info.value)


def test_an_observed_category_with_constant_probabilities_reads_its_codes():
    """E[log p(y)] = Σ_n log p[y_n], gathered at the codes (no one-hot rows)."""
    model = ppl.compile("data y: cat(3)[N]\nmu ~ Normal(0, 1)\ny ~ Categorical([0.2, 0.3, 0.5])")
    y = np.array([1, 3, 3, 2, 3])
    post = model.infer({"y": y})
    expected = np.sum(np.log(np.array([0.2, 0.3, 0.5])[y - 1]))
    assert post.elbo_terms["E[log p(y)]"] == pytest.approx(expected, rel=1e-12)
