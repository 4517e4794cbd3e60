"""`Posterior.to_arviz`: az.summary of the draws agrees with ppl's exact marginals within Monte
Carlo error, the axes carry the model's names and labels, and `--output post.nc` loads back."""

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import ppl

az = pytest.importorskip("arviz")
xr = pytest.importorskip("xarray")
MODELS = Path(__file__).resolve().parents[1] / "models"
DRAWS = 4000


def fit(name, **options):
    return ppl.load(MODELS / f"{name}.vim").infer(MODELS / f"{name}.csv", seed=0, **options)


def assert_within_mc_error(post, names):
    """Every listed element's az.summary mean and sd against q's exact mean and sd, to within
    z Monte Carlo standard errors, z = Φ⁻¹(1 − 0.001 / 2m) for m comparisons (a 0.1%
    family-wise level). The SE of a mean is sd/√n; that of an sd is sd·√((κ − 1)/4n), κ the
    kurtosis of the draws (skewed Dirichlet entries have a large one)."""
    idata = post.to_arviz(DRAWS, seed=1, vars=names)
    checked = 0
    for name in names:
        table = az.summary(idata, var_names=[name], kind="stats", round_to="none")
        shape = np.shape(post[name].mean)
        mean, sd = table["mean"].to_numpy().reshape(shape), table["sd"].to_numpy().reshape(shape)
        draws = idata.posterior[name].values[0]
        kurtosis = stats.kurtosis(draws, axis=0, fisher=False)
        listed = post.reported(name)
        exact_mean, exact_sd = post[name].mean[listed], post[name].sd[listed]
        se_mean = exact_sd / np.sqrt(DRAWS)
        se_sd = exact_sd * np.sqrt(np.maximum(kurtosis[listed] - 1, 1e-12) / (4 * DRAWS))
        m = 2 * listed.sum()
        z = stats.norm.isf(0.001 / (2 * m))
        assert np.all(np.abs(mean[listed] - exact_mean) <= z * se_mean + 1e-12), name
        assert np.all(np.abs(sd[listed] - exact_sd) <= z * se_sd + 1e-12), name
        checked += listed.sum()
    assert checked > 0


def test_gmm_summary_within_mc_error_and_named_axes():
    post = fit("gmm")
    assert_within_mc_error(post, ["pi", "mu", "Lambda"])
    idata = post.to_arviz(100, seed=0)
    assert idata.posterior["mu"].dims == ("chain", "draw", "K", "D")
    assert idata.posterior["pi"].dims == ("chain", "draw", "K")  # the weights share the component axis
    assert idata.posterior["K"].values.tolist() == [1, 2, 3, 4, 5, 6]  # 1-based, as in the model
    assert set(np.unique(idata.posterior["z"].values)) <= set(range(1, 7))  # categories 1..K
    np.testing.assert_allclose(idata.observed_data["x"].values, np.loadtxt(MODELS / "gmm.csv", delimiter=",",
                                                                            skiprows=1))
    assert idata.elbo_trace["elbo"].values[-1] == pytest.approx(post.elbo)


def test_logistic_regression_summary_within_mc_error():
    post = fit("logistic_regression")
    assert_within_mc_error(post, ["w"])


def test_lda_summary_within_mc_error_and_word_labels():
    post = fit("lda")
    assert_within_mc_error(post, ["beta", "theta"])
    idata = post.to_arviz(10, seed=0, vars="beta")
    assert idata.posterior["beta"].dims == ("chain", "draw", "K", "V")
    words = [str(w) for w in post.levels["word"]]
    assert idata.posterior["V"].values.tolist() == words  # the CSV's labels
    assert "word" in idata.observed_data and "doc" in idata.constant_data


def test_netcdf_output_loads_back_with_xarray(tmp_path):
    from ppl.cli import main
    out = tmp_path / "post.nc"
    assert main(["infer", str(MODELS / "eight_schools.vim"), str(MODELS / "eight_schools.csv"), "--seed", "0",
                 "--quiet", "--output", str(out), "--draws", "500", "--trace-terms"]) == 0
    post = xr.open_dataset(out, group="posterior")
    assert post["theta"].shape == (1, 500, 8) and post["theta"].dims == ("chain", "draw", "J")
    trace = xr.open_dataset(out, group="elbo_trace")
    terms = trace["elbo_term"].values[-1]
    assert terms.sum() == pytest.approx(trace["elbo"].values[-1], rel=1e-9)  # the terms add up to the ELBO
    assert xr.open_dataset(out, group="observed_data")["y"].values.tolist() == \
        [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]
    assert az.from_netcdf(out).posterior["mu"].shape == (1, 500)


