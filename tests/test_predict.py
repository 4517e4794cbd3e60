"""Prediction and held-out scoring (`Posterior.predict`, `Posterior.score`, `ppl predict`,
`ppl score`), each against a hand computation from q: the logistic predictive by adaptive
quadrature, mixture responsibilities and LDA fold-in by their textbook updates, a new group's
population-level q, and the exact posterior predictive density of a conjugate Normal model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import ppl
from ppl.cli import main

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # damping notes of the ncvmp fits


def _fit(name, frame, **options):
    return ppl.load(f"models/{name}.vim").infer(frame, seed=0, **options)


def _quadrature(mean, var, f):
    """E[f(η)], η ~ N(mean, var), by adaptive quadrature (an independent reference)."""
    sd = np.sqrt(var)
    value, _ = integrate.quad(lambda t: f(t) * stats.norm.pdf(t, mean, sd), mean - 30 * sd, mean + 30 * sd,
                              epsabs=1e-13, epsrel=1e-13, limit=200)
    return value


@pytest.fixture(scope="module")
def logistic():
    frame = pd.read_csv("models/logistic_regression.csv")
    return _fit("logistic_regression", frame.iloc[:450]), frame.iloc[450:]


def test_logistic_predictive_is_the_expected_sigmoid_under_q(logistic):
    post, test = logistic
    pred = post.predict(test.drop(columns="y"))
    mean, cov = post["w"].family.mean_cov(post["w"].natural)
    x = test[[f"x{i}" for i in range(1, 32)]].to_numpy()
    expected = [_quadrature(row @ mean, row @ cov @ row, special.expit) for row in x]
    np.testing.assert_allclose(pred["y"]["mean"], expected, rtol=0, atol=1e-8)
    p = pred["y"]["mean"].to_numpy()
    np.testing.assert_allclose(pred["y"]["sd"], np.sqrt(p * (1 - p)), atol=1e-12)


def test_logistic_score_is_the_log_predictive_probability_of_the_label(logistic):
    post, test = logistic
    score = post.score(test)
    p = post.predict(test.drop(columns="y"))["y"]["mean"].to_numpy()
    y = test["y"].to_numpy()
    np.testing.assert_allclose(score.rows, np.where(y == 1, np.log(p), np.log1p(-p)), atol=1e-10)
    assert score.count == len(test) and score.total == pytest.approx(score.rows.sum())


def test_a_loaded_posterior_predicts_as_the_fitted_one(logistic, tmp_path):
    post, test = logistic
    post.save(tmp_path / "post.json")
    back = ppl.Posterior.load(tmp_path / "post.json", "models/logistic_regression.vim")
    new = test.drop(columns="y")
    np.testing.assert_array_equal(back.predict(new)["y"]["mean"], post.predict(new)["y"]["mean"])


def test_only_the_empty_cells_are_predicted(logistic):
    post, test = logistic
    new = test.copy()
    new["y"] = new["y"].astype(float)
    new.iloc[::2, new.columns.get_loc("y")] = np.nan
    pred = post.predict(new)["y"]
    assert pred["mean"].isna().to_numpy().tolist() == [i % 2 == 1 for i in range(len(new))]


def _nw_responsibilities(post, x):
    """Bishop (10.46)–(10.49), (10.64)–(10.66): r_nk from q(π) and the Normal–Wishart q(μ_k, Λ_k)."""
    group = post.joint[0]
    p = group.family.params(group.natural)
    alpha = post["pi"].family.params(post["pi"].natural)["alpha"]
    d = x.shape[1]
    log_pi = special.digamma(alpha) - special.digamma(alpha.sum())
    log_det = sum(special.digamma((p["dof"] + 1 - i) / 2) for i in range(1, d + 1)) + d * np.log(2) + \
        np.linalg.slogdet(p["scale"])[1]
    diff = x[:, None, :] - p["mean"][None]
    quad = d / p["beta"] + p["dof"] * np.einsum("nki,kij,nkj->nk", diff, p["scale"], diff)
    log_rho = log_pi + 0.5 * log_det - 0.5 * d * np.log(2 * np.pi) - 0.5 * quad
    return np.exp(log_rho - special.logsumexp(log_rho, axis=1, keepdims=True))


def test_mixture_memberships_are_the_responsibilities_from_q():
    frame = pd.read_csv("models/gmm.csv")
    post = _fit("gmm", frame.iloc[:240])
    new = frame.iloc[240:]
    pred = post.predict(new)
    np.testing.assert_allclose(pred["z"].mean, _nw_responsibilities(post, new.to_numpy()), atol=1e-10)
    assert set(pred.table()["variable"].str.partition("[")[0]) == {"z"}


def test_lda_fold_in_is_the_per_document_variational_inference_of_blei_et_al():
    frame = pd.read_csv("models/lda.csv")
    train = frame[frame["doc"] <= 30]
    test = frame[(frame["doc"] > 30) & (frame["doc"] <= 34) & frame["word"].isin(set(train["word"]))]
    post = _fit("lda", train, max_iter=60)
    pred = post.predict(test)
    assert pred.group_labels == ["31", "32", "33", "34"] and (pred.seen == -1).all()
    words = post.levels["word"]
    lam = post["beta"].family.params(post["beta"].natural)["alpha"]
    log_beta = special.digamma(lam) - special.digamma(lam.sum(axis=1, keepdims=True))
    for d, (_, doc) in enumerate(test.groupby("doc")):
        w = np.searchsorted(words, doc["word"].to_numpy())
        gamma = np.full(10, 0.1 + len(w) / 10)
        for _ in range(5000):  # φ_tk ∝ exp(E log θ_k + E log β_{k,w_t}); γ = α + Σ_t φ_t (Blei et al., Fig. 6)
            log_phi = special.digamma(gamma) - special.digamma(gamma.sum()) + log_beta[:, w].T
            phi = np.exp(log_phi - special.logsumexp(log_phi, axis=1, keepdims=True))
            new_gamma = 0.1 + phi.sum(axis=0)
            if np.max(np.abs(new_gamma - gamma)) < 1e-12:
                break
            gamma = new_gamma
        np.testing.assert_allclose(pred["theta"].mean[d], gamma / gamma.sum(), atol=1e-6)


def test_an_unseen_word_is_a_located_error():
    frame = pd.read_csv("models/lda.csv")
    train = frame[frame["doc"] <= 30]
    post = _fit("lda", train, max_iter=5)
    test = frame[frame["doc"] == 31].copy()
    test.iloc[3, test.columns.get_loc("word")] = "zyzzyva"
    with pytest.raises(ppl.DataError) as info:
        post.predict(test)
    assert info.value.code == "E350" and info.value.column == "word" and info.value.row == 4
    assert "`zyzzyva` is not a level of `word`" in info.value.message


@pytest.fixture(scope="module")
def hierarchical():
    frame = pd.read_csv("models/hierarchical_logistic.csv")
    return _fit("hierarchical_logistic", frame.iloc[:250]), frame.iloc[250:]


def _normal(post, name):
    p = post[name].family.params(post[name].natural)
    return p["mean"], 1 / p["precision"]


def test_a_new_group_gets_the_population_level_prediction(hierarchical):
    post, test = hierarchical
    new = test.copy()
    new["site"] = np.where(np.arange(len(new)) < 6, "site_new", new["site"])
    new["y"] = np.nan
    pred = post.predict(new)
    labels = pred.group_labels
    assert "site_new" in labels and pred.seen[labels.index("site_new")] == -1
    m_mu = {n: post[n].mean for n in ("mu_a", "mu_b")}
    # a new group with no rows: its prior's moments under q, E[μ] and Var[μ] + E[1/τ]
    # (tests/test_predict_new_group.py), E[1/τ] = rate/(shape − 1) with rate = E[τ]/sd², shape = E[τ]²/sd²
    spread = {m: post[m].sd ** 2 + post[t].mean / post[t].sd ** 2 / (post[t].mean ** 2 / post[t].sd ** 2 - 1)
              for m, t in (("mu_a", "tau_a"), ("mu_b", "tau_b"))}
    g = labels.index("site_new")
    np.testing.assert_allclose(pred["a"].mean[g], m_mu["mu_a"], atol=1e-12)
    np.testing.assert_allclose(pred["a"].sd[g], np.sqrt(spread["mu_a"]), rtol=1e-10)
    ma, va = _normal(post, "a")
    mb, vb = _normal(post, "b")
    trained = post.levels["site"]
    for n, (site, x) in enumerate(zip(new["site"], new["x"])):
        if site == "site_new":
            mean, var = m_mu["mu_a"] + m_mu["mu_b"] * x, spread["mu_a"] + x * x * spread["mu_b"]
        else:  # a site seen in training keeps its q(a_g), q(b_g)
            k = trained.index(site)
            mean, var = ma[k] + mb[k] * x, va[k] + x * x * vb[k]
        assert pred["y"]["mean"][n] == pytest.approx(_quadrature(mean, var, special.expit), abs=1e-8)


def test_a_new_group_with_observed_rows_is_fitted_to_them(hierarchical):
    post, test = hierarchical
    new = test.iloc[:40].copy()
    new["site"] = "site_new"
    pred = post.predict(new)
    assert pred["a"].mean.shape == (1,)
    ones = new.assign(y=1)
    assert post.predict(ones)["a"].mean[0] > pred["a"].mean[0] + 0.5  # all-positive rows pull a up


def test_a_seen_group_keeps_its_trained_q_whatever_its_new_rows_say(hierarchical):
    post, test = hierarchical
    new = test.iloc[:30].assign(site="site_b", y=1)  # 30 positive outcomes at a known site
    pred = post.predict(new)
    k = post.levels["site"].index("site_b")
    assert pred.group_labels == ["site_b"] and pred.seen.tolist() == [k]
    np.testing.assert_array_equal(pred["a"].natural[0], post["a"].natural[k])
    np.testing.assert_array_equal(pred["b"].natural[0], post["b"].natural[k])


KNOWN = """data y: real[N]
mu ~ Normal(1, 2)
y ~ Normal(mu, 4)
"""


@pytest.mark.parametrize("rule", ["", "@ncvmp", "@delta", "@laplace"])
def test_score_is_the_exact_posterior_predictive_density_of_a_conjugate_model(rule):
    """Normal(μ | 1, precision 2), y ~ N(μ, precision 4): q(μ) is the exact posterior N(m, s²), and
    p(y* | y) = N(y*; m, s² + 1/4). A GLM's rule on the Gaussian likelihood (its sites are exact)
    reaches the same q and predicts the same; scoring it was a KeyError (fuzz seed 5000036)."""
    rng = np.random.default_rng(3)
    y = rng.normal(0.4, 0.5, 25)
    post = ppl.compile(KNOWN.replace("Normal(mu, 4)", f"Normal(mu, 4) {rule}")).infer({"y": y}, seed=0)
    precision = 2 + 4 * len(y)
    m, s2 = (2 * 1 + 4 * y.sum()) / precision, 1 / precision
    new = rng.normal(0.4, 0.5, 7)
    score = post.score({"y": new})
    expected = stats.norm.logpdf(new, m, np.sqrt(s2 + 0.25))
    np.testing.assert_allclose(score.rows, expected, rtol=0, atol=1e-10)
    assert score.total == pytest.approx(expected.sum(), abs=1e-9)
    half = np.where(np.arange(7) % 2 == 0, new, np.nan)
    assert post.score({"y": half}).total == pytest.approx(expected[::2].sum(), abs=1e-9)
    pred = post.predict({"y": np.full(3, np.nan)})
    np.testing.assert_allclose(pred["y"]["mean"], m)
    np.testing.assert_allclose(pred["y"]["sd"], np.sqrt(s2 + 0.25))
    np.testing.assert_allclose(pred["y"]["q97.5"], stats.norm.ppf(0.975, m, np.sqrt(s2 + 0.25)), atol=1e-9)


def test_a_gamma_precision_predictive_has_variance_var_mu_plus_mean_of_one_over_tau():
    """models/gaussian: q(μ) q(τ) mean field; y* = μ + ε/√τ has mean E[μ] and variance
    Var[μ] + E[1/τ] = Var[μ] + b/(a − 1)."""
    post = _fit("gaussian", "models/gaussian.csv")
    pred = post.predict({"y": np.full(2, np.nan)})
    a, b = (post["tau"].family.params(post["tau"].natural)[k] for k in ("shape", "rate"))
    np.testing.assert_allclose(pred["y"]["mean"], post["mu"].mean, atol=1e-12)
    np.testing.assert_allclose(pred["y"]["sd"], np.sqrt(post["mu"].sd ** 2 + b / (a - 1)), rtol=1e-6)


def test_a_block_posterior_folds_in_its_lognormal_precision_as_the_gamma_of_its_moments():
    """A Gaussian block holds τ log-normal; the fold-in is mean field, with τ the Gamma of the
    log-normal's E[τ] and E[1/τ], so y* = x·w + ε/√τ has the log-normal's predictive variance
    xᵀΣx + E[1/τ], E[1/τ] = e^(s²)/m = (1 + v/m²)/m for mean m and variance v."""
    frame = pd.read_csv("models/linear_regression.csv")
    post = _fit("linear_regression", frame.iloc[:45], gaussian_block="all")
    assert post["tau"].family.name == "LogNormal"
    test = frame.iloc[45:]
    pred = post.predict(test.drop(columns="y"))
    m, v = float(post["tau"].mean), float(post["tau"].sd) ** 2
    mean, cov = post["w"].family.mean_cov(post["w"].natural)
    x = test[["x1", "x2", "x3"]].to_numpy()
    np.testing.assert_allclose(pred["y"]["mean"], x @ mean, atol=1e-10)
    np.testing.assert_allclose(pred["y"]["sd"], np.sqrt(np.einsum("nd,de,ne->n", x, cov, x) + (1 + v / m ** 2) / m),
                               rtol=1e-6)


def test_a_block_over_locals_of_the_rows_themselves_predicts_a_new_row_at_the_population_level():
    """eight_schools with `block (mu, theta)`: theta[j] is indexed by the rows themselves (no group
    column), so every new row is a new school, and one with no y reads theta ~ N(mu, 1/τ): the
    predictive is N(E[mu], Var(mu) + E[1/τ] + σ²), E[1/τ] = b/(a − 1). The block's spread
    indexed the training groups of such rows, of which there are none: an IndexError (fuzz seed
    5100441)."""
    text = Path("models/eight_schools.vim").read_text() + "block (mu, theta)\n"
    post = ppl.compile(text).infer("models/eight_schools.csv", seed=0)
    pred = post.predict({"y": np.array([np.nan, 1.0]), "sigma": np.array([10.0, 5.0])})
    q = post["tau"].family.params(post["tau"].natural)
    assert pred["y"]["mean"][0] == pytest.approx(float(post["mu"].mean), abs=1e-9)
    assert pred["y"]["sd"][0] == pytest.approx(np.sqrt(float(post["mu"].sd) ** 2 + q["rate"] / (q["shape"] - 1) + 100),
                                               rel=1e-9)
    assert np.isnan(pred["y"]["mean"][1])  # observed: not predicted


def test_a_matrix_with_other_columns_is_a_located_error(logistic):
    post, test = logistic
    with pytest.raises(ppl.DataError) as info:
        post.predict(test.drop(columns=["y", "x31"]))
    assert info.value.code == "E351" and "`w` has shape [30] with the new data but [31]" in info.value.message


def test_an_empty_multivariate_response_is_refused_at_its_statement():
    frame = pd.read_csv("models/gmm.csv")
    post = _fit("gmm", frame.iloc[:100], max_iter=20)
    new = frame.iloc[100:110].copy()
    new.iloc[2, 0] = np.nan
    with pytest.raises(ppl.ModelError) as info:
        post.predict(new)  # a row with one coordinate given and one empty
    assert info.value.code == "E352" and info.value.span.line == 36  # x[n] ~ MvNormal(...)
    with pytest.raises(ppl.ModelError) as info:
        post.score(frame.iloc[100:110])
    assert info.value.code == "E352" and "does not score its rows" in info.value.message


def test_an_empty_mixture_row_gets_the_student_t_predictive_of_each_coordinate():
    """Bishop (10.81): component k's predictive is a t with df ν_k + 1 − D and precision
    L_k = df β_k/(1 + β_k) W_k; an empty row's coordinate d has mean Σ_k r_k m_kd and variance
    Σ_k r_k ((L_k⁻¹)_dd df/(df − 2) + m_kd²) − mean², r the row's q(z) after the fold-in."""
    from ppl.infer.predict import model_of
    from ppl.infer.predict.fold import fold_in
    frame = pd.read_csv("models/gmm.csv")
    post = _fit("gmm", frame.iloc[:200], max_iter=50)
    new = frame.iloc[200:204].copy()
    new.iloc[:2] = np.nan
    pred = post.predict(new)
    fold = fold_in(post, model_of(post, None), new)
    key = "(mu, Lambda)"
    p = fold.problem.families[key].params(fold.state.natural[key])
    df = p["dof"] - 1.0
    cov = np.linalg.inv(p["scale"]) * ((1 + p["beta"]) / (df * p["beta"]))[:, None, None] * (df / (df - 2))[:, None, None]
    r = fold.state.moments("z")[:2, :len(df)]
    live = r > 0
    mean = np.where(live[:, :, None], r[:, :, None] * p["mean"][None], 0.0).sum(axis=1)
    second = np.where(live[:, :, None], r[:, :, None] * (np.diagonal(cov, axis1=1, axis2=2) + p["mean"] ** 2)[None], 0.0)
    np.testing.assert_allclose(pred.cells["x"]["mean"][:2], mean, rtol=1e-10)
    np.testing.assert_allclose(pred.cells["x"]["sd"][:2], np.sqrt(second.sum(axis=1) - mean ** 2), rtol=1e-10)
    assert np.isnan(pred.cells["x"]["mean"][2:]).all()


