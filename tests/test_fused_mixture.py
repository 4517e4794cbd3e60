"""The fused Gaussian-mixture sweep (ppl.infer.fused_mixture) runs the generic engine's updates:
same ELBO trace and same q to round-off, with and without SQUAREM, and it steps aside for any
model it does not cover."""

from pathlib import Path

import numpy as np
import pytest

import fused_runs
from fused_runs import generic
from ppl.infer import Options, run
from ppl.infer import accelerate as accelerate_module
from ppl.infer.accelerate import SMALL_LOCAL
from ppl.infer.fused_mixture import CLAMP, FusedMixture
from ppl.infer.initialise import initialise

ROOT = Path(__file__).resolve().parents[1]
GMM = (ROOT / "models" / "gmm.vim").read_text()
DATA = ROOT / "models" / "gmm.csv"


def problem_of(text: str, data=DATA, **kw):
    return fused_runs.problem_of(text, data, **kw)


@pytest.mark.parametrize("accelerate,small_local", [(False, SMALL_LOCAL), (None, SMALL_LOCAL), (None, 0)],
                         ids=["plain", "squarem", "squarem-refitting-z"])
def test_fused_run_equals_the_generic_engine(accelerate, small_local, monkeypatch):
    """`small_local` 0: SQUAREM refits z to the moved globals, by the fused E-step on one side and
    the generic batch E-step on the other."""
    monkeypatch.setattr(accelerate_module, "SMALL_LOCAL", small_local)
    problem = problem_of(GMM)
    assert isinstance(problem.kernel, FusedMixture)
    options = Options(seed=3, accelerate=accelerate)
    fused, plain = run(problem, options), generic(problem, options)
    assert fused.iterations == plain.iterations
    np.testing.assert_allclose(fused.trace, plain.trace, rtol=1e-10, atol=0)
    assert fused.elbo == pytest.approx(-443.298, abs=5e-4)  # the bound models/gmm.vim states
    for name in plain.state.natural:
        np.testing.assert_allclose(fused.state.moments(name), plain.state.moments(name), rtol=1e-8, atol=1e-10)


def generic_terms(problem, state) -> dict:
    kernel, problem.kernel = problem.kernel, None
    try:
        return problem.elbo_terms(state)
    finally:
        problem.kernel = kernel


def test_fused_elbo_is_the_sum_of_the_factor_terms():
    """Σ_n log Z_n − KL(globals) at q(z)'s optimum equals Σ E[log f] + Σ H[q]; the kernel's terms,
    summed over rows in blocks, equal the generic factors' one by one."""
    problem = problem_of(GMM, set={"K": 4})
    result = run(problem, Options(seed=0, max_iter=7, tol=1e-300, mean_tol=1e-300, accelerate=False))
    fused, terms = problem.elbo(result.state), generic_terms(problem, result.state)
    assert fused == pytest.approx(sum(terms.values()), rel=1e-12)
    assert problem.elbo_terms(result.state) == pytest.approx(terms, rel=1e-12)
    assert list(problem.elbo_terms(result.state)) == list(terms)


def test_kernel_elbo_of_any_state_equals_the_generic_one():
    """Away from q(z)'s optimum (the k-means start, a state the kernel did not sweep) the kernel's
    ELBO is Σ r_nk F_n·G_k + Σ_k N_k E[log π_k] + H[q(z)] + the globals' terms, the generic value."""
    problem = problem_of(GMM.replace("const K = 6", "const K = 3"))
    state = initialise(problem, np.random.default_rng(0))
    terms = generic_terms(problem, state)
    assert problem.elbo_terms(state) == pytest.approx(terms, rel=1e-12)
    assert problem.elbo(state) == pytest.approx(sum(terms.values()), rel=1e-12)


def test_buffers_held_elsewhere_are_never_written():
    """λ_z of an earlier sweep, kept by a caller, keeps its values while the kernel reuses others."""
    problem = problem_of(GMM)
    state = run(problem, Options(seed=0, max_iter=1, accelerate=False)).state
    kept = state.natural["z"]
    values = kept.copy()
    for _ in range(20):
        problem.kernel.sweep(state)
    np.testing.assert_array_equal(kept, values)
    assert state.natural["z"] is not kept
    assert len(problem.kernel.pools["natural"]) <= 3  # the kept one, the state's and one: reused


def test_responsibilities_are_rewritten_in_place_unless_held():
    """E[z] is one buffer written sweep after sweep while only the state holds it; one that a
    caller keeps keeps its values (the next sweep writes another)."""
    problem = problem_of(GMM)
    state = run(problem, Options(seed=0, max_iter=2, accelerate=False)).state
    assert len(problem.kernel.pools["moments"]) == 1  # the initial E[z] taken in, then written over
    buffer = id(state.moments("z"))
    for _ in range(3):
        problem.kernel.sweep(state)
        assert id(state.moments("z")) == buffer
    kept = state.moments("z")
    values = kept.copy()
    problem.kernel.sweep(state)
    np.testing.assert_array_equal(kept, values)
    assert state.moments("z") is not kept
    np.testing.assert_allclose(state.moments("z"), problem.families["z"].to_mean(state.natural["z"]), rtol=1e-12)


def test_responsibilities_never_subnormal():
    """Far-apart clusters: exp is clamped at −700 below each row's maximum, so every responsibility
    is 0-free and normal (≥ 2.2e-308), and the clamp changes nothing measurable."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-50, 1, (100, 2)), rng.normal(50, 1, (100, 2))])
    text = GMM.replace("data x: real[N, D] from (eruptions, waiting)", "data x: real[N, D]")
    problem = problem_of(text, data={"x": x}, set={"K": 3})
    result = run(problem, Options(seed=0, accelerate=False))
    r = result.state.moments("z")
    assert r.min() >= np.exp(CLAMP) / 3 and np.all(r > np.finfo(float).tiny)
    plain = generic(problem, Options(seed=0, accelerate=False))
    assert result.elbo == pytest.approx(plain.elbo, rel=1e-12)


@pytest.mark.parametrize("change", [
    ("x[n] ~ MvNormal(mu[z[n]], Lambda[z[n]])", "x[n] ~ MvNormal(mu[z[n]], 2.0 * Lambda[z[n]])"),  # scaled
    ("Lambda[k]) @joint", "Lambda[k])"),  # q(mu) q(Lambda) factorised
])
def test_other_models_take_the_generic_path(change):
    problem = problem_of(GMM.replace(*change))
    assert problem.kernel is None
    assert np.isfinite(run(problem, Options(seed=0, max_iter=5)).elbo)


def test_damping_takes_the_generic_path():
    problem = problem_of(GMM)
    damped = run(problem, Options(seed=0, max_iter=5, damping=0.5, accelerate=False))
    plain = generic(problem, Options(seed=0, max_iter=5, damping=0.5, accelerate=False))
    np.testing.assert_allclose(damped.trace, plain.trace, rtol=1e-12, atol=0)  # the kernel's ELBO, same sweeps
    for name in plain.state.natural:
        np.testing.assert_array_equal(damped.state.natural[name], plain.state.natural[name])


def test_a_new_run_keeps_no_buffer_of_the_last():
    """A restart (or a benchmark's repeat) initialises without the last run's free N × K buffers."""
    import weakref
    problem = problem_of(GMM)
    run(problem, Options(seed=0, max_iter=3, accelerate=False))
    kept = [weakref.ref(b) for pool in problem.kernel.pools.values() for b in pool]
    run(problem, Options(seed=1, max_iter=3, accelerate=False))
    assert kept and all(ref() is None for ref in kept)
