"""The example models in models/: each checks, binds its CSV, and gets the rules a careful reader
expects for every edge of its factor graph.

For every model the full table of (factor, variable) -> rule is written out by hand below, so a
change in the analyzer that moves any edge of any model (or adds or drops one) fails here.
"""

from __future__ import annotations

import filecmp
import functools
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ppl

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"

EXPECTED_MODELS = {
    "gaussian", "linear_regression", "linear_regression_ard", "linear_regression_known_noise",
    "gmm", "beta_bernoulli", "gamma_poisson", "eight_schools", "logistic_regression",
    "hierarchical_logistic", "gp_classification", "poisson_regression", "multinomial_logistic",
    "lda", "ctm", "poisson_mf", "kalman_bernoulli", "binary_fa", "latent_class", "gamma_toy",
    "ordinal_regression", "logistic_wide",
    "spectral_unmixing", "lda_counts", "surgical", "surgical_expanded", "hmm", "casino", "factorial_hmm",
    "categorical_fa", "mixed_fa",
}


@functools.lru_cache(maxsize=None)
def report(name: str) -> dict:
    model = ppl.load(MODELS / f"{name}.vim")
    return model.check_report(str(MODELS / f"{name}.csv"))


def edges(name: str) -> dict:
    """(factor, variable) -> rule, for every tagged edge."""
    table = {}
    for row in report(name)["factors"]:
        key = (row["factor"], row["variable"])
        assert key not in table, f"{name}: edge {key} tagged twice"
        table[key] = row["rule"]
    return table


def edge(name: str, factor: str, variable: str) -> dict:
    rows = [r for r in report(name)["factors"] if r["factor"] == factor and r["variable"] == variable]
    assert len(rows) == 1, f"{name}: expected one edge {factor} -> {variable}, found {rows}"
    return rows[0]


def variables(name: str) -> dict:
    return {v["name"]: v for v in report(name)["variables"]}


def shapes(name: str) -> dict:
    return {n: v["shape"] for n, v in variables(name).items()}


def scope(name: str, variable: str) -> str:
    return variables(name)[variable]["scope"]


# ---- the folder -------------------------------------------------------------------------------

def all_models() -> list[str]:
    return sorted(p.stem for p in MODELS.glob("*.vim"))


def test_every_expected_model_is_there():
    assert set(all_models()) == EXPECTED_MODELS


@pytest.mark.parametrize("name", sorted(EXPECTED_MODELS))
def test_model_has_a_small_csv_and_a_header(name):
    csv = MODELS / f"{name}.csv"
    assert csv.is_file(), f"no {csv.name} next to {name}.vim"
    assert csv.stat().st_size < 300_000
    text = (MODELS / f"{name}.vim").read_text(encoding="utf-8")
    header = [line for line in text.splitlines()[:40] if line.startswith("#")]
    assert len(header) >= 5, "each model opens with a comment explaining it"
    assert "Inference" in text and "Data" in text


