"""The .vim language: parse text into an AST and check it into a `CheckedModel`."""

from ppl.lang.checker import check
from ppl.lang.model import CheckedModel, Factor, Plate, Size, Variable
from ppl.lang.parser import parse

__all__ = ["parse", "check", "CheckedModel", "Factor", "Plate", "Size", "Variable"]
