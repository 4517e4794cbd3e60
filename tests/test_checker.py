"""Focused tests of the checker and the analyzer on small inline models: inferred shapes,
`set=` overrides, `--method` overrides and their validation, global/local scopes, and the keys
of the JSON report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from model_texts import CHAIN, LDA, MIXTURE
import ppl
from ppl import ModelError, OptionError, cli



MIXTURE_DATA = {"x": np.array([[3.6, 79.0], [1.8, 54.0], [3.3, 74.0], [2.3, 62.0], [4.5, 85.0]])}
CHAIN_DATA = {"y": np.array([1, 0, 1, 1, 0, 1, 1])}


def variables(text, **kw):
    return ppl.compile(text, **kw).checked.variables


# ---- shapes ---------------------------------------------------------------------------

def test_mixture_shapes():
    v = variables(MIXTURE)
    assert v["x"].kind == "data" and v["x"].shape == ("N", "D")
    assert v["pi"].shape == (6,) and v["pi"].event_rank == 1
    assert v["Lambda"].shape == (6, "D", "D") and v["Lambda"].event_rank == 2
    assert v["mu"].shape == (6, "D") and v["mu"].event_rank == 1  # [K, D]
    assert v["mu"].plates == (6,) and v["mu"].event_shape == ("D",)
    assert v["z"].shape == ("N",) and v["z"].elem == "cat" and v["z"].levels == 6
    assert {n: v[n].kind for n in ("K", "alpha0", "pi", "z")} == {
        "K": "const", "alpha0": "const", "pi": "latent", "z": "latent"}


def test_mixture_shapes_become_numbers_with_data():
    report = ppl.compile(MIXTURE).check_report(MIXTURE_DATA)
    shapes = {v["name"]: v["shape"] for v in report["variables"]}
    assert shapes == {"x": [5, 2], "pi": [6], "Lambda": [6, 2, 2], "z": [5], "mu": [6, 2]}


def test_markov_chain_spans_its_pieces():
    v = variables(CHAIN)
    assert v["x"].shape == ("T",)
    assert v["x"].kind == "latent"


def test_markov_chain_pieces_in_any_order():
    reordered = """
data y: bool[T]
for t in 1..T { y[t] ~ Bernoulli(logistic(x[t])) }
for t in 2..T { x[t] ~ Normal(a * x[t-1], 10.0) }
x[1] ~ Normal(0, 1)
a ~ Normal(0, 1)
"""
    assert variables(reordered)["x"].shape == ("T",)


def test_markov_chain_with_constant_length():
    text = """
const T = 5
x[1] ~ Normal(0, 1)
for t in 2..T { x[t] ~ Normal(x[t-1], 1) }
"""
    assert variables(text)["x"].shape == (5,)


def test_deterministic_and_indexed_shapes():
    text = """