def test_cli_predict_and_score(tmp_path, capsys):
    frame = pd.read_csv("models/logistic_regression.csv")
    frame.iloc[:450].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[450:].drop(columns="y").to_csv(tmp_path / "new.csv", index=False)
    frame.iloc[450:].to_csv(tmp_path / "test.csv", index=False)
    model, post = "models/logistic_regression.vim", str(tmp_path / "post.json")
    assert main(["infer", model, str(tmp_path / "train.csv"), "--seed", "0", "--quiet", "--output", post]) == 0
    assert main(["predict", model, post, str(tmp_path / "new.csv"), "-o", str(tmp_path / "pred.csv")]) == 0
    table = pd.read_csv(tmp_path / "pred.csv")
    assert len(table) == 119 and table["variable"].iloc[0] == "y[1]"
    assert main(["score", model, post, str(tmp_path / "test.csv"), "-o", str(tmp_path / "s.csv")]) == 0
    out = capsys.readouterr().out
    rows = pd.read_csv(tmp_path / "s.csv")
    assert f"log predictive density {rows['lpd'].sum():.6f} over 119 cells" in out
    assert main(["predict", model, post, str(tmp_path / "new.csv"), "-o", str(tmp_path / "pred.txt")]) == 1
    assert "E321" in capsys.readouterr().err
    assert main(["score", model, post, str(tmp_path / "test.csv"), "--seed", "-1"]) == 1
    assert "E325" in capsys.readouterr().err


