"""What `predict` and `score` hand back (`ppl.infer.predict.result`, `ppl.report.prediction`):
the response frames hold every cell of the arrays they come from, and the reports say so when
there is nothing to score."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import ppl
from ppl.cli import main


@pytest.fixture(scope="module")
def mixture():
    frame = pd.read_csv("models/gmm.csv")
    return ppl.load("models/gmm.vim").infer(frame.iloc[:200], seed=0, max_iter=50), frame.iloc[200:204].copy()


def test_a_vector_response_frame_has_a_row_per_cell(mixture):
    """`pred["x"]` of a two-coordinate response: one row per (row, coordinate), equal to the
    arrays of `pred.cells` (it kept the first coordinate only)."""
    post, new = mixture
    new.iloc[:2] = np.nan
    pred = post.predict(new)
    frame = pred["x"]
    assert frame.shape == (8, 4)
    for column in ("mean", "sd", "q2.5", "q97.5"):
        np.testing.assert_array_equal(frame[column].to_numpy(), pred.cells["x"][column].reshape(-1))
    assert frame.loc[(1, 1), "mean"] == pred.cells["x"]["mean"][1, 1]
    assert frame["mean"].notna().sum() == 4  # the two empty rows' coordinates; the given rows NaN


def test_scoring_data_without_responses_says_there_is_nothing_to_score(tmp_path, capsys):
    """New rows with no response value: no log density of 0 over 0 cells, but what is missing."""
    model, post = "models/linear_regression.vim", str(tmp_path / "post.json")
    assert main(["infer", model, "models/linear_regression.csv", "--seed", "0", "--quiet", "--output", post]) == 0
    pd.DataFrame({"x1": [0.1], "x2": [0.2], "x3": [0.3], "y": [np.nan]}).to_csv(tmp_path / "new.csv", index=False)
    capsys.readouterr()
    assert main(["score", model, post, str(tmp_path / "new.csv")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2] == ("nothing to score: the new data leave every response cell empty (y); give the observed values "
                      "to score them")
    assert not any("log predictive density" in line for line in out)


def test_a_weighted_row_is_scored_as_the_observations_it_stands_for():
    """`data count: weight[N]`: a row stands for count identical observations, and the fit is
    the expanded data's; the score ignored the weight, scoring a row of 47 survivals as one. It
    is now the expanded data's score, count × log p per row, and counts the observations."""
    post = ppl.load("models/surgical.vim").infer("models/surgical.csv", seed=0)
    grouped = pd.DataFrame({"hospital": ["HA", "HA", "HB", "HZ"], "died": [1, 0, 1, 0], "count": [3, 47, 0, 2.5]})
    score = post.score(grouped)
    single = post.score(grouped.assign(count=1.0))
    np.testing.assert_allclose(score.cells["died"], single.cells["died"] * [3, 47, 0, 2.5], rtol=1e-12)
    assert score.count == 52.5 and single.count == 4
    expanded = grouped.loc[grouped.index.repeat([3, 47, 0, 1])].assign(count=1.0)
    assert post.score(expanded).total == pytest.approx(score.total - 1.5 * single.cells["died"][3], rel=1e-12)


@pytest.mark.parametrize("name, reason", [("hmm", "`z` is one chain over all the rows"),
                                          ("poisson_mf", "the local variables sit on two group plates (I, U)")])
def test_predicting_a_model_without_groups_of_rows_says_why_in_its_terms(name, reason):
    """A single chain (an HMM) or locals on two plates cannot be folded in group by group: the
    error spoke of a schedule's minibatches, which the user of predict never asked for."""
    frame = pd.read_csv(f"models/{name}.csv")
    post = ppl.load(f"models/{name}.vim").infer(frame, seed=0, max_iter=5)
    for call in (post.predict, post.score):
        with pytest.raises(ppl.ModelError) as info:
            call(frame.iloc[:5])
        assert info.value.code == "E813"
        assert info.value.message.startswith("predict and score fit the new rows' local variables group by group, "
                                             f"which this model does not allow: {reason}")


