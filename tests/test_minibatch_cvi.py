"""`@cvi(minibatch=B)` touches only its B rows (Khan & Lin eq. 14):

- a step's message is N/B times the part of the full-batch message that comes from those rows
  (the same rows bound alone, as an SVI step binds its groups), for a global and a grouped read;
- the site form's running sum of its sites' messages equals the sum recomputed from the N
  stored sites, also after its running scale has been folded into the sites;
- no array the size of the data is allocated by a step's message or ELBO estimate;
- with the rows as groups, a step of `schedule cvi(minibatch=B)` (the SVI machinery, which can
  stream the rows from disk) is a step of `@cvi(minibatch=B)` on the same rows.
"""

import tracemalloc

import numpy as np
import pytest

import ppl
from ppl.data.stream import GroupedSource
from ppl.infer import build_problem
from ppl.infer.factors import glm as glm_module
from ppl.infer.factors.glm import GLMFactor
from ppl.infer.initialise import initialise

from model_texts import LOGISTIC, LOGISTIC_HIERARCHY

HIERARCHY = LOGISTIC_HIERARCHY + " ANNOTATION\n}\n"


def hierarchy_data(n=200, seed=3):
    rng = np.random.default_rng(seed)
    g, x = rng.integers(0, 5, n), rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(np.linspace(-1, 1, 5)[g] + 0.7 * x)))).astype(int)
    return {"x": x, "g": [f"g{k}" for k in g], "y": y}


def logistic_data(n=200, d=3, seed=1):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    return {"X": x, "y": (rng.random(n) < 1 / (1 + np.exp(-x @ np.linspace(-1, 1, d)))).astype(int)}


def bound(text, data, rows=None):
    """(model, problem, its GLM factor); with `rows`, the model bound to those rows alone."""
    model = ppl.compile(text)
    dataset = model.bind(data)
    if rows is not None:
        dataset = GroupedSource.from_dataset(model, dataset, None).take(rows)
    problem = build_problem(model.checked, dataset, model.analyze(dataset))
    return problem, next(f for f in problem.factors if isinstance(f, GLMFactor))


def moved_state(problem, seed=0):
    """A state away from the prior, so that every message depends on q."""
    rng = np.random.default_rng(seed)
    state = initialise(problem, rng)
    for name in problem.latent:
        if problem.families[name].name in ("Normal", "MvNormal"):
            mean = problem.families[name].to_mean(state.natural[name])
            state.set(name, problem.families[name].to_natural(mean + 0.05 * rng.normal(size=mean.shape) *
                                                              (np.arange(mean.shape[-1]) == 0)))
    state.rng = rng
    return state


@pytest.mark.parametrize("text, data, names", [
    (LOGISTIC + " ANNOTATION", logistic_data(), ("w",)),
    (HIERARCHY, hierarchy_data(), ("a", "b")),
], ids=["global-w", "grouped-a-and-b"])
def test_a_minibatch_message_is_n_over_b_times_its_rows_part_of_the_full_message(text, data, names):
    rows = np.sort(np.random.default_rng(4).choice(200, 40, replace=False))
    full, batch_factor = bound(text.replace("ANNOTATION", "@cvi(samples=0, minibatch=40)"), data)
    _, rows_factor = bound(text.replace("ANNOTATION", "@cvi(samples=0)"), data, rows)
    state = moved_state(full)
    batch_factor._draw_batch = lambda rng: (rows, 200 / 40)
    for name in names:
        expected = (200 / 40) * rows_factor.message(state, name)
        np.testing.assert_allclose(batch_factor.message(state, name), expected, rtol=1e-10, atol=1e-12)
        # the whole plate's message is another number: the scaling is of the rows' part alone
        assert np.max(np.abs(expected - (200 / 40) * bound(text.replace("ANNOTATION", "@cvi(samples=0)"),
                                                           data)[1].message(state, name))) > 1e-3


@pytest.mark.parametrize("smallest", [glm_module.SMALLEST_SCALE, 0.5])
def test_the_site_forms_running_sum_is_the_sum_over_its_stored_sites(smallest, monkeypatch):
    """With `smallest` = 0.5 the running scale is folded into the sites every other step."""
    monkeypatch.setattr(glm_module, "SMALLEST_SCALE", smallest)
    problem, factor = bound(LOGISTIC + " @cvi(form=site, minibatch=30, step=0.6, kappa=0.2)", logistic_data())
    state = moved_state(problem)
    for step in range(6):
        state.set("w", state.natural["w"] * (1 + 0.01 * step))  # q changed: one step of the sites
        running = factor.message(state, "w")
        from_sites = super(GLMFactor, factor).message(state, "w")  # Σ over the N stored sites
        np.testing.assert_allclose(running, from_sites, rtol=1e-10, atol=1e-12)
    assert factor._steps == 6 and np.count_nonzero(factor._sites[1]) > 30  # sites of several batches


@pytest.mark.parametrize("annotation", ["@cvi(minibatch=100)", "@cvi(minibatch=100, form=site)"])
def test_a_minibatch_step_allocates_nothing_the_size_of_the_data(annotation):
    """400,000 rows: one float per row is 3.2 MB; a step's message and its ELBO estimate on
    100 rows stay far below it."""
    rows = 400_000
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 3))
    problem, factor = bound(LOGISTIC + " " + annotation, {"X": x, "y": (rng.random(rows) < 0.5).astype(int)})
    state = moved_state(problem)
    factor.message(state, "w")  # the site form's N sites exist from here on
    state.set("w", state.natural["w"] * 1.01)
    tracemalloc.start()
    try:
        factor.message(state, "w")
        message_peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        factor.elbo_estimate(state)
        estimate_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message_peak < rows * 8 / 10 and estimate_peak < rows * 8 / 2


def test_a_cvi_schedule_step_over_rows_is_an_annotated_minibatch_step():
    """With the rows as groups (no locals), one step of `schedule cvi(minibatch=B)` on `@cvi` is
    one step of `@cvi(minibatch=B)` on the same B rows: λ ← (1 − ρ) λ + ρ (η + (N/B) Σ ĝ_n)."""
    from ppl.infer.schedule.svi import SVI, Minibatches, step_size
    from ppl.infer.update import update
    from ppl.lang.schedule import parse_schedule
    table = logistic_data()
    model = ppl.compile(LOGISTIC + " @cvi(samples=0)")
    dataset = model.bind(table)
    spec = parse_schedule("cvi(minibatch=40, step=0.5)")
    svi = SVI(build_problem(model.checked, dataset, model.analyze(dataset), spec), np.random.default_rng(0))
    start = moved_state(svi.problem).natural["w"]
    svi.globals = {"w": start.copy()}
    svi.batches = Minibatches(200, 40, np.random.default_rng(5))
    rows = np.sort(Minibatches(200, 40, np.random.default_rng(5)).next())
    svi.step(3)

    problem, factor = bound(LOGISTIC + " @cvi(samples=0, minibatch=40)", table)
    state = moved_state(problem)
    state.set("w", start.copy())
    factor._draw_batch = lambda rng: (rows, 200 / 40)
    update(problem, state, "w", step_size(spec, 3))
    np.testing.assert_allclose(svi.globals["w"], state.natural["w"], rtol=1e-10, atol=1e-12)
    assert np.max(np.abs(svi.globals["w"] - start)) > 1e-2  # a step that moved
