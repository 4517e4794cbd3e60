"""One convention for the label of an element, in every table: a level's label on an axis that
counts the levels of a `cat` column (`a[site_a]`, as ArviZ's coordinates and `predict` give
them), a 1-based number elsewhere. The summary, its CSV and the draws said `a[1]` where
predict and ArviZ said `a[site_a]`."""

from __future__ import annotations

import numpy as np
import pandas as pd

import ppl
from ppl.report.outputs import summary_csv


def test_a_group_is_labelled_by_its_level_in_the_summary_the_csv_the_draws_and_predict():
    post = ppl.load("models/hierarchical_logistic.vim").infer("models/hierarchical_logistic.csv", seed=0)
    labels = post.summary(vars="a")["variable"].tolist()
    assert labels == [f"a[{site}]" for site in post.coords["G"]] and labels[0] == "a[site_a]"
    assert "\na[site_a]," in summary_csv(post, "a")
    assert "a[site_a]" in post.draw_columns(2, seed=0)
    new = pd.DataFrame({"site": ["site_a"], "x": [1.0], "y": [np.nan]})
    assert "a[site_a]" in post.predict(new).table()["variable"].tolist()


def test_numbered_axes_keep_their_numbers_and_documents_their_labels():
    frame = pd.read_csv("models/lda.csv")
    post = ppl.load("models/lda.vim").infer(frame, seed=0, max_iter=2)
    table = post.summary(vars="theta")
    second = post.coords["D"][1]
    assert table["variable"].iloc[10] == f"theta[{second},1]"  # K = 10 topics per document, 1-based
    gmm = ppl.load("models/gmm.vim").infer("models/gmm.csv", seed=0)
    assert gmm.summary(vars="mu")["variable"].tolist()[:2] == ["mu[4,1]", "mu[4,2]"]


def test_the_class_probabilities_of_an_empty_categorical_cell_are_labelled_by_its_levels():
    """Three wine cultivars left empty in a softmax response: the table said `y[71,1]` for the
    probability of barbera where the weights said `b[barbera]` and predict `p[barbera]`."""
    frame = pd.read_csv("models/multinomial_logistic.csv")
    frame.loc[[3, 70], "species"] = np.nan
    post = ppl.load("models/multinomial_logistic.vim").infer(frame, seed=0)
    labels = post.summary(vars="y")["variable"].tolist()
    assert labels == [f"y[{row},{level}]" for row in (4, 71) for level in ("setosa", "versicolor", "virginica")]
    assert '\n"y[4,setosa]",' in summary_csv(post, "y")
