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