def test_a_poisson_predictive_has_the_lognormal_moments():
    """y ~ Poisson(exp(η)), η ~ N(m, v) under q: E[y] = e^(m + v/2), Var[y] = E[y] + (e^v − 1) e^(2m + v)."""
    frame = pd.read_csv("models/poisson_regression.csv")
    post = _fit("poisson_regression", frame.iloc[:80])
    test = frame.iloc[80:]
    pred = post.predict(test.drop(columns="y"))["y"]
    mean, cov = post["w"].family.mean_cov(post["w"].natural)
    x = test[["x1", "x2", "x3"]].to_numpy()
    m, v = x @ mean, np.einsum("nd,de,ne->n", x, cov, x)
    expected = np.exp(m + v / 2)
    np.testing.assert_allclose(pred["mean"], expected, rtol=1e-10)
    np.testing.assert_allclose(pred["sd"] ** 2, expected + np.expm1(v) * np.exp(2 * m + v), rtol=1e-8)
    for row, (lo, hi) in enumerate(zip(pred["q2.5"], pred["q97.5"])):  # quantiles of the mixture's CDF
        cdf = [_quadrature(m[row], v[row], lambda t, k=k: stats.poisson.cdf(k, np.exp(t))) for k in (lo - 1, lo, hi - 1, hi)]
        assert (lo == 0 or cdf[0] < 0.025) and cdf[1] >= 0.025 and cdf[2] < 0.975 <= cdf[3]


