"""The fused sweep of a mixture of categoricals (ppl.infer.fused_latent_class) runs the generic
engine's updates: the same q bit for bit and the same ELBO trace to round-off, plain, under
SQUAREM (z extrapolated or refitted) and Anderson, for items in one statement or several, in
either plate order, in long format (ragged or shuffled rows), and it steps aside for any model it
does not cover."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import fused_runs
from fused_runs import generic
from ppl.infer import Options, run
from ppl.infer import accelerate as accelerate_module
from ppl.infer.fused_latent_class import FusedLatentClass
from ppl.infer.fused_mixture import FusedMixture
from ppl.infer.initialise import initialise
from ppl.infer.schedule.fused_lda import FusedLDA

ROOT = Path(__file__).resolve().parents[1]
LCA = "\n".join(line for line in (ROOT / "models" / "latent_class.vim").read_text().splitlines()
                if not line.startswith("#"))  # the statements alone: the comments repeat them
DATA = ROOT / "models" / "latent_class.csv"
ANSWERS = pd.read_csv(DATA).to_numpy()  # 300 people × 6 items, codes 1..3

HEAD = """
const K = 3
data x: cat(L)[N, J] from x1..xJ
pi ~ Dirichlet(ones(K))
"""
SEVERAL = """
const K = 3
data a: cat(L)[N] from x1
data b: cat(M)[N, J] from x2..x4
data c: cat(C)[N, H] from x5..x6
pi ~ Dirichlet(ones(K))
for k in 1..K {
  pa[k] ~ Dirichlet(ones(L))
  for j in 1..J { pb[k, j] ~ Dirichlet(2.0 * ones(M)) }
  for h in 1..H { pc[k, h] ~ Dirichlet(ones(C)) }
}
for n in 1..N {
  z[n] ~ Categorical(pi)
  a[n] ~ Categorical(pa[z[n]])
  for j in 1..J { b[n, j] ~ Categorical(pb[z[n], j]) }
  for h in 1..H { c[n, h] ~ Categorical(pc[z[n], h]) }
}
"""
SHARED = HEAD + """
for k in 1..K { psi[k] ~ Dirichlet(ones(L)) }
for n in 1..N {
  z[n] ~ Categorical(pi)
  for j in 1..J { x[n, j] ~ Categorical(psi[z[n]]) }
}
"""
ITEM_MAJOR = HEAD + """
for k in 1..K { for j in 1..J { phi[k, j] ~ Dirichlet(ones(L)) } }
for n in 1..N { z[n] ~ Categorical(pi) }
for j in 1..J { for n in 1..N { x[n, j] ~ Categorical(phi[z[n], j]) } }
"""
LONG = """
const K = 3
data person: cat(P)[T]
data item: cat(J)[T]
data ans: cat(L)[T]
pi ~ Dirichlet(ones(K))
for k in 1..K { for j in 1..J { phi[k, j] ~ Dirichlet(ones(L)) } }
for p in 1..P { z[p] ~ Categorical(pi) }
for t in 1..T { ans[t] ~ Categorical(phi[z[person[t]], item[t]]) }
"""


def long_data(keep) -> dict:
    """The answers as one row per (person, item), the rows `keep` of the person-major order."""
    n, j = ANSWERS.shape
    person, item = np.repeat(np.arange(n), j), np.tile(np.arange(j), n)
    return {"person": person[keep] + 1, "item": item[keep] + 1, "ans": ANSWERS.reshape(-1)[keep]}


RNG = np.random.default_rng(5)
# name -> (text, data, constants, (item-major gathers, counts summed item-major) per statement)
CASES = {
    "latent_class": (LCA, DATA, {}, [(True, True)]),
    "K=2": (LCA, DATA, {"K": 2}, [(True, True)]),
    "K=9": (LCA, DATA, {"K": 9}, [(True, True)]),  # np.sum's pairwise rows (K ≥ 8)
    "several statements": (SEVERAL, DATA, {}, [(True, True)] * 3),
    "items share phi": (SHARED, DATA, {}, [(True, False)]),
    "item-major plate": (ITEM_MAJOR, DATA, {}, [(True, True)]),
    "long, shuffled": (LONG, long_data(RNG.permutation(ANSWERS.size)), {}, [(True, False)]),
    "long, ragged": (LONG, long_data(np.sort(RNG.choice(ANSWERS.size, ANSWERS.size - 200, replace=False))), {},
                     [(False, False)]),
}


def problem_of(text: str, data=DATA, **constants):
    return fused_runs.problem_of(text, data, set=constants or None)


def assert_same_run(fused, plain):
    assert fused.iterations == plain.iterations
    np.testing.assert_allclose(fused.trace, plain.trace, rtol=1e-13, atol=0)
    assert fused.elbo == pytest.approx(plain.elbo, rel=1e-13)
    for name in plain.state.natural:
        np.testing.assert_array_equal(fused.state.natural[name], plain.state.natural[name])
        np.testing.assert_array_equal(fused.state.moments(name), plain.state.moments(name))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("accelerate,small_local", [(False, None), (None, None), (None, 0), ("anderson", None)],
                         ids=["plain", "squarem", "squarem-refitting-locals", "anderson"])
def test_fused_run_is_the_generic_run(case, accelerate, small_local, monkeypatch):
    """`small_local` 0: SQUAREM refits the locals (z, and φ where it is local: long format) to the
    moved globals, by the kernel's E-step on one side and the generic one on the other."""
    if small_local is not None:
        monkeypatch.setattr(accelerate_module, "SMALL_LOCAL", small_local)
    text, data, constants, layouts = CASES[case]
    problem = problem_of(text, data, **constants)
    assert isinstance(problem.kernel, FusedLatentClass)
    assert [(s.layout is not None, s.counted) for s in problem.kernel.statements.values()] == layouts
    options = Options(seed=1, accelerate=accelerate)
    assert_same_run(run(problem, options), generic(problem, options))


