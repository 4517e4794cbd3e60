"""The inference rules a statement may ask for with an annotation, and the options each takes.

This is the vocabulary only; whether a rule can apply to a factor is the analyzer's call.
"""

from __future__ import annotations

# annotation name -> (rule name used in reports, allowed options)
RULES: dict[str, tuple[str, frozenset]] = {
    "vmp": ("vmp", frozenset()),
    "ncvmp": ("ncvmp", frozenset({"damping"})),
    "cvi": ("cvi", frozenset({"step", "samples", "kappa", "form", "minibatch"})),
    "jaakkola": ("bound:jaakkola", frozenset()),
    "bohning": ("bound:bohning", frozenset()),
    "piecewise": ("bound:piecewise", frozenset({"pieces", "kind"})),
    "stick": ("bound:stick", frozenset({"pieces"})),
    "laplace": ("laplace", frozenset()),
    "delta": ("delta", frozenset()),
    "ssmf": ("ssmf", frozenset({"samples"})),
    # Not a message rule but a choice of q: the Gaussian and its Gamma/Wishart precision share
    # one Normal–Gamma / Normal–Wishart factor of q (structured mean field, Bishop §10.2).
    "joint": ("joint", frozenset()),
    # Not a rule either: on a discrete chain's transition, `by=seq` names the data column whose
    # changes restart the chain (several sequences in one table; ppl.graph.chain).
    "sequences": ("sequences", frozenset({"by"})),
    # Not a rule: on a scalar hyperparameter's own statement, q becomes a mixture over a grid of
    # its values, one fit of the rest per node (ppl.infer.grid, docs/rules/grid.md).
    "grid": ("grid", frozenset({"nodes", "sds"})),
}

# options whose value is a word (`kind=quadratic`); every other option takes a number
WORD_OPTIONS = frozenset({"kind", "form", "by"})

RULE_NAMES = frozenset(name for name, _ in RULES.values())


def rule_name(annotation_or_rule: str) -> str | None:
    """The report name of a rule given by annotation (`jaakkola`) or in full (`bound:jaakkola`)."""
    if annotation_or_rule in RULES:
        return RULES[annotation_or_rule][0]
    return annotation_or_rule if annotation_or_rule in RULE_NAMES else None