MIXTURE = """const K = 2
data x: real[N]
pi ~ Dirichlet(ones(K))
for k in 1..K {
  mu[k] ~ Normal(0, 0.01)
  tau[k] ~ Gamma(2, 2)
}
for n in 1..N {
  z[n] ~ Categorical(pi)
  x[n] ~ Normal(mu[z[n]], tau[z[n]])
}
"""


def test_a_mixture_scores_each_row_with_its_membership_from_the_globals_alone():
    """Held out, x_n informs no z_n: q(z_n) ∝ exp(E[log π]), and p(x_n) = Σ_k q(z_n = k) ∫∫
    N(x_n; μ, 1/τ) q(μ_k) q(τ_k), the τ integral by adaptive quadrature here."""
    rng = np.random.default_rng(0)
    x = np.r_[rng.normal(-2, 0.5, 100), rng.normal(3, 1, 60)]
    post = ppl.compile(MIXTURE).infer({"x": x}, seed=0)
    alpha = post["pi"].family.params(post["pi"].natural)["alpha"]
    log_w = special.digamma(alpha) - special.digamma(alpha.sum())
    w = np.exp(log_w - special.logsumexp(log_w))
    m, v = _normal(post, "mu")
    g = post["tau"].family.params(post["tau"].natural)
    new = np.array([-2.0, 0.4, 3.0])

    def density(y, k):
        return integrate.quad(lambda t: stats.norm.pdf(y, m[k], np.sqrt(v[k] + 1 / t)) *
                              stats.gamma.pdf(t, g["shape"][k], scale=1 / g["rate"][k]), 0, np.inf,
                              epsabs=1e-14, epsrel=1e-12, limit=200)[0]
    expected = [np.log(sum(w[k] * density(y, k) for k in range(2))) for y in new]
    np.testing.assert_allclose(post.score({"x": new}).rows, expected, atol=1e-7)
    pred = post.predict({"x": np.array([np.nan, 0.0])})
    np.testing.assert_allclose(pred["z"].mean[0], w, atol=1e-12)
    assert pred["x"]["mean"][0] == pytest.approx(w @ m, abs=1e-12)


