"""Write the CSV file that sits next to every model in this folder.

    python3 models/make_data.py            # rewrite every CSV (synthetic and real)
    python3 models/make_data.py gmm lda    # only these

Synthetic data sets are drawn with numpy's default generator and a fixed seed per model, so the
output is the same on every machine. Real data sets are converted from copies that ship with a
package or with the project; the committed CSVs need neither network nor those packages at test
time. Where each real data set comes from:

- gmm.csv: the Old Faithful geyser data (272 eruptions; eruption duration and waiting time, in
  minutes) as distributed with R's `datasets` package, read from the project's
  shared/data/old_faithful.csv. Both columns are STANDARDISED: centred by their mean and divided
  by their population standard deviation (ddof = 0).
- hmm.csv: the same Old Faithful data, the waiting column only, in minutes as recorded and in the
  order of the eruptions (a time series).
- logistic_regression.csv: the Wisconsin diagnostic breast cancer data, 569 tumours x 30
  features, from scikit-learn (`sklearn.datasets.load_breast_cancer`, shipped with the package).
  Column x1 is the intercept (all ones); x2..x31 are the 30 features in scikit-learn's order,
  each standardised by mean and population sd (ddof = 0) and rounded to 4 decimals; y is
  scikit-learn's target (1 = benign, 0 = malignant).
- multinomial_logistic.csv: Fisher's iris data, 150 flowers x 4 measurements, from scikit-learn
  (`sklearn.datasets.load_iris`). `intercept` is all ones, the four measurements are
  standardised (ddof = 0, 4 decimals), `species` holds the species name.
- lda_counts.csv: lda.csv in bag-of-words form (doc, word, count), built from lda.csv.
- surgical.csv, surgical_expanded.csv: the BUGS "Surgical" deaths per hospital, grouped
  (hospital, died, count) and one row per operation.
- lda.csv and ctm.csv (identical copies): the Reuters corpus that ships with the `lda` package
  on PyPI (`pip install lda`; `lda.datasets.load_reuters()`, a 395 x 4258 document-term count
  matrix, and `load_reuters_vocab()`). We keep the first 100 documents and the 500 words most
  frequent in them (ties broken by vocabulary order) and write one row per token: `doc` is the
  document number 1..100, `word` the word itself. Without the `lda` package these two files are
  left as they are.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OLD_FAITHFUL = [ROOT / "shared" / "data" / "old_faithful.csv",
                ROOT.parent / "shared" / "data" / "old_faithful.csv"]


def write(name: str, frame: pd.DataFrame, float_format: str = "%.6g") -> None:
    path = HERE / f"{name}.csv"
    frame.to_csv(path, index=False, float_format=float_format)
    print(f"wrote {path.relative_to(ROOT)}: {frame.shape[0]} rows x {frame.shape[1]} columns")


def logistic(x):
    return 1.0 / (1.0 + np.exp(-x))


def standardise(x: np.ndarray) -> np.ndarray:
    """Centre by the mean and divide by the population standard deviation (ddof = 0)."""
    return (x - x.mean(axis=0)) / x.std(axis=0, ddof=0)


# ---- synthetic -----------------------------------------------------------------------------

def gaussian():
    # N = 10 draws from N(0.5, 1).
    y = np.random.default_rng(0).normal(0.5, 1, 10)
    write("gaussian", pd.DataFrame({"y": y}), "%.17g")


def linear_regression():
    # N = 50, D = 3 standard-normal features, no intercept; y = X w + noise, w = (1.5, -2, 0.5),
    # noise sd 0.5 (precision 4). The ARD and known-noise variants get identical copies.
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.5, -2.0, 0.5]) + rng.normal(0, 0.5, 50)
    frame = pd.DataFrame(X, columns=["x1", "x2", "x3"])
    frame["y"] = y
    write("linear_regression", frame)
    for variant in ("linear_regression_ard", "linear_regression_known_noise"):
        shutil.copyfile(HERE / "linear_regression.csv", HERE / f"{variant}.csv")
        print(f"wrote models/{variant}.csv: a copy of linear_regression.csv")


def beta_bernoulli():
    # 20 flips of a coin with P(heads) = 0.7.
    y = np.random.default_rng(2).binomial(1, 0.7, 20)
    write("beta_bernoulli", pd.DataFrame({"y": y}))


def gamma_poisson():
    # 30 counts from Poisson(3.5).
    y = np.random.default_rng(3).poisson(3.5, 30)
    write("gamma_poisson", pd.DataFrame({"y": y}))


def eight_schools():
    # Not synthetic: the SAT coaching experiments of Rubin (1981), as in Gelman et al., BDA.
    write("eight_schools", pd.DataFrame({
        "school": list("ABCDEFGH"),
        "y": [28, 8, -3, 7, -1, 1, 18, 12],
        "sigma": [15, 10, 16, 11, 9, 11, 10, 18],
    }))


def hierarchical_logistic():
    # 6 sites, 300 people; logit P(y = 1) = a[site] + b[site] * x with a ~ N(-0.5, sd 1),
    # b ~ N(1, sd 0.5); x standard normal; sites drawn uniformly.
    rng = np.random.default_rng(4)
    sites = np.array([f"site_{c}" for c in "abcdef"])
    a = rng.normal(-0.5, 1.0, len(sites))
    b = rng.normal(1.0, 0.5, len(sites))
    g = rng.integers(0, len(sites), 300)
    x = rng.normal(size=300)
    y = rng.binomial(1, logistic(a[g] + b[g] * x))
    write("hierarchical_logistic", pd.DataFrame({"site": sites[g], "x": x, "y": y}))


def gp_classification():
    # N = 40 inputs uniform on [-3, 3]; latent f = sin(1.5 x) * 2; y ~ Bernoulli(logistic(f)).
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(-3, 3, 40))
    y = rng.binomial(1, logistic(2.0 * np.sin(1.5 * x)))
    write("gp_classification", pd.DataFrame({"x": x, "y": y}))


def logistic_wide():
    # D > N: N = 40 rows, D = 400 columns (x1 = intercept, x2..x400 standard normal), as in gene
    # expression studies; only 5 features matter: w = (0, 2, -2, 1.5, -1.5, 1, 0, ..., 0).
    rng = np.random.default_rng(13)
    X = np.column_stack([np.ones(40), rng.normal(size=(40, 399))])
    w = np.zeros(400)
    w[1:6] = [2.0, -2.0, 1.5, -1.5, 1.0]
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(1, 401)])
    frame["y"] = rng.binomial(1, logistic(X @ w))
    write("logistic_wide", frame)


def poisson_regression():
    # N = 100; x1 = 1 (intercept), x2, x3 standard normal; log rate = 0.5 + 0.8 x2 - 0.4 x3.
    rng = np.random.default_rng(6)
    X = np.column_stack([np.ones(100), rng.normal(size=(100, 2))])
    y = rng.poisson(np.exp(X @ np.array([0.5, 0.8, -0.4])))
    frame = pd.DataFrame(X, columns=["x1", "x2", "x3"])
    frame["y"] = y
    write("poisson_regression", frame)


def poisson_mf():
    # 30 users x 40 items, every cell one row (zeros included); K = 3 true factors,
    # theta[u, k], beta[i, k] ~ Gamma(shape 0.3, rate 0.3); count ~ Poisson(theta[u] . beta[i]).
    rng = np.random.default_rng(7)
    U, I, K = 30, 40, 3
    theta = rng.gamma(0.3, 1 / 0.3, (U, K))
    beta = rng.gamma(0.3, 1 / 0.3, (I, K))
    users, items = np.meshgrid(np.arange(U), np.arange(I), indexing="ij")
    users, items = users.ravel(), items.ravel()
    counts = rng.poisson((theta[users] * beta[items]).sum(axis=1))
    write("poisson_mf", pd.DataFrame({"user": [f"u{u + 1:02d}" for u in users],
                                      "item": [f"i{i + 1:02d}" for i in items],
                                      "count": counts}))


def kalman_bernoulli():
    # T = 500; x[1] ~ N(0, 1), x[t] = 0.95 x[t-1] + N(0, precision 10); y[t] ~ Bernoulli(logistic(x[t])).
    # (The earlier 100 flips did not identify a: exact posterior 0.11 ± 0.49; these give 0.956 ± 0.016.)
    rng = np.random.default_rng(8)
    x = np.empty(500)
    x[0] = rng.normal()
    for t in range(1, 500):
        x[t] = 0.95 * x[t - 1] + rng.normal(0, 1 / np.sqrt(10.0))
    y = rng.binomial(1, logistic(x))
    write("kalman_bernoulli", pd.DataFrame({"y": y}))


def binary_fa():
    # N = 200 rows, J = 10 binary items, K = 2 factors; z[n], lam[j] ~ N(0, I), c[j] ~ N(0, 1);
    # y[n, j] ~ Bernoulli(logistic(lam[j] . z[n] + c[j])).
    rng = np.random.default_rng(9)
    N, J, K = 200, 10, 2
    z = rng.normal(size=(N, K))
    lam = rng.normal(size=(J, K)) * 1.5
    c = rng.normal(size=J)
    y = rng.binomial(1, logistic(z @ lam.T + c))
    write("binary_fa", pd.DataFrame(y, columns=[f"y{j + 1}" for j in range(J)]))


def _softmax_draws(rng, eta):
    """One category per row of the logits `eta` (..., C), coded 1..C."""
    p = np.exp(eta - eta.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return 1 + (p.cumsum(-1) < rng.random(eta.shape[:-1] + (1,))).sum(-1)


def categorical_fa():
    # N = 200 rows, J = 6 items with C = 3 categories (coded 1..3), K = 2 factors;
    # z[n], lam[j, c] ~ N(0, 1.5^2 I), b[j, c] ~ N(0, 0.5^2);
    # y[n, j] ~ Categorical(softmax(lam[j] z[n] + b[j])); then 5% of the cells, at random, emptied.
    rng = np.random.default_rng(13)
    N, J, C, K = 200, 6, 3, 2
    z = rng.normal(size=(N, K))
    lam = rng.normal(size=(J, C, K)) * 1.5
    b = rng.normal(size=(J, C)) * 0.5
    y = _softmax_draws(rng, np.einsum("jck,nk->njc", lam, z) + b).astype(object)
    y[rng.random((N, J)) < 0.05] = None
    write("categorical_fa", pd.DataFrame(y, columns=[f"y{j + 1}" for j in range(J)]))


def mixed_fa():
    # N = 250 rows, K = 2 factors z[n] ~ N(0, I); 3 binary items b1..b3 (Bernoulli-logistic),
    # 3 categorical items c1..c3 with 3 categories (softmax), 3 ordinal items o1..o3 rated 1..4
    # (cumulative logit, cutpoints -1.5, 0, 1.5); loadings N(0, 1.5^2 I), offsets N(0, 0.5^2);
    # then 5% of the categorical cells, at random, emptied.
    rng = np.random.default_rng(14)
    N, K = 250, 2
    z = rng.normal(size=(N, K))
    frame = pd.DataFrame(index=range(N))
    lam = rng.normal(size=(3, K)) * 1.5
    a = rng.normal(size=3) * 0.5
    for j, col in enumerate(rng.binomial(1, logistic(z @ lam.T + a)).T):
        frame[f"b{j + 1}"] = col
    lam = rng.normal(size=(3, 3, K)) * 1.5
    b = rng.normal(size=(3, 3)) * 0.5
    y = _softmax_draws(rng, np.einsum("jck,nk->njc", lam, z) + b).astype(object)
    y[rng.random(y.shape) < 0.05] = None
    for j in range(3):
        frame[f"c{j + 1}"] = y[:, j]
    lam = rng.normal(size=(3, K)) * 1.5
    eta = z @ lam.T + rng.normal(size=3) * 0.5
    for j in range(3):
        frame[f"o{j + 1}"] = 1 + np.searchsorted(np.array([-1.5, 0.0, 1.5]), eta[:, j] + rng.logistic(size=N))
    write("mixed_fa", frame)


def latent_class():
    # N = 300 people, J = 6 items with L = 3 levels each (coded 1..3), K = 3 classes with
    # weights (0.5, 0.3, 0.2); each class has its own response distribution for every item.
    rng = np.random.default_rng(10)
    N, J, L, K = 300, 6, 3, 3
    z = rng.choice(K, N, p=[0.5, 0.3, 0.2])
    phi = rng.dirichlet(0.5 * np.ones(L), (K, J))
    x = np.array([[rng.choice(L, p=phi[z[n], j]) + 1 for j in range(J)] for n in range(N)])
    write("latent_class", pd.DataFrame(x, columns=[f"x{j + 1}" for j in range(J)]))


def gamma_toy():
    # N = 50 draws from Gamma(shape 3, rate 1): Khan & Lin's toy model, the shape z unknown.
    y = np.random.default_rng(11).gamma(3.0, 1.0, 50)
    write("gamma_toy", pd.DataFrame({"y": y}))


def ordinal_regression():
    # N = 300 ratings 1..5 from a cumulative-logit model: x1..x3 standard normal,
    # eta = x . (1.0, -0.7, 0.4), cutpoints (-2, -0.7, 0.7, 2), P(y <= k) = logistic(cut_k - eta);
    # drawn as y = 1 + #{k : cut_k < eta + e} with e standard logistic.
    rng = np.random.default_rng(12)
    x = rng.normal(size=(300, 3))
    eta = x @ np.array([1.0, -0.7, 0.4])
    y = 1 + np.searchsorted(np.array([-2.0, -0.7, 0.7, 2.0]), eta + rng.logistic(size=300))
    frame = pd.DataFrame(x, columns=["x1", "x2", "x3"])
    frame["rating"] = y
    write("ordinal_regression", frame)


def casino():
    # The occasionally dishonest casino (Durbin et al. 1998, ch. 3): S = 12 sessions of 60..200
    # rolls; the die is fair or loaded (a six half of the time); it stays fair with probability
    # 0.95 and loaded with 0.90 per roll; each session starts fair with probability 0.8. Rows are
    # sorted by session, then roll.
    rng = np.random.default_rng(14)
    trans = np.array([[0.95, 0.05], [0.10, 0.90]])
    faces = np.array([np.full(6, 1 / 6), [0.1, 0.1, 0.1, 0.1, 0.1, 0.5]])
    sessions, rolls = [], []
    for s in range(12):
        state = int(rng.random() > 0.8)
        for _ in range(int(rng.integers(60, 201))):
            sessions.append(f"s{s + 1:02d}")
            rolls.append(int(rng.choice(6, p=faces[state])) + 1)
            state = int(rng.choice(2, p=trans[state]))
    write("casino", pd.DataFrame({"session": sessions, "roll": rolls}))


def factorial_hmm():
    # Two hidden chains of K = 3 states each, T = 300 steps (Ghahramani & Jordan 1997): a slow
    # chain (stays with probability 0.97) with levels (-2, 0, 2) and a fast one (stays with
    # probability 0.8) with levels (-0.6, 0, 0.6); y[t] = level1 + level2 + N(0, 0.25^2).
    rng = np.random.default_rng(15)
    steps = 300
    y = np.zeros(steps)
    for stay, levels in ((0.97, [-2.0, 0.0, 2.0]), (0.8, [-0.6, 0.0, 0.6])):
        trans = np.full((3, 3), (1 - stay) / 2) + np.eye(3) * (stay - (1 - stay) / 2)
        state = rng.integers(3)
        for t in range(steps):
            y[t] += levels[state]
            state = rng.choice(3, p=trans[state])
    y += rng.normal(0, 0.25, steps)
    write("factorial_hmm", pd.DataFrame({"y": y}))


# ---- real ----------------------------------------------------------------------------------

def hmm():
    source = next((p for p in OLD_FAITHFUL if p.is_file()), None)
    if source is None:
        print("skipped hmm.csv: shared/data/old_faithful.csv not found", file=sys.stderr)
        return
    write("hmm", pd.read_csv(source)[["waiting"]])

def gmm():
    source = next((p for p in OLD_FAITHFUL if p.is_file()), None)
    if source is None:
        print("skipped gmm.csv: shared/data/old_faithful.csv not found", file=sys.stderr)
        return
    table = pd.read_csv(source)[["eruptions", "waiting"]]
    write("gmm", pd.DataFrame(standardise(table.to_numpy(float)), columns=table.columns), "%.6f")


def logistic_regression():
    from sklearn.datasets import load_breast_cancer
    data = load_breast_cancer()
    X = np.round(standardise(data.data), 4)
    frame = pd.DataFrame(X, columns=[f"x{j + 2}" for j in range(X.shape[1])])
    frame.insert(0, "x1", 1)
    frame["y"] = data.target
    write("logistic_regression", frame, "%.4f")


def multinomial_logistic():
    from sklearn.datasets import load_iris
    data = load_iris()
    X = np.round(standardise(data.data), 4)
    frame = pd.DataFrame(X, columns=["sepal_length", "sepal_width", "petal_length", "petal_width"])
    frame.insert(0, "intercept", 1)
    frame["species"] = np.asarray(data.target_names)[data.target]
    write("multinomial_logistic", frame, "%.4f")


def lda():
    try:
        import lda.datasets as corpus
    except ImportError:
        print("skipped lda.csv, ctm.csv: `pip install lda` to rebuild them", file=sys.stderr)
        return
    counts = np.asarray(corpus.load_reuters())[:100]
    vocab = np.asarray(corpus.load_reuters_vocab())
    top = np.argsort(-counts.sum(axis=0), kind="stable")[:500]
    docs, words = [], []
    for d in range(counts.shape[0]):
        for v in top:  # tokens of a document grouped by word, words in frequency order
            docs += [d + 1] * int(counts[d, v])
            words += [vocab[v]] * int(counts[d, v])
    write("lda", pd.DataFrame({"doc": docs, "word": words}))
    shutil.copyfile(HERE / "lda.csv", HERE / "ctm.csv")
    print("wrote models/ctm.csv: a copy of lda.csv")


def lda_counts():
    # The bag-of-words form of lda.csv: one row per (document, word) with the word's count.
    tokens = pd.read_csv(HERE / "lda.csv")
    counts = tokens.groupby(["doc", "word"], sort=False).size().reset_index(name="count")
    write("lda_counts", counts)


def surgical():
    # Mortality after cardiac surgery in 12 hospitals (Spiegelhalter et al., BUGS Examples vol. 1,
    # "Surgical"): n operations and r deaths per hospital, as grouped Bernoulli rows
    # (hospital, died, count); surgical_expanded.csv has one row per operation.
    n = [47, 148, 119, 810, 211, 196, 148, 215, 207, 97, 256, 360]
    r = [0, 18, 8, 46, 8, 13, 9, 31, 14, 8, 29, 24]
    names = [f"H{chr(ord('A') + i)}" for i in range(12)]
    rows = [(h, died, c) for h, total, deaths in zip(names, n, r) for died, c in ((1, deaths), (0, total - deaths))]
    grouped = pd.DataFrame(rows, columns=["hospital", "died", "count"])
    write("surgical", grouped)
    expanded = grouped.loc[grouped.index.repeat(grouped["count"])].drop(columns="count")
    expanded.to_csv(HERE / "surgical_expanded.csv", index=False)


def spectral_unmixing():
    # N = 60 energy bins, K = 3 known source spectra (Gaussian peaks at bins 15, 30, 45, sd 6,
    # over a flat floor, each scaled to 300 expected counts); true fractions pi = (0.6, 0.3, 0.1);
    # count[n] ~ Poisson(pi . spectrum[n]).
    rng = np.random.default_rng(12)
    bins = np.arange(1, 61)[:, None]
    shapes = np.exp(-0.5 * ((bins - np.array([15, 30, 45])) / 6.0) ** 2) + 0.05
    spectrum = np.round(300 * shapes / shapes.sum(axis=0), 4)
    counts = rng.poisson(spectrum @ np.array([0.6, 0.3, 0.1]))
    frame = pd.DataFrame(spectrum, columns=[f"s{k + 1}" for k in range(3)])
    frame["count"] = counts
    write("spectral_unmixing", frame)


MAKERS = {f.__name__: f for f in (
    gaussian, linear_regression, gmm, beta_bernoulli, gamma_poisson, eight_schools,
    logistic_regression, hierarchical_logistic, gp_classification, poisson_regression,
    multinomial_logistic, lda, poisson_mf, kalman_bernoulli, binary_fa, latent_class, gamma_toy,
    ordinal_regression, logistic_wide, spectral_unmixing, lda_counts, surgical, hmm, casino,
    factorial_hmm, categorical_fa, mixed_fa)}


def main(names: list[str]) -> None:
    for name in names or MAKERS:
        if name not in MAKERS:
            raise SystemExit(f"unknown data set {name!r}; choose from {', '.join(MAKERS)}")
        MAKERS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
