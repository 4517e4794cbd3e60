"""The factorial HMM by structured mean field (seed 001 §21.4.1; `factors/factorial.py`).

- `models/factorial_hmm.vim`: the ELBO never falls, and the two chains' output levels are found;
- the message to each chain is the local evidence of eq. 21.62, checked against the formula
  written here from the other chain's expected output;
- structured q(z1) q(z2) (one chain each, forward–backward) against the fully factorised
  Π_t q(z1[t]) q(z2[t]) on the same data, from the same start, with the same global updates:
  the factorised one is run here by sequential coordinate ascent over the time steps (its exact
  mean-field schedule), written as chain natural parameters with no pair block (a chain q with
  P = 0 IS a factorised q), so both ELBOs come from the same `problem.elbo`. Structured wins.
"""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl.diagnostics import ModelError
from ppl.infer import build_problem
from ppl.infer.engine import ElboDecreaseWarning, _update
from ppl.infer.initialise import initialise

MODELS = Path(__file__).resolve().parents[1] / "models"


def _problem(model=None, data=MODELS / "factorial_hmm.csv"):
    model = ppl.load(MODELS / "factorial_hmm.vim") if model is None else model
    dataset = model.bind(data)
    return build_problem(model.checked, dataset, model.analyze(dataset))


def _with_offset(c):
    """models/factorial_hmm with y ~ Normal(w1[z1] + w2[z2] + c, tau), and its data with c."""
    text = (MODELS / "factorial_hmm.vim").read_text()
    statement = "\n  y[t] ~ Normal(w1[z1[t]] + w2[z2[t]], tau)"
    model = ppl.compile(text.replace("data y: real[T]", "data y: real[T]\ndata c: real[T]")
                        .replace(statement, statement.replace(", tau)", " + c[t], tau)")))
    return _problem(model, pd.DataFrame({"y": pd.read_csv(MODELS / "factorial_hmm.csv")["y"], "c": c}))


def test_structured_run_is_monotone_and_finds_both_chains():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ElboDecreaseWarning)
        post = ppl.load(MODELS / "factorial_hmm.vim").infer(MODELS / "factorial_hmm.csv", seed=0, tol=1e-8,
                                                            max_iter=3000)
    assert np.all(np.diff(post.trace) >= -1e-9 * abs(post.trace[-1]))
    levels = sorted([np.sort(post["w1"].mean), np.sort(post["w2"].mean)], key=lambda w: np.ptp(w))
    # identified up to a shift between the chains: compare the spreads of the levels
    np.testing.assert_allclose(levels[1] - levels[1][1], [-2.0, 0.0, 2.0], atol=0.15)
    np.testing.assert_allclose(levels[0] - levels[0][1], [-0.6, 0.0, 0.6], atol=0.15)
    assert 10 < post["tau"].mean < 25  # the noise sd is 0.25: precision 16