def test_a_categorical_predictive_is_the_dirichlet_multinomial_one(tmp_path):
    """p ~ Dirichlet(1), c[n] ~ Categorical(p): q(p) = Dirichlet(1 + counts) is exact, and
    P(c* = k | c) = α_k / Σα. The score gathers each row's level; predict gives the moments and
    quantiles of the level number."""
    text = "const K = 3\ndata c: cat(K)[N]\np ~ Dirichlet(ones(K))\nfor n in 1..N {\n  c[n] ~ Categorical(p)\n}\n"
    codes = np.array([1, 1, 2, 3, 1, 2, 1])
    post = ppl.compile(text).infer({"c": codes}, seed=0)
    alpha = 1.0 + np.bincount(codes - 1, minlength=3)
    probs = alpha / alpha.sum()
    new = np.array([3, 1, 2, 2])
    score = post.score({"c": new})
    np.testing.assert_allclose(score.rows, np.log(probs[new - 1]), rtol=0, atol=1e-12)
    pred = post.predict({"c": np.full(2, np.nan)})
    levels = np.arange(1, 4)
    np.testing.assert_allclose(pred["c"]["mean"], probs @ levels, atol=1e-12)
    np.testing.assert_allclose(pred["c"]["sd"], np.sqrt(probs @ levels ** 2 - (probs @ levels) ** 2), atol=1e-12)
    assert list(pred["c"]["q2.5"]) == [1, 1] and list(pred["c"]["q97.5"]) == [3, 3]


