"""The factor graph: its size does not depend on the data, its nodes and edges are what the
docstring of `ppl.graph.factor_graph` promises, and `ppl graph` prints DOT that Graphviz can read."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from model_texts import CHAIN
import ppl
from ppl import cli
from ppl.graph.factor_graph import to_dot

MIXTURE = """
const K = 3
data x: real[N, D]
data g: cat(G)[N]
data y: bool[N]
pi ~ Dirichlet(ones(K))
w ~ MvNormal(zeros(D), eye(D))
tau ~ Gamma(1, 1)
for j in 1..G { b[j] ~ Normal(0, tau) }
for n in 1..N {
  z[n] ~ Categorical(pi)
  y[n] ~ Bernoulli(logistic(dot(w, x[n]) + b[g[n]]))
}
"""


SMALL = """
data x: real[N]
data y: real[N]
a ~ Normal(0, 1)
tau ~ Gamma(1, 1)
c ~ Normal(2 * a, 1)
for n in 1..N {
  m[n] = a * x[n]
  y[n] ~ Normal(m[n], tau)
}
"""


def _mixture_data(rows: int, frame: bool):
    rng = np.random.default_rng(rows)
    x = rng.normal(size=(rows, 2))
    g = rng.integers(1, 4, size=rows)
    g[:3] = [1, 2, 3]  # every level present, so G is 3 at any size
    y = rng.integers(0, 2, size=rows)
    if frame:
        return pd.DataFrame({"x1": x[:, 0], "x2": x[:, 1], "g": g, "y": y})
    return {"x": x, "g": g, "y": y}


def _signature(g):
    kinds = sorted(d["kind"] for _, d in g.nodes(data=True))
    roles = sorted(d["role"] for _, _, d in g.edges(data=True))
    return g.number_of_nodes(), g.number_of_edges(), kinds, roles


@pytest.mark.parametrize("frame", [False, True], ids=["dict", "DataFrame"])
def test_graph_size_does_not_depend_on_rows(frame):
    model = ppl.compile(MIXTURE)
    small = model.bind(_mixture_data(10, frame))
    large = model.bind(_mixture_data(1_000_000, frame))
    assert small.sizes["N"] == 10 and large.sizes["N"] == 1_000_000
    g_small, g_large = model.graph(small), model.graph(large)
    assert _signature(g_small) == _signature(g_large)
    assert set(g_small.nodes) == set(g_large.nodes)
    assert set(g_small.edges) == set(g_large.edges)
    # without data too: the graph is the model's, the data only make shapes concrete
    assert _signature(model.graph()) == _signature(g_small)
    assert g_large.nodes["z"]["shape"] == (1_000_000,)
    assert g_small.nodes["z"]["shape"] == (10,)


def test_chain_graph_size_does_not_depend_on_rows():
    model = ppl.compile(CHAIN)
    rng = np.random.default_rng(1)
    graphs = [model.graph(model.bind({"y": rng.integers(0, 2, size=n)})) for n in (10, 1_000_000)]
    assert _signature(graphs[0]) == _signature(graphs[1])
    assert graphs[1].nodes["x"]["shape"] == (1_000_000,)


# ---- node kinds and edge roles (the docstring of ppl/graph/factor_graph.py) --------------------

def _small_graph(missing: bool = False):
    model = ppl.compile(SMALL)
    y = np.array([1.0, np.nan, 0.5, 2.0]) if missing else np.array([1.0, 1.5, 0.5, 2.0])
    return model.graph(model.bind({"x": np.array([0.1, 0.2, 0.3, 0.4]), "y": y}))


def test_one_node_per_variable_factor_and_link():
    g = _small_graph()
    kinds = {n: d["kind"] for n, d in g.nodes(data=True)}
    assert {n for n, k in kinds.items() if k == "variable"} == {"x", "y", "a", "tau", "c", "m"}
    assert {n for n, k in kinds.items() if k == "factor"} == {"a ~ Normal", "tau ~ Gamma", "c ~ Normal",
                                                             "y[n] ~ Normal"}
    links = [n for n, k in kinds.items() if k == "link"]
    assert len(links) == 1, "only `2 * a` is a non-trivial argument; `m[n]` and `tau` are references"
    assert g.nodes[links[0]]["label"] == "2 * a"
    assert set(kinds.values()) == {"variable", "factor", "link"}


def test_variable_attributes():
    g = _small_graph()
    states = {n: d["state"] for n, d in g.nodes(data=True) if d["kind"] == "variable"}
    assert states == {"x": "observed", "y": "observed", "a": "latent", "tau": "latent", "c": "latent",
                      "m": "deterministic"}
    for name, d in g.nodes(data=True):
        if d["kind"] == "variable":
            assert {"state", "family", "plates", "event"} <= set(d), name
    assert g.nodes["a"]["family"] == "Normal"
    assert g.nodes["tau"]["family"] == "Gamma"
    assert g.nodes["m"]["plates"] == (4,)
    assert g.nodes["a"]["plates"] == () and g.nodes["a"]["event"] == ()
    assert _small_graph(missing=True).nodes["y"]["state"] == "partially observed"


def test_edge_roles():
    g = _small_graph()
    roles = {(u, v): d["role"] for u, v, d in g.edges(data=True)}
    link = next(n for n, d in g.nodes(data=True) if d["kind"] == "link")
    assert roles == {
        ("a ~ Normal", "a"): "value",
        ("tau ~ Gamma", "tau"): "value",
        ("c ~ Normal", "c"): "value",
        ("y[n] ~ Normal", "y"): "value",
        ("m", "y[n] ~ Normal"): "mean",
        ("tau", "y[n] ~ Normal"): "precision",
        ("a", link): "input",
        (link, "c ~ Normal"): "mean",
        ("a", "m"): "input",
        ("x", "m"): "input",
    }


def test_every_factor_has_exactly_one_value_edge_to_its_variable():
    for text in (SMALL, MIXTURE, CHAIN):
        g = ppl.compile(text).graph()
        for node, d in g.nodes(data=True):
            if d["kind"] != "factor":
                continue
            out = [(v, e["role"]) for _, v, e in g.out_edges(node, data=True)]
            assert len(out) == 1 and out[0][1] == "value", (node, out)
            assert g.nodes[out[0][0]]["kind"] == "variable"
            for u, _, e in g.in_edges(node, data=True):
                assert e["role"] in d["factor"].dist.roles() + tuple(a.keyword for a in d["factor"].dist.alternatives)


# ---- DOT ----------------------------------------------------------------------------------

_NODE = re.compile(r'^  (n\d+) \[label="((?:[^"\\]|\\.)*)", shape=(ellipse|box|diamond)[^\]]*\];$')
_EDGE = re.compile(r'^  (n\d+) -> (n\d+) \[label="((?:[^"\\]|\\.)*)"\];$')


def _check_dot(text: str, g) -> None:
    assert text.startswith("digraph")
    assert text.rstrip().endswith("}")
    outside = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)  # braces inside labels do not count
    assert outside.count("{") == outside.count("}") == 1
    lines = text.rstrip("\n").splitlines()
    nodes = [m.group(1) for m in map(_NODE.match, lines) if m]
    edges = [(m.group(1), m.group(2)) for m in map(_EDGE.match, lines) if m]
    assert len(nodes) == len(set(nodes)) == g.number_of_nodes()
    assert len(edges) == g.number_of_edges()
    assert all(a in nodes and b in nodes for a, b in edges)
    other = [ln for ln in lines[1:-1] if not (_NODE.match(ln) or _EDGE.match(ln))]
    assert other == ["  rankdir=TB;"]


def test_to_dot_has_one_line_per_node_and_edge():
    for text in (SMALL, MIXTURE, CHAIN):
        g = ppl.compile(text).graph()
        _check_dot(to_dot(g), g)


def test_ppl_graph_command_prints_dot(tmp_path, capsys):
    model, data = tmp_path / "mixture.vim", tmp_path / "mixture.csv"
    model.write_text(MIXTURE)
    _mixture_data(50, frame=True).to_csv(data, index=False)
    assert cli.main(["graph", str(model), str(data)]) == 0
    out = capsys.readouterr().out
    compiled = ppl.load(model)
    g = compiled.graph(compiled.bind(str(data)))
    _check_dot(out, g)
    assert 'label="z\\n[50]"' in out  # concrete plate sizes with data
    assert cli.main(["graph", str(model)]) == 0
    out_without_data = capsys.readouterr().out
    _check_dot(out_without_data, compiled.graph())
    assert 'label="z\\n[N]"' in out_without_data


def test_dot_escapes_quotes_and_backslashes():
    g = ppl.compile(SMALL).graph()
    link = next(n for n, d in g.nodes(data=True) if d["kind"] == "link")
    g.nodes[link]["label"] = 'a "quoted" \\ label {'
    text = to_dot(g)
    assert 'label="a \\"quoted\\" \\\\ label {"' in text
    _check_dot(text, g)