def test_netcdf_output_is_written_like_the_other_outputs(tmp_path):
    """Through the same atomic write as the JSON and CSV outputs: the mode a plain `open` gives
    (0666 less the umask, not mkstemp's 0600) and no temporary file left behind."""
    import os
    import stat

    from ppl.cli import main
    old = os.umask(0o027)
    try:
        assert main(["infer", str(MODELS / "eight_schools.vim"), str(MODELS / "eight_schools.csv"), "--seed", "0",
                     "--quiet", "--output", str(tmp_path / "post.nc"), "--draws", "20"]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "post.nc").stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["post.nc"]


def test_group_axis_carries_the_csv_labels_and_plot_posterior_draws_it():
    import matplotlib
    matplotlib.use("Agg")
    post = fit("hierarchical_logistic")
    idata = post.to_arviz(200, seed=0, vars="mu_a,a")
    assert idata.posterior["a"].dims == ("chain", "draw", "G")
    assert idata.posterior["G"].values.tolist() == [str(s) for s in post.levels["site"]]
    axes = az.plot_posterior(idata, var_names=["a"])
    assert np.size(axes) == len(post.levels["site"])


@pytest.mark.parametrize("draws", [-1, 1.5, "10"])
def test_a_bad_number_of_draws_is_an_option_error(draws):
    """`draws(-1)` was numpy's 'negative dimensions', `to_arviz(draws=1.5)` xarray's 'conflicting
    sizes for dimension draw': E326, as `--draws -1` is."""
    post = fit("beta_bernoulli")
    for call in (lambda: post.draws(draws), lambda: post.to_arviz(draws=draws)):
        with pytest.raises(ppl.OptionError) as info:
            call()
        assert info.value.code == "E326"
        assert info.value.message == f"draws must be a non-negative integer, got {draws!r}"


@pytest.mark.parametrize("name, variable, levels", [("gmm", "z", 6), ("hmm", "z", 2)])
def test_latent_category_draws_are_one_based_in_arviz_and_the_draws_csv(name, variable, levels, tmp_path):
    """A category is 1..K in the model: ArviZ gave an HMM's chain states 0-based (a mixture's
    1-based), and --draws-output gave every category 0-based. Both now equal draws() + 1."""
    import csv
    from ppl.report import write_draws
    post = fit(name, max_iter=30)
    codes = post.draws(40, seed=3)[variable] + 1
    assert codes.min() >= 1 and codes.max() <= levels
    np.testing.assert_array_equal(post.to_arviz(40, seed=3).posterior[variable].values[0], codes)
    write_draws(post, 40, 3, tmp_path / "draws.csv")
    with open(tmp_path / "draws.csv", newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    column = header.index(f"{variable}[2]")
    assert [int(float(row[column])) for row in rows] == codes[:, 1].tolist()


def test_observed_cells_of_a_partly_observed_response_are_not_drawn():
    """A response with empty cells has q over those cells only: the draws (and ArviZ's posterior
    group) gave random values at the observed cells too, where the summary lists nothing. They
    are NaN there now, with the observed values in `observed_data`; the empty cells are drawn."""
    frame = __import__("pandas").read_csv(MODELS / "linear_regression_known_noise.csv")
    frame.loc[[3, 7], "y"] = np.nan
    post = ppl.load(MODELS / "linear_regression_known_noise.vim").infer(frame, seed=0)
    draws = post.draws(50, seed=1)["y"]
    missing = np.zeros(50, dtype=bool)
    missing[[3, 7]] = True
    assert np.isnan(draws[:, ~missing]).all() and np.isfinite(draws[:, missing]).all()
    idata = post.to_arviz(50, seed=1)
    np.testing.assert_array_equal(idata.posterior["y"].values[0], draws)
    np.testing.assert_array_equal(np.isnan(idata.observed_data["y"].values), missing)


def test_a_bad_seed_of_the_draws_is_an_option_error():
    """`draws(10, seed=-1)` and `to_arviz(seed=1.5)` were numpy's ValueError and TypeError."""
    post = fit("beta_bernoulli")
    for call in (lambda: post.draws(10, seed=-1), lambda: post.to_arviz(10, seed=1.5)):
        with pytest.raises(ppl.OptionError) as info:
            call()
        assert info.value.code == "E325"
    assert post.draws(3, seed=np.random.default_rng(0))["theta"].shape == (3,)  # a Generator is a seed too


def test_an_axis_as_long_as_a_named_integer_constant_takes_its_name():
    """The HMM's transition matrix A (`A[k] ~ Dirichlet(ones(K))`, const K = 2) had the dims (K, A_dim_1):
    its rows took K from their loop, its event axis none. An axis whose length is the value of exactly one
    integer constant is named after it (deduplicated as Lambda's (D, D_2)); other axes keep name_dim_i."""
    post = ppl.load(MODELS / "hmm.vim").infer(MODELS / "hmm.csv", seed=0)
    idata = post.to_arviz(10, seed=0, vars="A,pi")
    assert idata.posterior["A"].dims == ("chain", "draw", "K", "K_2")
    assert idata.posterior["K_2"].values.tolist() == [1, 2]
    assert idata.posterior["pi"].dims == ("chain", "draw", "K")
