"""Forward–backward and FFBS on discrete chains (`ppl.families.forward_backward`,
`CategoricalChain`) against brute-force enumeration of every state sequence, written here.

- marginals, pairwise marginals and log Z equal enumeration to 1e-12 on short chains
  (T ≤ 6, K = 3), several sequences of unequal length processed together, with a transition
  per step or one shared by every step (an HMM's);
- the entropy log Z − λ·E[t] equals −Σ q log q over the enumeration; ∇A = E[t] by finite
  differences; the inverse map;
- FFBS draws follow the exact joint law (chi-square, fixed seed), per sequence;
- potentials hundreds of nats apart (weights exp rounds to 0, products that underflow) still
  give the enumeration's answer.
"""

import itertools

import numpy as np
import pytest
from scipy import stats

from ppl.families import CategoricalChain
from ppl.families import forward_backward as fb

K = 3
LENGTHS = (4, 6, 1, 3)


def random_natural(lengths, rng, scale=1.5, shared=False):
    """Random potentials; `shared`: one transition matrix at every step (an HMM's E[log A])."""
    family = CategoricalChain(K, tuple(lengths))
    total = sum(lengths)
    return family, family.natural(unary=scale * rng.normal(size=(total, K)),
                                  pair=scale * rng.normal(size=(1 if shared else total, K, K)))


def enumerate_chain(unary, pair):
    """Every state sequence of one chain: (states (K^L, L), normalised probabilities, log Z)."""
    length = unary.shape[0]
    states = np.array(list(itertools.product(range(K), repeat=length)))
    logp = unary[np.arange(length), states].sum(axis=1)
    if length > 1:
        logp += pair[np.arange(1, length), states[:, :-1], states[:, 1:]].sum(axis=1)
    log_z = np.logaddexp.reduce(logp)
    return states, np.exp(logp - log_z), log_z


def each_sequence(family, nat):
    """Per sequence: (index, rows, enumeration (states, probabilities, log Z))."""
    params = family.params(nat)
    start = 0
    for s, length in enumerate(family.lengths):
        rows = slice(start, start + length)
        yield s, rows, enumerate_chain(params["unary"][rows], params["pair"][rows])
        start += length


