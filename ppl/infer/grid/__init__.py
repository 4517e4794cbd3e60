"""A q that is a mixture over a grid of one hyperparameter's values (docs/rules/grid.md)."""

from ppl.infer.grid.run import infer_grid
from ppl.infer.grid.spec import GridSpec, describe_grid, parse_option, requested

__all__ = ["infer_grid", "requested", "parse_option", "describe_grid", "GridSpec"]
