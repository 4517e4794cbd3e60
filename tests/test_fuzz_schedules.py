"""Internal errors that the fuzzer (tests/fuzz_inputs.py, benchmarks/fuzz.py) found once it also
wrote schedules, `block` statements and `@grid`: each pinned with the located error it now
raises, or with a fact of the run that now completes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ppl

from fuzz_inputs import MIXTURE_1D

MODELS = Path(__file__).resolve().parents[1] / "models"


def _csv(tmp_path, text: str):
    path = tmp_path / "data.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize("schedule", ["ssmf_a(batch=5)", "ssmf(batch=5)", "ssmf_a(batch=5, estep=gibbs)"])
def test_sampled_globals_under_joint_are_refused_at_the_annotation(schedule):
    """SSMF draws every global from q; q(mu, Lambda) of models/gmm.vim is one Normal–Wishart
    factor with no sampler (an AttributeError inside `pin_draws` under ssmf_a). Now E284, the
    analyzer's `@joint` code, pointing at the `@joint` of line 32."""
    model = ppl.load(MODELS / "gmm.vim")
    with pytest.raises(ppl.ModelError) as error:
        model.infer(MODELS / "gmm.csv", seed=0, max_iter=3, schedule=schedule)
    span = error.value.span
    assert error.value.code == "E284" and "Normal–Wishart" in error.value.message
    assert span.source.line(span.line)[span.column - 1:].startswith("@joint")
    model.infer(MODELS / "gmm.csv", seed=0, max_iter=3, schedule="svi(batch=5)")  # draws nothing: runs


@pytest.mark.parametrize("schedule", ["svi(batch=1)", "ssmf_a(batch=2)", "cvi(minibatch=2)",
                                      "ssmf_a(batch=2, estep=gibbs)"])
def test_missing_cells_under_a_stochastic_schedule_are_imputed(schedule, tmp_path):
    """A data variable with an empty cell is local in the minibatches that hold it and observed
    whole in the others, whose E-step asked for its messages (KeyError: 'y'). The imputed y[2]
    is the mixture of the component means that z[2] weighs: E[y₂] = Σ_k r₂ₖ E[μ_k]."""
    data = _csv(tmp_path, "y\n0.5\n\n1.2\n-0.3\n2.0\n-2.5\n-2.2\n")
    post = ppl.compile(MIXTURE_1D.replace("0.01", "0.1")).infer(data, seed=0, max_iter=30, schedule=schedule)
    assert np.isfinite(post.elbo)
    assert post["y"].mean[1] == pytest.approx(post["z"].mean[1] @ post["mu"].mean, rel=1e-9)


HMM = """\
const K = 2
data session: cat(S)[T]
data roll: cat(F)[T]
pi ~ Dirichlet(ones(K))
for k in 1..K {
  A[k] ~ Dirichlet(ones(K))
  phi[k] ~ Dirichlet(ones(F))
}
z[1] ~ Categorical(pi)
for t in 2..T { z[t] ~ Categorical(A[z[t-1]]) @sequences(by=session) }
for t in 1..T { roll[t] ~ Categorical(phi[z[t]]) }
"""
HIERARCHY = "data g: cat(G)[N]\ndata y: real[N]\nfor j in 1..G { a[j] ~ Normal(0, 1) }\n" \
            "for n in 1..N { y[n] ~ Normal(a[g[n]], 1) }\n"


@pytest.mark.parametrize("model, data, column", [
    (HMM, "session,roll\n3,2\n3,3\n", "session"),  # seed 1900212: IndexError on a chain with no sequence
    (HIERARCHY, "g,y\n1,0.5\n3,1\n3,2\n", "g"),  # E501, "the loop over `n` runs from 1 to 0"
])
@pytest.mark.parametrize("schedule", ["svi(batch=1)", "ssmf_a(batch=2, estep=gibbs)"])
def test_groups_with_no_rows_under_a_stochastic_schedule_are_a_data_error(model, data, column, schedule,
                                                                          tmp_path):
    """Levels of the group column that no row takes made minibatches with no rows; now E810 at
    the group column, naming the empty levels, before the first step. The batch schedule runs."""
    path = _csv(tmp_path, data)
    with pytest.raises(ppl.DataError) as error:
        ppl.compile(model).infer(path, seed=0, max_iter=3, schedule=schedule)
    assert error.value.code == "E810" and error.value.column == column
    assert "2" in error.value.message.partition("(")[2].partition(";")[0].split(", ")  # level 2 has no row
    ppl.compile(model).infer(path, seed=0, max_iter=3)


ORDINAL = "const cut = [-2.0, -0.7, 0.7, 2.0]\ndata x: real[N]\ndata rating: int[N]\nw ~ Normal(0, 1)\n"


@pytest.mark.parametrize("statement, column", [
    ("rating ~ OrderedLogistic(0.5, cut)", 1),
    ("rating ~ OrderedLogistic(x, cut)", 1),
    ("for n in 1..N { rating[n] ~ OrderedLogistic(2 * x[n], cut) }", 17),
])
def test_ordered_logistic_of_no_latent_variable_is_located(statement, column, tmp_path):
    """OrderedLogistic has no q family of its own: with a predictor of data or constants alone
    the statement fell through to a conjugate factor (KeyError: 'rating'). Now E500 at it."""
    data = _csv(tmp_path, "x,rating\n0.5,1\n-1,3\n2,5\n")
    with pytest.raises(ppl.ModelError) as error:
        ppl.compile(ORDINAL + statement + "\n").infer(data, seed=0, max_iter=3)
    assert error.value.code == "E500" and (error.value.span.line, error.value.span.column) == (5, column)
    assert "reads a latent variable" in error.value.message
    ppl.compile(ORDINAL + "rating ~ OrderedLogistic(w * x, cut)\n").infer(data, seed=0, max_iter=3)


def test_the_inner_loop_measures_only_the_categories_that_are_switched_on():
    """A switched-off category's E[log π] stays −∞ (−∞ − −∞ is NaN): the change is taken over the
    others, and over none (0, no warning) when the fuzzer switches every one off."""
    import warnings
    from ppl.infer.schedule.steps import _relative_change
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _relative_change(np.array([-np.inf, 1.0]), np.array([-np.inf, 2.0])) == 0.5
        assert _relative_change(np.full(3, -np.inf), np.full(3, -np.inf)) == 0.0