const D = 3
data X: real[N, D]
data g: cat(G)[N]
w ~ MvNormal(zeros(D), eye(D))
for j in 1..G { b[j] ~ Normal(0, 1) }
for n in 1..N {
  eta[n] = dot(w, X[n]) + b[g[n]]
}
s = X @ w
"""
    v = variables(text)
    assert v["eta"].kind == "deterministic" and v["eta"].shape == ("N",)
    assert v["s"].shape == ("N",)
    assert v["b"].shape == ("G",)
    assert v["w"].shape == (3,)


def test_shape_mismatch_is_located():
    text = "const D = 3\ndata X: real[N, 2]\nw ~ MvNormal(zeros(D), eye(D))\ns = X @ w\n"
    with pytest.raises(ModelError) as info:
        ppl.compile(text)
    assert info.value.code == "E220"
    assert (info.value.span.line, info.value.span.column) == (4, 5)


# ---- constants and set= -------------------------------------------------------------

def test_set_overrides_a_constant():
    model = ppl.compile(MIXTURE, set={"K": 4})
    assert model.checked.constants["K"] == 4
    assert model.checked.variables["mu"].shape == (4, "D")
    assert model.checked.variables["z"].levels == 4
    again = model.with_constants(K=2, beta0=0.5)
    assert again.checked.variables["pi"].shape == (2,)
    assert again.checked.constants["beta0"] == 0.5
    assert ppl.compile(MIXTURE).checked.constants["K"] == 6  # the text is not changed


def test_set_validation():
    with pytest.raises(OptionError) as info:
        ppl.compile(MIXTURE, set={"KK": 3})
    assert info.value.code == "E300" and info.value.hint == "did you mean `K`?"
    with pytest.raises(OptionError) as info:
        ppl.compile(MIXTURE, set={"K": 2.5})
    assert info.value.code == "E301"
    assert ppl.compile(MIXTURE, set={"K": 3.0}).checked.constants["K"] == 3


@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_set_of_an_integer_constant_to_a_non_finite_value_is_e301(value):
    """`--set K=inf` was an OverflowError (`int(inf)`), `K=nan` a ValueError: internal errors."""
    with pytest.raises(OptionError) as info:
        ppl.compile(MIXTURE, set={"K": value})
    assert info.value.code == "E301" and info.value.message == f"--set K={value}: `K` is an integer"


@pytest.mark.parametrize("value", ["a", None, [3], True])
def test_set_to_something_not_a_number_is_e812(value):
    """From Python `set={"K": "a"}` was a ValueError from float()."""
    with pytest.raises(OptionError) as info:
        ppl.compile(MIXTURE, set={"K": value})
    assert info.value.code == "E812" and info.value.message == f"--set K={value!r}: a constant is set to a number"


def test_set_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "mixture.vim"
    path.write_text(MIXTURE)
    assert cli.main(["check", str(path), "--set", "K=3", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    shapes = {v["name"]: v["shape"] for v in report["variables"]}
    assert shapes["mu"] == [3, "D"] and shapes["pi"] == [3]
    assert cli.main(["check", str(path), "--set", "K=abc"]) == 2
    assert "not a number" in capsys.readouterr().err


# ---- --method -------------------------------------------------------------------------

def _rule(analysis, factor, variable):
    [tag] = [t for t in analysis.tags if t.factor == factor and t.variable == variable and t.role != "value"]
    return tag


def test_default_rules_and_annotation():
    analysis = ppl.compile(CHAIN).analyze()
    assert _rule(analysis, "x[t]", "a").rule == "vmp"
    tag = _rule(analysis, "y[t]", "x")
    assert tag.rule == "cvi" and "requested (annotation)" in tag.reason
    assert tag.options == {"samples": 10}


@pytest.mark.parametrize("key,value", [("y", "jaakkola"), ("y[t]", "jaakkola"), ("y", "bound:jaakkola")])
def test_method_overrides_the_annotation(key, value):
    tag = _rule(ppl.compile(CHAIN).analyze(methods={key: value}), "y[t]", "x")
    assert tag.rule == "bound:jaakkola"
    assert "requested (--method)" in tag.reason and "default would be ncvmp" in tag.reason


def test_method_validation():
    model = ppl.compile(CHAIN)
    cases = [({"y": "cvii"}, "E282"),            # no such rule
             ({"w": "cvi"}, "E283"),             # no such factor
             ({"x": "cvi"}, "E283"),             # x names two factors, x[1] and x[t]
             ({"x[t]": "jaakkola"}, "E281")]     # the rule cannot serve a Normal mean
    for methods, code in cases:
        with pytest.raises(OptionError) as info:
            model.analyze(methods=methods)
        assert info.value.code == code, methods
    with pytest.raises(OptionError) as info:
        model.analyze(methods={"x": "cvi"})
    assert "several factors" in info.value.message and "x[1], x[t]" in info.value.hint


def test_method_on_the_command_line(tmp_path, capsys):
    path = tmp_path / "chain.vim"
    path.write_text(CHAIN)
    assert cli.main(["check", str(path), "--method", "y=ncvmp", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    [tag] = [f for f in report["factors"] if f["factor"] == "y[t]"]
    assert tag["rule"] == "ncvmp"
    assert cli.main(["check", str(path), "--method", "y=laplacee"]) == 1
    assert capsys.readouterr().err.startswith("option error [E282]")


# ---- scopes -----------------------------------------------------------------------------

def test_global_and_local_scopes():
    assert ppl.compile(MIXTURE).analyze().scopes["z"][0] == "local"
    scopes = {n: s for n, (s, _) in ppl.compile(MIXTURE).analyze().scopes.items()}
    assert scopes == {"pi": "global", "Lambda": "global", "mu": "global", "z": "local"}
    scopes = {n: s for n, (s, _) in ppl.compile(CHAIN).analyze().scopes.items()}
    assert scopes == {"a": "global", "x": "local"}


def test_levels_of_an_index_are_local_but_levels_of_a_response_are_not():
    scopes = {n: s for n, (s, _) in ppl.compile(LDA).analyze().scopes.items()}
    assert scopes == {"theta": "local", "beta": "global", "z": "local"}
    classifier = """
data x: real[N, D]
data y: cat(K)[N]
for k in 1..K { w[k] ~ MvNormal(zeros(D), eye(D)) }
for n in 1..N { y[n] ~ Categorical(softmax(w @ x[n])) }
"""
    assert ppl.compile(classifier).analyze().scopes["w"][0] == "global"


# ---- the JSON report ----------------------------------------------------------------

def test_json_report_keys(tmp_path, capsys):
    path, data = tmp_path / "chain.vim", tmp_path / "chain.csv"
    path.write_text(CHAIN)
    data.write_text("y\n" + "\n".join(str(v) for v in CHAIN_DATA["y"]) + "\n")
    assert cli.main(["check", str(path), str(data), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"factors", "variables"} <= set(report)
    assert report["factors"] and report["variables"]
    for entry in report["factors"]:
        assert {"factor", "variable", "rule", "reason"} <= set(entry)
        assert isinstance(entry["reason"], str) and entry["reason"]
    for entry in report["variables"]:
        assert {"name", "shape", "kind", "scope"} <= set(entry)
        assert all(isinstance(d, int) for d in entry["shape"])
    variables = {v["name"]: v for v in report["variables"]}
    assert variables["x"]["shape"] == [7] and variables["x"]["scope"] == "local"
    assert variables["y"]["kind"] == "observed" and variables["y"]["scope"] is None
    assert variables["a"] == {**variables["a"], "shape": [], "kind": "latent", "scope": "global"}
    edges = {(f["factor"], f["variable"]): f["rule"] for f in report["factors"]}
    assert edges[("x[t]", "a")] == "vmp" and edges[("y[t]", "x")] == "cvi"


def test_report_matches_the_api():
    model = ppl.compile(CHAIN)
    report = model.check_report(CHAIN_DATA)
    assert [(f["factor"], f["variable"], f["rule"]) for f in report["factors"]] == \
        [(t.factor, t.variable, t.rule) for t in model.analyze(model.bind(CHAIN_DATA)).tags]
