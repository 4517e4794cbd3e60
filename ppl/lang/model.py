"""The checked model: what the checker returns and every later stage reads.

Shapes are symbolic here (size names and integers); the data binder fixes the sizes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ppl.diagnostics import Source, Span
from ppl.lang import ast
from ppl.lang.distributions import Distribution

# A loop bound: `N`, `N - 1`, `2` → (name or None, integer offset).
Bound = tuple


@dataclass(frozen=True)
class Size:
    """A size name and how it gets its value: a constant, the rows of the data, the width of
    a column group, or the number of levels of a categorical column."""

    name: str
    origin: str  # "const" | "rows" | "group" | "levels"
    data: str | None
    span: Span


@dataclass(frozen=True)
class Plate:
    """An enclosing `for var in lo..hi` loop, and the dimension `dim` it runs along."""

    var: str
    lo: Bound
    hi: Bound
    dim: str | int
    span: Span


@dataclass(frozen=True)
class Variable:
    """A declared name: constant, data, latent (drawn with `~`) or deterministic (`=`)."""

    name: str
    kind: str  # "const" | "data" | "latent" | "deterministic"
    elem: str  # "real" | "int" | "bool" | "cat" | "weight"
    shape: tuple
    event_rank: int = 0
    levels: str | int | None = None
    dist: str | None = None
    span: Span | None = None

    @property
    def plates(self) -> tuple:
        return self.shape[: len(self.shape) - self.event_rank]

    @property
    def event_shape(self) -> tuple:
        return self.shape[len(self.shape) - self.event_rank:]


@dataclass(frozen=True)
class Factor:
    """One `~` statement: its distribution, arguments by role, enclosing plates and rule hints."""

    name: str
    target: ast.LValue
    dist: Distribution
    args: dict
    plates: tuple[Plate, ...]
    annotations: tuple[ast.Annotation, ...]
    batch_shape: tuple
    span: Span


@dataclass(frozen=True)
class Definition:
    """One `=` statement."""

    target: ast.LValue
    value: ast.Expr
    plates: tuple[Plate, ...]
    span: Span


@dataclass(frozen=True)
class CheckedModel:
    source: Source
    program: ast.Program
    constants: dict  # name -> Python number or None (array constants are evaluated later)
    sizes: dict  # name -> Size
    variables: dict  # name -> Variable
    factors: tuple[Factor, ...]
    definitions: dict  # name -> tuple[Definition, ...]
    data: dict  # name -> ast.DataDecl
    overrides: dict = field(default_factory=dict)
    schedule: object = None  # ppl.lang.schedule.ScheduleSpec, or None: the default batch schedule
    blocks: tuple = ()  # members of each `block` statement (ppl.lang.blocks)

    def factor(self, name: str) -> Factor:
        for f in self.factors:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def weights(self) -> dict:
        """Size name -> the `weight` data that counts the rows of that plate."""
        return {v.shape[0]: v.name for v in self.variables.values() if v.elem == "weight"}

    def weighted_plates(self, factor: Factor) -> dict:
        """{size name: weight name} of the weighted plates `factor` runs over: its loops, or the
        batch shape of a whole-array statement."""
        dims = [p.dim for p in factor.plates] if factor.plates else \
            ([] if factor.target.indices else list(factor.batch_shape))
        return {d: self.weights[d] for d in dims if d in self.weights}

    def factors_of(self, variable: str) -> tuple[Factor, ...]:
        return tuple(f for f in self.factors if f.target.name == variable)
