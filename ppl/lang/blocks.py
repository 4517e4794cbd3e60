"""The `block` statement: one joint Gaussian q over several Normal and MvNormal latent variables.

    block (mu_a, mu_b, a, b)

Mean field keeps q(mu_a) q(a) ... apart; a block keeps their correlations (a hierarchy's
population mean with its group effects), and a Gamma member its precision's correlation with
them (q(log τ) Gaussian in the block). The members must be latent and drawn from `Normal`,
`MvNormal` or `Gamma` (E276, E277), and a variable belongs to one block at most (E278). What the analyzer and the
engine make of a block is `ppl.graph.gaussian_block` and `ppl.infer.factors.block`.
"""

from __future__ import annotations

from ppl.diagnostics import ModelError, nearest
from ppl.lang import ast

MEMBER_DISTRIBUTIONS = ("Normal", "MvNormal", "Gamma")  # a Gamma through its logarithm


def check_blocks(items, variables: dict) -> tuple[tuple[str, ...], ...]:
    """The members of every `block` statement, checked against the declared variables."""
    blocks, seen = [], {}
    for item in items:
        if not isinstance(item, ast.GaussianBlock):
            continue
        for name, span in zip(item.names, item.name_spans):
            var = variables.get(name)
            if var is None or var.kind != "latent":
                latent = [n for n, v in variables.items() if v.kind == "latent"]
                what = "is not declared" if var is None else f"is {var.kind}, not a latent variable"
                suggestion = nearest(name, latent) if var is None else None
                raise ModelError("E276", f"`block` member `{name}` {what}", span=span,
                                 hint=f"did you mean `{suggestion}`?" if suggestion else
                                 "a block lists latent variables drawn with `~`")
            if var.dist not in MEMBER_DISTRIBUTIONS:
                raise ModelError("E277", f"`block` member `{name}` is {var.dist}; a Gaussian block joins Normal "
                                 "and MvNormal variables, and Gamma precisions through their logarithm", span=span,
                                 hint="Wishart and other distributions keep their own q, outside the block")
            if name in seen:
                raise ModelError("E278", f"`{name}` is in a block already (line {seen[name].line})", span=span,
                                 hint="a variable belongs to one block: merge the two lists")
            seen[name] = span
        blocks.append(tuple(item.names))
    return tuple(blocks)