def test_lda_words_are_scored_by_their_topic_mixture():
    """Every word of new documents held out: its predictive is Σ_k r_tk E[β_k] with r from the
    fold's q(z); the score is the gather of that table at the word, never a tokens × words array."""
    from ppl.infer.predict import model_of
    from ppl.infer.predict.fold import fold_in
    from ppl.infer.predict.predictive import response_mixture
    post = _fit("lda", "models/lda.csv", max_iter=20)
    new = pd.read_csv("models/lda.csv")
    new = new[new["doc"].isin([1, 2])]
    score = post.score(new)
    fold = fold_in(post, model_of(post, None), new, hold_all=True)
    mixture = response_mixture(fold.problem, fold.state, "word")
    alpha = fold.state.natural["beta"] + 1.0
    beta = alpha / alpha.sum(axis=1, keepdims=True)
    r = fold.state.moments("z")[:, :beta.shape[0]]
    codes = np.asarray(fold.new.dataset.arrays["word"])
    np.testing.assert_allclose(score.rows, np.log(np.sum(r * beta[:, codes].T, axis=1)), rtol=1e-12)
    np.testing.assert_allclose(mixture.logpdf(codes), np.log(mixture.probabilities()[np.arange(len(codes)), codes]),
                               rtol=1e-12)


