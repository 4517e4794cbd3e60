"""The local/global schedule: the `schedule` statement, minibatches of groups, and the SVI step
against the batch VMP step it must reduce to."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ppl
from ppl.diagnostics import ModelError
from ppl.infer.build import build_problem
from ppl.infer.initialise import initialise
from ppl.infer.schedule import svi as svi_module
from ppl.infer.schedule.steps import data_factors, fit_locals, global_step
from ppl.infer.schedule.svi import SVI, Minibatches, settled
from ppl.lang.schedule import ScheduleSpec, parse_schedule
from ppl.data.stream import GroupedSource

GMM_BOUND = -443.29786671923284  # batch VBEM on models/gmm (README, tests/test_vmp_models.py)


def bound(name: str, schedule: ScheduleSpec | None = None):
    model = ppl.load(f"models/{name}.vim")
    dataset = model.bind(f"models/{name}.csv")
    return build_problem(model.checked, dataset, model.analyze(dataset), schedule)


# ---- the language

@pytest.mark.parametrize("text, code", [
    ("schedule svi(batch=64)\nschedule svi(batch=8)", "E290"),
    ("schedule sgd(batch=64)", "E291"),
    ("schedule svi(batch=64, speed=2)", "E292"),
    ("schedule svi(batch=0)", "E293"),
    ("schedule svi(batch=64, kappa=0.4)", "E293"),
    ("schedule svi(kappa=0.7)", "E294"),
])
def test_schedule_statement_errors_are_located(text, code):
    source = text + "\ndata y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)\n"
    with pytest.raises(ModelError) as info:
        ppl.compile(source)
    assert info.value.code == code
    assert info.value.span is not None and info.value.span.line == text.count("\n") + 1


def test_schedule_text_of_the_command_line_is_the_statement():
    spec = parse_schedule("svi(batch=64, kappa=0.6, tau=4, ramp=0)")
    assert (spec.name, spec.batch, spec.kappa, spec.tau, spec.ramp) == ("svi", 64, 0.6, 4, False)
    assert spec.local_sweeps == 100 and ScheduleSpec().local_sweeps == 1
    with pytest.raises(ModelError) as info:
        parse_schedule("svi(batch=64) y ~ Normal(0, 1)")
    assert info.value.code == "E295"


# ---- groups and minibatches

def test_groups_take_the_rows_of_documents_and_recode_them():
    problem = bound("lda")
    data = problem.dataset
    groups = GroupedSource.from_dataset(problem.model, data, "doc")
    chosen = np.array([7, 2])
    part = groups.take(chosen)
    rows = np.concatenate([np.flatnonzero(data.arrays["doc"] == g) for g in chosen])
    assert np.array_equal(part.arrays["word"], data.arrays["word"][rows])
    assert np.array_equal(part.arrays["doc"], np.repeat([0, 1], [np.sum(data.arrays["doc"] == g) for g in chosen]))
    assert part.sizes["D"] == 2 and part.sizes["N"] == len(rows) and part.sizes["V"] == data.sizes["V"]
    assert part.levels["doc"] == [data.levels["doc"][7], data.levels["doc"][2]]
    assert part.levels["word"] == data.levels["word"]


def test_minibatches_visit_every_group_once_per_pass():
    batches = Minibatches(10, 3, np.random.default_rng(0))
    first = np.concatenate([batches.next() for _ in range(3)] + [batches.next()[:1]])
    assert sorted(first.tolist()) == list(range(10))
    assert batches.passes == 1.2


def test_settled_compares_window_means_with_their_noise():
    rng = np.random.default_rng(0)
    assert settled(list(-100 + rng.normal(size=40)), 20, 1e-9)
    assert not settled(list(np.linspace(-200, -100, 40)), 20, 1e-9)


# ---- the step

def _full_step(problem, naturals, rho: float):
    """Batch: globals at `naturals`, every group's locals from their priors to convergence, then
    each global by the plain update with scale 1."""
    state = initialise(problem, np.random.default_rng(1))
    for name, natural in naturals.items():
        state.set(name, natural.copy())
    svi = SVI(problem, np.random.default_rng(1))
    svi.e_step(problem, state)
    data = data_factors(problem, svi.plan)
    for name in svi.plan.globals:
        global_step(problem, state, name, 1.0, rho, data)
    return {n: state.natural[n] for n in svi.plan.globals}


@pytest.mark.parametrize("name", ["gmm", "lda"])
def test_svi_with_every_group_and_unit_step_is_the_batch_step(name, monkeypatch):
    problem = bound(name, ScheduleSpec("svi", batch=10 ** 6, local_tol=1e-12, inner=500))
    svi = SVI(problem, np.random.default_rng(0))
    svi.start(sweeps=1)
    start = {n: v.copy() for n, v in svi.globals.items()}
    monkeypatch.setattr(svi_module, "step_size", lambda spec, t: 1.0)
    svi.step(1)
    expected = _full_step(problem, start, 1.0)
    for n in expected:
        np.testing.assert_allclose(svi.globals[n], expected[n], rtol=1e-10, atol=1e-10)


def test_svi_step_is_the_damped_step_towards_the_scaled_minibatch_optimum():
    problem = bound("gmm", ScheduleSpec("svi", batch=68, ramp=False))
    svi = SVI(problem, np.random.default_rng(0))
    svi.start(sweeps=1)
    before = {n: v.copy() for n, v in svi.globals.items()}
    svi.batches = Minibatches(272, 68, np.random.default_rng(5))
    groups = Minibatches(272, 68, np.random.default_rng(5)).next()
    sub, state = svi.bind(groups)
    svi.e_step(sub, state)
    data = data_factors(sub, svi.plan)
    rho = svi_module.step_size(svi.spec, 1)
    for n in svi.plan.globals:  # the target η + (N/|B|) Σ m_n, each global in turn
        global_step(sub, state, n, 272 / 68, 1.0, data)
    targets = {n: state.natural[n] for n in svi.plan.globals}
    svi.step(1)
    # the first global (pi) moves exactly by (1 - ρ) λ + ρ λ̂
    np.testing.assert_allclose(svi.globals["pi"], (1 - rho) * before["pi"] + rho * targets["pi"], rtol=1e-12)


def test_minibatch_estimates_average_to_the_full_elbo_over_a_partition():
    """z depends on the globals only, so each group's E-step is exact in any batch: the scaled
    estimates of the four quarters average to the ELBO of all the data at the same globals."""
    problem = bound("gmm", ScheduleSpec("svi", batch=68))
    svi = SVI(problem, np.random.default_rng(0))
    svi.start()
    order = np.random.default_rng(2).permutation(272)
    estimates = []
    for quarter in order.reshape(4, 68):
        sub, state = svi.bind(quarter)
        svi.e_step(sub, state)
        estimates.append(svi.estimate(sub, state, 4.0))
    full = problem.elbo(svi.final_state())
    assert np.mean(estimates) == pytest.approx(full, rel=1e-10)
    assert np.std(estimates) > 1.0  # each one is only an estimate


def test_gmm_under_svi_reaches_the_batch_bound():
    post = ppl.load("models/gmm.vim").infer("models/gmm.csv", seed=0, schedule="svi(batch=100, kappa=0.55)")
    assert post.elbo == pytest.approx(GMM_BOUND, rel=5e-3)


def test_batch_inner_loop_keeps_the_elbo_rising():
    """Carried over (`warm=1`), an inner loop of the locals is coordinate ascent."""
    problem = bound("lda", ScheduleSpec("batch", inner=20, warm=True))
    from ppl.infer.engine import Options, run
    result = run(problem, Options(seed=0, max_iter=15))
    assert np.all(np.diff(result.trace) >= -1e-9 * np.abs(result.trace[1:]))
    assert result.trace[-1] > result.trace[0]


def test_a_model_whose_locals_sit_on_two_group_plates_is_refused():
    text = """
    data g: cat(G)[N]
    data h: cat(H)[N]
    data y: real[N]
    for i in 1..G { a[i] ~ Normal(0, 1) }
    for j in 1..H { b[j] ~ Normal(0, 1) }
    for n in 1..N { y[n] ~ Normal(a[g[n]] + b[h[n]], 1) }
    """
    data = {"g": np.array([1, 2, 1, 2]), "h": np.array([1, 1, 2, 2]), "y": np.array([0.1, 0.2, 0.3, 0.4])}
    with pytest.raises(ModelError) as info:
        ppl.compile(text).infer(data, schedule="svi(batch=1)")
    assert info.value.code == "E500" and "two group plates" in str(info.value)


def test_fit_locals_stops_when_the_locals_settle():
    problem = bound("gmm")
    state = initialise(problem, np.random.default_rng(0))
    # z depends on the globals only: the second sweep changes nothing
    assert fit_locals(problem, state, ["z"], 50, 1e-12) == 2


# ---- SSMF (Hoffman 2014)

def test_ssmf_message_is_unbiased_for_the_counts_when_the_locals_ignore_the_draw():
    """E_u[F⁻¹ Jᵀ c] = F⁻¹ ∇²A c = c (eq. 27): with a β-independent local q the reparameterised
    step (eq. 26) and SSMF-A's (eq. 29) agree in expectation (eq. 30 vanishes)."""
    from ppl.infer.schedule.sampled import pin_draws, ssmf_message
    from ppl.infer.state import State
    from ppl.families import Dirichlet
    alpha = np.array([[2.0, 0.7, 3.5, 1.2]])
    counts = np.array([[3.0, 0.0, 5.0, 1.0]])
    state = State({"beta": Dirichlet(4)}, {"beta": (1,)})
    state.set("beta", alpha - 1.0)
    rng = np.random.default_rng(0)
    messages = np.array([ssmf_message(alpha - 1.0, counts, pin_draws(state, ["beta"], rng, True)["beta"])[0]
                         for _ in range(20000)])
    se = messages.std(axis=0) / np.sqrt(len(messages))
    assert np.all(np.abs(messages.mean(axis=0) - counts[0]) < 4 * se)
    assert messages.std(axis=0).max() > 1.0  # each draw's message is noisy; only its mean is c