# several chains and one, by banded solves (`chain_band`), or by the scaled recursions: blocked
# products (`chain_scan`) or step by step (`_many_chains`, its views taken all at once or two
# steps at a time)
@pytest.mark.parametrize("lengths, chunk", [(LENGTHS, fb.CHUNK), ((6,), fb.CHUNK), ((6,), 2)])
@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("banded", [True, False])
def test_marginals_pairwise_and_log_z_equal_enumeration(shared, lengths, chunk, banded, monkeypatch):
    monkeypatch.setattr(fb, "CHUNK", chunk)
    monkeypatch.setattr(fb, "BANDED", banded)
    family, nat = random_natural(lengths, np.random.default_rng(0), shared=shared)
    assert fb._weights(family.params(nat)["pair"], family._chains)[0].ndim == (2 if shared else 3)
    mean = family.to_mean(nat)
    log_z = family.log_partition(nat)
    for s, rows, (states, p, exact_log_z) in each_sequence(family, nat):
        length = states.shape[1]
        assert abs(log_z[s] - exact_log_z) < 1e-12
        marginals = np.array([[p[states[:, t] == k].sum() for k in range(K)] for t in range(length)])
        np.testing.assert_allclose(mean[rows, :K], marginals, rtol=0, atol=1e-12)
        pairwise = np.zeros((length, K, K))
        for t in range(1, length):
            np.add.at(pairwise[t], (states[:, t - 1], states[:, t]), p)
        np.testing.assert_allclose(mean[rows, K:].reshape(length, K, K), pairwise, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shared", [False, True])
def test_entropy_is_log_z_minus_expected_potentials(shared):
    family, nat = random_natural(LENGTHS, np.random.default_rng(1), shared=shared)
    entropy = family.entropy(nat)
    for s, rows, (_, p, _) in each_sequence(family, nat):
        assert abs(entropy[s] - (-np.sum(p * np.log(p)))) < 1e-12
    mean, total = family.solve(nat)
    assert abs(total - entropy.sum()) < 1e-12


def test_gradient_of_log_partition_is_the_mean():
    rng = np.random.default_rng(2)
    family, nat = random_natural((5, 3), rng)
    mean = family.to_mean(nat)
    h = 1e-6
    starts = family.starts()
    for _ in range(20):
        row, col = rng.integers(nat.shape[0]), rng.integers(nat.shape[1])
        if starts[row] and col >= K:
            continue  # a sequence's first element has no pair block
        up, down = nat.copy(), nat.copy()
        up[row, col] += h
        down[row, col] -= h
        derivative = (family.log_partition(up).sum() - family.log_partition(down).sum()) / (2 * h)
        assert abs(derivative - mean[row, col]) < 1e-8


def test_inverse_map_gives_the_same_chain():
    rng = np.random.default_rng(3)
    family, nat = random_natural(LENGTHS, rng)
    mean = family.to_mean(nat)
    back = family.to_natural(mean)
    np.testing.assert_allclose(family.to_mean(back), mean, atol=1e-12)
    np.testing.assert_allclose(family.log_partition(back), 0.0, atol=1e-12)


def test_zero_probability_transitions_stay_exact():
    """log A = −∞ entries (a left-to-right chain) give exact zeros, no NaN."""
    family = CategoricalChain(K, (5,))
    upper = np.triu(np.ones((K, K)))
    with np.errstate(divide="ignore"):
        nat = family.natural(unary=np.random.default_rng(4).normal(size=(5, K)), pair=np.log(upper))
    mean = family.to_mean(nat)
    assert np.all(np.isfinite(mean))
    states, p, log_z = enumerate_chain(family.params(nat)["unary"], family.params(nat)["pair"])
    assert abs(family.log_partition(nat)[0] - log_z) < 1e-12
    assert np.all(mean[1:, K:].reshape(4, K, K)[:, np.tril_indices(K, -1)[0], np.tril_indices(K, -1)[1]] == 0)


@pytest.mark.parametrize("lengths", [(4,), (3, 2, 4)])
def test_ffbs_draws_follow_the_exact_joint_law(lengths):
    rng = np.random.default_rng(5)
    family, nat = random_natural(lengths, rng, scale=1.0)
    draws = family.sample(nat, np.random.default_rng(6), 40000)
    assert draws.shape == (40000, sum(lengths))
    for _, rows, (states, p, _) in each_sequence(family, nat):
        length = states.shape[1]
        codes = np.ravel_multi_index(draws[:, rows].T, (K,) * length)
        observed = np.bincount(codes, minlength=K ** length)
        expected = p * len(codes)
        keep = expected >= 5  # pool the rare sequences into one cell
        table = np.append(observed[keep], observed[~keep].sum())
        target = np.append(expected[keep], expected[~keep].sum())
        table, target = (table, target) if target[-1] > 0 else (table[:-1], target[:-1])
        statistic, pvalue = stats.chisquare(table, target)
        assert pvalue > 1e-3, (length, statistic)


def test_ffbs_rejects_nothing_it_should_keep():
    """A chain forced through one path is drawn exactly on it."""
    family = CategoricalChain(K, (4,))
    unary = np.full((4, K), -np.inf)
    path = [2, 0, 1, 1]
    unary[np.arange(4), path] = 0.0
    nat = family.natural(unary=unary, pair=np.zeros((4, K, K)))
    np.testing.assert_array_equal(family.sample(nat, np.random.default_rng(0), 5), np.tile(path, (5, 1)))


def test_a_chain_is_solved_alike_alone_and_next_to_longer_ones():
    """The same chain alone or before and after longer ones gives the same marginals and log Z."""
    rng = np.random.default_rng(7)
    nat = rng.normal(size=(6, K + K * K))
    alone, alone_z = fb.forward_backward(nat[:3], K, fb.Chains.of([3]))
    for lengths, rows, s in (((3, 6), slice(0, 3), 0), ((6, 3), slice(6, 9), 1)):
        both = np.concatenate([nat[:3], rng.normal(size=(6, K + K * K))] if s == 0 else
                              [rng.normal(size=(6, K + K * K)), nat[:3]])
        mean, log_z = fb.forward_backward(both, K, fb.Chains.of(lengths))
        np.testing.assert_allclose(mean[rows], alone, rtol=0, atol=1e-14)
        assert abs(log_z[s] - alone_z[0]) < 1e-12


@pytest.fixture
def scaled_only(monkeypatch):
    """The scaled recursions alone, without the banded solves tried first."""
    monkeypatch.setattr(fb, "BANDED", False)


@pytest.fixture
def short_chains_blocked(monkeypatch, scaled_only):
    """The blocked pass on a chain of any length (by default it takes 32 steps or more: `pays`)."""
    monkeypatch.setattr(fb.chain_scan, "FEWEST_STEPS", 2)


@pytest.mark.parametrize("steps, k, blocked", [(32, 3, True), (31, 3, False), (200, 12, True), (200, 13, False)])
def test_one_chain_takes_the_blocked_pass_where_it_pays(steps, k, blocked, monkeypatch, scaled_only):
    """A chain alone runs the blocked products from 32 steps and up to 12 states (their K³ a step
    outgrows the recursions' K² beyond), the step-by-step recursions otherwise."""
    calls = []
    monkeypatch.setattr(fb, "_blocked", lambda *a, run=fb._blocked: calls.append(1) or run(*a))
    rng = np.random.default_rng(15)
    nat = np.concatenate([rng.normal(size=(steps, k)), np.tile(rng.normal(size=k * k), (steps, 1))], axis=1)
    mean, _ = fb.forward_backward(nat, k, fb.Chains.of([steps]))
    assert bool(calls) is blocked
    np.testing.assert_allclose(mean[:, :k].sum(axis=1), 1.0, rtol=0, atol=1e-14)


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("length", [2, 9, 700])
@pytest.mark.parametrize("bound", [0.0, fb.chain_scan.BOUND])
def test_blocked_products_on_one_chain_agree_with_the_step_by_step_recursions(length, shared, bound, monkeypatch,
                                                                              short_chains_blocked):
    """One chain alone runs `chain_scan` (blocks, doublings), its products inside a block divided
    by their sums at every step (`BOUND` 0) or at the block's end; beside a second chain the same
    potentials run step by step (`_many_chains`): marginals to 1e-14, log Z to 1e-14 relative."""
    monkeypatch.setattr(fb.chain_scan, "BOUND", bound)
    spans = []
    monkeypatch.setattr(fb.chain_scan, "scan", lambda *a, run=fb.chain_scan.scan: spans.append(a[3]) or run(*a))
    blocked = []
    monkeypatch.setattr(fb, "_blocked", lambda *a, run=fb._blocked: blocked.append(1) or run(*a))
    rng = np.random.default_rng(12)
    family, nat = random_natural((length, 3), rng, scale=4.0, shared=shared)
    mean, log_z = fb.forward_backward(nat, K, family._chains)
    assert not blocked
    alone, alone_z = fb.forward_backward(nat[:length], K, fb.Chains.of([length]))
    assert blocked and spans[0] < 60  # every weight > 0: the products are divided once a block
    np.testing.assert_allclose(alone, mean[:length], rtol=0, atol=1e-14)
    assert abs(alone_z[0] - log_z[0]) <= 1e-14 * abs(log_z[0])


def test_a_blocked_pass_that_breaks_the_recursion_is_redone(monkeypatch, short_chains_blocked):
    """A blocked pass whose forward message at one step is off by 1e-10 (as a product that lost a
    path would leave it) still sums to 1 everywhere; `_consistent` sees its pairwise marginals
    disagree with its marginals, and the log-domain pass gives the answer."""
    calls = []
    real, scan = fb._log_forward_backward, fb.chain_scan.scan

    def off(*args):
        alpha, beta, norm = scan(*args)
        alpha[5] += np.array([1e-10, -1e-10, 0.0])
        return alpha, beta, norm

    monkeypatch.setattr(fb, "_log_forward_backward", lambda *a: calls.append(1) or real(*a))
    family, nat = random_natural((9,), np.random.default_rng(13), shared=True)
    exact = fb._log_forward_backward(np.asarray(nat, float), K, family._chains)
    monkeypatch.setattr(fb.chain_scan, "scan", off)
    mean, log_z = family._solve(nat)
    assert len(calls) == 2
    np.testing.assert_array_equal(mean, exact[0])


def test_evidence_against_transitions_beyond_e700_falls_back_to_log_sum_exp(monkeypatch):
    """A step where every path has weight below e^-700 underflows the scaled recursion; the
    log-sum-exp recursion takes over and still equals enumeration."""
    calls = []
    real = fb._log_forward_backward
    monkeypatch.setattr(fb, "_log_forward_backward", lambda *a: calls.append(1) or real(*a))
    family = CategoricalChain(K, (4,))
    unary = np.zeros((4, K))
    unary[0] = [0.0, -2000.0, -2000.0]  # z_1 = 0, surely
    unary[1] = [0.0, -2000.0, -2000.0]  # z_2 = 0 too, though 0 → 0 costs e^-800
    pair = np.zeros((4, K, K))
    pair[:, 0] = [-800.0, 0.0, 0.0]
    nat = family.natural(unary=unary, pair=pair)
    mean = family.to_mean(nat)
    states, p, log_z = enumerate_chain(unary, pair)
    assert calls and abs(family.log_partition(nat)[0] - log_z) < 1e-12
    marginals = np.array([[p[states[:, t] == k].sum() for k in range(K)] for t in range(4)])
    np.testing.assert_allclose(mean[:, :K], marginals, atol=1e-12)


def test_a_path_through_weights_below_e_minus_745_is_kept():
    """z_1 = 0; at t = 2 the evidence favours state 1 by 800 nats over state 0 (exp rounds that
    weight to 0) but 0 → 1 costs 1000 and the way through state 2 costs 500 more at t = 3: the
    path 0, 0, · carries the mass. Scaled weights would put it on state 2; the pass must not."""
    family = CategoricalChain(K, (3,))
    unary = np.array([[0.0, -np.inf, -np.inf], [-800.0, 0.0, -300.0], [0.0, 0.0, 0.0]])
    pair = np.array([[0.0, -1000.0, -400.0], [0.0, 0.0, 0.0], [-500.0, -500.0, -500.0]])
    nat = family.natural(unary=unary, pair=pair[None])
    mean, log_z = family.to_mean(nat), family.log_partition(nat)
    states, p, exact_log_z = enumerate_chain(unary, np.broadcast_to(pair, (3, K, K)))
    assert abs(log_z[0] - exact_log_z) < 1e-12 * abs(exact_log_z)
    marginals = np.array([[p[states[:, t] == k].sum() for k in range(K)] for t in range(3)])
    np.testing.assert_allclose(mean[:, :K], marginals, rtol=0, atol=1e-12)
    assert mean[1, 0] > 0.999


@pytest.mark.parametrize("lengths, name", [((3,), "_blocked"), ((3, 2), "_many_chains")])
def test_a_normaliser_that_underflows_within_the_spread_falls_back_to_log_sum_exp(lengths, name, monkeypatch,
                                                                                 short_chains_blocked):
    """Potentials that span exactly `SPREAD` nats, so the scaled pass runs: state 0 has no
    successor, and the path 1, 1 carries e^-1400, which rounds to 0, so step 3's normaliser is 0.
    Alone (blocked products, `_blocked`) or beside a second chain (step by step, `_many_chains`)
    the pass is redone in the log domain and equals enumeration."""
    calls, scaled = [], []
    real = fb._log_forward_backward
    monkeypatch.setattr(fb, "_log_forward_backward", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(fb, name, lambda *a, run=getattr(fb, name): scaled.append(run(*a)) or scaled[-1])
    family = CategoricalChain(K, lengths)
    unary = np.full((sum(lengths), K), -np.inf)
    unary[:, :2] = [0.0, -fb.SPREAD]
    unary[2] = [0.0, 0.0, -np.inf]
    unary[3:, :2] = np.random.default_rng(8).normal(size=(sum(lengths) - 3, 2))
    with np.errstate(divide="ignore"):
        pair = np.log([[0.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    nat = family.natural(unary=unary, pair=pair[None])
    mean, log_z = family.to_mean(nat), family.log_partition(nat)
    assert len(calls) == 2 and scaled == [None, None]  # each solve tried the scaled pass, then fell back
    for s, rows, (states, p, exact_log_z) in each_sequence(family, nat):
        assert abs(log_z[s] - exact_log_z) < 1e-12 * max(1.0, abs(exact_log_z))
        marginals = np.array([[p[states[:, t] == k].sum() for k in range(K)] for t in range(states.shape[1])])
        np.testing.assert_allclose(mean[rows, :K], marginals, rtol=0, atol=1e-12)
    assert abs(log_z[0] - (-2 * fb.SPREAD + np.log(2.0))) < 1e-12 * 2 * fb.SPREAD


@pytest.mark.parametrize("spread", [5, 1000])  # the scaled recursions, and the log-sum-exp ones
@pytest.mark.parametrize("lengths", [(4,), (4, 2)])
def test_integer_potentials_give_the_answer_of_their_float_values(lengths, spread):
    """Integer natural parameters (forward_backward called directly, not through the family) are
    read as their float values: a per-step transition of integers once overflowed (the −∞-free
    minimum's initial +∞ converted to an integer), and the log-domain messages were truncated."""
    total = sum(lengths)
    nat = np.random.default_rng(3).integers(-3, 4, size=(total, K + K * K))
    nat[0, :K] = [spread, -spread, 0]
    chains = fb.Chains.of(lengths)
    mean, log_z = fb.forward_backward(nat, K, chains)
    want, want_z = fb.forward_backward(nat.astype(float), K, chains)
    np.testing.assert_array_equal(mean, want)
    np.testing.assert_array_equal(log_z, want_z)


@pytest.mark.parametrize("lengths", [[], [3, 0], [2, -1]])
def test_chains_of_no_sequence_or_an_empty_one_is_refused_clearly(lengths):
    """A chain layout needs at least one sequence and every sequence at least one step."""
    with pytest.raises(ValueError, match="at least one"):
        fb.Chains.of(lengths)


def test_buffers_kept_between_calls_change_nothing_and_are_not_pickled():
    """A layout keeps its recursions' buffers for the next call (`Chains.spare`): a second solve
    of other potentials on them equals a solve on fresh buffers, and a pickled layout leaves them
    behind (a family shipped to a worker carries no scratch arrays)."""
    import pickle
    rng = np.random.default_rng(11)
    for lengths in ((7,), LENGTHS):
        chains = fb.Chains.of(lengths)
        first, second = (rng.normal(size=(sum(lengths), K + K * K)) for _ in range(2))
        fb.forward_backward(first, K, chains)
        assert K in chains.spare
        reused = fb.forward_backward(second, K, chains)
        fresh = fb.forward_backward(second, K, fb.Chains.of(lengths))
        for a, b in zip(reused, fresh):
            np.testing.assert_array_equal(a, b)
        copy = pickle.loads(pickle.dumps(chains))
        assert copy.spare == {} and np.array_equal(copy.index, chains.index)
