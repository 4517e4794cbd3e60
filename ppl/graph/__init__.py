"""The factor graph of a checked model, and the analyzer that picks an update rule per edge.

`build`, `to_dot` and `factor_id` live in `ppl.graph.factor_graph` and are imported on first use:
NetworkX costs ~0.15 s of start-up, and `ppl infer` needs the analysis, not the graph object.
"""

from ppl.graph.analyze import Analysis, Block, Tag, analyze

__all__ = ["build", "to_dot", "factor_id", "analyze", "Analysis", "Block", "Tag"]


def __getattr__(name):
    if name in ("build", "to_dot", "factor_id"):
        from ppl.graph import factor_graph as module
        return getattr(module, name)
    raise AttributeError(f"module 'ppl.graph' has no attribute {name!r}")