@pytest.mark.parametrize("name", sorted(EXPECTED_MODELS))
def test_cli_check_exits_0(name):
    result = subprocess.run(
        [sys.executable, "-m", "ppl.cli", "check", f"models/{name}.vim", f"models/{name}.csv"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "factor" in result.stdout and "variable" in result.stdout


def test_cli_json_report_matches_the_api():
    import json
    result = subprocess.run(
        [sys.executable, "-m", "ppl.cli", "check", "--format", "json", "models/lda.vim", "models/lda.csv"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["factors"] == report("lda")["factors"]


# ---- every edge of every model ----------------------------------------------------------------

V, N, C, L = "vmp", "ncvmp", "cvi", "laplace"
EDGES = {
    "gaussian": {("tau", "tau"): V, ("mu", "mu"): V, ("mu", "tau"): V, ("y", "mu"): V, ("y", "tau"): V},
    "linear_regression": {("alpha", "alpha"): V, ("w", "w"): V, ("w", "alpha"): V, ("tau", "tau"): V,
                          ("y", "w"): V, ("y", "tau"): V},
    "linear_regression_ard": {("alpha", "alpha"): V, ("w", "w"): V, ("w", "alpha"): V,
                              ("tau", "tau"): V, ("y", "w"): V, ("y", "tau"): V},
    "linear_regression_known_noise": {("w", "w"): V, ("y", "w"): V},
    "gmm": {("pi", "pi"): V, ("Lambda[k]", "Lambda"): V, ("mu[k]", "mu"): V, ("mu[k]", "Lambda"): V,
            ("z[n]", "z"): V, ("z[n]", "pi"): V, ("x[n]", "z"): V, ("x[n]", "mu"): V,
            ("x[n]", "Lambda"): V},
    "beta_bernoulli": {("theta", "theta"): V, ("y", "theta"): V},
    "gamma_poisson": {("lambda", "lambda"): V, ("y", "lambda"): V},
    "eight_schools": {("mu", "mu"): V, ("tau", "tau"): V, ("theta[j]", "theta"): V, ("theta[j]", "mu"): V,
                      ("theta[j]", "tau"): V, ("y[j]", "theta"): V},
    "logistic_regression": {("w", "w"): V, ("y", "w"): N},
    "logistic_wide": {("w", "w"): V, ("y", "w"): N},
    "hierarchical_logistic": {("mu_a", "mu_a"): V, ("tau_a", "tau_a"): V, ("mu_b", "mu_b"): V,
                              ("tau_b", "tau_b"): V, ("a[g]", "a"): V, ("a[g]", "mu_a"): V,
                              ("a[g]", "tau_a"): V, ("b[g]", "b"): V, ("b[g]", "mu_b"): V,
                              ("b[g]", "tau_b"): V, ("y[n]", "a"): N, ("y[n]", "b"): N},
    "gp_classification": {("f", "f"): V, ("y[n]", "f"): N},
    "poisson_regression": {("w", "w"): V, ("y", "w"): N},
    "multinomial_logistic": {("w[k]", "w"): V, ("y[n]", "w"): N},
    "lda": {("theta[d]", "theta"): V, ("beta[k]", "beta"): V, ("z[t]", "z"): V, ("z[t]", "theta"): V,
            ("word[t]", "beta"): V, ("word[t]", "z"): V},
    "ctm": {("mu", "mu"): V, ("Lambda", "Lambda"): V, ("eta[d]", "eta"): V, ("eta[d]", "mu"): V,
            ("eta[d]", "Lambda"): V, ("beta[k]", "beta"): V, ("z[t]", "z"): V, ("z[t]", "eta"): L,
            ("word[t]", "beta"): V, ("word[t]", "z"): V},
    "poisson_mf": {("theta[u, k]", "theta"): V, ("beta[i, k]", "beta"): V,
                   ("count[r]", "theta"): C, ("count[r]", "beta"): C},
    "kalman_bernoulli": {("a", "a"): V, ("x[1]", "x"): V, ("x[t]", "x"): V, ("x[t]", "a"): V,
                         ("y[t]", "x"): C},
    "binary_fa": {("z[n]", "z"): V, ("lam[j]", "lam"): V, ("c[j]", "c"): V,
                  ("y[n, j]", "z"): N, ("y[n, j]", "lam"): N, ("y[n, j]", "c"): N},
    "categorical_fa": {("z[n]", "z"): V, ("lam[j, c]", "lam"): V, ("b[j, c]", "b"): V, ("y[n, j]", "y"): V,
                       ("y[n, j]", "z"): N, ("y[n, j]", "lam"): N, ("y[n, j]", "b"): N},
    "mixed_fa": {("z[n]", "z"): V, ("u[j]", "u"): V, ("a[j]", "a"): V, ("lam[j, c]", "lam"): V,
                 ("b[j, c]", "b"): V, ("w[j]", "w"): V, ("d[j]", "d"): V, ("y[n, j]", "y"): V,
                 ("x[n, j]", "z"): N, ("x[n, j]", "u"): N, ("x[n, j]", "a"): N,
                 ("y[n, j]", "z"): N, ("y[n, j]", "lam"): N, ("y[n, j]", "b"): N,
                 ("r[n, j]", "z"): N, ("r[n, j]", "w"): N, ("r[n, j]", "d"): N},
    "latent_class": {("pi", "pi"): V, ("phi[k, j]", "phi"): V, ("z[n]", "z"): V, ("z[n]", "pi"): V,
                     ("x[n, j]", "phi"): V, ("x[n, j]", "z"): V},
    "gamma_toy": {("z", "z"): V, ("y", "z"): C},
    "ordinal_regression": {("w", "w"): V, ("rating[n]", "w"): N},
    "spectral_unmixing": {("pi", "pi"): V, ("count[n]", "pi"): C},
    "lda_counts": {("theta[d]", "theta"): V, ("beta[k]", "beta"): V, ("z[t]", "z"): V, ("z[t]", "theta"): V,
                   ("word[t]", "beta"): V, ("word[t]", "z"): V},
    "surgical_expanded": {("mu", "mu"): V, ("tau", "tau"): V, ("b[h]", "b"): V, ("b[h]", "mu"): V,
                          ("b[h]", "tau"): V, ("died[n]", "b"): N},
    "surgical": {("mu", "mu"): V, ("tau", "tau"): V, ("b[h]", "b"): V, ("b[h]", "mu"): V, ("b[h]", "tau"): V,
                 ("died[n]", "b"): N},
    "hmm": {("pi", "pi"): V, ("A[k]", "A"): V, ("tau[k]", "tau"): V, ("mu[k]", "mu"): V, ("mu[k]", "tau"): V,
            ("z[1]", "z"): V, ("z[1]", "pi"): V, ("z[t]", "z"): V, ("z[t]", "A"): V,
            ("y[t]", "z"): V, ("y[t]", "mu"): V, ("y[t]", "tau"): V},
    "casino": {("pi", "pi"): V, ("A[k]", "A"): V, ("phi[k]", "phi"): V, ("z[1]", "z"): V, ("z[1]", "pi"): V,
               ("z[t]", "z"): V, ("z[t]", "A"): V, ("roll[t]", "phi"): V, ("roll[t]", "z"): V},
    "factorial_hmm": {**{(f"{v}{m}", f"{v}{m}"): V for v in ("pi",) for m in (1, 2)}, ("tau", "tau"): V,
                      **{(f"{v}{m}[k]", f"{v}{m}"): V for v in ("A", "w") for m in (1, 2)},
                      **{(f"z{m}[1]", f"z{m}"): V for m in (1, 2)}, **{(f"z{m}[1]", f"pi{m}"): V for m in (1, 2)},
                      **{(f"z{m}[t]", f"z{m}"): V for m in (1, 2)}, **{(f"z{m}[t]", f"A{m}"): V for m in (1, 2)},
                      **{("y[t]", f"{v}{m}"): V for v in ("w", "z") for m in (1, 2)}, ("y[t]", "tau"): V},
}


def test_edge_table_covers_every_model():
    assert set(EDGES) == EXPECTED_MODELS


@pytest.mark.parametrize("name", sorted(EDGES))
def test_every_edge_gets_the_expected_rule(name):
    assert edges(name) == EDGES[name]


# ---- observed shapes match the CSV -------------------------------------------------------------

SHAPES = {
    "gaussian": {"y": [10], "mu": [], "tau": []},
    "linear_regression": {"X": [50, 3], "y": [50], "w": [3]},
    "linear_regression_ard": {"X": [50, 3], "alpha": [3], "w": [3]},
    "linear_regression_known_noise": {"X": [50, 3], "y": [50], "w": [3]},
    "gmm": {"x": [272, 2], "pi": [6], "mu": [6, 2], "Lambda": [6, 2, 2], "z": [272]},
    "beta_bernoulli": {"y": [20], "theta": []},
    "gamma_poisson": {"y": [30], "lambda": []},
    "eight_schools": {"y": [8], "sigma": [8], "theta": [8]},
    "logistic_regression": {"X": [569, 31], "y": [569], "w": [31]},
    "logistic_wide": {"X": [40, 400], "y": [40], "w": [400]},
    "hierarchical_logistic": {"site": [300], "x": [300], "y": [300], "a": [6], "b": [6]},
    "gp_classification": {"x": [40], "y": [40], "f": [40]},
    "poisson_regression": {"X": [100, 3], "y": [100], "w": [3]},
    "multinomial_logistic": {"x": [150, 5], "y": [150], "w": [3, 5]},
    "lda": {"doc": [12160], "word": [12160], "theta": [100, 10], "beta": [10, 500], "z": [12160]},
    "ctm": {"doc": [12160], "mu": [10], "Lambda": [10, 10], "eta": [100, 10], "beta": [10, 500]},
    "poisson_mf": {"user": [1200], "count": [1200], "theta": [30, 3], "beta": [40, 3]},
    "kalman_bernoulli": {"y": [500], "x": [500], "a": []},
    "binary_fa": {"y": [200, 10], "z": [200, 2], "lam": [10, 2], "c": [10]},
    "categorical_fa": {"y": [200, 6], "z": [200, 2], "lam": [6, 3, 2], "b": [6, 3]},
    "mixed_fa": {"x": [250, 3], "y": [250, 3], "r": [250, 3], "z": [250, 2], "lam": [3, 3, 2], "w": [3, 2]},
    "latent_class": {"x": [300, 6], "z": [300], "phi": [3, 6, 3], "pi": [3]},
    "gamma_toy": {"y": [50], "z": []},
    "ordinal_regression": {"x": [300, 3], "rating": [300], "w": [3]},
    "spectral_unmixing": {"spectrum": [60, 3], "count": [60], "pi": [3]},
    "lda_counts": {"doc": [7393], "word": [7393], "count": [7393], "theta": [100, 10], "beta": [10, 500]},
    "surgical": {"hospital": [24], "died": [24], "count": [24], "b": [12]},
    "surgical_expanded": {"hospital": [2814], "died": [2814], "b": [12]},
    "hmm": {"y": [272], "z": [272], "A": [2, 2], "mu": [2]},
    "casino": {"session": [1492], "roll": [1492], "z": [1492], "phi": [2, 6]},
    "factorial_hmm": {"y": [300], "z1": [300], "z2": [300], "w1": [3]},
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes(name):
    got = shapes(name)
    for variable, shape in SHAPES[name].items():
        assert got[variable] == shape, f"{name}: {variable}"


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_observed_shapes_are_the_csv_rows(name):
    rows = len(pd.read_csv(MODELS / f"{name}.csv"))
    for v in variables(name).values():
        if v["kind"] == "observed":
            assert v["shape"][0] == rows, f"{name}: {v['name']}"


# ---- what a careful reader checks, model by model ---------------------------------------------

def test_gaussian_pairs():
    assert edge("gaussian", "mu", "tau")["pair"] == "Normal–Gamma"
    assert edge("gaussian", "y", "tau")["pair"] == "Normal–Gamma"
    assert edge("gaussian", "y", "mu")["pair"] == "Normal–Normal"
    assert {scope("gaussian", v) for v in ("mu", "tau")} == {"global"}


def test_known_noise_precision_is_a_constant_not_a_latent():
    assert "tau" not in variables("linear_regression_known_noise")
    assert [v["name"] for v in report("linear_regression_known_noise")["variables"]
            if v["kind"] == "latent"] == ["w"]


def test_ard_precision_per_weight():
    tag = edge("linear_regression_ard", "w", "alpha")
    assert (tag["role"], tag["rule"], tag["pair"]) == ("precision", "vmp", "MvNormal–Gamma")


def test_gmm_mixture_is_all_vmp_with_a_selector():
    assert set(edges("gmm").values()) == {"vmp"}
    selector = edge("gmm", "x[n]", "z")
    assert selector["pair"] == "mixture selector"
    assert set(selector["role"].split("+")) == {"mean", "precision"}
    assert scope("gmm", "z") == "local"
    assert {scope("gmm", v) for v in ("pi", "mu", "Lambda")} == {"global"}
    assert report("gmm")["blocks"] == []


def test_conjugate_pairs_of_the_small_models():
    assert edge("beta_bernoulli", "y", "theta")["pair"] == "Bernoulli–Beta"
    assert edge("gamma_poisson", "y", "lambda")["pair"] == "Poisson–Gamma"
    assert edge("eight_schools", "theta[j]", "tau")["pair"] == "Normal–Gamma"


def test_eight_schools_scopes():
    assert scope("eight_schools", "theta") == "local"
    assert scope("eight_schools", "mu") == scope("eight_schools", "tau") == "global"


def test_logistic_regression_is_ncvmp_by_quadrature():
    tag = edge("logistic_regression", "y", "w")
    assert (tag["rule"], tag["role"]) == ("ncvmp", "p")
    assert "logistic" in tag["reason"] and "quadrature" in tag["reason"]
    assert scope("logistic_regression", "w") == "global"


def test_hierarchical_logistic_mixes_vmp_and_ncvmp():
    rules = edges("hierarchical_logistic")
    assert set(rules.values()) == {"vmp", "ncvmp"}
    assert rules[("a[g]", "tau_a")] == "vmp" and rules[("y[n]", "a")] == "ncvmp"
    assert {scope("hierarchical_logistic", v) for v in ("mu_a", "tau_a", "mu_b", "tau_b")} == {"global"}


def test_hierarchical_logistic_sites_are_string_levels():
    sites = pd.read_csv(MODELS / "hierarchical_logistic.csv")["site"]
    assert sorted(sites.unique()) == [f"site_{c}" for c in "abcdef"]
    dataset = ppl.load(MODELS / "hierarchical_logistic.vim").bind(str(MODELS / "hierarchical_logistic.csv"))
    assert dataset.sizes["G"] == 6
    assert dataset.levels["site"] == [f"site_{c}" for c in "abcdef"]


def test_gp_and_poisson_links():
    assert edge("gp_classification", "y[n]", "f")["rule"] == "ncvmp"
    tag = edge("poisson_regression", "y", "w")
    assert (tag["rule"], tag["role"]) == ("ncvmp", "rate")
    assert "exp link" in tag["reason"]


def test_softmax_edges_are_ncvmp_for_an_observed_class_and_laplace_for_a_latent_topic():
    for name, factor, variable, rule in (("multinomial_logistic", "y[n]", "w", "ncvmp"),
                                         ("ctm", "z[t]", "eta", "laplace")):
        tag = edge(name, factor, variable)
        assert tag["rule"] == rule and "softmax" in tag["reason"], name


def test_multinomial_weights_are_global():
    """K is read off the levels of the response `y`; the number of classes does not grow."""
    assert scope("multinomial_logistic", "w") == "global"


def test_lda_block_and_scopes():
    blocks = report("lda")["blocks"]
    assert len(blocks) == 1
    assert set(blocks[0]["variables"]) == {"theta", "z"} and blocks[0]["rule"] == "ssmf"
    assert edge("lda", "z[t]", "theta")["candidate"] == "ssmf"
    assert edge("lda", "word[t]", "beta")["candidate"] is None
    assert edge("lda", "word[t]", "z")["pair"] == "mixture selector"
    assert scope("lda", "z") == "local" and scope("lda", "theta") == "local"
    assert scope("lda", "beta") == "global"


def test_ctm_block_and_scopes():
    blocks = report("ctm")["blocks"]
    assert [set(b["variables"]) for b in blocks] == [{"eta", "z"}]
    assert edge("ctm", "z[t]", "eta")["candidate"] == "ssmf"
    assert {scope("ctm", v) for v in ("mu", "Lambda", "beta")} == {"global"}
    assert edge("ctm", "eta[d]", "Lambda")["pair"] == "MvNormal–Wishart"


def test_poisson_mf_has_no_conjugate_pattern():
    tag = edge("poisson_mf", "count[r]", "theta")
    assert tag["rule"] == "cvi" and "no conjugate pattern" in tag["reason"]


def test_kalman_annotation_overrides_ncvmp():
    tag = edge("kalman_bernoulli", "y[t]", "x")
    assert tag["rule"] == "cvi"
    assert "requested (annotation)" in tag["reason"] and "default would be ncvmp" in tag["reason"]
    factor = next(f for f in ppl.load(MODELS / "kalman_bernoulli.vim").checked.factors if f.name == "y[t]")
    options = {k: v.value for k, v in factor.annotations[0].options}
    assert options == {"step": 0.5, "kappa": 0, "samples": 16}
    assert scope("kalman_bernoulli", "x") == "local" and scope("kalman_bernoulli", "a") == "global"


def test_kalman_without_annotation_is_ncvmp():
    text = (MODELS / "kalman_bernoulli.vim").read_text(encoding="utf-8")
    plain = text.replace(" @cvi(step=0.5, kappa=0, samples=16)", "")
    assert plain != text
    rep = ppl.compile(plain).check_report(str(MODELS / "kalman_bernoulli.csv"))
    rules = {(r["factor"], r["variable"]): r["rule"] for r in rep["factors"]}
    assert rules[("y[t]", "x")] == "ncvmp"


def test_binary_fa_scopes():
    assert scope("binary_fa", "z") == "local"
    assert scope("binary_fa", "lam") == scope("binary_fa", "c") == "global"


def test_latent_class_levels_from_data():
    dataset = ppl.load(MODELS / "latent_class.vim").bind(str(MODELS / "latent_class.csv"))
    assert dataset.sizes["L"] == 3 and dataset.sizes["J"] == 6
    assert edge("latent_class", "x[n, j]", "z")["pair"] == "mixture selector"


# ---- the data themselves ----------------------------------------------------------------------

def test_gaussian_data_is_the_documented_draw():
    y = pd.read_csv(MODELS / "gaussian.csv")["y"].to_numpy()
    np.testing.assert_array_equal(y, np.random.default_rng(0).normal(0.5, 1, 10))


def test_eight_schools_numbers():
    table = pd.read_csv(MODELS / "eight_schools.csv")
    assert table["y"].tolist() == [28, 8, -3, 7, -1, 1, 18, 12]
    assert table["sigma"].tolist() == [15, 10, 16, 11, 9, 11, 10, 18]


def test_gmm_data_is_standardised_old_faithful():
    x = pd.read_csv(MODELS / "gmm.csv")
    assert list(x.columns) == ["eruptions", "waiting"] and len(x) == 272
    np.testing.assert_allclose(x.mean(), 0, atol=1e-5)
    np.testing.assert_allclose(x.std(ddof=0), 1, atol=1e-5)
    raw = next((p for p in (ROOT / "shared/data/old_faithful.csv", ROOT.parent / "shared/data/old_faithful.csv")
                if p.is_file()), None)
    if raw is not None:
        r = pd.read_csv(raw)[["eruptions", "waiting"]]
        np.testing.assert_allclose(x, (r - r.mean()) / r.std(ddof=0), atol=1e-6)


def test_logistic_regression_data():
    table = pd.read_csv(MODELS / "logistic_regression.csv")
    assert table.shape == (569, 32)
    assert (table["x1"] == 1).all()
    features = table[[f"x{j}" for j in range(2, 32)]]
    np.testing.assert_allclose(features.mean(), 0, atol=1e-3)
    np.testing.assert_allclose(features.std(ddof=0), 1, atol=1e-3)
    assert table["y"].sum() == 357  # benign tumours in scikit-learn's copy


def test_lda_and_ctm_share_one_corpus():
    assert filecmp.cmp(MODELS / "lda.csv", MODELS / "ctm.csv", shallow=False)
    table = pd.read_csv(MODELS / "lda.csv")
    assert table["doc"].nunique() == 100 and table["word"].nunique() == 500


@pytest.fixture
def generator(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("make_data", MODELS / "make_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "HERE", tmp_path)
    monkeypatch.setattr(module, "ROOT", tmp_path.parent)
    return module, tmp_path


SYNTHETIC = ["gaussian", "linear_regression", "beta_bernoulli", "gamma_poisson", "eight_schools",
             "hierarchical_logistic", "gp_classification", "poisson_regression", "poisson_mf",
             "kalman_bernoulli", "binary_fa", "latent_class", "gamma_toy", "ordinal_regression",
             "spectral_unmixing", "logistic_wide", "casino", "factorial_hmm"]


@pytest.mark.parametrize("name", SYNTHETIC + ["logistic_regression", "multinomial_logistic", "gmm", "lda", "hmm"])
def test_make_data_reproduces_the_committed_csv(generator, name):
    module, out = generator
    if name == "lda":
        pytest.importorskip("lda", reason="`pip install lda` to rebuild lda.csv and ctm.csv")
    if name in ("logistic_regression", "multinomial_logistic"):
        pytest.importorskip("sklearn")
    if name in ("gmm", "hmm"):
        sources = [p for p in module.OLD_FAITHFUL if p.is_file()]
        if not sources:
            pytest.skip("shared/data/old_faithful.csv not available")
    module.main([name])
    assert filecmp.cmp(out / f"{name}.csv", MODELS / f"{name}.csv", shallow=False)
    if name == "lda":
        assert filecmp.cmp(out / "ctm.csv", MODELS / "ctm.csv", shallow=False)
    if name == "linear_regression":
        for variant in ("linear_regression_ard", "linear_regression_known_noise"):
            assert filecmp.cmp(out / f"{variant}.csv", MODELS / f"{variant}.csv", shallow=False)