def test_a_global_over_the_rows_is_named_as_such_when_new_rows_are_predicted():
    """A Gaussian process's f is one global vector over the training rows: new rows gave 'a size
    read off the data differs (columns of a matrix, levels of a category)', which named neither,
    and as many new rows as training rows were predicted silently with the training rows' f."""
    frame = pd.read_csv("models/gp_classification.csv")
    post = ppl.load("models/gp_classification.vim").infer(frame, seed=0, max_iter=5)
    with pytest.raises(ppl.DataError) as info:
        post.predict(frame.iloc[:5].assign(y=np.nan))
    assert info.value.code == "E351"
    assert info.value.message == ("`f` is one global variable over the rows (N: 40 in training, 5 in the new "
                                  "data): this version does not predict new rows of it (a Gaussian process at "
                                  "new inputs)")
    shifted = frame.assign(x=frame["x"] + 1.0, y=np.nan)  # 40 other inputs: f[n] of training input n was used
    with pytest.raises(ppl.DataError) as info:
        post.score(shifted.assign(y=frame["y"]))
    assert info.value.code == "E351" and "(N: 40 in training, 40 in the new data)" in info.value.message


def test_bad_seed_or_model_arguments_of_predict_are_located_errors():
    """`predict(new, seed=-1)` was numpy's ValueError and `model=123` pathlib's TypeError."""
    post = ppl.load("models/eight_schools.vim").infer("models/eight_schools.csv", seed=0)
    new = pd.DataFrame({"y": [np.nan], "sigma": [10.0]})
    for call in (post.predict, post.score):
        with pytest.raises(ppl.OptionError) as info:
            call(new, seed=-1)
        assert info.value.code == "E325" and info.value.message == "seed must be a non-negative integer or None, got -1"
        with pytest.raises(ppl.ModelError) as info:
            call(new, model=123)
        assert info.value.code == "E001" and info.value.message == "cannot read a model from an int: give the path " \
                                                                  "of a .vim file or a ppl.Model"


def test_a_categorical_prediction_gives_every_class_probability_and_the_most_probable_class():
    """`y ~ Categorical(p)`, p ~ Dirichlet(1, 1, 1): the predictive of a new cell is E[p] =
    (1 + counts) / (3 + N), the class probabilities a classifier's user wants; predict gave only
    the mean and sd of the level number. They are `cells["y"]["probs"]`, and `pred["y"]` and the
    table (the CSV of `ppl predict -o`) have a `p[label]` column per class and the `mode`."""
    model = ppl.compile("data y: cat(K)[N]\np ~ Dirichlet(ones(K))\ny ~ Categorical(p)\n")
    post = model.infer(pd.DataFrame({"y": ["a"] * 5 + ["b"] * 2 + ["c"] * 1}), seed=0)
    pred = post.predict(pd.DataFrame({"y": [np.nan, "b", np.nan]}))
    exact = np.array([6.0, 3.0, 2.0]) / 11.0
    probs = pred.cells["y"]["probs"]
    assert probs.shape == (3, 3) and np.isnan(probs[1]).all()
    np.testing.assert_allclose(probs[[0, 2]], [exact, exact], rtol=1e-12)
    np.testing.assert_allclose(pred.cells["y"]["mean"][0], exact @ [1, 2, 3], rtol=1e-12)
    frame = pred["y"]
    assert list(frame.columns) == ["mean", "sd", "q2.5", "q97.5", "mode", "p[a]", "p[b]", "p[c]"]
    assert frame["mode"][[0, 2]].tolist() == ["a", "a"] and frame["mode"].isna().tolist() == [False, True, False]
    np.testing.assert_allclose(frame.loc[2, ["p[a]", "p[b]", "p[c]"]].to_numpy(dtype=float), exact, rtol=1e-12)
    table = pred.table()
    assert table["variable"].tolist() == ["y[1]", "y[3]"] and table["mode"].tolist() == ["a", "a"]
    np.testing.assert_allclose(table[["p[a]", "p[b]", "p[c]"]].to_numpy(dtype=float), [exact, exact], rtol=1e-12)