def test_an_ordinal_predictive_is_the_expected_cumulative_logit_difference():
    """rating ~ OrderedLogistic(x·w, cut): P(y = k) = E_q[σ(φ_k − η) − σ(φ_{k−1} − η)], η ~ N(x·m, xᵀΣx),
    against adaptive quadrature; the score is its log at the observed rating, predict gives the
    moments of the rating under those probabilities."""
    post = _fit("ordinal_regression", "models/ordinal_regression.csv")
    rows = pd.read_csv("models/ordinal_regression.csv").iloc[:6]
    params = post["w"].family.params(post["w"].natural)
    mean, cov = params["mean"], np.linalg.inv(params["precision"])
    x = rows[["x1", "x2", "x3"]].to_numpy()
    cut = np.array([-np.inf, -2.0, -0.7, 0.7, 2.0, np.inf])
    probs = np.array([[_quadrature(xn @ mean, xn @ cov @ xn,
                                   lambda t, k=k: special.expit(cut[k] - t) - special.expit(cut[k - 1] - t))
                       for k in range(1, 6)] for xn in x])
    score = post.score(rows)
    np.testing.assert_allclose(score.rows, np.log(probs[np.arange(6), rows["rating"].to_numpy() - 1]), rtol=1e-8)
    empty = rows.assign(rating=np.nan)
    pred = post.predict(empty)
    np.testing.assert_allclose(pred["rating"]["mean"], probs @ np.arange(1, 6), rtol=1e-8)


def test_a_softmax_response_is_predicted_by_the_average_class_probabilities():
    """y ~ Categorical(softmax(w @ x[n])), q(w[k]) = N(m_k, Σ_k) per class: η_k = w[k]·x is
    N(x·m_k, xᵀΣ_k x) independently across classes, and P(y = k) = E[softmax(η)_k], checked by
    400,000 draws of η; the score is the log of the observed class's probability."""
    post = _fit("multinomial_logistic", "models/multinomial_logistic.csv")
    rows = pd.read_csv("models/multinomial_logistic.csv").iloc[::40]
    x = rows[["intercept", "sepal_length", "sepal_width", "petal_length", "petal_width"]].to_numpy()
    params = post["w"].family.params(post["w"].natural)
    cov = np.linalg.inv(params["precision"])
    m = x @ params["mean"].T
    v = np.einsum("nd,kde,ne->nk", x, cov, x)
    rng = np.random.default_rng(0)
    eta = m[:, None, :] + np.sqrt(v)[:, None, :] * rng.standard_normal((len(x), 400_000, 3))
    probs = special.softmax(eta, axis=-1).mean(axis=1)
    levels = sorted(pd.read_csv("models/multinomial_logistic.csv")["species"].unique())
    observed = np.searchsorted(levels, rows["species"].to_numpy())
    score = post.score(rows)
    np.testing.assert_allclose(np.exp(score.rows), probs[np.arange(len(x)), observed], rtol=0, atol=2e-3)
    pred = post.predict(rows.assign(species=np.nan))
    np.testing.assert_allclose(pred["y"]["mean"], probs @ np.arange(1, 4), rtol=0, atol=5e-3)


def test_conjugate_count_responses_get_their_exact_predictive():
    """θ ~ Beta: P(y* = 1) = a/(a + b). λ ~ Gamma(a, b), y ~ Poisson(λ): the negative binomial
    p(y*) = Γ(a + y)/(Γ(a) y!) (b/(b + 1))^a (1/(b + 1))^y, mean a/b, variance a/b + a/b²."""
    post = _fit("beta_bernoulli", "models/beta_bernoulli.csv")
    q = post["theta"].family.params(post["theta"].natural)
    score = post.score({"y": np.array([1, 0])})
    np.testing.assert_allclose(np.exp(score.rows), [q["a"] / (q["a"] + q["b"]), q["b"] / (q["a"] + q["b"])], rtol=1e-12)
    post = _fit("gamma_poisson", "models/gamma_poisson.csv")
    q = post["lambda"].family.params(post["lambda"].natural)
    a, b = q["shape"], q["rate"]
    y = np.array([0, 3, 9])
    expected = special.gammaln(a + y) - special.gammaln(a) - special.gammaln(y + 1) + a * np.log(b / (b + 1)) \
        - y * np.log(b + 1)
    np.testing.assert_allclose(post.score({"y": y}).rows, expected, rtol=1e-10)
    pred = post.predict({"y": np.full(2, np.nan)})
    np.testing.assert_allclose(pred["y"]["mean"], a / b, rtol=1e-12)
    np.testing.assert_allclose(pred["y"]["sd"], np.sqrt(a / b + a / b ** 2), rtol=1e-12)