def test_fixed_sweeps_from_other_seeds():
    problem = problem_of(LCA)
    for seed in (0, 2, 3):
        options = Options(seed=seed, max_iter=25, tol=1e-300, mean_tol=1e-300, accelerate=False)
        assert_same_run(run(problem, options), generic(problem, options))


def test_fused_elbo_is_the_sum_of_the_factor_terms():
    """Σ_n log Σ_k exp λ_nk − KL(q(π) ‖ p) − KL(q(φ) ‖ p) at q(z)'s optimum equals Σ E[log f] +
    Σ H[q]; a state the kernel did not sweep takes the generic sum."""
    problem = problem_of(SEVERAL)
    result = run(problem, Options(seed=0, max_iter=7, tol=1e-300, mean_tol=1e-300, accelerate=False))
    terms = problem.elbo_terms(result.state)
    assert problem.kernel.elbo(result.state) == pytest.approx(sum(terms.values()), rel=1e-13)
    state = initialise(problem, np.random.default_rng(0))
    assert problem.kernel.elbo(state) is None
    assert problem.elbo(state) == sum(f.elbo(state) for f in problem.factors) + sum(
        state.entropy(v) for v in problem.latent)


def test_recorded_terms_add_up_to_the_trace():
    problem = problem_of(LCA)
    result = run(problem, Options(seed=1, record_terms=True))
    assert len(result.term_trace) == len(result.trace)
    for terms, elbo in zip(result.term_trace, result.trace):
        assert sum(terms.values()) == pytest.approx(elbo, rel=1e-12)


def test_damping_takes_the_generic_path():
    problem = problem_of(LCA)
    options = Options(seed=0, max_iter=5, damping=0.5, accelerate=False)
    damped, plain = run(problem, options), generic(problem, options)
    np.testing.assert_array_equal(damped.trace, plain.trace)
    for name in plain.state.natural:
        np.testing.assert_array_equal(damped.state.natural[name], plain.state.natural[name])


@pytest.mark.parametrize("change", [
    ("x[n, j] ~ Categorical(phi[z[n], j])", "x[n, j] ~ Categorical(phi[1, j])"),  # not selected by z
    ("z[n] ~ Categorical(pi)", "z[n] ~ Categorical(ones(K) / K)"),  # constant class weights
    ("pi ~ Dirichlet(ones(K))", "pi ~ Dirichlet(ones(K))\ns ~ Gamma(1, 1)"),  # another latent variable
])
def test_other_models_take_the_generic_path(change):
    text = LCA.replace(*change)
    assert text != LCA
    problem = problem_of(text)
    assert problem.kernel is None
    assert np.isfinite(run(problem, Options(seed=0, max_iter=5)).elbo)


def test_missing_answers_take_the_generic_path():
    table = pd.read_csv(DATA).astype(object)
    table.iloc[3, 2] = None
    problem = problem_of(LCA, table)
    assert problem.dataset.masks and problem.kernel is None


def test_other_fused_sweeps_keep_their_models():
    assert isinstance(problem_of((ROOT / "models" / "gmm.vim").read_text(), ROOT / "models" / "gmm.csv").kernel,
                      FusedMixture)
    assert isinstance(problem_of((ROOT / "models" / "lda.vim").read_text(), ROOT / "models" / "lda.csv").kernel,
                      FusedLDA)