def test_softmax_class_probabilities_are_the_averaged_softmax_and_give_the_mean(tmp_path, capsys):
    """Iris under a softmax regression: every row's class probabilities sum to 1, their level
    average is the predictive mean, and `ppl predict -o` writes them by species."""
    frame = pd.read_csv("models/multinomial_logistic.csv")
    post = ppl.load("models/multinomial_logistic.vim").infer(frame, seed=0)
    new = frame.iloc[[0, 60, 120]].assign(species=np.nan)
    pred = post.predict(new)
    probs = pred.cells["y"]["probs"]
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(probs @ [1, 2, 3], pred.cells["y"]["mean"], rtol=1e-12)
    assert pred["y"]["mode"].tolist() == ["setosa", "versicolor", "virginica"]
    post.save(tmp_path / "post.json")
    new.to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", "models/multinomial_logistic.vim", str(tmp_path / "post.json"), str(tmp_path / "new.csv"),
                 "-o", str(tmp_path / "pred.csv")]) == 0
    report = capsys.readouterr().out.splitlines()
    assert report[2].split() == ["variable", "kind", "mean", "sd", "2.5%", "97.5%", "mode", "p(mode)"]
    assert report[4].split()[-2:] == ["setosa", f"{probs[0].max():.4g}"]
    written = pd.read_csv(tmp_path / "pred.csv")
    assert list(written.columns[6:]) == ["mode", "p[setosa]", "p[versicolor]", "p[virginica]"]
    np.testing.assert_allclose(written.iloc[:, 7:].to_numpy(), probs, rtol=1e-9)


def test_a_numeric_missing_token_matches_new_rows_by_value(tmp_path):
    """`predict(new, na="-999")` marked the text `-999` only: a CSV cell `-999.0`, or a
    DataFrame's number -999, was taken as an observed response (nothing predicted) and a
    covariate's as a value. Every source now matches a token that reads as a number by value."""
    post = ppl.load("models/linear_regression.vim").infer("models/linear_regression.csv", seed=0)
    path = tmp_path / "new.csv"
    path.write_text("x1,x2,x3,y\n0.1,0.2,0.3,-999.0\n0.1,0.2,0.3,-999\n0.1,0.2,0.3,1.5\n")
    frame = pd.read_csv(path)
    for data in (path, frame, {"X": frame[["x1", "x2", "x3"]].to_numpy(), "y": frame["y"].to_numpy()}):
        assert np.isnan(post.predict(data, na="-999").cells["y"]["mean"]).tolist() == [False, False, True]
    path.write_text("x1,x2,x3,y\n-999.0,0.2,0.3,\n")
    with pytest.raises(ppl.DataError) as info:
        post.predict(path, na=-999)
    assert info.value.code == "E410" and info.value.column == "x1"


def test_a_weighted_row_is_predicted_as_the_observations_it_stands_for():
    """`data count: weight[N]`: an empty response cell of a row standing for 10 observations was
    predicted as one, with nothing saying so, while score counts the row 10 times. The row's
    predictive is each of its observations' (the expanded data's 10 identical rows), and `count`
    (in `cells`, `pred["died"]` and the table) says how many observations it stands for."""
    post = ppl.load("models/surgical.vim").infer("models/surgical.csv", seed=0)
    new = pd.DataFrame({"hospital": ["HZ", "HZ", "HZ", "HA"], "died": [1, 0, np.nan, np.nan],
                        "count": [3, 47, 10, 2.5]})
    pred = post.predict(new)
    expanded = new.loc[new.index.repeat([3, 47, 10, 1])].assign(count=1.0)
    single = post.predict(expanded)
    np.testing.assert_allclose(pred.cells["died"]["mean"][2:], single.cells["died"]["mean"][[50, 60]], rtol=1e-10)
    np.testing.assert_array_equal(pred.cells["died"]["count"], [np.nan, np.nan, 10.0, 2.5])
    assert pred["died"]["count"].tolist()[2:] == [10.0, 2.5]
    assert pred.table()["count"].tolist()[:2] == [10.0, 2.5]


def test_new_rows_without_the_weight_column_count_once_each():
    """New rows for a model with `data count: weight[N]` had to carry the weight column (E403),
    though a new row is one observation unless it says otherwise: an absent weight column now
    counts every row once, as a column of ones does."""
    post = ppl.load("models/surgical.vim").infer("models/surgical.csv", seed=0)
    new = pd.DataFrame({"hospital": ["HA", "HZ"], "died": [1, 0]})
    ones = new.assign(count=1.0)
    assert post.score(new).total == post.score(ones).total and post.score(new).count == 2
    np.testing.assert_array_equal(post.predict(new.assign(died=np.nan)).cells["died"]["count"], [1.0, 1.0])
