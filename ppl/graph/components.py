"""Mixture components: which axis of which variable a latent category selects.

In `x[n] ~ MvNormal(mu[z[n]], Lambda[z[n]])` the latent Categorical `z` selects along axis 0
of `mu` and `Lambda`, and in `z[n] ~ Categorical(pi)` its probabilities are the components of
`pi` (its event axis). Reports use this to say that a component the data switched off keeps
its prior, instead of printing the prior's quantiles, and plots to draw one panel per
component. The axes are in the variable's array layout (plates then event).
"""

from __future__ import annotations

from ppl.graph.forms import inline
from ppl.lang import ast


def mixture_components(model) -> dict:
    """{selector: {variable: axis}} for every latent Categorical used as an index."""
    latent = {n for n, v in model.variables.items() if v.kind == "latent"}
    categorical = {n for n in latent if model.variables[n].dist == "Categorical"}
    found: dict = {}
    for factor in model.factors:
        for expr in factor.args.values():
            for node in ast.walk(inline(expr, model.definitions)):
                if isinstance(node, ast.Index) and isinstance(node.base, ast.Name) and node.base.id in latent:
                    for axis, index in enumerate(node.indices):
                        selector = _selector(index, categorical)
                        if selector is not None:
                            found.setdefault(selector, {})[node.base.id] = axis
    for selector in found:
        for factor in model.factors_of(selector):
            probs = factor.args.get("probs")
            if isinstance(probs, ast.Name) and probs.id in latent:  # z ~ Categorical(pi): pi's event axis
                found[selector][probs.id] = len(model.variables[probs.id].plates)
    return found


def _selector(index: ast.Expr, categorical: set) -> str | None:
    """`z[n]` (or bare `z`) with `z` a latent Categorical → "z"."""
    base = index.base if isinstance(index, ast.Index) else index
    return base.id if isinstance(base, ast.Name) and base.id in categorical else None
