"""The ridge step of a factorial model's levels (`ppl/infer/factorial_levels.py`) on
`models/factorial_hmm.vim`:

- the ridge is real: shifting w1 by +c and w2 by −c leaves the output factor's expected log
  likelihood unchanged to round-off, whatever the state;
- the step is the exact maximiser along the ridge: after it, the ELBO falls for a shift of either
  sign (finite differences), and it never lowers the ELBO;
- the default run now converges (it crawled 1e-5 sd a sweep along the ridge and stopped unconverged
  at 500 sweeps) to the fixed point of a run 1e6 times tighter.
"""

import numpy as np

import ppl
from ppl.infer.factorial_levels import shift_levels

from plain_sweeps import plain_sweeps
from test_factorial_hmm import MODELS, _problem


def _shifted(problem, state, c: float):
    """The state with every level of w1 moved by +c and of w2 by −c (precisions kept)."""
    moved = state.copy()
    for name, sign in (("w1", 1.0), ("w2", -1.0)):
        nat = state.natural[name]
        moved.set(name, np.stack([nat[..., 0] + sign * c * (-2 * nat[..., 1]), nat[..., 1]], axis=-1))
    return moved


def test_a_shift_between_the_chains_leaves_the_likelihood_unchanged():
    problem = _problem()
    (factor, names), = problem.levels
    assert names == ("w1", "w2")
    state = plain_sweeps(problem, 5)
    for c in (-0.3, 0.01, 0.7):
        assert abs(factor.elbo(_shifted(problem, state, c)) - factor.elbo(state)) < 1e-9 * abs(factor.elbo(state))
    assert abs(problem.elbo(_shifted(problem, state, 0.3)) - problem.elbo(state)) > 1e-3  # the priors see it


def test_the_ridge_step_is_the_maximiser_along_the_ridge():
    problem = _problem()
    (factor, names), = problem.levels
    state = plain_sweeps(problem, 30)  # chain by chain: far along the ridge from its best point
    before = problem.elbo(state)
    shift_levels(problem, state, factor, names)
    after = problem.elbo(state)
    assert after > before + 1e-5  # it moved, upwards
    for c in (-1e-3, 1e-3):
        assert problem.elbo(_shifted(problem, state, c)) < after
    # a second step from the maximiser stays put
    again = state.copy()
    shift_levels(problem, again, factor, names)
    np.testing.assert_allclose(again.natural["w1"], state.natural["w1"], rtol=1e-10, atol=1e-10)


def test_a_kept_prior_gives_the_step_of_a_fresh_one():
    """The priors' sum and precisions are kept while their messages are the same arrays: a step
    with them kept moves the levels exactly as one that sums them afresh."""
    problem = _problem()
    (factor, names), = problem.levels
    state = plain_sweeps(problem, 10)
    shift_levels(problem, state.copy(), factor, names)  # keeps the priors
    assert set(factor.level_priors) == set(names)
    kept, fresh = state.copy(), state.copy()
    shift_levels(problem, kept, factor, names)
    factor.level_priors.clear()
    shift_levels(problem, fresh, factor, names)
    for name in names:
        assert np.array_equal(kept.natural[name], fresh.natural[name])


def test_default_run_converges_to_the_tight_fixed_point():
    model = ppl.load(MODELS / "factorial_hmm.vim")
    default = model.infer(MODELS / "factorial_hmm.csv", seed=0)
    tight = model.infer(MODELS / "factorial_hmm.csv", seed=0, tol=1e-12, mean_tol=1e-9, max_iter=5000,
                        accelerate=False)
    assert default.converged and default.iterations < 100
    assert tight.converged
    assert abs(default.elbo - tight.elbo) < 1e-6
    for name in ("w1", "w2", "tau"):
        assert np.max(np.abs(default[name].mean - tight[name].mean) / tight[name].sd) < 1e-3