def test_gibbs_e_step_matches_exact_enumeration_on_a_tiny_document(tmp_path):
    """One document of three tokens, K = 2 topics pinned at β: the Gibbs E-step's averaged
    conditionals of z equal p(z_t | w, β) with θ integrated out, by enumerating 2³ assignments."""
    import itertools
    from scipy.special import gammaln
    from ppl.infer.schedule.sampled import gibbs
    text = open("models/lda.vim").read().replace("const K = 10", "const K = 2")
    path = tmp_path / "doc.csv"
    path.write_text("doc,word\n1,a\n1,b\n1,a\n")
    model = ppl.compile(text, set={"alpha": 1.0})  # alpha = 0.1 mixes too slowly for a short chain
    dataset = model.bind(str(path))
    problem = build_problem(model.checked, dataset, model.analyze(dataset), ScheduleSpec("ssmf_a", batch=1))
    beta = np.array([[0.8, 0.2], [0.3, 0.7]])
    state = initialise(problem, np.random.default_rng(0))
    state.set("beta", state.natural["beta"], moments=np.log(beta))
    gibbs(problem, state, ["z", "theta"], 6000, np.random.default_rng(1))
    words, alpha = np.array([0, 1, 0]), 1.0
    weights, marginal = [], np.zeros((3, 2))
    for z in itertools.product(range(2), repeat=3):
        n = np.bincount(z, minlength=2)
        log_p = np.sum(np.log(beta[list(z), words])) + np.sum(gammaln(alpha + n)) - gammaln(2 * alpha + 3)
        weights.append(np.exp(log_p))
        marginal[np.arange(3), list(z)] += weights[-1]
    marginal /= np.sum(weights)
    np.testing.assert_allclose(state.moments("z"), marginal, atol=0.01)