@pytest.mark.parametrize("offset", [False, True], ids=["y", "y-c"])
def test_message_to_a_chain_is_the_averaged_local_evidence(offset):
    """The message to z1 is the local evidence of eq. 21.62 from z2's expected output; with a data
    offset c in the mean (y ~ Normal(w1[z1] + w2[z2] + c, tau)), that of y − c."""
    y = np.loadtxt(MODELS / "factorial_hmm.csv", skiprows=1)
    c = np.sin(np.arange(len(y))) if offset else 0.0
    problem = _with_offset(c) if offset else _problem()
    state = initialise(problem, np.random.default_rng(1))
    for _ in range(3):
        for name in problem.order:
            _update(problem, state, name, 1.0)
    (emission,) = [f for f in problem.factors if hasattr(f, "choosers")]
    gamma2 = state.moments("z2")[:, :3]
    w1, w2 = state.moments("w1"), state.moments("w2")  # (E[w], E[w²]) per state
    tau = state.moments("tau")[0, 1]
    other = gamma2 @ w2[:, 0]  # E[w2[z2[t]]]
    expected = tau * ((y - c - other)[:, None] * w1[:, 0] - 0.5 * w1[:, 1])
    np.testing.assert_allclose(emission.message(state, "z1"), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("k", [2, 3, 4, 7])
def test_row_sums_are_numpys_to_the_bit(k):
    """`sum_in_order` adds the rows over k in order, as np.sum does over a short axis."""
    from ppl.infer.rows import sum_in_order
    x = np.random.default_rng(k).normal(size=(50, k, 2)) * 10.0 ** np.arange(-4, 4, 8 / k)[:k, None]
    assert np.array_equal(sum_in_order(x, -2), np.sum(x, axis=-2))


def test_kept_parts_give_a_fresh_runtimes_numbers_to_the_bit():
    """The runtime keeps E[τ], each chain's parts, the residual and the squared error for the q
    they came from; after sweeps that change one variable at a time its messages and ELBO term
    equal those of a runtime built afresh, which keeps nothing yet. The chains' marginals copied
    from their moments (`_marginals`), the evidence to a chain read in order left unscattered, and
    the sum over the plate that replaces the weights' scatter (`_summed`) give the general paths'
    numbers."""
    from ppl.infer.factors.factorial import _marginals, _summed
    problem, fresh = _problem(), _problem()
    state = initialise(problem, np.random.default_rng(2))
    (kept,), (new,) = ([f for f in p.factors if hasattr(f, "choosers")] for p in (problem, fresh))
    for _ in range(4):
        for name in problem.order:
            _update(problem, state, name, 1.0)
            for read in ("tau", "w1", "w2", "z1", "z2"):
                assert np.array_equal(kept.message(state, read), new.message(state, read)), read
                new._kept, new._kept_prec, new._kept_residual = {}, None, None
            assert kept.elbo(state) == new.elbo(state)
    for _, chooser, k in kept.components:  # z[t] over t: γ copied from the moments, the gather's numbers,
        assert np.array_equal(_marginals(state, chooser, k), chooser.read(state)[..., 0, :k])
        rows = kept.message(state, chooser.name)  # and the evidence as it is, the scatter's
        assert np.array_equal(rows, chooser.scatter_rows(rows))
    rng = np.random.default_rng(3)
    for weight, _, k in kept.components:
        message = rng.normal(size=(300, k, 2)) * 10.0 ** rng.integers(-6, 6, size=(300, k, 2))
        assert np.array_equal(_summed(weight, message), weight.scatter(message))


def _factorised_sweep(problem, state, name, evidence):
    """One sequential pass of mean-field updates q(z_t) over t = 1..T with q(θ) and the other
    chain fixed: log q(z_t) = e_t + E[log π]·[t = 1] + γ_{t−1}ᵀE[log A] + E[log A]γ_{t+1}."""
    k = state.families[name].k
    first, transition = [f for f in problem.neighbours[name] if f.target.name == name and hasattr(f, "chain")]
    log_pi = np.reshape(first._expected_log_probs(state), (-1, k))[0]
    log_a = np.reshape(transition._expected_log_probs(state), (-1, k, k))[0]
    gamma = state.moments(name)[:, :k].copy()
    steps = len(gamma)
    for t in range(steps):
        logits = evidence[t] + (log_pi if t == 0 else gamma[t - 1] @ log_a)
        if t + 1 < steps:
            logits = logits + log_a @ gamma[t + 1]
        p = np.exp(logits - logits.max())
        gamma[t] = p / p.sum()
    state.set(name, np.concatenate([np.log(gamma), np.zeros((steps, k * k))], axis=1))


def test_structured_q_beats_the_fully_factorised_q():
    structured, factorised = _problem(), _problem()
    states = [initialise(p, np.random.default_rng(0)) for p in (structured, factorised)]
    traces = ([], [])
    for _ in range(150):
        for name in structured.order:
            _update(structured, states[0], name, 1.0)
        traces[0].append(structured.elbo(states[0]))
        state = states[1]
        for name in factorised.order:
            if name in ("z1", "z2"):
                (emission,) = [f for f in factorised.factors if hasattr(f, "choosers")]
                _factorised_sweep(factorised, state, name, emission.message(state, name))
            else:
                _update(factorised, state, name, 1.0)
        traces[1].append(factorised.elbo(state))
    for trace in traces:
        assert np.all(np.diff(trace) >= -1e-9 * abs(trace[-1]))  # both schedules are coordinate ascent
    # the factorised q really is factorised: its pairwise marginals are products of marginals
    z = states[1].moments("z1")
    np.testing.assert_allclose(z[1:, 3:].reshape(-1, 3, 3), z[:-1, :3, None] * z[1:, None, :3], atol=1e-12)
    assert traces[0][-1] > traces[1][-1] + 10.0
    # the same with q(θ) held at the structured optimum: only the family of q(z) differs
    state = states[0]
    held = state.copy()
    for _ in range(50):
        for name in ("z1", "z2"):
            (emission,) = [f for f in structured.factors if hasattr(f, "choosers")]
            _factorised_sweep(structured, held, name, emission.message(held, name))
    assert structured.elbo(held) < structured.elbo(state) - 1.0


def test_one_chain_choosing_two_summands_is_refused():
    """`w1[z1[t]] + w2[z1[t-1]]` reads two states of one chain: their pairwise law would be needed."""
    text = (MODELS / "factorial_hmm.vim").read_text()
    text = text.replace("for t in 1..T {\n  y[t] ~ Normal(w1[z1[t]] + w2[z2[t]], tau)",
                        "for t in 2..T {\n  y[t] ~ Normal(w1[z1[t]] + w2[z1[t-1]], tau)")
    with pytest.raises(ModelError, match="E500"):
        ppl.compile(text).infer(pd.DataFrame({"y": np.linspace(-1, 1, 20)}))
