"""The `weight` element type: its declaration rules (E267–E269), its data (E430), how `ppl check`
shows it, and where the engine refuses it (the time axis of a chain)."""

from __future__ import annotations

import numpy as np
import pytest

import ppl
from ppl.diagnostics import DataError, ModelError
from ppl.infer.access import Unsupported

from model_texts import with_weight


def _compile_error(text):
    with pytest.raises(ModelError) as info:
        ppl.compile(text)
    return info.value


@pytest.mark.parametrize("text, code", [
    ("data c: weight[N, D]\ndata y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)", "E267"),
    ("const N = 3\ndata c: weight[N]\ndata y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)", "E267"),
    ("data c: weight[N]\ndata d: weight[N]\ndata y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)", "E268"),
    ("data c: weight[N]\ndata y: real[N]\nmu ~ Normal(0, 1)\nfor n in 1..N { y[n] ~ Normal(mu * c[n], 1) }",
     "E269"),
    ("data c: weight[N]\nmu ~ Normal(0, 1)\nfor n in 1..N { c[n] ~ Normal(mu, 1) }", "E269"),
])
def test_weight_declarations_are_checked(text, code):
    error = _compile_error(text)
    assert error.code == code and error.span is not None


@pytest.mark.parametrize("cell, shown", [("-1", "`-1`"), ("", "an empty cell"), ("inf", "`inf`"), ("x", "`x`")])
def test_a_bad_weight_cell_is_a_located_data_error(tmp_path, cell, shown):
    path = tmp_path / "d.csv"
    path.write_text(f"y,count\n1.0,2\n0.5,{cell}\n")
    model = ppl.compile("data y: real[N]\ndata count: weight[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)")
    with pytest.raises(DataError) as info:
        model.bind(str(path))
    error = info.value
    assert (error.code, error.column, error.row) == ("E430", "count", 2) and shown in str(error)


def test_a_weight_binds_a_named_column_and_check_shows_it():
    model = ppl.compile("data y: real[N]\ndata n: weight[N] from times\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)")
    report = model.check_report({"y": np.zeros(3), "n": np.ones(3)})
    assert report["weights"] == [{"plate": "N", "weight": "n"}]
    assert {"name": "n", "kind": "weight"}.items() <= next(v for v in report["variables"] if v["name"] == "n").items()


def test_the_time_axis_of_a_chain_takes_no_weight():
    text = """
data y: real[T]
data c: weight[T]
x[1] ~ Normal(0, 1)
for t in 2..T { x[t] ~ Normal(x[t-1], 1) }
for t in 1..T { y[t] ~ Normal(x[t], 1) }
"""
    with pytest.raises(Unsupported) as info:
        ppl.compile(text).infer({"y": np.zeros(5), "c": np.ones(5)})
    assert info.value.code == "E500" and "time axis" in str(info.value)


def test_check_prints_the_weighted_plate():
    from ppl.report import check_report
    model = ppl.compile(with_weight("data y: real[N]\nmu ~ Normal(0, 1)\ny ~ Normal(mu, 1)"))
    text = check_report(model.check_report({"y": np.zeros(2), "count": np.ones(2)}), "t")
    assert "rows of N weighted by `count`" in text