@pytest.mark.parametrize("schedule", ["ssmf(batch=20)", "ssmf_a(batch=20, estep=gibbs, inner=10)"])
def test_ssmf_runs_lda_and_keeps_valid_topics(schedule):
    post = ppl.load("models/lda.vim").infer("models/lda.csv", seed=0, schedule=schedule, max_iter=15)
    assert np.isfinite(post.elbo)
    batch = -71955.8  # batch VMP on the same data: the sampled steps land within 5% of it
    assert post.elbo > batch * 1.05


def test_ssmf_refuses_a_global_it_cannot_reparameterise():
    """Wishart and MvNormal globals (models/gmm.vim without its `@joint`, which ssmf_a refuses
    too: E284, tests/test_fuzz_schedules.py)."""
    model = ppl.compile(Path("models/gmm.vim").read_text().replace(" @joint", ""))
    with pytest.raises(ModelError) as info:
        model.infer("models/gmm.csv", seed=0, schedule="ssmf(batch=50)", max_iter=3)
    assert info.value.code == "E500" and "ssmf_a" in str(info.value)


def test_svi_steps_on_a_count_weighted_corpus_equal_the_token_expanded_ones():
    """The same documents each step and the same globals to start: the bag-of-words rows
    (models/lda_counts) and one row per token (models/lda) give the same topics."""
    runs = []
    for name in ("lda_counts", "lda"):
        problem = bound(name, ScheduleSpec("svi", batch=25, local_tol=1e-13, inner=2000))
        svi = SVI(problem, np.random.default_rng(3))
        svi.globals = {"beta": np.full((10, problem.dataset.sizes["V"]), 0.5)
                       + np.linspace(0, 1, 10 * problem.dataset.sizes["V"]).reshape(10, -1)}
        for t in range(1, 4):
            svi.step(t)
        runs.append(svi.globals["beta"])
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("floor", [10_000, 0], ids=["one chunk", "a minibatch's rows a chunk"])
def test_svi_streamed_from_the_file_equals_svi_in_memory(floor, monkeypatch):
    """`stream=True` reads each step's documents from the indexed file: the same steps, the same
    topics and the same final ELBO (one more pass over the file, in one chunk or, without the
    10,000-row floor, in chunks of a minibatch's 1,479 rows) as the data in memory."""
    monkeypatch.setattr(svi_module, "STREAMED_ROWS", floor)
    model = ppl.load("models/lda_counts.vim")
    kwargs = dict(seed=0, schedule="svi(batch=20, passes=2)")
    streamed = model.infer("models/lda_counts.csv", stream=True, **kwargs)
    memory = model.infer("models/lda_counts.csv", **kwargs)
    np.testing.assert_allclose(streamed["beta"].natural, memory["beta"].natural, rtol=1e-12, atol=1e-12)
    assert streamed.elbo == pytest.approx(memory.elbo, rel=1e-12)
    assert "z" not in streamed and "z" in memory  # a streamed posterior keeps the globals only


