"""Checked model (+ data) → factor graph: a NetworkX DiGraph with one node per declared
variable, one per `~` statement, and one per non-trivial argument expression (a link).

Node attributes (constants below): ``kind`` is ``variable``, ``factor`` or ``link``. A variable
also has ``state`` (latent / observed / partially observed / deterministic), ``family``,
``plates`` and ``event``. Edges carry the parameter ``role`` they feed (``mean``,
``precision``, ..., or ``value`` for a factor's own variable). The node count never depends
on the size of the data.
"""

from __future__ import annotations

import networkx as nx

from ppl.lang import ast
from ppl.lang.model import CheckedModel

KIND, STATE, FAMILY, PLATES, EVENT, SHAPE, ROLE, SPAN, LABEL = (
    "kind", "state", "family", "plates", "event", "shape", "role", "span", "label")


def factor_id(name: str, dist: str) -> str:
    return f"{name} ~ {dist}"


def build(model: CheckedModel, dataset=None) -> nx.DiGraph:
    """The factor graph of `model`; with a dataset, shapes are numbers and missing cells known."""
    g = nx.DiGraph()
    sizes = dataset.sizes if dataset is not None else {}
    masks = dataset.masks if dataset is not None else {}
    for var in model.variables.values():
        if var.kind == "const":
            continue
        state = {"latent": "latent", "deterministic": "deterministic"}.get(var.kind, "observed")
        if var.name in masks:
            state = "partially observed"
        g.add_node(var.name, **{KIND: "variable", STATE: state, FAMILY: var.dist,
                                PLATES: _concrete(var.plates, sizes), EVENT: _concrete(var.event_shape, sizes),
                                SHAPE: _concrete(var.shape, sizes), SPAN: var.span, LABEL: var.name})
    for name, definitions in model.definitions.items():
        for definition in definitions:
            for parent in _names(definition.value, g):
                g.add_edge(parent, name, **{ROLE: "input"})
    for factor in model.factors:
        fid = factor_id(factor.name, factor.dist.name)
        g.add_node(fid, **{KIND: "factor", FAMILY: factor.dist.name, LABEL: fid, SPAN: factor.span,
                           PLATES: tuple(p.var for p in factor.plates), "factor": factor})
        g.add_edge(fid, factor.target.name, **{ROLE: "value"})
        for weight in model.weighted_plates(factor).values():  # row weights (`data count: weight[N]`)
            g.add_edge(weight, fid, **{ROLE: "weight"})
        for role, expr in factor.args.items():
            parents = _names(expr, g)
            if not parents:
                continue
            if _is_reference(expr):
                g.add_edge(parents[0], fid, **{ROLE: role})
                continue
            link = f"{fid} / {role}"
            g.add_node(link, **{KIND: "link", LABEL: ast.text(expr), SPAN: expr.span})
            g.add_edge(link, fid, **{ROLE: role})
            for parent in parents:
                g.add_edge(parent, link, **{ROLE: "input"})
    return g


def _names(expr: ast.Expr, g: nx.DiGraph) -> list[str]:
    seen = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id in g and node.id not in seen:
            seen.append(node.id)
    return seen


def _is_reference(expr: ast.Expr) -> bool:
    """A bare variable, possibly indexed by loop variables or integers (no data or latent index)."""
    if isinstance(expr, ast.Name):
        return True
    return (isinstance(expr, ast.Index) and isinstance(expr.base, ast.Name)
            and all(isinstance(i, (ast.Name, ast.Number)) for i in expr.indices))


def _concrete(shape, sizes) -> tuple:
    return tuple(sizes.get(d, d) if isinstance(d, str) else d for d in shape)


def to_dot(g: nx.DiGraph) -> str:
    """Graphviz DOT text: variables as ellipses (observed shaded), factors as boxes, links as diamonds."""
    lines = ["digraph model {", "  rankdir=TB;"]
    ids = {node: f"n{i}" for i, node in enumerate(g.nodes)}
    for node, data in g.nodes(data=True):
        label = _escape(data[LABEL])
        if data[KIND] == "variable":
            plates = data[PLATES]
            if plates:
                label += "\\n[" + ", ".join(str(p) for p in plates) + "]"
            style = {"observed": ', style=filled, fillcolor="gray80"',
                     "partially observed": ', style=filled, fillcolor="gray92"',
                     "deterministic": ", shape=diamond"}.get(data[STATE], "")
            lines.append(f'  {ids[node]} [label="{label}", shape=ellipse{style}];')
        elif data[KIND] == "factor":
            lines.append(f'  {ids[node]} [label="{label}", shape=box];')
        else:
            lines.append(f'  {ids[node]} [label="{label}", shape=diamond, fontsize=10];')
    for a, b, data in g.edges(data=True):
        lines.append(f'  {ids[a]} -> {ids[b]} [label="{_escape(data[ROLE])}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"')
