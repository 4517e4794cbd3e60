"""The factor graph of a checked model, and the analyzer that picks an update rule per edge."""

from ppl.graph.analyze import Analysis, Block, Tag, analyze
from ppl.graph.build import build, factor_id, to_dot

__all__ = ["build", "to_dot", "factor_id", "analyze", "Analysis", "Block", "Tag"]