def test_a_streamed_bind_frees_the_problems_bound_before():
    """Memory O(|B|): a problem bound for one step is freed when the next is bound, with the
    collector off (a reference cycle in it would keep every step's problem until the collector
    ran: 1.4 GB at 10M LDA tokens, not 0.45)."""
    import gc
    import weakref

    from ppl.api import _stream
    from ppl.infer.build import build_problem
    from ppl.lang.schedule import parse_schedule
    model = ppl.load("models/lda_counts.vim")
    spec = parse_schedule("svi(batch=20)")
    with _stream(model.checked, "models/lda_counts.csv", spec, None) as source:
        first = source.take(np.arange(20))
        svi = svi_module.SVI(build_problem(model.checked, first, model.analyze(first), spec),
                             np.random.default_rng(0), source)
        enabled = gc.isenabled()
        gc.disable()  # the collector's own runs must not hide a missing collection
        try:
            problem, state = svi.bind(np.arange(20, 40))
            gone = weakref.ref(problem)
            del problem, state
            svi.bind(np.arange(40, 60))
            assert gone() is None
        finally:
            if enabled:
                gc.enable()


def test_the_final_pass_cuts_the_groups_into_runs_of_at_most_a_budget_of_rows():
    sizes = np.array([3, 5, 2, 7, 1, 9, 4])
    parts = svi_module.chunks(sizes, 8)
    np.testing.assert_array_equal(np.concatenate(parts), np.arange(len(sizes)))
    assert [sizes[p].sum() for p in parts] == [8, 2, 8, 9, 4]  # a group of 9 rows alone
    assert len(svi_module.chunks(np.broadcast_to(np.int64(1), (10,)), 3)) == 4  # one row per group


@pytest.mark.parametrize("data, schedule, code", [("models/gmm.csv", None, "E335"),
                                                  ({"x1": [0.0], "x2": [1.0]}, "svi(batch=2)", "E336")])
def test_stream_needs_a_stochastic_schedule_and_a_file(data, schedule, code):
    from ppl.diagnostics import OptionError
    with pytest.raises(OptionError) as info:
        ppl.load("models/gmm.vim").infer(data, stream=True, schedule=schedule)
    assert info.value.code == code


# ---- sequences: a chain per group (tests/test_hmm.py covers the batch chain and FFBS itself)

CASINO_BATCH = -2655.672782  # batch VMP on models/casino (docs/tutorials/casino.md)


@pytest.mark.parametrize("schedule, within", [("svi(batch=4)", 0.005),
                                               ("ssmf_a(batch=4, estep=gibbs, inner=20)", 0.005)])
def test_hmm_sessions_are_the_groups_of_a_stochastic_schedule(schedule, within):
    """models/casino: twelve sessions, one chain each; a step takes whole sessions (forward–
    backward in the mean-field E-step, whole paths drawn by FFBS in the Gibbs E-step)."""
    model = ppl.load("models/casino.vim")
    report = model.check_report("models/casino.csv", schedule=schedule)
    assert report["schedule"]["group_plate"] == "S" and report["schedule"]["group_column"] == "session"
    post = model.infer("models/casino.csv", seed=0, schedule=schedule)
    assert post.elbo == pytest.approx(CASINO_BATCH, rel=within)


def test_one_chain_over_all_rows_is_not_cut_into_minibatches():
    with pytest.raises(ModelError) as info:
        ppl.load("models/hmm.vim").infer("models/hmm.csv", seed=0, schedule="svi(batch=4)")
    assert info.value.code == "E500" and "@sequences" in str(info.value)
